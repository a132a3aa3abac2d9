/// \brief The fused activation ops of f8gemm's PyTorch extension (schema in schemas.cpp): the
/// CUDA and CPU implementation over the C++ API, and the Meta (fake) implementation.
///
///   silu_mul_quantize_fp8_row(Tensor gate_up, Tensor? scale_ub=None, bool? pdl=None)
///       -> (Tensor, Tensor)
///
/// gate_up [..., 2I] bf16/fp16/fp32 (gate | up, a merged gate_up GEMM's output) gives
/// (q [..., I] float8_e4m3fn, scale [...] fp32): h = SiLU(gate) * up in fp32, then rowwise e4m3
/// exactly as quantize_fp8_row. scale_ub (an upper bound on each row's max |h|, one fp32) lives
/// where quantize_fp8_row's does (quantize_ops.cpp pass_scale_ub): on gate_up's device, where
/// the kernel reads it, or on the CPU. pdl: QuantizeOptions::pdl (binding.hpp to_pdl), ignored
/// on the CPU. Bad arguments raise ValueError.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "binding.hpp"
#include "f8gemm/f8gemm.hpp"
#include "op_rules.hpp"

namespace f8gemm_torch_fused {
namespace {

using f8gemm::DType;
using f8gemm::TensorView;

constexpr const char* kOp = "silu_mul_quantize_fp8_row";

[[noreturn]] void invalid(const std::string& message) {
  C10_THROW_ERROR(ValueError, std::string("f8gemm.") + kOp + ": invalid argument: " + message);
}

/// A torch tensor as a TensorView (CPU tensors as host views); ValueError for what a view
/// cannot express.
TensorView view_of(const at::Tensor& t, const char* name) {
  TensorView v;
  switch (t.scalar_type()) {
    case at::ScalarType::Float8_e4m3fn: v.dtype = DType::kE4M3; break;
    case at::ScalarType::BFloat16: v.dtype = DType::kBF16; break;
    case at::ScalarType::Half: v.dtype = DType::kF16; break;
    case at::ScalarType::Float: v.dtype = DType::kF32; break;
    default:
      invalid(c10::str(name, " must be torch.bfloat16, torch.float16 or torch.float32, got ",
                       t.scalar_type()));
  }
  if (t.dim() > f8gemm::kMaxRank) {
    invalid(c10::str(name, " has ", t.dim(), " dimensions (shape ", t.sizes(), "); at most ",
                     f8gemm::kMaxRank, " are supported: flatten the leading ones"));
  }
  if (t.is_cuda()) {
    v.device = t.get_device();
  } else if (t.is_cpu()) {
    v.device = f8gemm::kHost;
  } else {
    invalid(c10::str(name, " must be a CUDA or CPU tensor, got one on ", t.device()));
  }
  v.rank = static_cast<int>(t.dim());
  int64_t stride = 1;
  for (int i = v.rank - 1; i >= 0; --i) {
    v.shape[i] = t.size(i);
    // An empty tensor addresses nothing: give it the row-major strides the library expects.
    v.stride[i] = t.numel() == 0 ? stride : t.stride(i);
    stride *= t.size(i);
  }
  v.data = t.numel() > 0 ? t.data_ptr() : nullptr;
  return v;
}

/// The op's names for the library's arguments: its messages say q and scale.
const f8gemm::QuantizeArgNames kNames{"gate_up", "q", "scale"};

/// gate_up's rule, for the CPU/CUDA kernel and the Meta kernel alike (symbolic sizes allowed):
/// [..., 2I] bf16, fp16 or fp32 with 2I positive (a row of no values has no scale) and even,
/// and the row rules (require_rows: rank and row count). Returns q's shape [..., I].
std::vector<c10::SymInt> require_gate_up(const at::Tensor& gate_up) {
  if (gate_up.dim() < 1) invalid("gate_up must be [..., 2I], got a 0-dimensional tensor");
  const auto dtype = gate_up.scalar_type();
  if (dtype != at::ScalarType::BFloat16 && dtype != at::ScalarType::Half &&
      dtype != at::ScalarType::Float) {
    invalid(c10::str("gate_up must be torch.bfloat16, torch.float16 or torch.float32, got ",
                     f8gemm_torch::torch_dtype_name(dtype)));
  }
  const auto sizes = gate_up.sym_sizes();
  const c10::SymInt width = sizes[sizes.size() - 1];
  if (width <= 0 || width % 2 != 0) {
    invalid(c10::str("gate_up's last dimension must be positive and must be even (gate | up, "
                     "2I), got shape ", sizes));
  }
  f8gemm_torch::require_rows(kOp, "gate_up", gate_up);
  std::vector<c10::SymInt> q_shape(sizes.begin(), sizes.end());
  q_shape.back() = width / 2;
  return q_shape;
}

std::tuple<at::Tensor, at::Tensor> silu_mul_quantize_fp8_row(
    const at::Tensor& gate_up, const std::optional<at::Tensor>& scale_ub,
    std::optional<bool> pdl) {
  std::vector<int64_t> q_shape;
  for (const c10::SymInt& s : require_gate_up(gate_up)) q_shape.push_back(s.expect_int());
  const TensorView in = view_of(gate_up, "gate_up");
  f8gemm::QuantizeOptions opt;
  opt.pdl = f8gemm_torch::to_pdl(pdl);
  TensorView ub_view;
  f8gemm_torch::pass_scale_ub(kOp, "gate_up", gate_up, scale_ub, ub_view, opt);
  opt.names = &kNames;
  try {
    // Every check of the call before anything is allocated: an expanded gate_up would
    // otherwise get outputs as large as its logical shape.
    f8gemm::check_silu_mul_quantize_rows(
        in,
        f8gemm_torch::unallocated_output_view(c10::fromIntArrayRefSlow(q_shape),
                                              at::ScalarType::Float8_e4m3fn, in.device),
        f8gemm_torch::unallocated_output_view(gate_up.sym_sizes().slice(0, gate_up.dim() - 1),
                                              at::ScalarType::Float, in.device, 1),
        opt);
  } catch (const f8gemm::Error& e) {
    f8gemm_torch::rethrow(kOp, e);
  }
  at::Tensor q = at::empty(q_shape, gate_up.options().dtype(at::ScalarType::Float8_e4m3fn));
  at::Tensor scale = at::empty(gate_up.sizes().slice(0, gate_up.dim() - 1),
                               gate_up.options().dtype(at::ScalarType::Float));
  c10::cuda::OptionalCUDAGuard guard;
  if (gate_up.is_cuda()) {
    guard.set_index(gate_up.get_device());
    opt.stream = c10::cuda::getCurrentCUDAStream(gate_up.get_device()).stream();
  }
  try {
    f8gemm::silu_mul_quantize_rows(in, view_of(q, "q"), view_of(scale, "scale"), opt);
  } catch (const f8gemm::Error& e) {
    f8gemm_torch::rethrow(kOp, e);
  }
  return std::make_tuple(q, scale);
}

/// Shapes and dtypes only (symbolic sizes allowed), with the same shape errors.
std::tuple<at::Tensor, at::Tensor> silu_mul_quantize_fp8_row_meta(
    const at::Tensor& gate_up, const std::optional<at::Tensor>& scale_ub, std::optional<bool>) {
  f8gemm_torch::require_meta(kOp, {{"gate_up", &gate_up},
                                   {"scale_ub", f8gemm_torch::scale_ub_off_cpu(scale_ub)}});
  const std::vector<c10::SymInt> q_shape = require_gate_up(gate_up);
  if (scale_ub.has_value() && scale_ub->defined()) {
    f8gemm_torch::require_scale_ub_form(kOp, *scale_ub);
  }
  const auto sizes = gate_up.sym_sizes();
  at::Tensor q =
      at::empty_symint(q_shape, gate_up.options().dtype(at::ScalarType::Float8_e4m3fn));
  at::Tensor scale = at::empty_symint(sizes.slice(0, sizes.size() - 1),
                                      gate_up.options().dtype(at::ScalarType::Float));
  return std::make_tuple(q, scale);
}

}  // namespace
}  // namespace f8gemm_torch_fused

TORCH_LIBRARY_IMPL(f8gemm, CUDA, m) {
  m.impl("silu_mul_quantize_fp8_row", TORCH_FN(f8gemm_torch_fused::silu_mul_quantize_fp8_row));
}

TORCH_LIBRARY_IMPL(f8gemm, CPU, m) {
  m.impl("silu_mul_quantize_fp8_row", TORCH_FN(f8gemm_torch_fused::silu_mul_quantize_fp8_row));
}

TORCH_LIBRARY_IMPL(f8gemm, Meta, m) {
  m.impl("silu_mul_quantize_fp8_row",
         TORCH_FN(f8gemm_torch_fused::silu_mul_quantize_fp8_row_meta));
}
