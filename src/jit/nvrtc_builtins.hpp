/// \brief libnvrtc-builtins loaded from libnvrtc's own folder before the first compile.
#pragma once

#include <string>

namespace f8gemm::jit {

/// NVRTC opens its companion libnvrtc-builtins.so.<major>.<minor> by name at its first compile,
/// and that name is resolved through the loader's path (LD_LIBRARY_PATH, ld.so.cache), not
/// libnvrtc's folder: the nvidia-cuda-nvrtc wheel's libnvrtc.so.13 carries no RUNPATH. In an
/// environment made by pip alone (site-packages/nvidia/cu13/lib, found through the torch
/// extension's RPATH) every compile then failed with "failed to open libnvrtc-builtins.so.13.0",
/// and where a toolkit is on the loader's path as well, NVRTC took that toolkit's builtins, of
/// another patch release. This loads the file of that name beside the loaded libnvrtc.so (by
/// path, RTLD_GLOBAL), once per process, so that NVRTC's lookup by name finds the copy that
/// shipped with it. Does nothing where there is no such file (NVRTC linked statically, or a
/// folder without it: NVRTC's own lookup and error stand). Thread-safe. Returns the path loaded,
/// or "" when nothing was.
const std::string& load_nvrtc_builtins_beside_nvrtc();

/// What load_nvrtc_builtins_beside_nvrtc() would load for a libnvrtc at `nvrtc_path` of version
/// major.minor: "<folder>/libnvrtc-builtins.so.<major>.<minor>", or "" for an empty path.
std::string nvrtc_builtins_path(const std::string& nvrtc_path, int major, int minor);

}  // namespace f8gemm::jit
