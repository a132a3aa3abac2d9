/// \brief describe_nvrtc_library() and nvrtc_identity() (nvrtc_identity.hpp).
#include "jit/nvrtc_identity.hpp"

#include <dlfcn.h>
#include <nvrtc.h>
#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "check.hpp"

namespace f8gemm::jit {

// Why not NVIDIA's build string ("Cuda compilation tools, release 13.0, V13.0.88", "Compiler
// Build ID: CL-36424714"): NVRTC 13.0 exposes no call for it (nvrtc.h has nvrtcVersion only),
// and it appears only in the header of generated PTX. Compiling an empty kernel to read it took
// 48 ms on the CPU machine (2026-12-05), paid by every process at its first gemm() even when every
// cubin is on disk; dladdr, realpath and stat take 0.03 ms.
std::string describe_nvrtc_library() {
  int major = 0, minor = 0;
  F8GEMM_CHECK_NVRTC(nvrtcVersion(&major, &minor));
  const std::string version = detail::concat("NVRTC ", major, ".", minor);
  Dl_info info{};
  // The address of nvrtcVersion lies in the object that NVRTC's calls run in: libnvrtc.so, or
  // the executable when NVRTC is linked statically (then a rebuilt binary is a new identity).
  if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) == 0 || info.dli_fname == nullptr ||
      info.dli_fname[0] == '\0') {
    return version + ", library unidentified (dladdr found no object for nvrtcVersion)";
  }
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved) == nullptr) {
    return detail::concat(version, ", library unidentified (realpath of ", info.dli_fname, ": ",
                          std::strerror(errno), ")");
  }
  struct stat st {};
  if (stat(resolved, &st) != 0) {
    return detail::concat(version, ", library unidentified (stat of ", resolved, ": ",
                          std::strerror(errno), ")");
  }
  const char* slash = std::strrchr(resolved, '/');
  const char* file = slash != nullptr ? slash + 1 : resolved;
  return detail::concat(version, ", ", file, " ", static_cast<long long>(st.st_size), " bytes");
}

const std::string& nvrtc_identity() {
  static const std::string identity = describe_nvrtc_library();
  return identity;
}

}  // namespace f8gemm::jit
