/// \brief `f8gemm info`: the library, NVRTC, CUDA runtime and driver versions, the JIT cache
/// directory (and why it is unusable, if it is) and the GPU.
#include <cstdio>

#include "cli_args.hpp"
#include "f8gemm/f8gemm.hpp"

namespace f8gemm::cli {

int cmd_info(const Args& args) {
  Options opt(args, {}, {}, "info");
  const DeviceInfo info = device_info();
  std::printf("f8gemm %s\n", kVersion);
  std::printf("NVRTC %d.%d, CUDA runtime %d, driver %d\n", info.nvrtc_major, info.nvrtc_minor,
              info.runtime_version, info.driver_version);
  std::printf("NVRTC library (in the JIT cache key): %s\n", info.nvrtc_library.c_str());
  if (info.cache_problem.empty()) {
    std::printf("cache: %s\n", info.cache_dir.c_str());
  } else {
    std::printf("cache: %s (unusable: %s; every process compiles its kernels again)\n",
                info.cache_dir.c_str(), info.cache_problem.c_str());
  }
  if (!info.has_device) {
    std::printf("GPU: none (%s); kernels still compile for sm_90a\n", info.reason.c_str());
    return 0;
  }
  std::printf("GPU %d: %s, %d SMs, compute capability %d.%d%s%s\n", info.device, info.name.c_str(),
              info.sm_count, info.cc_major, info.cc_minor, info.reason.empty() ? "" : ": ",
              info.reason.c_str());
  return 0;
}

}  // namespace f8gemm::cli
