/// \brief Ahead of serving: choose_config() and precompile(), which compile (and on an sm_90 GPU
/// load) the instances that gemm() and batched_gemm() will use for given problems.
#include "check.hpp"
#include "codegen.hpp"
#include "config.hpp"
#include "device.hpp"
#include "f8gemm/tuning.hpp"

namespace f8gemm {

namespace detail {
void prepare(const ProblemShape& problem, int device);  // gemm.cpp
}

Config choose_config(const ProblemShape& problem) {
  validate_problem(problem);
  int device = 0;
  F8GEMM_CHECK_CUDA(cudaGetDevice(&device));
  const auto& props = detail::require_sm90(device);
  return detail::decide(props.name, props.sm_count, problem);
}

void precompile(const std::vector<ProblemShape>& problems) {
  // Every problem is checked before the first compile: a bad one in a list fails fast, and
  // sizes past the kernel's int32 limits never reach the cost model or NVRTC.
  for (const ProblemShape& p : problems) validate_problem(p);
  // The current sm_90 GPU, else the H200 that serving will run on (target_gpu()).
  const TargetGpu gpu = target_gpu();
  int device = -1;
  if (!gpu.assumed) F8GEMM_CHECK_CUDA(cudaGetDevice(&device));
  for (const ProblemShape& p : problems) {
    if (device >= 0) {
      detail::prepare(p, device);  // compiled, loaded and attributes set: is_ready() holds
    } else {
      detail::gemm_instance(detail::make_spec(decide_config(gpu, p), p));
    }
  }
  auto util = detail::util_instance();
  if (device >= 0) util->kernel("f8gemm_quantize_bf16");
}

}  // namespace f8gemm
