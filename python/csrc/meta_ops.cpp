/// \brief The Meta (fake) implementations of the PyTorch extension's ops (schemas in
/// schemas.cpp): output shapes and dtypes only, symbolic sizes allowed, for torch.compile,
/// torch.export and opcheck. Every one first requires all its tensors on the meta device
/// (require_meta). The GEMMs then check what the shape inference itself needs (ranks, the _out
/// forms' output dtype); preshuffle, unshuffle and quantize_fp8_row run the very rules of their
/// CPU/CUDA kernels (weight_ops.cpp, quantize_ops.cpp), so they reject what those reject; all
/// with the same error types as the CUDA implementations. The trailing `pdl` of the GEMM and
/// quantisation ops and `prefetch_w` of the single preshuffled GEMMs only say how a kernel is
/// launched and loads its weight: they change no shape, and are ignored here.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/SymInt.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "f8gemm/f8gemm.hpp"
#include "op_rules.hpp"

namespace f8gemm_torch {

/// An optional tensor argument for require_meta: null when absent.
const at::Tensor* present(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() ? &*t : nullptr;
}

/// scale_ub for require_meta: null when absent or on the CPU. The CPU/CUDA kernels take a CPU
/// scale_ub beside any input (quantize_ops.cpp pass_scale_ub), and a Meta kernel reads no value
/// and allocates on the input's device, so beside meta inputs a CPU one is as fine.
const at::Tensor* scale_ub_off_cpu(const std::optional<at::Tensor>& scale_ub) {
  const at::Tensor* t = present(scale_ub);
  return t != nullptr && t->is_cpu() ? nullptr : t;
}

/// Raises ValueError unless every (name, tensor) given is on the meta device (null: an absent
/// optional). The dispatcher runs the Meta kernel as soon as one tensor argument is on meta
/// (Meta outranks CPU and CUDA), so without this a call mixing a meta tensor with real ones
/// would return shapes only: an uninitialised tensor, allocated on the first tensor's device
/// (a real one, if that argument is real), where the caller expects a result. Under
/// FakeTensorMode (torch.compile, torch.export, opcheck) the fakes report the meta device
/// while their Meta kernel runs, whatever device they fake, so they pass.
void require_meta(const char* op,
                  std::initializer_list<std::pair<const char*, const at::Tensor*>> tensors) {
  const char* meta = nullptr;
  for (const auto& [name, t] : tensors) {
    if (t != nullptr && t->device().is_meta()) {
      meta = name;
      break;
    }
  }
  for (const auto& [name, t] : tensors) {
    if (t == nullptr || t->device().is_meta()) continue;
    const std::string where = meta ? c10::str(meta, " is on meta but ") : std::string("only ");
    C10_THROW_ERROR(ValueError,
                    c10::str("f8gemm.", op, ": invalid argument: ", where, name, " is on ",
                             t->device(), ": pass every tensor on one device, CUDA tensors "
                             "to compute or meta tensors (as torch.compile's fakes are) to "
                             "infer the output's shape"));
  }
}

namespace {

using f8gemm::WeightLayout;

c10::SymInt meta_weight_rows(const char* op, const at::Tensor& WQ, WeightLayout layout,
                             bool batched) {
  const int64_t lead = batched ? 1 : 0;
  if (layout == WeightLayout::kPlain) {
    if (WQ.dim() != 2 + lead) {
      C10_THROW_ERROR(ValueError,
                      c10::str("f8gemm.", op, ": invalid argument: WQ must be ", 2 + lead, "-D ",
                               batched ? "[B, N, K]" : "[N, K]", " (a plain weight), got ",
                               WQ.dim(), "-D",
                               WQ.dim() == 3 + lead ? " (use the _preshuffled op)" : ""));
    }
    return WQ.sym_size(lead);
  }
  if (WQ.dim() != 3 + lead) {
    C10_THROW_ERROR(ValueError,
                    c10::str("f8gemm.", op, ": invalid argument: WQ must be ", 3 + lead,
                             "-D preshuffled ",
                             batched ? "[B, ceil(K/128), N/8, 1024]" : "[ceil(K/128), N/8, 1024]",
                             ", got ", WQ.dim(), "-D",
                             WQ.dim() == 2 + lead ? " (WQ looks like a plain weight: pass "
                                                    "torch.ops.f8gemm.preshuffle(WQ))"
                                                  : ""));
  }
  return WQ.sym_size(lead + 1) * f8gemm::kShuffleSlabRows;
}

/// The output shape of a GEMM. silu_mul: the _silu_mul ops (f8gemm::EpilogueOp::kSiluMul),
/// whose output has N / 2 columns.
std::vector<c10::SymInt> meta_gemm_shape(const char* op, const at::Tensor& XQ,
                                         const at::Tensor& WQ, WeightLayout layout, bool batched,
                                         bool silu_mul) {
  c10::SymInt n = meta_weight_rows(op, WQ, layout, batched);
  if (silu_mul) n = n / 2;
  std::vector<c10::SymInt> shape;
  if (batched) {
    if (XQ.dim() != 3) {
      C10_THROW_ERROR(ValueError, c10::str("f8gemm.", op, ": invalid argument: XQ must be 3-D "
                                           "[B, M, K], got ", XQ.dim(), "-D"));
    }
    shape = {XQ.sym_size(0), XQ.sym_size(1), n};
  } else {
    if (XQ.dim() < 1) {
      C10_THROW_ERROR(ValueError, c10::str("f8gemm.", op, ": invalid argument: XQ must be "
                                           "[..., K] with at least 1 dimension"));
    }
    const auto sizes = XQ.sym_sizes();
    shape.assign(sizes.begin(), sizes.end() - 1);
    shape.push_back(n);
  }
  return shape;
}

/// The tensors of a GEMM call on meta (output: the _out forms' argument, else null).
void require_meta_gemm(const char* op, const at::Tensor& XQ, const at::Tensor& WQ,
                       const at::Tensor& x_scale, const at::Tensor& w_scale,
                       const std::optional<at::Tensor>& bias, const at::Tensor* output) {
  require_meta(op, {{"XQ", &XQ}, {"WQ", &WQ}, {"x_scale", &x_scale}, {"w_scale", &w_scale},
                    {"bias", present(bias)}, {"output", output}});
}

at::Tensor meta_gemm(const char* op, const at::Tensor& XQ, const at::Tensor& WQ,
                     const at::Tensor& x_scale, const at::Tensor& w_scale,
                     const std::optional<at::Tensor>& bias, WeightLayout layout, bool batched,
                     at::ScalarType out_dtype, bool silu_mul = false) {
  require_meta_gemm(op, XQ, WQ, x_scale, w_scale, bias, nullptr);
  return at::empty_symint(meta_gemm_shape(op, XQ, WQ, layout, batched, silu_mul),
                          XQ.options().dtype(out_dtype));
}

/// The _out forms: no result, but the checks of the functional form and output's dtype.
void meta_gemm_out(const char* op, const at::Tensor& XQ, const at::Tensor& WQ,
                   const at::Tensor& x_scale, const at::Tensor& w_scale,
                   const at::Tensor& output, const std::optional<at::Tensor>& bias,
                   WeightLayout layout, bool batched) {
  require_meta_gemm(op, XQ, WQ, x_scale, w_scale, bias, &output);
  require_out_dtype(op, output, at::ScalarType::BFloat16);
  (void)meta_gemm_shape(op, XQ, WQ, layout, batched, false);
}

// The GEMMs. Each names its tensors for require_meta.

at::Tensor f8f8bf16_rowwise_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                 const at::Tensor& x_scale, const at::Tensor& w_scale,
                                 const std::optional<at::Tensor>& bias, bool,
                                 std::optional<bool>) {
  return meta_gemm("f8f8bf16_rowwise", XQ, WQ, x_scale, w_scale, bias, WeightLayout::kPlain,
                   false, at::ScalarType::BFloat16);
}

at::Tensor f8f8f16_rowwise_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                const at::Tensor& x_scale, const at::Tensor& w_scale,
                                const std::optional<at::Tensor>& bias, bool,
                                std::optional<bool>) {
  return meta_gemm("f8f8f16_rowwise", XQ, WQ, x_scale, w_scale, bias, WeightLayout::kPlain,
                   false, at::ScalarType::Half);
}

void f8f8bf16_rowwise_out_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                               const at::Tensor& x_scale, const at::Tensor& w_scale,
                               const at::Tensor& output, const std::optional<at::Tensor>& bias,
                               bool, std::optional<bool>) {
  meta_gemm_out("f8f8bf16_rowwise_out", XQ, WQ, x_scale, w_scale, output, bias,
                WeightLayout::kPlain, false);
}

at::Tensor rowwise_batched_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                const at::Tensor& x_scale, const at::Tensor& w_scale,
                                const std::optional<at::Tensor>& bias, bool, bool preshuffled,
                                std::optional<bool>) {
  return meta_gemm(batched_name(preshuffled), XQ, WQ, x_scale, w_scale, bias,
                   preshuffled ? WeightLayout::kPreshuffled : WeightLayout::kPlain, true,
                   at::ScalarType::BFloat16);
}

void rowwise_batched_out_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                              const at::Tensor& x_scale, const at::Tensor& w_scale,
                              const at::Tensor& output, const std::optional<at::Tensor>& bias,
                              bool, bool preshuffled, std::optional<bool>) {
  meta_gemm_out(batched_name(preshuffled), XQ, WQ, x_scale, w_scale, output, bias,
                preshuffled ? WeightLayout::kPreshuffled : WeightLayout::kPlain, true);
}

at::Tensor f8f8bf16_rowwise_preshuffled_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                             const at::Tensor& x_scale, const at::Tensor& w_scale,
                                             const std::optional<at::Tensor>& bias, bool,
                                             std::optional<bool>, bool) {
  return meta_gemm("f8f8bf16_rowwise_preshuffled", XQ, WQ, x_scale, w_scale, bias,
                   WeightLayout::kPreshuffled, false, at::ScalarType::BFloat16);
}

at::Tensor f8f8f16_rowwise_preshuffled_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                            const at::Tensor& x_scale, const at::Tensor& w_scale,
                                            const std::optional<at::Tensor>& bias, bool,
                                            std::optional<bool>, bool) {
  return meta_gemm("f8f8f16_rowwise_preshuffled", XQ, WQ, x_scale, w_scale, bias,
                   WeightLayout::kPreshuffled, false, at::ScalarType::Half);
}

at::Tensor f8f8bf16_rowwise_silu_mul_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                          const at::Tensor& x_scale, const at::Tensor& w_scale,
                                          const std::optional<at::Tensor>& bias, bool,
                                          std::optional<bool>) {
  return meta_gemm("f8f8bf16_rowwise_silu_mul", XQ, WQ, x_scale, w_scale, bias,
                   WeightLayout::kPlain, false, at::ScalarType::BFloat16, true);
}

at::Tensor f8f8bf16_rowwise_preshuffled_silu_mul_meta(
    const at::Tensor& XQ, const at::Tensor& WQ, const at::Tensor& x_scale,
    const at::Tensor& w_scale, const std::optional<at::Tensor>& bias, bool, std::optional<bool>,
    bool) {
  return meta_gemm("f8f8bf16_rowwise_preshuffled_silu_mul", XQ, WQ, x_scale, w_scale, bias,
                   WeightLayout::kPreshuffled, false, at::ScalarType::BFloat16, true);
}

void f8f8bf16_rowwise_preshuffled_out_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                           const at::Tensor& x_scale, const at::Tensor& w_scale,
                                           const at::Tensor& output,
                                           const std::optional<at::Tensor>& bias, bool,
                                           std::optional<bool>, bool) {
  meta_gemm_out("f8f8bf16_rowwise_preshuffled_out", XQ, WQ, x_scale, w_scale, output, bias,
                WeightLayout::kPreshuffled, false);
}

// The weight layout and quantisation ops: the CPU/CUDA kernels' own rules.

at::Tensor preshuffle_meta(const at::Tensor& WQ) {
  require_meta("preshuffle", {{"WQ", &WQ}});
  return at::empty_symint(preshuffle_shape(WQ), WQ.options());
}

at::Tensor unshuffle_meta(const at::Tensor& WQ_shuffled, int64_t K) {
  require_meta("unshuffle", {{"WQ_shuffled", &WQ_shuffled}});
  return at::empty_symint(unshuffle_shape(WQ_shuffled, K), WQ_shuffled.options());
}

std::tuple<at::Tensor, at::Tensor> quantize_fp8_row_meta(const at::Tensor& a,
                                                         const std::optional<at::Tensor>& scale_ub,
                                                         bool,
                                                         const std::optional<at::Tensor>& output,
                                                         std::optional<bool>) {
  require_meta("quantize_fp8_row",
               {{"a", &a}, {"scale_ub", scale_ub_off_cpu(scale_ub)}, {"output", present(output)}});
  require_quantize_args(a, scale_ub, output);
  at::Tensor q = present(output)
                     ? *output
                     : at::empty_symint(a.sym_sizes(), a.options().dtype(at::ScalarType::Float8_e4m3fn));
  const auto sizes = a.sym_sizes();
  at::Tensor scale = at::empty_symint(sizes.slice(0, sizes.size() - 1),
                                      a.options().dtype(at::ScalarType::Float));
  return std::make_tuple(q, scale);
}

/// The grouped ops' output shape: [total_M, N] (stacked, XQ [total_M, K]) or [G, M_max, N]
/// (padded, XQ [G, M_max, K]), with N from WQ [G, N, K] or preshuffled
/// [G, ceil(K/128), N/8, 1024]; all tensors on meta first.
std::vector<c10::SymInt> meta_grouped_shape(const char* op, const at::Tensor& XQ,
                                            const at::Tensor& WQ, const at::Tensor& x_scale,
                                            const at::Tensor& w_scale, const at::Tensor& sizes,
                                            const at::Tensor* output,
                                            const std::optional<at::Tensor>& bias,
                                            WeightLayout layout, bool padded) {
  require_meta(op, {{"XQ", &XQ}, {"WQ", &WQ}, {"x_scale", &x_scale}, {"w_scale", &w_scale},
                    {padded ? "zero_start_index_M" : "M_sizes", &sizes}, {"output", output},
                    {"bias", present(bias)}});
  const int64_t w_rank = layout == WeightLayout::kPlain ? 3 : 4;
  if (WQ.dim() != w_rank) {
    C10_THROW_ERROR(ValueError,
                    c10::str("f8gemm.", op, ": invalid argument: WQ must be ", w_rank, "-D ",
                             layout == WeightLayout::kPlain
                                 ? "[G, N, K] (a plain weight)"
                                 : "preshuffled [G, ceil(K/128), N/8, 1024]",
                             ", got ", WQ.dim(), "-D",
                             layout == WeightLayout::kPlain && WQ.dim() == 4
                                 ? " (use the _preshuffled op)"
                             : layout == WeightLayout::kPreshuffled && WQ.dim() == 3
                                 ? " (WQ looks like a plain weight: pass "
                                   "torch.ops.f8gemm.preshuffle(WQ))"
                                 : ""));
  }
  const c10::SymInt n = layout == WeightLayout::kPlain
                            ? WQ.sym_size(1)
                            : WQ.sym_size(2) * f8gemm::kShuffleSlabRows;
  const int64_t x_rank = padded ? 3 : 2;
  if (XQ.dim() != x_rank) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.", op, ": invalid argument: XQ must be ", x_rank,
                                         "-D ", padded ? "[G, M_max, K]" : "[total_M, K]",
                                         ", got ", XQ.dim(), "-D"));
  }
  std::vector<c10::SymInt> shape = {XQ.sym_size(0)};
  if (padded) shape.push_back(XQ.sym_size(1));
  shape.push_back(n);
  return shape;
}

at::Tensor meta_grouped(const char* op, const at::Tensor& XQ, const at::Tensor& WQ,
                        const at::Tensor& x_scale, const at::Tensor& w_scale,
                        const at::Tensor& sizes, WeightLayout layout, bool padded) {
  static const std::optional<at::Tensor> kNoBias;
  return at::empty_symint(
      meta_grouped_shape(op, XQ, WQ, x_scale, w_scale, sizes, nullptr, kNoBias, layout, padded),
      XQ.options().dtype(at::ScalarType::BFloat16));
}

at::Tensor grouped_stacked_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                const at::Tensor& x_scale, const at::Tensor& w_scale,
                                const at::Tensor& M_sizes) {
  return meta_grouped("f8f8bf16_rowwise_grouped_stacked", XQ, WQ, x_scale, w_scale, M_sizes,
                      WeightLayout::kPlain, false);
}

at::Tensor grouped_stacked_preshuffled_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                            const at::Tensor& x_scale, const at::Tensor& w_scale,
                                            const at::Tensor& M_sizes) {
  return meta_grouped("f8f8bf16_rowwise_grouped_stacked_preshuffled", XQ, WQ, x_scale, w_scale,
                      M_sizes, WeightLayout::kPreshuffled, false);
}

void meta_grouped_out(const char* op, const at::Tensor& XQ, const at::Tensor& WQ,
                      const at::Tensor& x_scale, const at::Tensor& w_scale,
                      const at::Tensor& M_sizes, const at::Tensor& output,
                      const std::optional<at::Tensor>& bias, WeightLayout layout) {
  (void)meta_grouped_shape(op, XQ, WQ, x_scale, w_scale, M_sizes, &output, bias, layout, false);
  require_out_dtype(op, output, at::ScalarType::BFloat16);
}

void grouped_stacked_out_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                              const at::Tensor& x_scale, const at::Tensor& w_scale,
                              const at::Tensor& M_sizes, const at::Tensor& output,
                              const std::optional<at::Tensor>& bias, bool) {
  meta_grouped_out("f8f8bf16_rowwise_grouped_stacked_out", XQ, WQ, x_scale, w_scale, M_sizes,
                   output, bias, WeightLayout::kPlain);
}

void grouped_stacked_preshuffled_out_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                          const at::Tensor& x_scale, const at::Tensor& w_scale,
                                          const at::Tensor& M_sizes, const at::Tensor& output,
                                          const std::optional<at::Tensor>& bias, bool) {
  meta_grouped_out("f8f8bf16_rowwise_grouped_stacked_preshuffled_out", XQ, WQ, x_scale, w_scale,
                   M_sizes, output, bias, WeightLayout::kPreshuffled);
}

at::Tensor grouped_dynamic_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                const at::Tensor& x_scale, const at::Tensor& w_scale,
                                const at::Tensor& zero_start_index_M, bool) {
  return meta_grouped("f8f8bf16_rowwise_grouped_dynamic", XQ, WQ, x_scale, w_scale,
                      zero_start_index_M, WeightLayout::kPlain, true);
}

at::Tensor grouped_dynamic_preshuffled_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                            const at::Tensor& x_scale, const at::Tensor& w_scale,
                                            const at::Tensor& zero_start_index_M, bool) {
  return meta_grouped("f8f8bf16_rowwise_grouped_dynamic_preshuffled", XQ, WQ, x_scale, w_scale,
                      zero_start_index_M, WeightLayout::kPreshuffled, true);
}

}  // namespace
}  // namespace f8gemm_torch

TORCH_LIBRARY_IMPL(f8gemm, Meta, m) {
  m.impl("f8f8bf16_rowwise_grouped_stacked", TORCH_FN(f8gemm_torch::grouped_stacked_meta));
  m.impl("f8f8bf16_rowwise_grouped_stacked_preshuffled",
         TORCH_FN(f8gemm_torch::grouped_stacked_preshuffled_meta));
  m.impl("f8f8bf16_rowwise_grouped_stacked_out", TORCH_FN(f8gemm_torch::grouped_stacked_out_meta));
  m.impl("f8f8bf16_rowwise_grouped_stacked_preshuffled_out",
         TORCH_FN(f8gemm_torch::grouped_stacked_preshuffled_out_meta));
  m.impl("f8f8bf16_rowwise_grouped_dynamic", TORCH_FN(f8gemm_torch::grouped_dynamic_meta));
  m.impl("f8f8bf16_rowwise_grouped_dynamic_preshuffled",
         TORCH_FN(f8gemm_torch::grouped_dynamic_preshuffled_meta));
  m.impl("f8f8bf16_rowwise", TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_meta));
  m.impl("f8f8bf16_rowwise_out", TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_out_meta));
  m.impl("f8f8f16_rowwise", TORCH_FN(f8gemm_torch::f8f8f16_rowwise_meta));
  m.impl("_rowwise_batched", TORCH_FN(f8gemm_torch::rowwise_batched_meta));
  m.impl("_rowwise_batched_out", TORCH_FN(f8gemm_torch::rowwise_batched_out_meta));
  m.impl("f8f8bf16_rowwise_preshuffled",
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_preshuffled_meta));
  m.impl("f8f8bf16_rowwise_preshuffled_out",
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_preshuffled_out_meta));
  m.impl("f8f8f16_rowwise_preshuffled", TORCH_FN(f8gemm_torch::f8f8f16_rowwise_preshuffled_meta));
  m.impl("f8f8bf16_rowwise_silu_mul", TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_silu_mul_meta));
  m.impl("f8f8bf16_rowwise_preshuffled_silu_mul",
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_preshuffled_silu_mul_meta));
  m.impl("preshuffle", TORCH_FN(f8gemm_torch::preshuffle_meta));
  m.impl("unshuffle", TORCH_FN(f8gemm_torch::unshuffle_meta));
  m.impl("quantize_fp8_row", TORCH_FN(f8gemm_torch::quantize_fp8_row_meta));
  m.impl("f8f8bf16_rowwise_preshuffle",
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_preshuffled_meta));
  m.impl("f8f8f16_rowwise_preshuffle", TORCH_FN(f8gemm_torch::f8f8f16_rowwise_preshuffled_meta));
}
