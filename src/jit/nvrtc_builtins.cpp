/// \brief load_nvrtc_builtins_beside_nvrtc() (nvrtc_builtins.hpp).
#include "jit/nvrtc_builtins.hpp"

#include <dlfcn.h>
#include <limits.h>
#include <nvrtc.h>
#include <unistd.h>

#include "check.hpp"

namespace f8gemm::jit {
namespace {

/// The absolute folder of the loaded libnvrtc.so.<major> (by soname: RTLD_NOLOAD loads nothing),
/// or "" with the reason in *why.
std::string loaded_nvrtc_folder(int major, std::string* why) {
  const std::string soname = detail::concat("libnvrtc.so.", major);
  void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) {
    *why = soname + " is not loaded (NVRTC linked statically?)";
    return {};
  }
  char origin[PATH_MAX] = {};
  const bool ok = dlinfo(handle, RTLD_DI_ORIGIN, origin) == 0;
  dlclose(handle);  // drops only the reference RTLD_NOLOAD took
  if (!ok) *why = detail::concat("dlinfo of ", soname, ": ", dlerror());
  return ok ? std::string(origin) : std::string();
}

}  // namespace

std::string nvrtc_builtins_path(const std::string& folder, int major, int minor) {
  if (folder.empty()) return {};
  return detail::concat(folder, "/libnvrtc-builtins.so.", major, ".", minor);
}

const BuiltinsLoad& load_nvrtc_builtins_beside_nvrtc() {
  static const BuiltinsLoad result = [] {
    BuiltinsLoad r;
    int major = 0, minor = 0;
    F8GEMM_CHECK_NVRTC(nvrtcVersion(&major, &minor));
    const std::string path = nvrtc_builtins_path(loaded_nvrtc_folder(major, &r.why_not), major,
                                                 minor);
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
