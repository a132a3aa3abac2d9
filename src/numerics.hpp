/// \brief Host-side numerics the library runs: exact e4m3fn decoding, rounding into
/// e4m3/bf16/fp16, host quantisation and the host preshuffle (preshuffle(), unshuffle() and
/// quantize_rows() on host views). The fp64 reference GEMM and the accuracy bounds that check
/// results are test support: testing/reference.hpp.
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
