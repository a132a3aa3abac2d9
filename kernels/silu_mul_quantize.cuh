/// \brief The fused SiLU·mul·quantise op (silu_mul_quantize_fp8_row): h = SiLU(gate) * up, then
/// rowwise e4m3 quantisation of h, in one kernel (the row engine of quantize_rows.cuh).
///
/// gate_up is [rows, 2 * cols], a merged gate|up GEMM's output: gate is columns [0, cols) and up
/// columns [cols, 2 * cols). h is computed in fp32 by rowq::silu_mul (quantize_shared.cuh), the
/// same arithmetic the CPU reference runs, and it never leaves registers: the op reads 2 * cols
/// values and writes cols codes and one scale per row. The f8gemm_silu_mul_quantize_*_wide
/// entries (bf16 and fp16, for large M) keep two packs a thread instead of one.
#pragma once

#include "quantize_rows.cuh"

namespace f8gemm {
namespace dev {
namespace rowq {

template <int kIn>
struct SiluMulOp {
  // The wide entries keep two packs a thread, as floats: h costs a SiLU a value to recompute.
  static constexpr int kWidePacks = kWidePacksSiluMul;
  static constexpr Keep kWideKeep = Keep::kValues;
  template <int kW>
  static __device__ __forceinline__ void load(const Params& p, i64 row, i64 col, float (&v)[kW]) {
    const i64 gate = row * 2 * p.cols + col, up = gate + p.cols;
    if constexpr (kIn == kF32 || kW == 1) {
      float u[kW];
      load_values<kIn, kW>(p.in, gate, v);
      load_values<kIn, kW>(p.in, up, u);
#pragma unroll
      for (int e = 0; e < kW; ++e) v[e] = silu_mul(v[e], u[e]);
    } else {
      // 16-bit packs stay raw words until each value's SiLU: decoded up front, gate and up took
      // 32 floats a pack instead of 16 words, and the wide entry 99 registers instead of 74
      // (card 74).
      static_assert(kW == kPackValues, "16-bit values load as whole packs");
      u32 gw[kPackValues / 2], uw[kPackValues / 2];
      load_words(p.in, gate, gw);
      load_words(p.in, up, uw);
#pragma unroll
      for (int e = 0; e < kW; ++e) {
        v[e] = silu_mul(decode_word<kIn>(gw[e / 2], e % 2), decode_word<kIn>(uw[e / 2], e % 2));
      }
    }
  }
};

}  // namespace rowq

extern "C" __global__ void __launch_bounds__(rowq::kMaxThreads)
    f8gemm_silu_mul_quantize_f32(const __grid_constant__ rowq::Params p) {
  rowq::quantize_rows_entry<rowq::SiluMulOp<rowq::kF32>>(p);
}
extern "C" __global__ void __launch_bounds__(rowq::kMaxThreads)
    f8gemm_silu_mul_quantize_bf16(const __grid_constant__ rowq::Params p) {
  rowq::quantize_rows_entry<rowq::SiluMulOp<rowq::kBF16>>(p);
}
extern "C" __global__ void __launch_bounds__(rowq::kMaxThreads)
    f8gemm_silu_mul_quantize_f16(const __grid_constant__ rowq::Params p) {
  rowq::quantize_rows_entry<rowq::SiluMulOp<rowq::kF16>>(p);
}
extern "C" __global__ void __launch_bounds__(rowq::kMaxThreads)
    f8gemm_silu_mul_quantize_bf16_wide(const __grid_constant__ rowq::Params p) {
  rowq::quantize_rows_entry<rowq::SiluMulOp<rowq::kBF16>, true>(p);
}
extern "C" __global__ void __launch_bounds__(rowq::kMaxThreads)
    f8gemm_silu_mul_quantize_f16_wide(const __grid_constant__ rowq::Params p) {
  rowq::quantize_rows_entry<rowq::SiluMulOp<rowq::kF16>, true>(p);
}

}  // namespace dev
}  // namespace f8gemm
