/// \brief libnvrtc-builtins loaded from the loaded libnvrtc's own folder before the first compile.
#pragma once

#include <string>

namespace f8gemm::jit {

/// NVRTC opens its companion libnvrtc-builtins.so.<major>.<minor> by name at its first compile,
/// and unless a library of that soname is already loaded, the name is resolved on the loader's
/// path (LD_LIBRARY_PATH, ld.so.cache), not in libnvrtc's folder: the nvidia-cuda-nvrtc wheel's
/// libnvrtc.so.13 carries no RUNPATH. Where nothing else loaded NVRTC first (torch installed
/// without its CUDA wheels, over a system CUDA runtime, plus the nvidia-cuda-nvrtc wheel that
/// the torch extension's RPATH finds), every compile failed with "failed to open
/// libnvrtc-builtins.so.13.0"; and where a toolkit is on the loader's path as well, NVRTC paired
/// that toolkit's builtins with the wheel's libnvrtc. This loads the file of that name from the
/// folder of the loaded libnvrtc.so.<major> (dlinfo's origin, absolute), once per process, so
/// that NVRTC's lookup by soname finds that copy. Loads nothing where NVRTC is linked
/// statically or the folder has no such file: NVRTC's own lookup and error then stand.
/// Thread-safe; returns what it did.
struct BuiltinsLoad {
  std::string path;     ///< the file loaded, or "" when none was
  std::string why_not;  ///< when path is "": why (no libnvrtc loaded, no file, dlerror)
};
const BuiltinsLoad& load_nvrtc_builtins_beside_nvrtc();

/// What load_nvrtc_builtins_beside_nvrtc() loads for a libnvrtc in `folder` of version
/// major.minor: "<folder>/libnvrtc-builtins.so.<major>.<minor>", or "" for an empty folder.
std::string nvrtc_builtins_path(const std::string& folder, int major, int minor);

}  // namespace f8gemm::jit
