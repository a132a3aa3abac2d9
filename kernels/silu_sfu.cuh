/// \brief SiLU(g) * u in fp32 through the special-function unit, for the GEMM epilogue
/// (EpilogueOp::kSiluMul): two MUFU operations a value instead of the exact SiLU's polynomial exp
/// and IEEE division (rowq::silu_mul, about 30 instructions a value, which the row kernels keep
/// because their GPU and CPU results must agree bit for bit; the epilogue's output has no CPU
/// twin, only a bound). With the exact form in the epilogue the Llama MLP block at M = 2048
/// was slower than with the activation apart, on an H100's cooperative tile (perf log, card 75).
///
///   h = g * rcp(1 + ex2(g * -log2(e))) * u   (ex2.approx.ftz, rcp.approx.ftz)
///
/// Its error against the exact g / (1 + exp(-g)) * u (derivation; silu_sfu_check.cuh measures it
/// on every fp32 g): the exponent's rounding moves exp(-g) by |g| 2^-23 relatively, ex2.approx
/// and rcp.approx add a few ulps, and 1 / (1 + E) passes E's relative error on at most whole;
/// where rcp's result would be subnormal (g < -87.3, |h| < 2^-119 |u|) it is flushed to zero:
///   |h - SiLU(g) u| <= (kSiluSfuRel + kSiluSfuRelPerG |g|) |SiLU(g) u| + kSiluSfuAbs |u|.
/// The check runs u = 1: the product by u adds one rounding, 2^-24 relative, which the measured
/// worst ratio to the bound (0.682, where the relative term is at least 2^-20) leaves room for.
/// Special values: SiLU(+inf) = +inf, SiLU(-inf) = NaN (inf * 0, as torch gives), NaN stays NaN.
#pragma once

#include "dev_types.cuh"
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#include "f8gemm_ptx.cuh"
#endif

namespace f8gemm {
namespace dev {

/// The constants of the bound above (testing/reference.hpp's silu_mul_bound reads them too).
constexpr double kSiluSfuRel = 0x1p-20;
constexpr double kSiluSfuRelPerG = 0x1p-22;
constexpr double kSiluSfuAbs = 0x1p-119;

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
__device__ __forceinline__ float silu_mul_sfu(float g, float u) {
  return g * rcp_approx(1.0f + ex2_approx(g * -1.44269502162933349609375f)) * u;
}
#endif

}  // namespace dev
}  // namespace f8gemm
