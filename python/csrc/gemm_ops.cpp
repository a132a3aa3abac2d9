/// \brief The GEMM ops of the PyTorch extension (schemas in schemas.cpp): f8f8bf16_rowwise and
/// its FBGEMM/MSLK siblings over f8gemm::gemm and f8gemm::batched_gemm, for CUDA tensors (CPU
/// tensors reach the same code and the library rejects them: "XQ must be in GPU memory").
///
/// Every op runs on its tensors' device (a CUDA guard) and on that device's current torch
/// stream. Inputs are validated by the library under the op's argument names (XQ, WQ, output),
/// never copied (no .contiguous()): the only allocation is the output, made once every argument
/// has passed the library's checks (check_functional_call). Inside CUDA-graph capture,
/// a GEMM whose plan is not built (f8gemm::is_ready) raises a RuntimeError telling the user to
/// precompile instead of compiling during the capture. The trailing `pdl` (schemas.cpp) becomes
/// GemmOptions::pdl: programmatic dependent launch for this call, or the library's default. The
/// single preshuffled ops' `prefetch_w` becomes GemmOptions::prefetch_w (WQ is final: with PDL
/// its first ring slots load before the grid-dependency wait); every other op passes false.
/// The same views, shapes only, serve the Meta kernels (meta_ops.cpp): check_gemm_shapes runs the
/// library's shape rules over them, so that a traced call refuses what this one refuses.
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "binding.hpp"
#include "f8gemm/f8gemm.hpp"
#include "op_rules.hpp"

namespace f8gemm_torch {

/// The _out ops' output dtype, for their CPU/CUDA kernels (here and grouped_ops.cpp) and their
/// Meta kernels (meta_ops.cpp): the library takes bf16 or fp16, these ops promise bf16.
void require_out_dtype(const char* op, const at::Tensor& out, at::ScalarType want) {
  if (out.scalar_type() != want) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.", op, ": invalid argument: output must have dtype ",
                                         torch_dtype_name(want), ", got ",
                                         torch_dtype_name(out.scalar_type())));
  }
}

namespace {

using f8gemm::DType;
using f8gemm::TensorView;
using f8gemm::WeightLayout;

/// The hint added to a rank/shape error when a weight of the other layout was passed.
std::string layout_hint(const GemmArgs& a) {
  const int64_t plain_rank = a.batched ? 3 : 2;
  if (a.layout == WeightLayout::kPreshuffled && a.WQ.dim() == plain_rank) {
    return "WQ looks like a plain weight: pass torch.ops.f8gemm.preshuffle(WQ) to the "
           "_preshuffled ops, or use the op without the _preshuffled suffix";
  }
  if (a.layout == WeightLayout::kPlain && a.WQ.dim() == plain_rank + 1 &&
      a.WQ.sym_size(-1).maybe_as_int() == f8gemm::kShuffleSlabBytes) {
    return "WQ looks like a preshuffled weight: use the _preshuffled op";
  }
  return std::string();
}

/// The op's names for the library's GEMM arguments, so that its messages say XQ, WQ and output.
const f8gemm::GemmArgNames kGemmNames{"XQ", "WQ", "x_scale", "w_scale", "output", "bias"};

/// The views of one GEMM call and the options that go with them.
struct GemmCall {
  TensorView x, w, xs, ws, y, bias;
  f8gemm::GemmOptions options;
};

/// Raises a clear error instead of compiling or loading a kernel inside CUDA-graph capture.
/// The problem comes from the library (the same validation as the call, so invalid arguments
/// raise the call's own error), and is_ready says whether its plan is built.
void check_capture(const GemmArgs& a, const GemmCall& c, const OnDevice& on) {
  // Outside a capture nothing is checked: the common path pays one cudaStreamIsCapturing.
  if (on.device < 0 || !stream_is_capturing(on.stream)) return;
  const f8gemm::ProblemShape p =
      a.batched ? f8gemm::batched_gemm_problem(c.x, c.w, a.layout, c.xs, c.ws, c.y, c.options)
                : f8gemm::gemm_problem(c.x, c.w, a.layout, c.xs, c.ws, c.y, c.options);
  if (f8gemm::is_ready(p)) return;
  const bool silu_mul = p.epilogue_op == f8gemm::EpilogueOp::kSiluMul;
  const std::string shape =
      a.batched ? c10::str("(", p.batch, ", ", p.m, ", ", p.n, ", ", p.k, ")")
                : c10::str("(", p.m, ", ", p.n, ", ", p.k, ")");
  // A call with prefetch_w and PDL on (pdl=True, or None with F8GEMM_PDL=1) has a plan of its
  // own (ProblemShape::chained): precompile builds it when given the same two arguments.
  C10_THROW_ERROR(
      Error,
      c10::str("f8gemm.", a.op, ": the kernel for ", a.batched ? "B,M,N,K = " : "M,N,K = ", shape,
               " (", layout_name(p.w_layout), " weight, ", dtype_torch_name(p.out_dtype),
               " output, bias ", p.has_bias ? dtype_torch_name(p.bias_dtype) : "None",
               ", use_fast_accum=", a.use_fast_accum ? "True" : "False",
               p.chained ? ", with PDL and prefetch_w" : "",
               ") is not compiled and loaded on cuda:", on.device,
               " and the current stream is capturing a CUDA graph, where compiling or loading "
               "is not allowed. Before the capture, call f8gemm.precompile([",
               shape, "], layout='", layout_name(p.w_layout), "', use_fast_accum=",
               a.use_fast_accum ? "True" : "False", ", out_dtype=",
               dtype_torch_name(p.out_dtype), ", bias_dtype=",
               p.has_bias ? dtype_torch_name(p.bias_dtype) : "None", ", device='cuda:", on.device,
               silu_mul ? "', epilogue='silu_mul" : "", "'",
               p.chained ? ", pdl=True, prefetch_w=True" : "",
               ") or run the op once with these shapes (if the arguments are invalid, running "
               "it outside the capture says why)"));
}

/// `v` without its dimension `dim`, which has size 1: the same elements, the same order.
TensorView drop_unit_dim(TensorView v, int dim) {
  for (int i = dim; i + 1 < v.rank; ++i) {
    v.shape[i] = v.shape[i + 1];
    v.stride[i] = v.stride[i + 1];
  }
  --v.rank;
  return v;
}

/// The scale shapes other callers pass, as the library's [M] / [N] ([B, M] / [B, N]): torchao
/// and vLLM keep the reduced dimension (x_scale [..., 1], w_scale [N, 1]) and some callers give
/// w_scale as a row [1, N]. A size-1 dimension holds no data, so this is exact and free; any
/// other shape reaches the library unchanged and is rejected there.
TensorView accept_scale_shape(const TensorView& v, const GemmArgs& a, bool is_x) {
  const int lead = a.batched ? 1 : 0;
  if (is_x) {
    // x_scale [..., 1]: XQ's rank (keepdim), or [M, 1] for a single GEMM of any XQ rank.
    const bool keepdim = v.rank == a.XQ.dim() || (!a.batched && v.rank == 2);
    return keepdim && v.rank >= 2 && v.shape[v.rank - 1] == 1 ? drop_unit_dim(v, v.rank - 1) : v;
  }
  if (v.rank != 2 + lead) return v;
  if (v.shape[v.rank - 1] == 1) return drop_unit_dim(v, v.rank - 1);  // [N, 1], [B, N, 1]
  if (v.shape[lead] == 1) return drop_unit_dim(v, lead);              // [1, N], [B, 1, N]
  return v;
}

/// Added to a scale-shape error: the shapes as passed and the accepted forms.
std::string scale_hint(const GemmArgs& a) {
  return c10::str("x_scale ", a.x_scale.sym_sizes(), " and w_scale ", a.w_scale.sym_sizes(),
                  " were passed; accepted: ",
                  a.batched ? "x_scale [B, M] or [B, M, 1], w_scale [B, N], [B, N, 1] or [B, 1, N]"
                            : "x_scale XQ's leading shape, [M] or [M, 1] (or XQ's leading "
                              "shape + [1]), w_scale [N], [N, 1] or [1, N]");
}

/// The hint that the ops add to a library error: the other layout's weight, or the accepted
/// scale forms after a scale-shape error.
std::string gemm_hint(const GemmArgs& a, const f8gemm::Error& e) {
  std::string hint = layout_hint(a);
  if (hint.empty() && (std::strstr(e.what(), "_scale must have shape") ||
                       std::strstr(e.what(), "_scale must have XQ's leading shape"))) {
    hint = scale_hint(a);
  }
  return hint;
}

/// Fills `c` (options.bias points into it) with the views of a call and its options, all but
/// the stream. with_memory: the call's views (view_of); else shapes only (shape_view_of), for
/// the Meta kernels' check. Both take the same steps in the same order, so that both raise the
/// same first error. `out`: the _out forms' output; null for a functional op, whose output is
/// not allocated yet (the caller sets c.y: new_output_view or unallocated_output_view, whose
/// checks cannot fail).
void fill_gemm_call(GemmCall& c, const GemmArgs& a, const at::Tensor* out, bool with_memory) {
  const char* op = a.op;
  const auto view = with_memory ? &view_of : &shape_view_of;
  c.x = view(a.XQ, op, "XQ", "torch.float8_e4m3fn");
  c.w = view(a.WQ, op, "WQ",
             a.layout == WeightLayout::kPlain ? "torch.float8_e4m3fn"
                                              : "torch.float8_e4m3fn (or torch.uint8)");
  c.xs = accept_scale_shape(view(a.x_scale, op, "x_scale", "torch.float32"), a, true);
  c.ws = accept_scale_shape(view(a.w_scale, op, "w_scale", "torch.float32"), a, false);
  if (out != nullptr) c.y = view(*out, op, "output", "torch.bfloat16 or torch.float16");
  if (a.bias.has_value() && a.bias->defined()) {
    c.bias = view(*a.bias, op, "bias", "torch.float32 or torch.bfloat16");
    c.options.bias = &c.bias;
  }
  c.options.fast_accum = a.use_fast_accum;
  c.options.pdl = a.pdl;
  c.options.prefetch_w = a.prefetch_w;
  c.options.epilogue_op = a.epilogue_op;
  c.options.names = &kGemmNames;
}

/// The library's shape-only check over `c` (f8gemm::check_gemm_shapes: the rules the call runs
/// first), with the call's error and hint.
void check_shapes(const GemmArgs& a, const GemmCall& c) {
  try {
    (void)f8gemm::check_gemm_shapes(c.x, c.w, a.layout, c.xs, c.ws, c.y, c.options, a.batched);
  } catch (const f8gemm::Error& e) {
    rethrow(a.op, e, gemm_hint(a, e));
  }
}

/// Runs the GEMM of `c`, filled with the call's views (the output's included).
void run_gemm(const GemmArgs& a, GemmCall& c) {
  OnDevice on(a.XQ);
  c.options.stream = on.stream;
  try {
    check_capture(a, c, on);
    if (a.batched) {
      f8gemm::batched_gemm(c.x, c.w, a.layout, c.xs, c.ws, c.y, c.options);
    } else {
      f8gemm::gemm(c.x, c.w, a.layout, c.xs, c.ws, c.y, c.options);
    }
  } catch (const f8gemm::Error& e) {
    rethrow(a.op, e, gemm_hint(a, e));
  }
}

/// The _out forms: `out` is the caller's.
void gemm_into(const GemmArgs& a, const at::Tensor& out) {
  GemmCall c;
  fill_gemm_call(c, a, &out, true);
  run_gemm(a, c);
}

/// The library's whole validation of a functional call before its output exists
/// (gemm_problem over unallocated_output_view): the shape rules, which the Meta kernel runs
/// alone (check_gemm_shapes below), then the memory and place of every input, with the call's
/// error and hint. Nothing is allocated for a call it refuses: a wrong WQ's N may make any
/// output size, and an expanded or CPU XQ one as large as its logical shape.
void check_functional_call(const GemmArgs& a, GemmCall& c, c10::SymIntArrayRef out_shape,
                           at::ScalarType out_dtype) {
  c.y = unallocated_output_view(out_shape, out_dtype, c.x.device);
  try {
    if (a.batched) {
      (void)f8gemm::batched_gemm_problem(c.x, c.w, a.layout, c.xs, c.ws, c.y, c.options);
    } else {
      (void)f8gemm::gemm_problem(c.x, c.w, a.layout, c.xs, c.ws, c.y, c.options);
    }
  } catch (const f8gemm::Error& e) {
    rethrow(a.op, e, gemm_hint(a, e));
  }
}

/// The functional forms: every argument checked (check_functional_call), then the output and
/// the call.
at::Tensor gemm_functional(const GemmArgs& a, at::ScalarType out_dtype) {
  const std::vector<c10::SymInt> shape = gemm_out_shape(a);
  GemmCall c;
  fill_gemm_call(c, a, nullptr, true);
  check_functional_call(a, c, shape, out_dtype);
  at::Tensor out = new_empty(a.XQ, C10_AS_INTARRAYREF_SLOW(shape), out_dtype);
  c.y = view_of(out, a.op, "output", "torch.bfloat16 or torch.float16");
  run_gemm(a, c);
  return out;
}

// The op entry points. Plain weight: WQ [N, K] (or [B, N, K]); preshuffled: preshuffle(WQ).

at::Tensor f8f8bf16_rowwise(const at::Tensor& XQ, const at::Tensor& WQ, const at::Tensor& x_scale,
                            const at::Tensor& w_scale, const std::optional<at::Tensor>& bias,
                            bool use_fast_accum, std::optional<bool> pdl) {
  return gemm_functional({"f8f8bf16_rowwise", XQ, WQ, x_scale, w_scale, bias, use_fast_accum,
                          WeightLayout::kPlain, false, to_pdl(pdl), false},
                         at::ScalarType::BFloat16);
}

at::Tensor f8f8f16_rowwise(const at::Tensor& XQ, const at::Tensor& WQ, const at::Tensor& x_scale,
                           const at::Tensor& w_scale, const std::optional<at::Tensor>& bias,
                           bool use_fast_accum, std::optional<bool> pdl) {
  return gemm_functional({"f8f8f16_rowwise", XQ, WQ, x_scale, w_scale, bias, use_fast_accum,
                          WeightLayout::kPlain, false, to_pdl(pdl), false},
                         at::ScalarType::Half);
}

void f8f8bf16_rowwise_out(const at::Tensor& XQ, const at::Tensor& WQ, const at::Tensor& x_scale,
                          const at::Tensor& w_scale, const at::Tensor& output,
                          const std::optional<at::Tensor>& bias, bool use_fast_accum,
                          std::optional<bool> pdl) {
  const GemmArgs a{"f8f8bf16_rowwise_out", XQ, WQ, x_scale, w_scale, bias, use_fast_accum,
                   WeightLayout::kPlain, false, to_pdl(pdl), false};
  require_out_dtype(a.op, output, at::ScalarType::BFloat16);
  gemm_into(a, output);
}

at::Tensor rowwise_batched_impl(const at::Tensor& XQ, const at::Tensor& WQ,
                                const at::Tensor& x_scale, const at::Tensor& w_scale,
                                const std::optional<at::Tensor>& bias, bool use_fast_accum,
                                bool preshuffled, std::optional<bool> pdl) {
  return gemm_functional({batched_name(preshuffled), XQ, WQ, x_scale, w_scale, bias,
                          use_fast_accum,
                          preshuffled ? WeightLayout::kPreshuffled : WeightLayout::kPlain, true,
                          to_pdl(pdl), false},
                         at::ScalarType::BFloat16);
}

void rowwise_batched_out_impl(const at::Tensor& XQ, const at::Tensor& WQ,
                              const at::Tensor& x_scale, const at::Tensor& w_scale,
                              const at::Tensor& output, const std::optional<at::Tensor>& bias,
                              bool use_fast_accum, bool preshuffled, std::optional<bool> pdl) {
  const GemmArgs a{batched_name(preshuffled), XQ, WQ, x_scale, w_scale, bias, use_fast_accum,
                   preshuffled ? WeightLayout::kPreshuffled : WeightLayout::kPlain, true,
                   to_pdl(pdl), false};
  require_out_dtype(a.op, output, at::ScalarType::BFloat16);
  gemm_into(a, output);
}

at::Tensor batched_composite(const at::Tensor& XQ, const at::Tensor& WQ,
                             const at::Tensor& x_scale, const at::Tensor& w_scale,
                             const std::optional<at::Tensor>& bias, bool use_fast_accum,
                             const std::optional<at::Tensor>& output, bool preshuffled,
                             std::optional<bool> pdl) {
  if (output.has_value() && output->defined()) {
    static const auto out_op =
        c10::Dispatcher::singleton()
            .findSchemaOrThrow("f8gemm::_rowwise_batched_out", "")
            .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                        const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                        bool, bool, std::optional<bool>)>();
    out_op.call(XQ, WQ, x_scale, w_scale, *output, bias, use_fast_accum, preshuffled, pdl);
    return *output;  // FBGEMM's convention: the output argument is returned
  }
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("f8gemm::_rowwise_batched", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                            const at::Tensor&, const std::optional<at::Tensor>&, bool, bool,
                            std::optional<bool>)>();
  return op.call(XQ, WQ, x_scale, w_scale, bias, use_fast_accum, preshuffled, pdl);
}

at::Tensor f8f8bf16_rowwise_batched(const at::Tensor& XQ, const at::Tensor& WQ,
                                    const at::Tensor& x_scale, const at::Tensor& w_scale,
                                    const std::optional<at::Tensor>& bias, bool use_fast_accum,
                                    const std::optional<at::Tensor>& output,
                                    std::optional<bool> pdl) {
  return batched_composite(XQ, WQ, x_scale, w_scale, bias, use_fast_accum, output, false, pdl);
}

at::Tensor f8f8bf16_rowwise_batched_preshuffled(const at::Tensor& XQ, const at::Tensor& WQ,
                                                const at::Tensor& x_scale,
                                                const at::Tensor& w_scale,
                                                const std::optional<at::Tensor>& bias,
                                                bool use_fast_accum,
                                                const std::optional<at::Tensor>& output,
                                                std::optional<bool> pdl) {
  return batched_composite(XQ, WQ, x_scale, w_scale, bias, use_fast_accum, output, true, pdl);
}

at::Tensor f8f8bf16_rowwise_preshuffled(const at::Tensor& XQ, const at::Tensor& WQ,
                                        const at::Tensor& x_scale, const at::Tensor& w_scale,
                                        const std::optional<at::Tensor>& bias,
                                        bool use_fast_accum, std::optional<bool> pdl,
                                        bool prefetch_w) {
  return gemm_functional({"f8f8bf16_rowwise_preshuffled", XQ, WQ, x_scale, w_scale, bias,
                          use_fast_accum, WeightLayout::kPreshuffled, false, to_pdl(pdl),
                          prefetch_w},
                         at::ScalarType::BFloat16);
}

at::Tensor f8f8f16_rowwise_preshuffled(const at::Tensor& XQ, const at::Tensor& WQ,
                                       const at::Tensor& x_scale, const at::Tensor& w_scale,
                                       const std::optional<at::Tensor>& bias,
                                       bool use_fast_accum, std::optional<bool> pdl,
                                       bool prefetch_w) {
  return gemm_functional({"f8f8f16_rowwise_preshuffled", XQ, WQ, x_scale, w_scale, bias,
                          use_fast_accum, WeightLayout::kPreshuffled, false, to_pdl(pdl),
                          prefetch_w},
                         at::ScalarType::Half);
}

void f8f8bf16_rowwise_preshuffled_out(const at::Tensor& XQ, const at::Tensor& WQ,
                                      const at::Tensor& x_scale, const at::Tensor& w_scale,
                                      const at::Tensor& output,
                                      const std::optional<at::Tensor>& bias,
                                      bool use_fast_accum, std::optional<bool> pdl,
                                      bool prefetch_w) {
  const GemmArgs a{"f8f8bf16_rowwise_preshuffled_out", XQ, WQ, x_scale, w_scale, bias,
                   use_fast_accum, WeightLayout::kPreshuffled, false, to_pdl(pdl), prefetch_w};
  require_out_dtype(a.op, output, at::ScalarType::BFloat16);
  gemm_into(a, output);
}

at::Tensor f8f8bf16_rowwise_silu_mul(const at::Tensor& XQ, const at::Tensor& WQ,
                                     const at::Tensor& x_scale, const at::Tensor& w_scale,
                                     const std::optional<at::Tensor>& bias, bool use_fast_accum,
                                     std::optional<bool> pdl) {
  return gemm_functional({"f8f8bf16_rowwise_silu_mul", XQ, WQ, x_scale, w_scale, bias,
                          use_fast_accum, WeightLayout::kPlain, false, to_pdl(pdl), false,
                          f8gemm::EpilogueOp::kSiluMul},
                         at::ScalarType::BFloat16);
}

at::Tensor f8f8bf16_rowwise_preshuffled_silu_mul(const at::Tensor& XQ, const at::Tensor& WQ,
                                                 const at::Tensor& x_scale,
                                                 const at::Tensor& w_scale,
                                                 const std::optional<at::Tensor>& bias,
                                                 bool use_fast_accum, std::optional<bool> pdl,
                                                 bool prefetch_w) {
  return gemm_functional({"f8f8bf16_rowwise_preshuffled_silu_mul", XQ, WQ, x_scale, w_scale, bias,
                          use_fast_accum, WeightLayout::kPreshuffled, false, to_pdl(pdl),
                          prefetch_w, f8gemm::EpilogueOp::kSiluMul},
                         at::ScalarType::BFloat16);
}

}  // namespace

/// The batched GEMMs are two internal ops: _rowwise_batched (functional) and _rowwise_batched_out
/// (writes `output`). The public f8f8bf16_rowwise_batched[_preshuffled], whose optional mutable
/// `output` follows FBGEMM, is a CompositeImplicitAutograd kernel choosing one of them, so that
/// traced graphs (torch.compile, opcheck) only see ops with plain schemas.
const char* batched_name(bool preshuffled) {
  return preshuffled ? "f8f8bf16_rowwise_batched_preshuffled" : "f8f8bf16_rowwise_batched";
}

std::vector<c10::SymInt> gemm_out_shape(const GemmArgs& a) {
  const int64_t lead = a.batched ? 1 : 0;
  c10::SymInt n = 0;  // 0 when WQ's rank is wrong: the checks then say why
  if (a.layout == WeightLayout::kPlain && a.WQ.dim() == 2 + lead) n = a.WQ.sym_size(lead);
  if (a.layout == WeightLayout::kPreshuffled && a.WQ.dim() == 3 + lead) {
    n = a.WQ.sym_size(lead + 1) * f8gemm::kShuffleSlabRows;
  }
  if (a.epilogue_op == f8gemm::EpilogueOp::kSiluMul) n = n / 2;
  if (a.batched) {
    if (a.XQ.dim() != 3) return {0};
    return {a.XQ.sym_size(0), a.XQ.sym_size(1), n};
  }
  if (a.XQ.dim() < 1) return {0};
  const auto sizes = a.XQ.sym_sizes();
  std::vector<c10::SymInt> shape(sizes.begin(), sizes.end() - 1);
  shape.push_back(n);
  return shape;
}

void check_gemm_shapes(const GemmArgs& a, const at::Tensor& out) {
  GemmCall c;
  fill_gemm_call(c, a, &out, false);
  check_shapes(a, c);
}

void check_gemm_shapes(const GemmArgs& a, c10::SymIntArrayRef out_shape,
                       at::ScalarType out_dtype) {
  GemmCall c;
  fill_gemm_call(c, a, nullptr, false);
  c.y = new_output_view(out_shape, out_dtype);
  check_shapes(a, c);
}

}  // namespace f8gemm_torch

// CPU tensors reach the same code: the library rejects them with "XQ must be in GPU memory".
// f8f8bf16_rowwise_preshuffle and f8f8f16_rowwise_preshuffle are FBGEMM's ROCm names (schemas.cpp).
#define F8GEMM_TORCH_GEMM_IMPLS(m)                                                             \
  m.impl("f8f8bf16_rowwise", TORCH_FN(f8gemm_torch::f8f8bf16_rowwise));                        \
  m.impl("f8f8bf16_rowwise_out", TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_out));                \
  m.impl("f8f8f16_rowwise", TORCH_FN(f8gemm_torch::f8f8f16_rowwise));                          \
  m.impl("_rowwise_batched", TORCH_FN(f8gemm_torch::rowwise_batched_impl));                    \
  m.impl("_rowwise_batched_out", TORCH_FN(f8gemm_torch::rowwise_batched_out_impl));            \
  m.impl("f8f8bf16_rowwise_preshuffled", TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_preshuffled)); \
  m.impl("f8f8bf16_rowwise_preshuffled_out",                                                   \
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_preshuffled_out));                            \
  m.impl("f8f8f16_rowwise_preshuffled", TORCH_FN(f8gemm_torch::f8f8f16_rowwise_preshuffled));  \
  m.impl("f8f8bf16_rowwise_preshuffle", TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_preshuffled));  \
  m.impl("f8f8f16_rowwise_preshuffle", TORCH_FN(f8gemm_torch::f8f8f16_rowwise_preshuffled));  \
  m.impl("f8f8bf16_rowwise_silu_mul", TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_silu_mul));      \
  m.impl("f8f8bf16_rowwise_preshuffled_silu_mul",                                              \
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_preshuffled_silu_mul))

TORCH_LIBRARY_IMPL(f8gemm, CUDA, m) { F8GEMM_TORCH_GEMM_IMPLS(m); }

TORCH_LIBRARY_IMPL(f8gemm, CPU, m) { F8GEMM_TORCH_GEMM_IMPLS(m); }

// The public batched ops choose between the internal functional and out forms.
TORCH_LIBRARY_IMPL(f8gemm, CompositeImplicitAutograd, m) {
  m.impl("f8f8bf16_rowwise_batched", TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_batched));
  m.impl("f8f8bf16_rowwise_batched_preshuffled",
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_batched_preshuffled));
}
