/// \brief The Meta (fake) implementations of the PyTorch extension's ops (schemas in
/// schemas.cpp): output shapes and dtypes only, symbolic sizes allowed, for torch.compile,
/// torch.export and opcheck. Every one first requires all its tensors on the meta device
/// (require_meta), then refuses what its CPU/CUDA kernel refuses before it touches memory, with
/// the same rules in the same order and the same errors: the GEMMs and grouped GEMMs run the
/// library's shape checks (check_gemm_shapes, check_grouped_shapes: dtypes, ranks, K % 16,
/// N % 8, the padded preshuffled shape, the scales', bias' and output's shapes, the index
/// limits) over the views their CPU/CUDA kernels build (gemm_ops.cpp, grouped_ops.cpp), and
/// preshuffle, unshuffle and quantize_fp8_row the rules of weight_ops.cpp and quantize_ops.cpp.
/// A symbolic size is checked only where the trace has made it a constant: each rule that needs
/// an unknown size is skipped, and none adds a guard. What is left for the call is what needs
/// memory or a GPU (placement, alignment, overlap, a plan). The trailing `pdl` of the GEMM and
/// quantisation ops and `prefetch_w` of the single preshuffled GEMMs only say how a kernel is
/// launched and loads its weight: they change no shape.
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

#include "binding.hpp"
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

/// The tensors of a GEMM call on meta (output: the _out forms' argument, else null).
void require_meta_gemm(const GemmArgs& a, const at::Tensor* output) {
  require_meta(a.op, {{"XQ", &a.XQ}, {"WQ", &a.WQ}, {"x_scale", &a.x_scale},
                      {"w_scale", &a.w_scale}, {"bias", present(a.bias)}, {"output", output}});
}

/// The functional GEMMs: the checks over the output's shape as the CPU/CUDA kernel allocates
/// it, then the output.
at::Tensor meta_gemm(const GemmArgs& a, at::ScalarType out_dtype) {
  require_meta_gemm(a, nullptr);
  const std::vector<c10::SymInt> shape = gemm_out_shape(a);
  check_gemm_shapes(a, shape, out_dtype);
  return at::empty_symint(shape, a.XQ.options().dtype(out_dtype));
}

/// The _out forms: output's dtype first, as the CPU/CUDA kernel checks it, then the shapes.
void meta_gemm_out(const GemmArgs& a, const at::Tensor& output) {
  require_meta_gemm(a, &output);
  require_out_dtype(a.op, output, at::ScalarType::BFloat16);
  check_gemm_shapes(a, output);
}

WeightLayout layout_of(bool preshuffled) {
  return preshuffled ? WeightLayout::kPreshuffled : WeightLayout::kPlain;
}

// The GEMMs, with the arguments their CPU/CUDA kernels pass (gemm_ops.cpp).

at::Tensor f8f8bf16_rowwise_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                 const at::Tensor& x_scale, const at::Tensor& w_scale,
                                 const std::optional<at::Tensor>& bias, bool use_fast_accum,
                                 std::optional<bool> pdl) {
  return meta_gemm({"f8f8bf16_rowwise", XQ, WQ, x_scale, w_scale, bias, use_fast_accum,
                    WeightLayout::kPlain, false, to_pdl(pdl), false},
                   at::ScalarType::BFloat16);
}

at::Tensor f8f8f16_rowwise_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                const at::Tensor& x_scale, const at::Tensor& w_scale,
                                const std::optional<at::Tensor>& bias, bool use_fast_accum,
                                std::optional<bool> pdl) {
  return meta_gemm({"f8f8f16_rowwise", XQ, WQ, x_scale, w_scale, bias, use_fast_accum,
                    WeightLayout::kPlain, false, to_pdl(pdl), false},
                   at::ScalarType::Half);
}

void f8f8bf16_rowwise_out_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                               const at::Tensor& x_scale, const at::Tensor& w_scale,
                               const at::Tensor& output, const std::optional<at::Tensor>& bias,
                               bool use_fast_accum, std::optional<bool> pdl) {
  meta_gemm_out({"f8f8bf16_rowwise_out", XQ, WQ, x_scale, w_scale, bias, use_fast_accum,
                 WeightLayout::kPlain, false, to_pdl(pdl), false},
                output);
}

at::Tensor rowwise_batched_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                const at::Tensor& x_scale, const at::Tensor& w_scale,
                                const std::optional<at::Tensor>& bias, bool use_fast_accum,
                                bool preshuffled, std::optional<bool> pdl) {
  return meta_gemm({batched_name(preshuffled), XQ, WQ, x_scale, w_scale, bias, use_fast_accum,
                    layout_of(preshuffled), true, to_pdl(pdl), false},
                   at::ScalarType::BFloat16);
}

void rowwise_batched_out_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                              const at::Tensor& x_scale, const at::Tensor& w_scale,
                              const at::Tensor& output, const std::optional<at::Tensor>& bias,
                              bool use_fast_accum, bool preshuffled, std::optional<bool> pdl) {
  meta_gemm_out({batched_name(preshuffled), XQ, WQ, x_scale, w_scale, bias, use_fast_accum,
                 layout_of(preshuffled), true, to_pdl(pdl), false},
                output);
}

at::Tensor f8f8bf16_rowwise_preshuffled_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                             const at::Tensor& x_scale, const at::Tensor& w_scale,
                                             const std::optional<at::Tensor>& bias,
                                             bool use_fast_accum, std::optional<bool> pdl,
                                             bool prefetch_w) {
  return meta_gemm({"f8f8bf16_rowwise_preshuffled", XQ, WQ, x_scale, w_scale, bias,
                    use_fast_accum, WeightLayout::kPreshuffled, false, to_pdl(pdl), prefetch_w},
                   at::ScalarType::BFloat16);
}

at::Tensor f8f8f16_rowwise_preshuffled_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                            const at::Tensor& x_scale, const at::Tensor& w_scale,
                                            const std::optional<at::Tensor>& bias,
                                            bool use_fast_accum, std::optional<bool> pdl,
                                            bool prefetch_w) {
  return meta_gemm({"f8f8f16_rowwise_preshuffled", XQ, WQ, x_scale, w_scale, bias,
                    use_fast_accum, WeightLayout::kPreshuffled, false, to_pdl(pdl), prefetch_w},
                   at::ScalarType::Half);
}

at::Tensor f8f8bf16_rowwise_silu_mul_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                          const at::Tensor& x_scale, const at::Tensor& w_scale,
                                          const std::optional<at::Tensor>& bias,
                                          bool use_fast_accum, std::optional<bool> pdl) {
  return meta_gemm({"f8f8bf16_rowwise_silu_mul", XQ, WQ, x_scale, w_scale, bias, use_fast_accum,
                    WeightLayout::kPlain, false, to_pdl(pdl), false,
                    f8gemm::EpilogueOp::kSiluMul},
                   at::ScalarType::BFloat16);
}

at::Tensor f8f8bf16_rowwise_preshuffled_silu_mul_meta(
    const at::Tensor& XQ, const at::Tensor& WQ, const at::Tensor& x_scale,
    const at::Tensor& w_scale, const std::optional<at::Tensor>& bias, bool use_fast_accum,
    std::optional<bool> pdl, bool prefetch_w) {
  return meta_gemm({"f8f8bf16_rowwise_preshuffled_silu_mul", XQ, WQ, x_scale, w_scale, bias,
                    use_fast_accum, WeightLayout::kPreshuffled, false, to_pdl(pdl), prefetch_w,
                    f8gemm::EpilogueOp::kSiluMul},
                   at::ScalarType::BFloat16);
}

void f8f8bf16_rowwise_preshuffled_out_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                           const at::Tensor& x_scale, const at::Tensor& w_scale,
                                           const at::Tensor& output,
                                           const std::optional<at::Tensor>& bias,
                                           bool use_fast_accum, std::optional<bool> pdl,
                                           bool prefetch_w) {
  meta_gemm_out({"f8f8bf16_rowwise_preshuffled_out", XQ, WQ, x_scale, w_scale, bias,
                 use_fast_accum, WeightLayout::kPreshuffled, false, to_pdl(pdl), prefetch_w},
                output);
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

/// The tensors of a grouped call on meta (output: the _out forms' argument, else null).
void require_meta_grouped(const GroupedArgs& a, const at::Tensor* output) {
  require_meta(a.op, {{"XQ", &a.XQ}, {"WQ", &a.WQ}, {"x_scale", &a.x_scale},
                      {"w_scale", &a.w_scale},
                      {a.padded ? "zero_start_index_M" : "M_sizes", &a.sizes},
                      {"output", output}, {"bias", present(a.bias)}});
}

/// The functional grouped ops (no bias, fast accumulation, as their CPU/CUDA kernels pass).
at::Tensor meta_grouped(const char* op, const at::Tensor& XQ, const at::Tensor& WQ,
                        const at::Tensor& x_scale, const at::Tensor& w_scale,
                        const at::Tensor& sizes, WeightLayout layout, bool padded) {
  static const std::optional<at::Tensor> kNoBias;
  const GroupedArgs a{op, XQ, WQ, x_scale, w_scale, sizes, kNoBias, true, layout, padded};
  require_meta_grouped(a, nullptr);
  const std::vector<c10::SymInt> shape = grouped_out_shape(a);
  check_grouped_shapes(a, shape);
  return at::empty_symint(shape, XQ.options().dtype(at::ScalarType::BFloat16));
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

/// The _out forms: output's dtype first, as the CPU/CUDA kernel checks it, then the shapes.
void meta_grouped_out(const char* op, const at::Tensor& XQ, const at::Tensor& WQ,
                      const at::Tensor& x_scale, const at::Tensor& w_scale,
                      const at::Tensor& M_sizes, const at::Tensor& output,
                      const std::optional<at::Tensor>& bias, bool use_fast_accum,
                      WeightLayout layout) {
  const GroupedArgs a{op, XQ, WQ, x_scale, w_scale, M_sizes, bias, use_fast_accum, layout, false};
  require_meta_grouped(a, &output);
  require_out_dtype(op, output, at::ScalarType::BFloat16);
  check_grouped_shapes(a, output);
}

void grouped_stacked_out_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                              const at::Tensor& x_scale, const at::Tensor& w_scale,
                              const at::Tensor& M_sizes, const at::Tensor& output,
                              const std::optional<at::Tensor>& bias, bool use_fast_accum) {
  meta_grouped_out("f8f8bf16_rowwise_grouped_stacked_out", XQ, WQ, x_scale, w_scale, M_sizes,
                   output, bias, use_fast_accum, WeightLayout::kPlain);
}

void grouped_stacked_preshuffled_out_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                          const at::Tensor& x_scale, const at::Tensor& w_scale,
                                          const at::Tensor& M_sizes, const at::Tensor& output,
                                          const std::optional<at::Tensor>& bias,
                                          bool use_fast_accum) {
  meta_grouped_out("f8f8bf16_rowwise_grouped_stacked_preshuffled_out", XQ, WQ, x_scale, w_scale,
                   M_sizes, output, bias, use_fast_accum, WeightLayout::kPreshuffled);
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
