/// \brief What the host and the device share for the rowwise e4m3 quantisation kernels
/// (quantize_rows.cuh, silu_mul_quantize.cuh): the parameter block and the exact SiLU arithmetic.
///
/// Both compilers include this file: NVRTC (device code, no include path, no toolkit header) and
/// the host compiler (the launcher in src/quantize.cpp and the CPU reference). The SiLU below is
/// written once, in operations that round identically on both sides (IEEE fp32 add, multiply and
/// divide, fused multiply-add, comparisons, and an exact power of two built by integer work on a
/// float's bits), so the GPU kernel and the CPU reference agree bit for bit.
#pragma once

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define F8GEMM_ROWQ_FN __device__ __forceinline__
#else
#include <cmath>
#include <cstring>
#define F8GEMM_ROWQ_FN inline
#if defined(__FAST_MATH__)
#error "quantize_shared.cuh needs IEEE fp32 arithmetic on the host: build without -ffast-math"
#endif
// No contraction of a*b+c into an FMA on the host either: the device side uses __fmul_rn and
// __fadd_rn, which are never contracted, and the two must round alike.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
#endif

namespace f8gemm {
namespace dev {
namespace rowq {

/// One launch quantises `rows` rows of `cols` values each, in e4m3 with one fp32 scale per row:
///   amax = max |v| over the row (NaN skipped), clamped to the upper bound ub when ub > 0;
///   inv = 448 / max(amax, eps); q = e4m3_rn_satfinite(v * inv); scale = max(amax, eps) / 448.
/// A cluster of `cluster` CTAs (1, 2, 4 or 8: the launch attribute) shares each row: CTA r of a
/// cluster takes packs [r * chunk, (r + 1) * chunk) of it, and the CTAs exchange their maxima
/// through distributed shared memory. Clusters walk the rows grid-stride.
struct Params {
  const void* in;         ///< [rows, cols] values, or [rows, 2 * cols] gate | up for SiLU·mul
  unsigned char* q;       ///< [rows, cols] e4m3fn codes
  float* scale;           ///< [rows] dequantisation multipliers
  const float* scale_ub;  ///< one fp32 upper bound on amax in device memory, or null
  long long rows;
  long long cols;
  long long chunk;        ///< packs of one row that each CTA of a cluster takes
  float eps;
  float scale_ub_value;   ///< the bound when scale_ub is null (<= 0: none)
  int vectorized;         ///< 1: packs of 16 values (16-byte loads and stores), 0: of 1 value
  /// 1: each CTA lets the dependent grid (programmatic launch) be scheduled as it starts, so
  /// that the next kernel's launch and prologue overlap this one; 0: once it has written its
  /// rows. The host's choice (RowQuantizePlan::early_dependents): early only for up to 128 rows
  /// (perf log, card 77).
  int early_dependents;
};

/// Values per pack on the vectorised path: 16 e4m3 codes are one 16-byte store.
constexpr int kPackValues = 16;
/// Values each thread keeps in registers between the two passes over its packs; packs past
/// that are read a second time (from L2) instead of being kept.
constexpr int kRegisterValues = 16;
/// The wide entries (f8gemm_*_wide, bf16 and fp16 inputs) for large M keep more packs a thread
/// in registers than the narrow ones' one: the plain op 4 (64 values, as raw 16-bit words: 32
/// registers), SiLU·mul 2 (as floats). A row then needs fewer CTAs (the plain op no cluster up
/// to 16384 values) and has more bytes in flight between two row barriers, where one pack a
/// thread left the engine at 1.7-2.1 TB/s (perf log, card 73). Four SiLU·mul packs as floats
/// spilled in the fp16 entry (128 registers, the most ptxas gave these entries).
constexpr int kWidePacksPlain = 4;
constexpr int kWidePacksSiluMul = 2;
/// Rows from which the host plans the wide entries (plan_row_quantize), and from which it plans
/// the plain op's whatever its cluster: fewer rows are spread over clusters instead, which a
/// latency-bound short grid needs.
constexpr long long kWideMinRows = 128;
constexpr long long kWideAllRows = 2048;
/// Threads per CTA at most (8 warps: at one pack per thread a CTA covers 4096 values).
constexpr int kMaxThreads = 256;
/// CTAs per cluster at most (the portable limit).
constexpr int kMaxCluster = 8;

// ---- exact SiLU: g / (1 + exp(-g)) with one exp shared by the host and the device -----------

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
F8GEMM_ROWQ_FN float mul_rn(float a, float b) { return __fmul_rn(a, b); }
F8GEMM_ROWQ_FN float add_rn(float a, float b) { return __fadd_rn(a, b); }
F8GEMM_ROWQ_FN float div_rn(float a, float b) { return __fdiv_rn(a, b); }
F8GEMM_ROWQ_FN float fma_rn(float a, float b, float c) { return __fmaf_rn(a, b, c); }
F8GEMM_ROWQ_FN unsigned float_bits(float f) { return __float_as_uint(f); }
F8GEMM_ROWQ_FN float bits_float(unsigned u) { return __uint_as_float(u); }
#else
F8GEMM_ROWQ_FN float mul_rn(float a, float b) { return a * b; }
F8GEMM_ROWQ_FN float add_rn(float a, float b) { return a + b; }
F8GEMM_ROWQ_FN float div_rn(float a, float b) { return a / b; }
F8GEMM_ROWQ_FN float fma_rn(float a, float b, float c) { return std::fma(a, b, c); }
F8GEMM_ROWQ_FN unsigned float_bits(float f) {
  unsigned u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
F8GEMM_ROWQ_FN float bits_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
#endif

/// exp(t) in fp32 for t clamped to [-17, 89] by comparisons (a NaN, quiet or signalling, fails
/// both and clamps to -17 on the host and the device alike): within 2 ulp of exp(t) on
/// [-17, 88.7228] (0x1.62e42ep+6, the last float below ln FLT_MAX), +inf above it (exp
/// overflows), and about 4e-8 below -17, where 1 + exp(t) rounds to 1 all the same: all the SiLU
/// uses it for. The Taylor remainder past r^7 is below 2^-27 on the reduced range.
///   t = n ln2 + r with n = rint(t / ln2) and |r| <= ln2 / 2. n is rounded by adding 1.5 * 2^23:
///   the sum is an integer in [2^23, 2^24), rounded to even as rint does, whose low bits are n
///   (n comes out +0 where rint gives -0: the same r and p). ln2 is split in two parts (ln2_hi
///   has 16 significant bits, so n * ln2_hi is exact for |n| < 256); exp(r) by Horner in fused
///   multiply-adds; then two exact power-of-two multiplies, by 2^(n-1) (in the normal range for
///   every n in [-25, 128]) and by 2, which rounds to +inf exactly when exp(t) overflows.
/// Branch-free, and without conversions: the clamp replaces three per-value branches (a
/// BSSY/BSYNC frame around four BRA, three compares and two constant moves a value), and the
/// rounding by addition replaces FRND and F2I, which issue on the slow conversion pipe (perf log,
/// card 74). The rounding by addition needs IEEE arithmetic on the host: no -ffast-math (checked
/// above), which would fold (x + K) - K to x.
F8GEMM_ROWQ_FN float exp_clamped(float t) {
  float c = t > -17.0f ? t : -17.0f;
  c = c < 89.0f ? c : 89.0f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  const float s = add_rn(mul_rn(c, 1.44269502162933349609375f), kRound);  // fp32(1/ln2)
  const float n = add_rn(s, -kRound);
  float r = fma_rn(-n, 0.693145751953125f, c);        // ln2_hi = 0x1.62e4p-1
  r = fma_rn(-n, 1.428606765330187045e-06f, r);       // ln2_lo = ln2 - ln2_hi (fp32)
  float p = 1.0f / 5040.0f;
  p = fma_rn(p, r, 1.0f / 720.0f);
  p = fma_rn(p, r, 1.0f / 120.0f);
  p = fma_rn(p, r, 1.0f / 24.0f);
  p = fma_rn(p, r, 1.0f / 6.0f);
  p = fma_rn(p, r, 0.5f);
  p = fma_rn(p, r, 1.0f);
  p = fma_rn(p, r, 1.0f);
  // s's bits are those of 1.5 * 2^23 plus n, and 1.5 * 2^23's vanish when shifted by 23: the
  // shift leaves n << 23, and adding 126 << 23 makes 2^(n-1).
  const float half_scale = bits_float((float_bits(s) << 23) + (126u << 23));
  return mul_rn(mul_rn(p, half_scale), 2.0f);
}

/// SiLU(g) * u in fp32: g / (1 + exp(-g)) (IEEE division), times u. silu(-inf) is NaN and
/// silu(+inf) is +inf, as the formula gives (and as torch.nn.functional.silu gives); a NaN g
/// stays NaN through the division.
F8GEMM_ROWQ_FN float silu_mul(float g, float u) {
  return mul_rn(div_rn(g, add_rn(1.0f, exp_clamped(-g))), u);
}

}  // namespace rowq
}  // namespace dev
}  // namespace f8gemm

#if !defined(__CUDACC_RTC__) && !defined(__CUDACC__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
#undef F8GEMM_ROWQ_FN
