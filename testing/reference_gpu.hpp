/// \brief The GPU reference check for large shapes: an fp64 GEMM on plain X and W that compares
/// an output with it in the same pass (used by the GPU tests, `f8gemm demo` and `run --verify`).
#pragma once

#include <cstdint>
#include <string>

#include "f8gemm/f8gemm.hpp"
#include "reference.hpp"

namespace f8gemm::detail {

struct CheckResult {
  double rel_rms = 0.0;      ///< ||y - ref|| / ||ref||
  double max_ratio = 0.0;    ///< max over elements of |y - ref| / element_bound
  int64_t nonfinite = 0;     ///< elements of y that are NaN or inf (the reference is finite)
  int64_t count = 0;         ///< elements compared (the RMS bound applies from kMinCountForRms)
};

/// The element bound is numerics::element_bound with gamma = numerics::accumulation_gamma (one
/// definition, reference.hpp; README "Accuracy"); the kernel evaluates the same expression.
using numerics::accumulation_gamma;

/// Empty when reference_check() can check a [B, M, N] output, else why not: its grid is
/// ceil(N/16) x ceil(M/16) x B blocks of 16 x 16 threads, and CUDA allows 65535 in y and z.
/// `run --verify` asks before it allocates, so that a shape it cannot check is refused first.
std::string reference_check_unfit(int64_t b, int64_t m, int64_t n);

/// x [B,M,K] and w [B,N,K] (plain) e4m3, xs [B,M], ws [B,N], bias null or [B,N], y [B,M,N]: all
/// device memory. Synchronises `stream`.
CheckResult reference_check(const TensorView& x, const TensorView& w, const TensorView& xs,
                            const TensorView& ws, const TensorView* bias, const TensorView& y,
                            double gamma, cudaStream_t stream);

/// The epilogue's SiLU (kernels/silu_sfu.cuh) on every fp32 input with bits in [first, first +
/// count), against fp64 (f8gemm_silu_sfu_check): the worst ratio to its bound, the worst plain
/// relative error where |g| <= 16, and the inputs whose special values differ.
struct SiluSfuCheck {
  double max_ratio = 0.0, max_rel = 0.0;
  int64_t special_mismatches = 0;
};
SiluSfuCheck silu_sfu_check(uint64_t first, uint64_t count, int device);

}  // namespace f8gemm::detail
