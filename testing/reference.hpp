/// \brief The fp64 CPU reference GEMM and the accuracy bounds that every check applies (the
/// f8gemm_testing target, not part of the library): the tests, `f8gemm run --verify`, `demo` and
/// `tune` call these, and nothing else defines a bound.
#pragma once

#include <cstddef>
#include <cstdint>

#include "f8gemm/f8gemm.hpp"

namespace f8gemm::numerics {

/// Unit roundoff of an output type: 2^-8 for bf16, 2^-11 for fp16.
double unit_roundoff(DType out_dtype);

// ---- Accuracy bounds: the one definition that the tests, `run --verify`, `demo` and `tune`
// apply (README "Accuracy" derives them), and that the GPU reference check (reference_gpu.hpp)
// evaluates on the device with the same unit roundoff, gamma and slack. ---------------------

/// gamma of the element bound for a K and an accumulation mode:
///   precise: 4 * 2^-13 + 4 * 2^-23 + ceil(K/128) * 2^-24 (4 tensor-core steps per 128-deep block,
///            each block added in fp32);
///   fast:    clamp(ceil(K/32), 4, 14) * 2^-13 + ceil(K/32) * 2^-23.
/// Each k32 step aligns its addends to the largest exponent among the accumulator and its 32
/// products and truncates them to 13 bits below it; the accumulator is fp32. A step loses at
/// most about 2^-13 of the running partial sum, so ceil(K/32) * 2^-13 * abs_ref bounds a chain
/// whose partial sums all reach sum|x*w|. For operands of random sign the partial sums stay
/// ~sqrt(K) below it, and the measured and emulated error stays under 7 * 2^-13 * abs_ref at
/// every K: 14 (twice that) caps the step term from K = 448 on. Up to K = 128 fast and precise
/// mode do the same arithmetic and get the same 4 steps.
double accumulation_gamma(int64_t k, bool fast_accum);

/// The slack for results in the subnormal range of the output: half the smallest fp16 subnormal
/// (2^-25), and bf16's smallest subnormal (2^-133).
double subnormal_slack(DType out_dtype);

/// The element bound: |y - ref| <= u*|ref| + (1 + u)*gamma*abs_ref + subnormal_slack, with u the
/// output's unit roundoff (its rounding) and abs_ref = |xs*ws|*sum|x*w| + |bias|.
double element_bound(double ref, double abs_ref, DType out_dtype, double gamma);

/// The bound on the relative RMS error ||y - ref|| / ||ref||: the output's rounding (0.46 u:
/// 1.8e-3 for bf16, measured 1.66e-3) and the truncation drift, 1.5 * 2^-13 per sqrt(k32 step),
/// added in quadrature: fast mode over all ceil(K/32) steps (measured 2.3e-3 at K = 8192,
/// 0.56e-3 at K = 1024), precise mode over one 128-deep block (at most 4 steps).
double rel_rms_bound(int64_t k, bool fast_accum, DType out_dtype);

/// An RMS over a handful of elements is noise (8 elements can all sit near the top of a binade):
/// rel_rms_bound applies from this many outputs on; the element bound applies always.
inline constexpr int64_t kMinCountForRms = 2048;

/// True when an output of `count` elements passes both checks: no NaN or inf, every element
/// within element_bound (max_ratio <= 1) and, from kMinCountForRms outputs on, rel_rms within
/// rel_rms_bound.
bool within_bounds(double rel_rms, double max_ratio, int64_t nonfinite, int64_t count, int64_t k,
                   bool fast_accum, DType out_dtype);

/// The fp64 reference: ref[b,m,n] = xs[b,m]*ws[b,n]*sum_k X[b,m,k]*W[b,n,k] + bias[b,n], accumulated
/// in double from exactly decoded e4m3. x: [B,M,K] codes, w: [B,N,K] codes (plain layout),
/// xs: [B,M], ws: [B,N], bias: nullptr or [B,N] of bias_dtype (kF32 or kBF16). Also writes
/// abs_ref[b,m,n] = |xs|*|ws|*sum_k |X*W| + |bias| (for element-wise error bounds) when not null.
/// threads <= 0 means std::thread::hardware_concurrency().
void reference_gemm(int64_t batch, int64_t m, int64_t n, int64_t k, const uint8_t* x,
                    const uint8_t* w, const float* xs, const float* ws, const void* bias,
                    DType bias_dtype, double* ref, double* abs_ref = nullptr, int threads = 0);

/// The SiLU·mul epilogue (EpilogueOp::kSiluMul) in fp64 from the merged GEMM's reference:
/// h = SiLU(g) * u = g / (1 + exp(-g)) * u, with g and u the reference's gate and up values.
double silu_mul_reference(double g, double u);

/// The element bound of a SiLU·mul output against silu_mul_reference(g, u). The kernel's fp32
/// gate and up values g', u' are within e_g = gamma * abs_g and e_u = gamma * abs_u of g and u
/// (element_bound's accumulation term, before the output's rounding), so with S and L the
/// largest |SiLU| and |SiLU'| over [g - e_g, g + e_g] (at its ends or at the extrema inside it:
/// SiLU's minimum at -1.2785, SiLU''s at -2.3994 and 2.3994):
///   |SiLU(g')u' - SiLU(g)u| <= |SiLU(g')| e_u + |u| |SiLU(g') - SiLU(g)| <= S e_u + L |u| e_g = D.
/// For a very negative g both S and L are tiny, so the bound stays near |h| there too.
/// The epilogue's SiLU·mul on g', u' (kernels/silu_sfu.cuh) is within
/// (kSiluSfuRel + kSiluSfuRelPerG |g'|) |SiLU(g')u'| + kSiluSfuAbs |u'| of the exact one, with
/// |g'| <= |g| + e_g, |SiLU(g')u'| <= |h| + D and |u'| <= |u| + e_u; then the output's rounding:
///   bound = r |h| + (1 + r) (D + (kSiluSfuRel + kSiluSfuRelPerG (|g| + e_g)) (|h| + D)
///                            + kSiluSfuAbs (|u| + e_u)) + subnormal_slack,   r = unit_roundoff.
double silu_mul_bound(double g, double u, double abs_g, double abs_u, DType out_dtype,
                      double gamma);

/// Rounds count doubles into out_dtype (kBF16 or kF16) bits.
void round_output(const double* in, size_t count, DType out_dtype, uint16_t* out);

}  // namespace f8gemm::numerics
