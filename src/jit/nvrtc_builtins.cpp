/// \brief load_nvrtc_builtins_beside_nvrtc() (nvrtc_builtins.hpp).
#include "jit/nvrtc_builtins.hpp"

#include <dlfcn.h>
#include <nvrtc.h>
#include <unistd.h>

#include "check.hpp"
#include "jit/nvrtc_identity.hpp"

namespace f8gemm::jit {

std::string nvrtc_builtins_path(const std::string& nvrtc_path, int major, int minor) {
  if (nvrtc_path.empty()) return {};
  const size_t slash = nvrtc_path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : nvrtc_path.substr(0, slash);
  return detail::concat(folder, "/libnvrtc-builtins.so.", major, ".", minor);
}

const std::string& load_nvrtc_builtins_beside_nvrtc() {
  static const std::string loaded = [] {
    int major = 0, minor = 0;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return std::string();
    const std::string path = nvrtc_builtins_path(loaded_nvrtc_path(), major, minor);
    if (path.empty() || access(path.c_str(), R_OK) != 0) return std::string();
    // Kept loaded for the life of the process, as NVRTC keeps its own handle.
    return dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr ? path : std::string();
  }();
  return loaded;
}

}  // namespace f8gemm::jit
