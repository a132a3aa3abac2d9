/// \brief Host-side numerics: exact e4m3fn decoding, rounding into e4m3/bf16/fp16, the fp64 CPU
/// reference GEMM, host quantisation and the host preshuffle. Tests and `--verify` use these.
#pragma once

#include <cstddef>
#include <cstdint>

#include "f8gemm/f8gemm.hpp"

namespace f8gemm::numerics {

/// Exact value of an e4m3fn code (bias 7, no infinities; 0x7f and 0xff are NaN; max 448).
float e4m3_to_float(uint8_t code);
/// The 256-entry decode table (same values as e4m3_to_float).
const float* e4m3_table();
/// Round to nearest even into e4m3fn, saturating finite overflow (and +-inf) to +-448; NaN -> 0x7f.
uint8_t float_to_e4m3(float value);

/// Round-to-nearest-even from double straight into bf16 / fp16 bits (no double rounding through
/// fp32). Overflow gives +-inf, NaN stays NaN (quiet).
uint16_t double_to_bf16(double value);
uint16_t double_to_f16(double value);
double bf16_to_double(uint16_t bits);
double f16_to_double(uint16_t bits);

/// Unit roundoff of an output type: 2^-8 for bf16, 2^-11 for fp16.
double unit_roundoff(DType out_dtype);

/// ---- Accuracy bounds: the one definition that the GPU tests, `run --verify`, `demo` and `tune`
/// apply (README "Accuracy" derives them) -----------------------------------------------------

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

/// Rounds count doubles into out_dtype (kBF16 or kF16) bits.
void round_output(const double* in, size_t count, DType out_dtype, uint16_t* out);

/// Host preshuffle of W [B,N,K] codes (N % 8 == 0, K % 16 == 0) into [B][ceil(K/128)][N/8][1024].
/// Slab (b, kb, nb) holds rows nb*8..nb*8+7 and k bytes kb*128..kb*128+127, zero-padded past K;
/// byte (r, c) of the slab (r < 8, c < 128) is stored at r*128 + (((c/16) ^ r) * 16) + c%16,
/// exactly what TMA's SWIZZLE_128B writes for an 8x128-byte box at a 1024-byte-aligned address.
void preshuffle_host(const uint8_t* w, int64_t batch, int64_t n, int64_t k, uint8_t* out);
/// Exact inverse of preshuffle_host (the padding is dropped).
void unshuffle_host(const uint8_t* shuffled, int64_t batch, int64_t n, int64_t k, uint8_t* w);

/// Host per-row quantisation of rows x cols values of in_dtype (kBF16, kF16 bits or kF32).
/// Per row, all in fp32 (the GPU kernel reproduces these operations bit for bit):
///   amax = fmaxf over |x| (fmaxf skips NaN); if (scale_ub > 0) amax = fminf(amax, scale_ub);
///   float inv = 448.0f / fmaxf(amax, eps); q = float_to_e4m3(x * inv);
///   scale = fmaxf(amax, eps) / 448.0f;
/// so a NaN element gives q = 0x7f, and an element with |x| = amax >= eps gives +-448 (0x7e/0xfe).
void quantize_rows_host(const void* in, DType in_dtype, int64_t rows, int64_t cols, float eps,
                        float scale_ub, uint8_t* q, float* scale);

}  // namespace f8gemm::numerics
