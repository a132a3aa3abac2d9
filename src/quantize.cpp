/// \brief Rowwise e4m3 quantisation on the host side: the launch plan and launcher of the row
/// engine (quantize_rows() and silu_mul_quantize_rows()), and the CPU reference of the fused op.
#include "quantize.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "../kernels/quantize_shared.cuh"
#include "check.hpp"
#include "validate.hpp"
#include "codegen.hpp"
#include "device.hpp"
#include "launch.hpp"
#include "numerics.hpp"

namespace f8gemm {

namespace rowq = dev::rowq;

namespace detail {
namespace {

/// Packs each thread keeps in registers on the narrow path: mirrors quantize_rows_entry.
int register_packs(bool vectorized) {
  return vectorized ? rowq::kRegisterValues / rowq::kPackValues : 4;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Rows up to which a grid lets its dependents in as its CTAs start (RowQuantizePlan::
/// early_dependents): the decode rows, where the next kernel's launch and prologue under this
/// one's work were worth about 2 µs at 16 rows on an H100, and where the block measured level
/// either way at 128 and 256 rows; from 512 rows the early trigger slowed a persistent GEMM
/// after it by up to 1.5x (perf log, card 77).
constexpr int64_t kEarlyDependentsMaxRows = 128;

/// The cluster, chunk, threads and grid of one engine form that keeps per_thread packs a thread
/// in registers.
RowQuantizePlan shape_plan(int64_t rows, int64_t packs, int64_t per_thread, int sm_count) {
  RowQuantizePlan plan;
  const int64_t per_cta = int64_t(rowq::kMaxThreads) * per_thread;  // held in registers
  int cluster = 1;
  while (cluster < rowq::kMaxCluster && ceil_div(packs, cluster) > per_cta) cluster *= 2;
  // Small M: the grid leaves SMs idle, so spread each row wider while a CTA keeps >= 4 warps.
  while (cluster < rowq::kMaxCluster && rows * cluster * 2 <= sm_count &&
         ceil_div(packs, cluster * 2) >= 128 * per_thread) {
    cluster *= 2;
  }
  plan.cluster = cluster;
  plan.chunk = ceil_div(packs, cluster);
  const int64_t threads = ceil_div(ceil_div(plan.chunk, per_thread), 32) * 32;
  plan.threads = int(std::clamp<int64_t>(threads, 32, rowq::kMaxThreads));
  // 16 CTAs per SM is more than can be resident: the grid is never the limit, and a huge M is
  // walked grid-stride rather than launched as billions of CTAs.
  plan.clusters = std::min<int64_t>(rows, std::max<int64_t>(1, int64_t(sm_count) * 16 / cluster));
  plan.early_dependents = rows <= kEarlyDependentsMaxRows;
  return plan;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

/// The bound on amax that the host path applies, and a check of scale_ub_tensor.
float host_scale_ub(const TensorView& input, const QuantizeOptions& opt) {
  if (opt.scale_ub_tensor == nullptr) return opt.scale_ub;
  const TensorView& ub = *opt.scale_ub_tensor;  // require_rows_and_layout: a valid view
  F8GEMM_REQUIRE(ub.dtype == DType::kF32 && ub.numel() == 1, kInvalidArgument,
                 "scale_ub must be one float32 value, got ", ub.numel(), " values of ",
                 to_string(ub.dtype));
  F8GEMM_REQUIRE(ub.data != nullptr && reinterpret_cast<uintptr_t>(ub.data) % 4 == 0,
                 kInvalidArgument, "scale_ub must be a 4-byte aligned, non-null pointer");
  F8GEMM_REQUIRE(ub.device == input.device, kInvalidArgument,
                 "scale_ub must be in the input's memory (", input.device == kHost ? "host" : "GPU",
                 " ", input.device == kHost ? "" : std::to_string(input.device), "), got ",
                 ub.device == kHost ? std::string("host memory") : "GPU " + std::to_string(ub.device));
  if (input.device != kHost) return 0.0f;  // read by the kernel
  return *static_cast<const float*>(ub.data);
}

/// The engine entry for an input type, op and plan (the _wide entries exist for bf16 and fp16
/// only: plan_row_quantize plans them for those alone).
const char* entry_name(DType in, RowOp op, bool wide) {
  if (op == RowOp::kSiluMul) {
    if (wide) {
      return in == DType::kBF16 ? "f8gemm_silu_mul_quantize_bf16_wide"
                                : "f8gemm_silu_mul_quantize_f16_wide";
    }
    return in == DType::kF32    ? "f8gemm_silu_mul_quantize_f32"
           : in == DType::kBF16 ? "f8gemm_silu_mul_quantize_bf16"
                                : "f8gemm_silu_mul_quantize_f16";
  }
  if (wide) return in == DType::kBF16 ? "f8gemm_quantize_bf16_wide" : "f8gemm_quantize_f16_wide";
  return in == DType::kF32 ? "f8gemm_quantize_f32"
         : in == DType::kBF16 ? "f8gemm_quantize_bf16"
                              : "f8gemm_quantize_f16";
}

/// Launches the row engine's entry for `op` over rows x cols (gate_up: in holds 2 * cols values
/// a row).
void launch_rows(RowOp op, const TensorView& input, int64_t rows, int64_t cols,
                 const TensorView& out_q, const TensorView& out_scale, const QuantizeOptions& opt) {
  const auto& props = require_sm90(input.device);
  const bool vectorized = cols % rowq::kPackValues == 0 && aligned16(input.data) &&
                          aligned16(out_q.data);
  const RowQuantizePlan plan = plan_row_quantize(rows, cols, vectorized, props.sm_count, op,
                                                 dtype_size(input.dtype) == 2);
  rowq::Params p{};
  p.in = input.data;
  p.q = static_cast<unsigned char*>(out_q.data);
  p.scale = static_cast<float*>(out_scale.data);
  p.scale_ub = opt.scale_ub_tensor ? static_cast<const float*>(opt.scale_ub_tensor->data) : nullptr;
  p.rows = rows;
  p.cols = cols;
  p.chunk = plan.chunk;
  p.eps = opt.eps;
  p.scale_ub_value = opt.scale_ub;
  p.vectorized = plan.vectorized ? 1 : 0;
  p.early_dependents = plan.early_dependents ? 1 : 0;
  DeviceGuard guard(input.device);  // before the kernel lookup, a runtime call (launch.cpp)
  cudaKernel_t kernel = util_instance()->kernel(entry_name(input.dtype, op, plan.wide));
  void* args[] = {&p};
  launch(kernel, int(plan.clusters * plan.cluster), plan.cluster, plan.threads, 0, opt.stream,
         args, input.device, opt.pdl);
}

/// The names the messages give the input, the codes and the scales (a null one, which would be
/// streamed into a message, keeps the default).
struct ArgNames {
  const char* in;
  const char* q;
  const char* s;
};
ArgNames arg_names(const QuantizeOptions& opt, const char* default_input) {
  static const QuantizeArgNames kDefaultNames;
  const QuantizeArgNames& names = opt.names ? *opt.names : kDefaultNames;
  return {names.input ? names.input : default_input,
          names.out_q ? names.out_q : kDefaultNames.out_q,
          names.out_scale ? names.out_scale : kDefaultNames.out_scale};
}

void require_float_input(const TensorView& input, const char* in) {
  F8GEMM_REQUIRE(input.dtype == DType::kBF16 || input.dtype == DType::kF16 ||
                     input.dtype == DType::kF32,
                 kInvalidArgument, in, " must be bfloat16, float16 or float32, got ",
                 to_string(input.dtype));
}

void require_output_dtypes(const TensorView& out_q, const TensorView& out_scale,
                           const ArgNames& n) {
  F8GEMM_REQUIRE(out_q.dtype == DType::kE4M3, kInvalidArgument,
                 n.q, " must be float8_e4m3fn, got ", to_string(out_q.dtype));
  F8GEMM_REQUIRE(out_scale.dtype == DType::kF32, kInvalidArgument,
                 n.s, " must be float32, got ", to_string(out_scale.dtype));
}

/// The views of both entry points, before any shape is read: a hand-built view may hold
/// anything (require_view).
void require_row_views(const TensorView& input, const TensorView& out_q,
                       const TensorView& out_scale, const ArgNames& n) {
  require_view(input, n.in);
  require_view(out_q, n.q);
  require_view(out_scale, n.s);
  F8GEMM_REQUIRE(input.rank >= 1, kInvalidArgument, n.in, " must be [..., K] with at least 1 "
                 "dimension, got shape ", shape_str(input));
}

/// What both entry points check once the shapes agree: eps, the row count's limit, dense rows in
/// all three tensors, one memory for them, and outputs that share no byte with the input, with
/// each other or with scale_ub (the kernel reads those while it writes the outputs).
void require_rows_and_layout(const TensorView& input, const TensorView& out_q,
                             const TensorView& out_scale, const ArgNames& n, int64_t rows,
                             const QuantizeOptions& opt) {
  F8GEMM_REQUIRE(opt.eps > 0.0f && std::isfinite(opt.eps), kInvalidArgument,
                 "eps must be positive and finite, got ", opt.eps);
  F8GEMM_REQUIRE(rows <= INT32_MAX, kInvalidArgument, "too many rows: ", rows);
  require_pdl(opt.pdl, "QuantizeOptions::pdl");
  require_contiguous(input, n.in, dtype_size(input.dtype));
  require_contiguous(out_q, n.q, 1);
  require_contiguous(out_scale, n.s, 4);
  require_same_place(input, n.in, out_q, n.q);
  require_same_place(input, n.in, out_scale, n.s);
  require_disjoint(out_q, n.q, input, n.in);
  require_disjoint(out_scale, n.s, input, n.in);
  require_disjoint(out_scale, n.s, out_q, n.q);
  if (opt.scale_ub_tensor != nullptr) {
    require_view(*opt.scale_ub_tensor, "scale_ub");
    require_disjoint(out_q, n.q, *opt.scale_ub_tensor, "scale_ub");
    require_disjoint(out_scale, n.s, *opt.scale_ub_tensor, "scale_ub");
  }
}

}  // namespace

RowQuantizePlan plan_row_quantize(int64_t rows, int64_t cols, bool vectorized, int sm_count,
                                  RowOp op, bool sixteen_bit_input) {
  const int64_t packs = vectorized ? cols / rowq::kPackValues : cols;
  RowQuantizePlan plan = shape_plan(rows, packs, register_packs(vectorized), sm_count);
  plan.vectorized = vectorized;
  if (!vectorized || !sixteen_bit_input || rows < rowq::kWideMinRows) return plan;
  // The wide entries (quantize_shared.cuh). The plain op's four packs a thread pay where they
  // hold a row in fewer CTAs than one pack does (a smaller cluster, or none), or from
  // kWideAllRows rows on; below that, with the same cluster, they were 4-11% slower. SiLU·mul's
  // two packs were 0-13% faster from kWideMinRows rows on (perf log, card 73).
  const bool silu = op == RowOp::kSiluMul;
  RowQuantizePlan wide = shape_plan(
      rows, packs, silu ? rowq::kWidePacksSiluMul : rowq::kWidePacksPlain, sm_count);
  if (silu || wide.cluster < plan.cluster || rows >= rowq::kWideAllRows) {
    wide.vectorized = true;
    wide.wide = true;
    return wide;
  }
  return plan;
}

void quantize_rows_checked(const TensorView& input, int64_t rows, int64_t cols,
                           const TensorView& out_q, const TensorView& out_scale,
                           const QuantizeOptions& opt) {
  const float ub = host_scale_ub(input, opt);
  if (input.device == kHost) {
    numerics::quantize_rows_host(input.data, input.dtype, rows, cols, opt.eps, ub,
                                 static_cast<uint8_t*>(out_q.data),
                                 static_cast<float*>(out_scale.data));
    return;
  }
  launch_rows(RowOp::kPlain, input, rows, cols, out_q, out_scale, opt);
}

}  // namespace detail

namespace {

/// silu_mul_quantize_rows()'s checks; returns its rows.
int64_t checked_silu_mul_rows(const TensorView& gate_up, const TensorView& out_q,
                              const TensorView& out_scale, const QuantizeOptions& opt) {
  const detail::ArgNames n = detail::arg_names(opt, "gate_up");
  const char* in = n.in;
  const char* q = n.q;
  const char* s = n.s;
  detail::require_float_input(gate_up, in);
  detail::require_output_dtypes(out_q, out_scale, n);
  detail::require_row_views(gate_up, out_q, out_scale, n);
  const int64_t width = gate_up.shape[gate_up.rank - 1];
  F8GEMM_REQUIRE(width > 0 && width % 2 == 0, kInvalidArgument, in,
                 "'s last dimension must be positive and even (gate | up, 2I), got ", width);
  const int64_t cols = width / 2;
  bool q_ok = out_q.rank == gate_up.rank;
  for (int i = 0; q_ok && i < gate_up.rank; ++i) {
    q_ok = out_q.shape[i] == (i + 1 == gate_up.rank ? cols : gate_up.shape[i]);
  }
  F8GEMM_REQUIRE(q_ok, kInvalidArgument, q, " must have ", in, "'s shape with the last dimension "
                 "halved (I = ", cols, ")");
  int64_t rows = 1;
  for (int i = 0; i + 1 < gate_up.rank; ++i) rows *= gate_up.shape[i];
  bool s_ok = out_scale.numel() == rows;
  if (s_ok && out_scale.rank == gate_up.rank - 1) {
    for (int i = 0; s_ok && i < out_scale.rank; ++i) s_ok = out_scale.shape[i] == gate_up.shape[i];
  }
  F8GEMM_REQUIRE(s_ok, kInvalidArgument, s, " must hold one value per row (", rows,
                 "), got ", out_scale.numel());
  detail::require_rows_and_layout(gate_up, out_q, out_scale, n, rows, opt);
  return rows;
}

/// quantize_rows()'s checks; returns its rows.
int64_t checked_quantize_rows(const TensorView& input, const TensorView& out_q,
                              const TensorView& out_scale, const QuantizeOptions& opt) {
  const detail::ArgNames n = detail::arg_names(opt, "input");
  const char* in = n.in;
  const char* q = n.q;
  const char* s = n.s;
  detail::require_float_input(input, in);
  detail::require_output_dtypes(out_q, out_scale, n);
  detail::require_row_views(input, out_q, out_scale, n);
  bool q_ok = out_q.rank == input.rank;
  for (int i = 0; q_ok && i < input.rank; ++i) q_ok = out_q.shape[i] == input.shape[i];
  // The C++ default reads "the input's shape"; a caller's name reads "a's shape".
  F8GEMM_REQUIRE(q_ok, kInvalidArgument, q, " must have ",
                 opt.names && opt.names->input ? detail::concat(in, "'s")
                                               : std::string("the input's"),
                 " shape");
  const int64_t cols = input.shape[input.rank - 1];
  // A row of no values has no amax and so no scale: K = 0 would leave out_scale unwritten.
  F8GEMM_REQUIRE(cols > 0, kInvalidArgument, "K (", in, "'s last dimension) must be positive, "
                 "got shape ", detail::shape_str(input));
  const int64_t rows = input.numel() / cols;
  F8GEMM_REQUIRE(out_scale.numel() == rows, kInvalidArgument, s, " must hold one value per row (",
                 rows, "), got ", out_scale.numel());
  detail::require_rows_and_layout(input, out_q, out_scale, n, rows, opt);
  return rows;
}

}  // namespace

void check_silu_mul_quantize_rows(const TensorView& gate_up, const TensorView& out_q,
                                  const TensorView& out_scale, const QuantizeOptions& opt) {
  (void)checked_silu_mul_rows(gate_up, out_q, out_scale, opt);
}

void check_quantize_rows(const TensorView& input, const TensorView& out_q,
                         const TensorView& out_scale, const QuantizeOptions& opt) {
  (void)checked_quantize_rows(input, out_q, out_scale, opt);
}

void silu_mul_quantize_rows(const TensorView& gate_up, const TensorView& out_q,
                            const TensorView& out_scale, const QuantizeOptions& opt) {
  const int64_t rows = checked_silu_mul_rows(gate_up, out_q, out_scale, opt);
  const int64_t cols = gate_up.shape[gate_up.rank - 1] / 2;
  const float ub = detail::host_scale_ub(gate_up, opt);
  if (rows == 0) return;
  if (gate_up.device == kHost) {
    numerics::silu_mul_quantize_rows_host(gate_up.data, gate_up.dtype, rows, cols, opt.eps, ub,
                                          static_cast<uint8_t*>(out_q.data),
                                          static_cast<float*>(out_scale.data));
    return;
  }
  detail::launch_rows(detail::RowOp::kSiluMul, gate_up, rows, cols, out_q,
                      out_scale, opt);
}

namespace numerics {

float silu_mul(float g, float u) { return rowq::silu_mul(g, u); }

void silu_mul_quantize_rows_host(const void* gate_up, DType in_dtype, int64_t rows, int64_t cols,
                                 float eps, float scale_ub, uint8_t* q, float* scale) {
  F8GEMM_REQUIRE(in_dtype == DType::kBF16 || in_dtype == DType::kF16 || in_dtype == DType::kF32,
                 kInvalidArgument, "silu_mul_quantize_rows_host: in_dtype must be bf16, fp16 or "
                 "fp32, got ", to_string(in_dtype));
  F8GEMM_REQUIRE(rows >= 0 && cols >= 0, kInvalidArgument,
                 "silu_mul_quantize_rows_host: negative size (rows=", rows, ", cols=", cols, ")");
  auto value = [&](int64_t i) -> float {
    switch (in_dtype) {
      case DType::kF32: return static_cast<const float*>(gate_up)[i];
      case DType::kBF16: return float(bf16_to_double(static_cast<const uint16_t*>(gate_up)[i]));
      default: return float(f16_to_double(static_cast<const uint16_t*>(gate_up)[i]));
    }
  };
  std::vector<float> h(static_cast<size_t>(cols));
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t base = row * 2 * cols;
    for (int64_t c = 0; c < cols; ++c) h[c] = silu_mul(value(base + c), value(base + cols + c));
    // The same fp32 operations as quantize_rows_host on h (so one definition of the rounding).
    quantize_rows_host(h.data(), DType::kF32, 1, cols, eps, scale_ub, q + row * cols,
                       scale + row);
  }
}

}  // namespace numerics

void quantize_rows(const TensorView& input, const TensorView& out_q, const TensorView& out_scale,
                   const QuantizeOptions& opt) {
  const int64_t rows = checked_quantize_rows(input, out_q, out_scale, opt);
  const int64_t cols = input.shape[input.rank - 1];
  if (rows == 0) return;
  detail::quantize_rows_checked(input, rows, cols, out_q, out_scale, opt);
}

}  // namespace f8gemm
