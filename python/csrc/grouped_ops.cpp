/// \brief The grouped (mixture-of-experts) GEMM ops of the PyTorch extension (schemas in
/// schemas.cpp) over f8gemm::grouped_gemm and grouped_gemm_padded: FBGEMM's
/// f8f8bf16_rowwise_grouped_stacked and f8f8bf16_rowwise_grouped_dynamic, their preshuffled
/// counterparts, and _out forms that take the output, a bias and the accumulation mode.
///
/// The group sizes (M_sizes, zero_start_index_M) stay on the GPU: no op reads them on the host
/// (no .item(), no sync), so every op is legal in CUDA-graph capture and each replay uses the
/// sizes of that moment. Bad sizes are not an error: the kernel treats a negative size as 0 and
/// clips the groups at total_M (stacked) or M_max (padded). Rows outside every group are never
/// written, so the stacked op's output holds unspecified values there (torch.empty, as in
/// FBGEMM), and the dynamic op zeroes the output before the kernel runs (after validating its
/// arguments) unless zeroing_output_tensor=False.
///
/// As in gemm_ops.cpp: the op runs on XQ's device and current stream, inputs are validated by
/// the library under the op's argument names and never copied, and inside CUDA-graph capture a
/// grouped problem that has not run before raises a RuntimeError instead of compiling. The
/// Meta kernels (meta_ops.cpp) run the library's shape rules over the same views
/// (check_grouped_shapes).
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <vector>

#include "binding.hpp"
#include "f8gemm/f8gemm.hpp"
#include "op_rules.hpp"

namespace f8gemm_torch {

namespace {

using f8gemm::DType;
using f8gemm::TensorView;
using f8gemm::WeightLayout;

/// The name FBGEMM gives the sizes argument of each form.
const char* sizes_name(bool padded) { return padded ? "zero_start_index_M" : "M_sizes"; }

const f8gemm::GemmArgNames kStackedNames{"XQ", "WQ", "x_scale", "w_scale", "output", "bias",
                                         "M_sizes"};
const f8gemm::GemmArgNames kPaddedNames{"XQ", "WQ", "x_scale", "w_scale", "output", "bias",
                                        "zero_start_index_M"};

/// `v` without its last dimension when that is a size-1 dimension past `rank`: the scale
/// shapes that keep the reduced dimension (x_scale [total_M, 1], w_scale [G, N, 1], as
/// quantize_fp8_row(keepdim) and FBGEMM's callers pass them). Exact and free; any other shape
/// reaches the library unchanged and is rejected there.
TensorView accept_keepdim(TensorView v, int rank) {
  if (v.rank == rank + 1 && v.shape[v.rank - 1] == 1) --v.rank;
  return v;
}

/// The hint added to a rank/shape error when a weight of the other layout was passed.
std::string grouped_layout_hint(const GroupedArgs& a) {
  if (a.layout == WeightLayout::kPreshuffled && a.WQ.dim() == 3) {
    return "WQ looks like a plain [G, N, K] weight: pass torch.ops.f8gemm.preshuffle(WQ) to the "
           "_preshuffled ops, or use the op without _preshuffled";
  }
  if (a.layout == WeightLayout::kPlain && a.WQ.dim() == 4 &&
      a.WQ.sym_size(-1).maybe_as_int() == f8gemm::kShuffleSlabBytes) {
    return "WQ looks like a preshuffled weight: use the _preshuffled op";
  }
  return std::string();
}

/// The views of one grouped call and the options that go with them.
struct GroupedCall {
  TensorView x, w, xs, ws, sizes, y, bias;
  f8gemm::GemmOptions options;
};

/// Raises a clear error instead of compiling or loading a kernel inside CUDA-graph capture:
/// the library's is_ready() answers for the grouped problem (any sizes).
void check_grouped_capture(const GroupedArgs& a, const GroupedCall& c, const OnDevice& on) {
  // Outside a capture nothing is checked: the common path pays one cudaStreamIsCapturing.
  if (on.device < 0 || !stream_is_capturing(on.stream)) return;
  // Validated as the call would be: bad arguments raise the call's error.
  const f8gemm::GroupedProblem p = f8gemm::grouped_problem(c.x, c.w, a.layout, c.xs, c.ws,
                                                           c.sizes, c.y, c.options, a.padded);
  if (f8gemm::is_ready(p)) return;
  C10_THROW_ERROR(
      Error,
      c10::str("f8gemm.", a.op, ": the grouped kernel for ",
               a.padded ? "G,M_max,N,K = (" : "G,total_M,N,K = (", p.groups, ", ", p.rows, ", ",
               p.n, ", ", p.k, ") (", layout_name(p.w_layout), " weight, ",
               dtype_torch_name(p.out_dtype), " output, bias ",
               p.has_bias ? dtype_torch_name(p.bias_dtype) : "None",
               ", use_fast_accum=", p.fast_accum ? "True" : "False", ", ", sizes_name(a.padded),
               " ", dtype_torch_name(p.sizes_dtype), ") has not run on cuda:", on.device,
               " in this process, and the current stream is capturing a CUDA graph, where "
               "compiling or loading a kernel is not allowed. Run the op once with these shapes "
               "before the capture (any sizes will do), or precompile it first: "
               "f8gemm.precompile_grouped((", p.groups, ", ", p.rows, ", ", p.n, ", ", p.k,
               "), layout='", layout_name(p.w_layout), "', padded=", a.padded ? "True" : "False",
               ", use_fast_accum=", p.fast_accum ? "True" : "False", ", bias_dtype=",
               p.has_bias ? dtype_torch_name(p.bias_dtype) : "None", ")"));
}

/// Fills `c` (options.bias points into it) with the views of a call and its options, all but
/// the stream. with_memory: the call's views (view_of); else shapes only (shape_view_of), for
/// the Meta kernels' check, in the same steps and order. `out`: the _out forms' output; null
/// for a functional op, whose output is not allocated yet (the caller sets c.y:
/// new_output_view or unallocated_output_view, whose checks cannot fail).
void fill_grouped_call(GroupedCall& c, const GroupedArgs& a, const at::Tensor* out,
                       bool with_memory) {
  const char* op = a.op;
  const auto view = with_memory ? &view_of : &shape_view_of;
  const int lead = a.padded ? 2 : 1;  // the rank of x_scale: [G, M_max] or [total_M]
  c.x = view(a.XQ, op, "XQ", "torch.float8_e4m3fn");
  c.w = view(a.WQ, op, "WQ",
             a.layout == WeightLayout::kPlain ? "torch.float8_e4m3fn"
                                              : "torch.float8_e4m3fn (or torch.uint8)");
  c.xs = accept_keepdim(view(a.x_scale, op, "x_scale", "torch.float32"), lead);
  c.ws = accept_keepdim(view(a.w_scale, op, "w_scale", "torch.float32"), 2);
  c.sizes = view(a.sizes, op, sizes_name(a.padded), "torch.int32 or torch.int64");
  if (out != nullptr) c.y = view(*out, op, "output", "torch.bfloat16 or torch.float16");
  if (a.bias.has_value() && a.bias->defined()) {
    c.bias = view(*a.bias, op, "bias", "torch.float32 or torch.bfloat16");
    c.options.bias = &c.bias;
  }
  c.options.fast_accum = a.use_fast_accum;
  c.options.names = a.padded ? &kPaddedNames : &kStackedNames;
}

/// The library's shape-only check over `c` (f8gemm::check_grouped_shapes: the rules the call
/// runs first), with the call's error and hint.
void check_shapes(const GroupedArgs& a, const GroupedCall& c) {
  try {
    (void)f8gemm::check_grouped_shapes(c.x, c.w, a.layout, c.xs, c.ws, c.sizes, c.y, c.options,
                                       a.padded);
  } catch (const f8gemm::Error& e) {
    rethrow(a.op, e, grouped_layout_hint(a));
  }
}

/// Runs the grouped GEMM of `c`, filled with the call's views, into `out` (c.y's tensor).
void run_grouped(const GroupedArgs& a, GroupedCall& c, const at::Tensor& out) {
  const char* op = a.op;
  OnDevice on(a.XQ);
  c.options.stream = on.stream;
  try {
    check_grouped_capture(a, c, on);
    if (a.zero_output) {
      // grouped_problem validates as the call does (a bad argument raises its error here);
      // then the memset on XQ's device and current stream (a memset node inside a capture),
      // before the kernel writes each group's rows: the padding rows stay 0.
      (void)f8gemm::grouped_problem(c.x, c.w, a.layout, c.xs, c.ws, c.sizes, c.y, c.options,
                                    a.padded);
      out.zero_();
    }
    if (a.padded) {
      f8gemm::grouped_gemm_padded(c.x, c.w, a.layout, c.xs, c.ws, c.sizes, c.y, c.options);
    } else {
      f8gemm::grouped_gemm(c.x, c.w, a.layout, c.xs, c.ws, c.sizes, c.y, c.options);
    }
  } catch (const f8gemm::Error& e) {
    rethrow(op, e, grouped_layout_hint(a));
  }
}

/// The _out forms: `out` is the caller's.
void grouped_into(const GroupedArgs& a, const at::Tensor& out) {
  GroupedCall c;
  fill_grouped_call(c, a, &out, true);
  run_grouped(a, c, out);
}

/// The library's whole validation of a functional call before its output exists
/// (grouped_problem over unallocated_output_view): the shape rules, which the Meta kernel runs
/// alone (check_grouped_shapes below), then the memory and place of every input, the group
/// sizes' included, with the call's error and hint; nothing is allocated for a call it refuses.
void check_functional_call(const GroupedArgs& a, GroupedCall& c, c10::SymIntArrayRef out_shape) {
  c.y = unallocated_output_view(out_shape, at::ScalarType::BFloat16, c.x.device);
  try {
    (void)f8gemm::grouped_problem(c.x, c.w, a.layout, c.xs, c.ws, c.sizes, c.y, c.options,
                                  a.padded);
  } catch (const f8gemm::Error& e) {
    rethrow(a.op, e, grouped_layout_hint(a));
  }
}

/// The functional forms: every argument checked (check_functional_call), then the output and
/// the call.
at::Tensor grouped_functional(const GroupedArgs& a) {
  const std::vector<c10::SymInt> shape = grouped_out_shape(a);
  GroupedCall c;
  fill_grouped_call(c, a, nullptr, true);
  check_functional_call(a, c, shape);
  at::Tensor out = new_empty(a.XQ, C10_AS_INTARRAYREF_SLOW(shape), at::ScalarType::BFloat16);
  c.y = view_of(out, a.op, "output", "torch.bfloat16 or torch.float16");
  run_grouped(a, c, out);
  return out;
}

// The op entry points. Plain weight: WQ [G, N, K]; preshuffled: torch.ops.f8gemm.preshuffle(WQ).

at::Tensor stacked(const char* op, const at::Tensor& XQ, const at::Tensor& WQ,
                   const at::Tensor& x_scale, const at::Tensor& w_scale, const at::Tensor& M_sizes,
                   WeightLayout layout) {
  static const std::optional<at::Tensor> kNoBias;
  const GroupedArgs a{op, XQ, WQ, x_scale, w_scale, M_sizes, kNoBias, true, layout, false};
  // Rows outside every group stay unwritten: unspecified, as FBGEMM's op leaves them.
  return grouped_functional(a);
}

at::Tensor f8f8bf16_rowwise_grouped_stacked(const at::Tensor& XQ, const at::Tensor& WQ,
                                            const at::Tensor& x_scale, const at::Tensor& w_scale,
                                            const at::Tensor& M_sizes) {
  return stacked("f8f8bf16_rowwise_grouped_stacked", XQ, WQ, x_scale, w_scale, M_sizes,
                 WeightLayout::kPlain);
}

at::Tensor f8f8bf16_rowwise_grouped_stacked_preshuffled(const at::Tensor& XQ,
                                                        const at::Tensor& WQ,
                                                        const at::Tensor& x_scale,
                                                        const at::Tensor& w_scale,
                                                        const at::Tensor& M_sizes) {
  return stacked("f8f8bf16_rowwise_grouped_stacked_preshuffled", XQ, WQ, x_scale, w_scale,
                 M_sizes, WeightLayout::kPreshuffled);
}

void stacked_out(const char* op, const at::Tensor& XQ, const at::Tensor& WQ,
                 const at::Tensor& x_scale, const at::Tensor& w_scale, const at::Tensor& M_sizes,
                 const at::Tensor& output, const std::optional<at::Tensor>& bias,
                 bool use_fast_accum, WeightLayout layout) {
  require_out_dtype(op, output, at::ScalarType::BFloat16);
  grouped_into({op, XQ, WQ, x_scale, w_scale, M_sizes, bias, use_fast_accum, layout, false},
               output);
}

void f8f8bf16_rowwise_grouped_stacked_out(const at::Tensor& XQ, const at::Tensor& WQ,
                                          const at::Tensor& x_scale, const at::Tensor& w_scale,
                                          const at::Tensor& M_sizes, const at::Tensor& output,
                                          const std::optional<at::Tensor>& bias,
                                          bool use_fast_accum) {
  stacked_out("f8f8bf16_rowwise_grouped_stacked_out", XQ, WQ, x_scale, w_scale, M_sizes, output,
              bias, use_fast_accum, WeightLayout::kPlain);
}

void f8f8bf16_rowwise_grouped_stacked_preshuffled_out(
    const at::Tensor& XQ, const at::Tensor& WQ, const at::Tensor& x_scale,
    const at::Tensor& w_scale, const at::Tensor& M_sizes, const at::Tensor& output,
    const std::optional<at::Tensor>& bias, bool use_fast_accum) {
  stacked_out("f8f8bf16_rowwise_grouped_stacked_preshuffled_out", XQ, WQ, x_scale, w_scale,
              M_sizes, output, bias, use_fast_accum, WeightLayout::kPreshuffled);
}

at::Tensor dynamic(const char* op, const at::Tensor& XQ, const at::Tensor& WQ,
                   const at::Tensor& x_scale, const at::Tensor& w_scale,
                   const at::Tensor& zero_start_index_M, bool zeroing_output_tensor,
                   WeightLayout layout) {
  static const std::optional<at::Tensor> kNoBias;
  GroupedArgs a{op, XQ, WQ, x_scale, w_scale, zero_start_index_M, kNoBias, true, layout, true};
  a.zero_output = zeroing_output_tensor && XQ.is_cuda();  // the library rejects a CPU XQ
  return grouped_functional(a);
}

at::Tensor f8f8bf16_rowwise_grouped_dynamic(const at::Tensor& XQ, const at::Tensor& WQ,
                                            const at::Tensor& x_scale, const at::Tensor& w_scale,
                                            const at::Tensor& zero_start_index_M,
                                            bool zeroing_output_tensor) {
  return dynamic("f8f8bf16_rowwise_grouped_dynamic", XQ, WQ, x_scale, w_scale, zero_start_index_M,
                 zeroing_output_tensor, WeightLayout::kPlain);
}

at::Tensor f8f8bf16_rowwise_grouped_dynamic_preshuffled(const at::Tensor& XQ,
                                                        const at::Tensor& WQ,
                                                        const at::Tensor& x_scale,
                                                        const at::Tensor& w_scale,
                                                        const at::Tensor& zero_start_index_M,
                                                        bool zeroing_output_tensor) {
  return dynamic("f8f8bf16_rowwise_grouped_dynamic_preshuffled", XQ, WQ, x_scale, w_scale,
                 zero_start_index_M, zeroing_output_tensor, WeightLayout::kPreshuffled);
}

}  // namespace

std::vector<c10::SymInt> grouped_out_shape(const GroupedArgs& a) {
  c10::SymInt n = 0;  // 0 when WQ's rank is wrong: the checks then say why
  if (a.layout == WeightLayout::kPlain && a.WQ.dim() == 3) n = a.WQ.sym_size(1);
  if (a.layout == WeightLayout::kPreshuffled && a.WQ.dim() == 4) {
    n = a.WQ.sym_size(2) * f8gemm::kShuffleSlabRows;
  }
  if (a.padded) {
    if (a.XQ.dim() != 3) return {0};
    return {a.XQ.sym_size(0), a.XQ.sym_size(1), n};
  }
  if (a.XQ.dim() != 2) return {0};
  return {a.XQ.sym_size(0), n};
}

void check_grouped_shapes(const GroupedArgs& a, const at::Tensor& out) {
  GroupedCall c;
  fill_grouped_call(c, a, &out, false);
  check_shapes(a, c);
}

void check_grouped_shapes(const GroupedArgs& a, c10::SymIntArrayRef out_shape) {
  GroupedCall c;
  fill_grouped_call(c, a, nullptr, false);
  c.y = new_output_view(out_shape, at::ScalarType::BFloat16);
  check_shapes(a, c);
}

}  // namespace f8gemm_torch

// CPU tensors reach the same code: the library rejects them ("XQ must be in GPU memory", or
// "M_sizes must be on the GPU with XQ" for CPU sizes beside CUDA data).
#define F8GEMM_TORCH_GROUPED_IMPLS(m)                                                           \
  m.impl("f8f8bf16_rowwise_grouped_stacked",                                                    \
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_grouped_stacked));                             \
  m.impl("f8f8bf16_rowwise_grouped_stacked_preshuffled",                                        \
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_grouped_stacked_preshuffled));                 \
  m.impl("f8f8bf16_rowwise_grouped_stacked_out",                                                \
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_grouped_stacked_out));                         \
  m.impl("f8f8bf16_rowwise_grouped_stacked_preshuffled_out",                                    \
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_grouped_stacked_preshuffled_out));             \
  m.impl("f8f8bf16_rowwise_grouped_dynamic",                                                    \
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_grouped_dynamic));                             \
  m.impl("f8f8bf16_rowwise_grouped_dynamic_preshuffled",                                        \
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_grouped_dynamic_preshuffled))

TORCH_LIBRARY_IMPL(f8gemm, CUDA, m) { F8GEMM_TORCH_GROUPED_IMPLS(m); }

TORCH_LIBRARY_IMPL(f8gemm, CPU, m) { F8GEMM_TORCH_GROUPED_IMPLS(m); }
