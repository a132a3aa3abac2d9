/// \brief The quantisation op of the PyTorch extension (schema in schemas.cpp): quantize_fp8_row
/// over f8gemm::quantize_rows, on CUDA or CPU tensors; the argument rules that its Meta kernel
/// (meta_ops.cpp) shares with it; and scale_ub's placement, shared with
/// silu_mul_quantize_fp8_row (fused_ops.cpp).
#include <ATen/core/Tensor.h>
#include <c10/core/SymInt.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "binding.hpp"
#include "f8gemm/f8gemm.hpp"
#include "op_rules.hpp"

namespace f8gemm_torch {

namespace {

using f8gemm::TensorView;

[[noreturn]] void invalid(const char* op, const std::string& message) {
  C10_THROW_ERROR(ValueError, c10::str("f8gemm.", op, ": invalid argument: ", message));
}

}  // namespace

/// scale_ub's form, before anything reads it: one fp32 value (the Meta kernels check it too).
void require_scale_ub_form(const char* op, const at::Tensor& ub) {
  if (ub.sym_numel() != 1 || ub.scalar_type() != at::ScalarType::Float) {
    invalid(op, c10::str("scale_ub must be a 1-element torch.float32 tensor, got shape ",
                         ub.sym_sizes(), " and dtype ", torch_dtype_name(ub.scalar_type())));
  }
}

/// scale_ub of the quantising ops into `opt`. On `input`'s GPU the kernel reads it (`view` then
/// holds its view): no host sync, legal inside CUDA-graph capture, and a value <= 0 or NaN there
/// means no bound. A CPU scale_ub is read on the host, which costs no sync, and must be positive
/// and finite, whether the input is on the CPU or a GPU (one rule for both). Anywhere else
/// (another GPU) it is refused: reading it would be a device-to-host copy on that GPU's stream,
/// a sync outside capture and an error inside one.
void pass_scale_ub(const char* op, const char* input_name, const at::Tensor& input,
                   const std::optional<at::Tensor>& scale_ub, TensorView& view,
                   f8gemm::QuantizeOptions& opt) {
  if (!scale_ub.has_value() || !scale_ub->defined()) return;
  const at::Tensor& ub = *scale_ub;
  require_scale_ub_form(op, ub);
  if (ub.is_cuda() && ub.device() == input.device()) {
    view = view_of(ub, op, "scale_ub", "torch.float32");
    opt.scale_ub_tensor = &view;
    return;
  }
  if (!ub.is_cpu()) {
    invalid(op, c10::str("scale_ub must be on ", input_name, "'s device (", input.device(),
                         ") or on the CPU, got ", ub.device(), ": move it there once, e.g. "
                         "scale_ub.to(", input_name, ".device)"));
  }
  const float value = ub.item<float>();  // host memory: no sync
  if (!(value > 0.0f) || value > 3.0e38f) {
    invalid(op, c10::str("scale_ub must be positive and finite, got ", value));
  }
  opt.scale_ub = value;
}

/// The row rules of the quantising ops' input [..., K], for the CPU/CUDA kernels and the Meta
/// kernels alike (symbolic sizes allowed: a rule whose sizes are not all known is skipped, no
/// guard added), before any output is allocated: at most kMaxRank dimensions (a TensorView's)
/// and at most INT32_MAX rows (the library's row limit).
void require_rows(const char* op, const char* name, const at::Tensor& input) {
  if (input.dim() > f8gemm::kMaxRank) {
    invalid(op, c10::str(name, " has ", input.dim(), " dimensions (shape ", input.sym_sizes(),
                         "); at most ", f8gemm::kMaxRank,
                         " are supported: flatten the leading ones"));
  }
  int64_t rows = 1;
  for (int64_t i = 0; i + 1 < input.dim(); ++i) {
    const std::optional<int64_t> size = input.sym_size(i).maybe_as_int();
    if (!size) return;  // a symbolic size: the call checks it
    rows *= *size;      // at most numel / K, and K > 0: no overflow
  }
  if (rows > INT32_MAX) {
    invalid(op, c10::str(name, " has too many rows: shape ", input.sym_sizes(), " makes ", rows,
                         " rows, at most ", INT32_MAX, " are supported: split the call"));
  }
}

/// quantize_fp8_row's arguments as the library will see them, checked by the CPU/CUDA kernel
/// and the Meta kernel alike (symbolic sizes allowed): a [..., K] bf16, fp16 or fp32 with K > 0
/// (a row of no values has no amax and so no scale: it would be left unwritten) and the row
/// rules (require_rows), scale_ub one fp32, output float8_e4m3fn of a's shape.
void require_quantize_args(const at::Tensor& a, const std::optional<at::Tensor>& scale_ub,
                           const std::optional<at::Tensor>& output) {
  const char* op = "quantize_fp8_row";
  if (a.dim() < 1) {
    invalid(op, "a must have at least 1 dimension ([..., K]), got a 0-dimensional tensor");
  }
  const at::ScalarType s = a.scalar_type();
  if (s != at::ScalarType::BFloat16 && s != at::ScalarType::Half && s != at::ScalarType::Float) {
    invalid(op, c10::str("a must have dtype torch.bfloat16, torch.float16 or torch.float32, got ",
                         torch_dtype_name(s)));
  }
  if (a.sym_size(-1) <= 0) {
    invalid(op, c10::str("the row length K (a's last dimension) must be positive, got shape ",
                         a.sym_sizes(), ": a row of no values has no scale (M = 0 rows of K > 0 "
                         "values are fine); skip the call for an empty K"));
  }
  require_rows(op, "a", a);
  if (scale_ub.has_value() && scale_ub->defined()) require_scale_ub_form(op, *scale_ub);
  if (output.has_value() && output->defined()) {
    if (output->scalar_type() != at::ScalarType::Float8_e4m3fn) {
      invalid(op, c10::str("output must be float8_e4m3fn, got ",
                           bare_dtype_name(output->scalar_type())));
    }
    if (output->sym_sizes() != a.sym_sizes()) {
      invalid(op, c10::str("output must have a's shape ", a.sym_sizes(), ", got ",
                           output->sym_sizes()));
    }
  }
}

namespace {

/// Rowwise quantisation (FBGEMM's quantize_fp8_row): returns (a_fp8, scale) with scale of shape
/// a.shape[:-1] (fp32, the dequantisation multiplier). use_triton is accepted and ignored.
/// scale_ub: a 1-element fp32 tensor on a's device or the CPU (pass_scale_ub). pdl:
/// QuantizeOptions::pdl (to_pdl); a CPU call launches nothing and ignores it.
std::tuple<at::Tensor, at::Tensor> quantize_fp8_row(const at::Tensor& a,
                                                    const std::optional<at::Tensor>& scale_ub,
                                                    bool use_triton,
                                                    const std::optional<at::Tensor>& output,
                                                    std::optional<bool> pdl) {
  (void)use_triton;
  const char* op = "quantize_fp8_row";
  require_quantize_args(a, scale_ub, output);
  f8gemm::QuantizeOptions opt;
  opt.pdl = to_pdl(pdl);
  TensorView ub_view;
  pass_scale_ub(op, "a", a, scale_ub, ub_view, opt);
  const TensorView in = view_of(a, op, "a", "torch.bfloat16, torch.float16 or torch.float32");
  static const f8gemm::QuantizeArgNames names{"a", "output", "scale"};
  opt.names = &names;
  const bool given = output.has_value() && output->defined();
  TensorView qv = given ? view_of(*output, op, "output", "torch.float8_e4m3fn")
                        : unallocated_output_view(a.sym_sizes(), at::ScalarType::Float8_e4m3fn,
                                                  in.device);
  try {
    // Every check of the call before anything is allocated: an expanded `a` would otherwise
    // get outputs as large as its logical shape.
    f8gemm::check_quantize_rows(
        in, qv,
        unallocated_output_view(a.sym_sizes().slice(0, a.dim() - 1), at::ScalarType::Float,
                                in.device, 1),
        opt);
  } catch (const f8gemm::Error& e) {
    rethrow(op, e);
  }
  at::Tensor q = given ? *output : new_empty(a, a.sizes(), at::ScalarType::Float8_e4m3fn);
  if (!given) qv = view_of(q, op, "output", "torch.float8_e4m3fn");
  at::Tensor scale = new_empty(a, a.sizes().slice(0, a.dim() - 1), at::ScalarType::Float);
  const TensorView sv = view_of(scale, op, "scale", "torch.float32");
  OnDevice on(a);
  opt.stream = on.stream;
  try {
    f8gemm::quantize_rows(in, qv, sv, opt);
  } catch (const f8gemm::Error& e) {
    rethrow(op, e);
  }
  return std::make_tuple(q, scale);
}

}  // namespace
}  // namespace f8gemm_torch

TORCH_LIBRARY_IMPL(f8gemm, CUDA, m) {
  m.impl("quantize_fp8_row", TORCH_FN(f8gemm_torch::quantize_fp8_row));
}

TORCH_LIBRARY_IMPL(f8gemm, CPU, m) {
  m.impl("quantize_fp8_row", TORCH_FN(f8gemm_torch::quantize_fp8_row));
}
