/// \brief load_nvrtc_builtins_beside_nvrtc() (nvrtc_builtins.hpp).
#include "jit/nvrtc_builtins.hpp"

#include <dlfcn.h>
#include <nvrtc.h>
#include <unistd.h>

#include "check.hpp"
#include "jit/nvrtc_identity.hpp"

namespace f8gemm::jit {

std::string nvrtc_builtins_path(const std::string& folder, int major, int minor) {
  if (folder.empty()) return {};
  return detail::concat(folder, "/libnvrtc-builtins.so.", major, ".", minor);
}

const BuiltinsLoad& load_nvrtc_builtins_beside_nvrtc() {
  static const BuiltinsLoad result = [] {
    BuiltinsLoad r;
    int major = 0, minor = 0;
    F8GEMM_CHECK_NVRTC(nvrtcVersion(&major, &minor));
    const LoadedNvrtc nvrtc = find_loaded_nvrtc(major);
    r.why_not = nvrtc.why_not;
    const std::string path = nvrtc_builtins_path(nvrtc.folder, major, minor);
    if (path.empty()) return r;
    if (access(path.c_str(), R_OK) != 0) {
      r.why_not = "no readable " + path;
      return r;
    }
    // Kept loaded for the life of the process, as NVRTC keeps its own handle.
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      r.why_not = detail::concat("loading ", path, ": ", dlerror());
      return r;
    }
    r.path = path;
    return r;
  }();
  return result;
}

}  // namespace f8gemm::jit
