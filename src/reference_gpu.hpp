/// \brief The GPU reference check for large shapes: an fp64 GEMM on plain X and W that compares
/// an output with it in the same pass (used by the GPU tests, `f8gemm demo` and `run --verify`).
#pragma once

#include <cstdint>

#include "f8gemm/f8gemm.hpp"

namespace f8gemm::detail {

struct CheckResult {
  double rel_rms = 0.0;      ///< ||y - ref|| / ||ref||
  double max_ratio = 0.0;    ///< max over elements of |y - ref| / element_bound
  int64_t nonfinite = 0;     ///< elements of y that are NaN or inf (the reference is finite)
};

/// Element bound: |y - ref| <= u*|ref| + (1 + u)*gamma*abs_ref + tiny, where u is the output's unit
/// roundoff, abs_ref = |xs*ws|*sum|x*w| + |bias| and tiny covers fp16 subnormals (2^-25).
/// gamma bounds the accumulation error relative to abs_ref (README "Accuracy"): Hopper's FP8
/// tensor core keeps about 14 bits when it adds each k32 product group into its accumulator
/// (DeepSeek-V3 report; our precise-mode runs at K = 256 show errors near 2^-14 * abs_ref), so
/// each k32 step may lose 2^-13 * abs_ref. Precise mode restarts the tensor-core sum every 128
/// of K (4 steps) and adds the blocks in fp32 (2^-24 each); fast mode chains all K/32 steps.
double accumulation_gamma(int64_t k, bool fast_accum);

/// x [B,M,K] and w [B,N,K] (plain) e4m3, xs [B,M], ws [B,N], bias null or [B,N], y [B,M,N]: all
/// device memory. Synchronises `stream`.
CheckResult reference_check(const TensorView& x, const TensorView& w, const TensorView& xs,
                            const TensorView& ws, const TensorView* bias, const TensorView& y,
                            double gamma, cudaStream_t stream);

}  // namespace f8gemm::detail
