/// \brief The rowwise e4m3 quantisation kernels' host side: the launch plan (cluster size, threads,
/// grid), the launcher, and the CPU reference of the fused SiLU·mul·quantise op.
#pragma once

#include <cstdint>

#include "f8gemm/f8gemm.hpp"

namespace f8gemm::detail {

/// How one launch of the row engine (kernels/quantize_rows.cuh) is shaped.
struct RowQuantizePlan {
  bool vectorized = false;  ///< 16-value packs (16-byte loads and stores) or single values
  bool wide = false;        ///< the wide entries (more packs a thread in registers)
  int cluster = 1;          ///< CTAs that share one row (1, 2, 4 or 8)
  int threads = 32;         ///< per CTA (a multiple of 32, at most 256)
  int64_t chunk = 0;        ///< packs of a row per CTA
  int64_t clusters = 0;     ///< clusters in the grid (they walk the rows grid-stride)
  /// The grid lets the next kernel (programmatic launch) be scheduled as its CTAs start, not
  /// once they are done (rowq::Params::early_dependents): only for up to 128 rows (the decode
  /// rows). A persistent GEMM scheduled while a quantisation of 512 or 2048 rows still ran, on
  /// the SMs its CTAs left one by one, was slow in every tile, up to 1.5x, on an H100 (perf
  /// log, card 77).
  bool early_dependents = true;
};

/// The row engine's two ops: quantize_fp8_row's and silu_mul_quantize_fp8_row's.
enum class RowOp { kPlain, kSiluMul };

/// The plan for `rows` rows of `cols` output values of `op` on a GPU of `sm_count` SMs;
/// `vectorized` says whether cols and the pointers allow 16-value packs. A row goes to as few
/// CTAs as hold it in registers at one pack per thread, and, while the grid leaves most SMs idle
/// (small M), to twice as many while each keeps at least 4 warps of work: a short row is
/// latency-bound, and more SMs bring more load bandwidth to it. From rowq::kWideMinRows
/// vectorised rows of bf16 or fp16 (sixteen_bit_input) on, the wide entries may take over
/// (quantize_shared.cuh; the rule and its measurements in the definition).
RowQuantizePlan plan_row_quantize(int64_t rows, int64_t cols, bool vectorized, int sm_count,
                                  RowOp op = RowOp::kPlain, bool sixteen_bit_input = false);

/// The body of quantize_rows() after its argument checks (rows x cols values, rows >= 1,
/// cols >= 1): checks options.scale_ub_tensor, then runs on the host or launches on the device.
void quantize_rows_checked(const TensorView& input, int64_t rows, int64_t cols,
                           const TensorView& out_q, const TensorView& out_scale,
                           const QuantizeOptions& options);

}  // namespace f8gemm::detail

namespace f8gemm::numerics {

/// SiLU(g) * u in fp32 exactly as the GPU kernel computes it (kernels/quantize_shared.cuh):
/// g / (1 + exp(-g)) * u with the library's own exp (within 2 ulp of exp), IEEE operations.
float silu_mul(float g, float u);

/// The CPU reference of silu_mul_quantize_rows(): gate_up is rows x (2 * cols) values of
/// in_dtype (kBF16, kF16 bits or kF32); per row, h[c] = silu_mul(gate_up[c], gate_up[cols + c])
/// and then exactly quantize_rows_host's operations on h (amax, scale_ub, eps, inv, e4m3).
void silu_mul_quantize_rows_host(const void* gate_up, DType in_dtype, int64_t rows, int64_t cols,
                                 float eps, float scale_ub, uint8_t* q, float* scale);

}  // namespace f8gemm::numerics
