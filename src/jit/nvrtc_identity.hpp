/// \brief Which NVRTC library this process loaded, as the JIT cache key names it: nvrtcVersion()
/// says only major.minor, and a patch release (13.0.48 -> 13.0.88) changes ptxas inside it.
#pragma once

#include <cstdint>
#include <string>

namespace f8gemm::jit {

/// "NVRTC <major>.<minor>, <file> build-id <hex>": the version and the loaded libnvrtc that
/// nvrtc* calls bind to (find_loaded_nvrtc(): whatever else named libnvrtc.so* was loaded before
/// it), named by its file name and its ELF build id, which names the exact build: a patch update
/// brings another ptxas and another build id even where the file name does not carry the patch
/// (the toolkit's libnvrtc.so.13 in 13.0). Without a build-id note,
/// "<file> <size> bytes" (realpath, stat); with NVRTC linked statically, the object that holds
/// nvrtcVersion (dladdr). No directory and no modification time: a cache filled by `f8gemm
/// precompile` on one machine serves another with the same toolkit, whose installer wrote the
/// file at another time.
/// "NVRTC <major>.<minor>, library unidentified (<why>)" when dladdr or stat fails; the key is
/// then as specific as nvrtcVersion alone. Reads the file system at each call.
std::string describe_nvrtc_library();

/// describe_nvrtc_library(), computed once per process (thread-safe) and kept: the key of an
/// instance must not change while the process runs, even if the file is replaced under it.
const std::string& nvrtc_identity();

/// The loaded libnvrtc.so.<major> that nvrtc* calls bind to, found by its soname (RTLD_NOLOAD:
/// loads nothing): its load address and its absolute folder (dlinfo's link map and origin).
/// Where none is loaded (NVRTC linked statically), address is 0 and folder is ""; folder is ""
/// too where dlinfo gives no origin; why_not then says which.
struct LoadedNvrtc {
  uintptr_t address = 0;
  std::string folder;
  std::string why_not;
};
LoadedNvrtc find_loaded_nvrtc(int major);

}  // namespace f8gemm::jit
