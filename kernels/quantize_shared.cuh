/// \brief What the host and the device share for the rowwise e4m3 quantisation kernels
/// (quantize_rows.cuh, silu_mul_quantize.cuh): the parameter block and the exact SiLU arithmetic.
///
/// Both compilers include this file: NVRTC (device code, no include path, no toolkit header) and
/// the host compiler (the launcher in src/quantize.cpp and the CPU reference). The SiLU below is
/// written once, in operations that round identically on both sides (IEEE fp32 add, multiply and
/// divide, fused multiply-add, round-to-nearest-even to an integer, exact power-of-two scaling),
/// so the GPU kernel and the CPU reference agree bit for bit.
#pragma once

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define F8GEMM_ROWQ_FN __device__ __forceinline__
#else
#include <cmath>
#include <cstring>
#define F8GEMM_ROWQ_FN inline
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
F8GEMM_ROWQ_FN float round_even(float a) { return rintf(a); }
F8GEMM_ROWQ_FN float pow2(int e) { return __int_as_float((e + 127) << 23); }
#else
F8GEMM_ROWQ_FN float mul_rn(float a, float b) { return a * b; }
F8GEMM_ROWQ_FN float add_rn(float a, float b) { return a + b; }
F8GEMM_ROWQ_FN float div_rn(float a, float b) { return a / b; }
F8GEMM_ROWQ_FN float fma_rn(float a, float b, float c) { return std::fma(a, b, c); }
F8GEMM_ROWQ_FN float round_even(float a) { return std::nearbyint(a); }  // ties to even
F8GEMM_ROWQ_FN float pow2(int e) {
  const unsigned bits = static_cast<unsigned>(e + 127) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
#endif

/// exp(t) in fp32 within 2 ulp (the Taylor remainder past r^7 is below 2^-27 on the reduced
/// range). t = n ln2 + r with n = rint(t / ln2) and |r| <= ln2 / 2, ln2 split in two parts
/// (ln2_hi has 16 significant bits, so n * ln2_hi is exact for |n| < 256); exp(r) by Horner in
/// fused multiply-adds; then two exact power-of-two multiplies (2^(n/2) * 2^(n - n/2) stays in the
/// normal range for every n here, and the second rounds to +inf exactly when exp(t) overflows).
/// Below t = -17, exp(t) < 2^-24 is returned as 0: 1 + exp(t) rounds to 1 either way, which is
/// all the SiLU uses it for.
F8GEMM_ROWQ_FN float silu_exp(float t) {
  if (t != t) return t;
  if (t < -17.0f) return 0.0f;
  if (t > 89.0f) return mul_rn(pow2(127), pow2(127));  // +inf: exp(89) > FLT_MAX
  const float n = round_even(mul_rn(t, 1.44269502162933349609375f));  // fp32(1/ln2)
  float r = fma_rn(-n, 0.693145751953125f, t);        // ln2_hi = 0x1.62e4p-1
  r = fma_rn(-n, 1.428606765330187045e-06f, r);       // ln2_lo = ln2 - ln2_hi (fp32)
  float p = 1.0f / 5040.0f;
  p = fma_rn(p, r, 1.0f / 720.0f);
  p = fma_rn(p, r, 1.0f / 120.0f);
  p = fma_rn(p, r, 1.0f / 24.0f);
  p = fma_rn(p, r, 1.0f / 6.0f);
  p = fma_rn(p, r, 0.5f);
  p = fma_rn(p, r, 1.0f);
  p = fma_rn(p, r, 1.0f);
  const int ni = static_cast<int>(n);  // in [-25, 129]
  const int half = ni / 2;
  return mul_rn(mul_rn(p, pow2(half)), pow2(ni - half));
}

/// SiLU(g) * u in fp32: g / (1 + exp(-g)) (IEEE division), times u. silu(-inf) is NaN and
/// silu(+inf) is +inf, as the formula gives (and as torch.nn.functional.silu gives).
F8GEMM_ROWQ_FN float silu_mul(float g, float u) {
  return mul_rn(div_rn(g, add_rn(1.0f, silu_exp(-g))), u);
}

}  // namespace rowq
}  // namespace dev
}  // namespace f8gemm

#if !defined(__CUDACC_RTC__) && !defined(__CUDACC__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
#undef F8GEMM_ROWQ_FN
