/// \brief The PyTorch extension of f8gemm: TORCH_LIBRARY(f8gemm) schemas (FBGEMM/MSLK names and
/// defaults), the CUDA implementations over the C++ API, and Meta (fake) implementations.
///
/// Loaded from Python with torch.ops.load_library (no Python.h here). Every op runs on its
/// tensors' device (a CUDA guard) and on that device's current torch stream. Inputs are
/// validated by the library, never copied (no .contiguous()): the only allocation is the output.
/// f8gemm::Error becomes ValueError for ErrorCode::kInvalidArgument and RuntimeError otherwise,
/// with the library's argument names replaced by the op's (x -> XQ, w -> WQ, out -> output).
/// Inside CUDA-graph capture, a GEMM whose plan is not built (f8gemm::is_ready) raises a
/// RuntimeError telling the user to precompile instead of compiling during the capture.
#include <ATen/core/Tensor.h>
#include <ATen/cuda/EmptyTensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>
#include <torch/library.h>

#include <cctype>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "f8gemm/f8gemm.hpp"

namespace f8gemm_torch {
namespace {

using f8gemm::DType;
using f8gemm::TensorView;
using f8gemm::WeightLayout;

// ------------------------------------------------------------------------------------ errors

/// A library argument name and the op's name for it. A name with a space is replaced as a
/// phrase; any other as a whole word (letters, digits and '_' delimit words).
struct Rename {
  const char* from;
  const char* to;
};
using Renames = std::vector<Rename>;

const Renames& gemm_names() {
  static const Renames names = {{"x", "XQ"}, {"w", "WQ"}, {"out", "output"}};
  return names;
}

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string rename_args(const std::string& message, const Renames& names) {
  std::string text = message;
  for (const Rename& r : names) {
    if (!std::strchr(r.from, ' ')) continue;
    const std::string from = r.from;
    for (size_t pos = text.find(from); pos != std::string::npos;
         pos = text.find(from, pos + std::strlen(r.to))) {
      text.replace(pos, from.size(), r.to);
    }
  }
  std::string out;
  out.reserve(text.size() + 16);
  size_t i = 0;
  while (i < text.size()) {
    if (!is_word_char(text[i])) {
      out += text[i++];
      continue;
    }
    size_t j = i;
    while (j < text.size() && is_word_char(text[j])) ++j;
    const std::string word = text.substr(i, j - i);
    const char* replacement = nullptr;
    for (const Rename& r : names) {
      if (word == r.from) replacement = r.to;
    }
    out += replacement ? std::string(replacement) : word;
    i = j;
  }
  return out;
}

/// Rethrows a library error as a torch error: "<op>: <code>: <message with the op's names>".
[[noreturn]] void rethrow(const char* op, const f8gemm::Error& e, const Renames& names,
                          const std::string& hint = std::string()) {
  std::string what = e.what();
  const char* prefix = "f8gemm: ";
  if (what.compare(0, std::strlen(prefix), prefix) == 0) what.erase(0, std::strlen(prefix));
  const std::string repeated = std::string(": ") + op + ": ";  // "code: op: message"
  const size_t at = what.find(repeated);
  if (at != std::string::npos) what.erase(at + 2, repeated.size() - 2);
  std::string message = std::string("f8gemm.") + op + ": " + rename_args(what, names);
  if (!hint.empty()) message += " (" + hint + ")";
  if (e.code() == f8gemm::ErrorCode::kInvalidArgument) C10_THROW_ERROR(ValueError, message);
  C10_THROW_ERROR(Error, message);
}

// ----------------------------------------------------------------------------- tensor views

const char* torch_dtype_name(at::ScalarType s) {
  switch (s) {
    case at::ScalarType::Double: return "torch.float64";
    case at::ScalarType::Float: return "torch.float32";
    case at::ScalarType::Half: return "torch.float16";
    case at::ScalarType::BFloat16: return "torch.bfloat16";
    case at::ScalarType::Float8_e4m3fn: return "torch.float8_e4m3fn";
    case at::ScalarType::Float8_e5m2: return "torch.float8_e5m2";
    case at::ScalarType::Float8_e4m3fnuz: return "torch.float8_e4m3fnuz";
    case at::ScalarType::Float8_e5m2fnuz: return "torch.float8_e5m2fnuz";
    case at::ScalarType::Byte: return "torch.uint8";
    case at::ScalarType::Char: return "torch.int8";
    case at::ScalarType::Short: return "torch.int16";
    case at::ScalarType::Int: return "torch.int32";
    case at::ScalarType::Long: return "torch.int64";
    case at::ScalarType::Bool: return "torch.bool";
    default: return c10::toString(s);
  }
}

std::optional<DType> to_dtype(at::ScalarType s) {
  switch (s) {
    case at::ScalarType::Float8_e4m3fn: return DType::kE4M3;
    case at::ScalarType::Byte: return DType::kU8;
    case at::ScalarType::BFloat16: return DType::kBF16;
    case at::ScalarType::Half: return DType::kF16;
    case at::ScalarType::Float: return DType::kF32;
    default: return std::nullopt;
  }
}

/// A torch tensor as a TensorView: sizes, strides, data pointer (storage offset included) and
/// device (a CUDA ordinal, or kHost for a CPU tensor so that the library's own validation
/// rejects it where GPU memory is needed). Raises ValueError for what a view cannot express.
TensorView view_of(const at::Tensor& t, const char* op, const char* name, const char* wanted) {
  const std::optional<DType> dtype = to_dtype(t.scalar_type());
  if (!dtype) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.", op, ": invalid argument: ", name,
                                         " must have dtype ", wanted, ", got ",
                                         torch_dtype_name(t.scalar_type())));
  }
  if (t.dim() > f8gemm::kMaxRank) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.", op, ": invalid argument: ", name, " has ",
                                         t.dim(), " dimensions (shape ", t.sizes(),
                                         "); at most ", f8gemm::kMaxRank,
                                         " are supported: flatten the leading ones"));
  }
  TensorView v;
  v.dtype = *dtype;
  if (t.is_cuda()) {
    v.device = t.get_device();
  } else if (t.is_cpu()) {
    v.device = f8gemm::kHost;
  } else {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.", op, ": invalid argument: ", name,
                                         " must be a CUDA tensor, got one on ", t.device()));
  }
  v.rank = static_cast<int>(t.dim());
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  for (int i = 0; i < v.rank; ++i) {
    v.shape[i] = sizes[i];
    v.stride[i] = strides[i];
  }
  if (t.numel() == 0) {
    // No element is addressed: give the row-major strides the library expects (torch computes
    // an empty tensor's strides from max(size, 1), which TensorView::is_contiguous rejects).
    int64_t stride = 1;
    for (int i = v.rank - 1; i >= 0; --i) {
      v.stride[i] = stride;
      stride *= sizes[i];
    }
  }
  v.data = t.numel() > 0 ? t.data_ptr() : nullptr;
  return v;
}

/// A new tensor of `sizes` and `dtype` on `like`'s device: the CUDA path skips the dispatcher.
at::Tensor new_empty(const at::Tensor& like, at::IntArrayRef sizes, at::ScalarType dtype) {
  if (like.is_cuda()) {
    return at::Tensor(at::detail::empty_cuda(sizes, dtype, like.device(), std::nullopt));
  }
  return at::empty(sizes, like.options().dtype(dtype));
}

/// The device guard and current stream of an op whose data lives where `t` is.
struct OnDevice {
  c10::cuda::OptionalCUDAGuard guard;
  cudaStream_t stream = nullptr;
  int device = -1;
  explicit OnDevice(const at::Tensor& t) {
    if (t.is_cuda()) {
      device = t.get_device();
      guard.set_index(static_cast<c10::DeviceIndex>(device));
      stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
    }
  }
};

bool stream_is_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    (void)cudaGetLastError();
    return true;  // cannot tell (e.g. an implicit capture elsewhere): treat as capturing
  }
  return status != cudaStreamCaptureStatusNone;
}

const char* layout_name(WeightLayout layout) {
  return layout == WeightLayout::kPlain ? "plain" : "preshuffled";
}

const char* dtype_torch_name(DType d) {
  switch (d) {
    case DType::kBF16: return "torch.bfloat16";
    case DType::kF16: return "torch.float16";
    case DType::kF32: return "torch.float32";
    case DType::kE4M3: return "torch.float8_e4m3fn";
    case DType::kU8: return "torch.uint8";
  }
  return "?";
}

// ------------------------------------------------------------------------------------- GEMMs

/// N as the weight's shape gives it (0 when its rank is wrong: the library then says why).
int64_t weight_rows(const at::Tensor& w, WeightLayout layout, bool batched) {
  const int64_t lead = batched ? 1 : 0;
  if (layout == WeightLayout::kPlain) return w.dim() == 2 + lead ? w.size(lead) : 0;
  return w.dim() == 3 + lead ? w.size(lead + 1) * f8gemm::kShuffleSlabRows : 0;
}

struct GemmArgs {
  const char* op;
  const at::Tensor& XQ;
  const at::Tensor& WQ;
  const at::Tensor& x_scale;
  const at::Tensor& w_scale;
  const std::optional<at::Tensor>& bias;
  bool use_fast_accum;
  WeightLayout layout;
  bool batched;
};

/// The hint added to a rank/shape error when a weight of the other layout was passed.
std::string layout_hint(const GemmArgs& a) {
  const int64_t plain_rank = a.batched ? 3 : 2;
  if (a.layout == WeightLayout::kPreshuffled && a.WQ.dim() == plain_rank) {
    return "WQ looks like a plain weight: pass torch.ops.f8gemm.preshuffle(WQ) to the "
           "_preshuffled ops, or use the op without the _preshuffled suffix";
  }
  if (a.layout == WeightLayout::kPlain && a.WQ.dim() == plain_rank + 1 &&
      a.WQ.size(-1) == f8gemm::kShuffleSlabBytes) {
    return "WQ looks like a preshuffled weight: use the _preshuffled op";
  }
  return std::string();
}

/// Raises a clear error instead of compiling or loading a kernel inside CUDA-graph capture.
void check_capture(const GemmArgs& a, const at::Tensor& out, const OnDevice& on) {
  // Outside a capture nothing is checked: the common path pays one cudaStreamIsCapturing.
  if (on.device < 0 || !stream_is_capturing(on.stream)) return;
  f8gemm::ProblemShape p;
  const at::Tensor& x = a.XQ;
  if (a.batched) {
    if (x.dim() != 3) return;  // invalid: the library says why without compiling anything
    p.batch = x.size(0);
    p.m = x.size(1);
    p.k = x.size(2);
  } else {
    if (x.dim() < 1) return;
    p.batch = 1;
    p.k = x.size(-1);
    p.m = 1;
    for (int64_t i = 0; i + 1 < x.dim(); ++i) p.m *= x.size(i);
  }
  if (p.m == 0 || p.batch == 0) return;  // nothing is launched (or compiled) for empty work
  p.n = weight_rows(a.WQ, a.layout, a.batched);
  p.w_layout = a.layout;
  p.out_dtype = out.scalar_type() == at::ScalarType::Half ? DType::kF16 : DType::kBF16;
  p.has_bias = a.bias.has_value() && a.bias->defined();
  p.bias_dtype = p.has_bias && a.bias->scalar_type() == at::ScalarType::BFloat16 ? DType::kBF16
                                                                                 : DType::kF32;
  p.fast_accum = a.use_fast_accum;
  if (f8gemm::is_ready(p)) return;
  const std::string shape =
      a.batched ? c10::str("(", p.batch, ", ", p.m, ", ", p.n, ", ", p.k, ")")
                : c10::str("(", p.m, ", ", p.n, ", ", p.k, ")");
  C10_THROW_ERROR(
      Error,
      c10::str("f8gemm.", a.op, ": the kernel for ", a.batched ? "B,M,N,K = " : "M,N,K = ", shape,
               " (", layout_name(p.w_layout), " weight, ", dtype_torch_name(p.out_dtype),
               " output, bias ", p.has_bias ? dtype_torch_name(p.bias_dtype) : "None",
               ", use_fast_accum=", a.use_fast_accum ? "True" : "False", ") is not compiled and loaded on cuda:",
               on.device,
               " and the current stream is capturing a CUDA graph, where compiling or loading "
               "is not allowed. Before the capture, call f8gemm.precompile([",
               shape, "], layout='", layout_name(p.w_layout), "', use_fast_accum=",
               a.use_fast_accum ? "True" : "False", ", out_dtype=",
               dtype_torch_name(p.out_dtype), ", bias_dtype=",
               p.has_bias ? dtype_torch_name(p.bias_dtype) : "None", ", device='cuda:", on.device,
               "') or run the op once with these shapes (if the arguments are invalid, running "
               "it outside the capture says why)"));
}

/// The output's shape for valid inputs; {0} when XQ's rank is wrong (the library rejects XQ
/// before it looks at the output).
std::vector<int64_t> gemm_out_shape(const GemmArgs& a) {
  const int64_t n = weight_rows(a.WQ, a.layout, a.batched);
  if (a.batched) {
    if (a.XQ.dim() != 3) return {0};
    return {a.XQ.size(0), a.XQ.size(1), n};
  }
  if (a.XQ.dim() < 1) return {0};
  std::vector<int64_t> shape(a.XQ.sizes().begin(), a.XQ.sizes().end() - 1);
  shape.push_back(n);
  return shape;
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
  return c10::str("x_scale ", a.x_scale.sizes(), " and w_scale ", a.w_scale.sizes(),
                  " were passed; accepted: ",
                  a.batched ? "x_scale [B, M] or [B, M, 1], w_scale [B, N], [B, N, 1] or [B, 1, N]"
                            : "x_scale XQ's leading shape, [M] or [M, 1] (or XQ's leading "
                              "shape + [1]), w_scale [N], [N, 1] or [1, N]");
}

void run_gemm(const GemmArgs& a, const at::Tensor& out) {
  const char* op = a.op;
  const TensorView x = view_of(a.XQ, op, "XQ", "torch.float8_e4m3fn");
  const TensorView w = view_of(a.WQ, op, "WQ",
                               a.layout == WeightLayout::kPlain
                                   ? "torch.float8_e4m3fn"
                                   : "torch.float8_e4m3fn (or torch.uint8)");
  const TensorView xs =
      accept_scale_shape(view_of(a.x_scale, op, "x_scale", "torch.float32"), a, true);
  const TensorView ws =
      accept_scale_shape(view_of(a.w_scale, op, "w_scale", "torch.float32"), a, false);
  const TensorView y = view_of(out, op, "output", "torch.bfloat16 or torch.float16");
  TensorView b;
  f8gemm::GemmOptions opt;
  if (a.bias.has_value() && a.bias->defined()) {
    b = view_of(*a.bias, op, "bias", "torch.float32 or torch.bfloat16");
    opt.bias = &b;
  }
  opt.fast_accum = a.use_fast_accum;
  OnDevice on(a.XQ);
  opt.stream = on.stream;
  try {
    check_capture(a, out, on);
    if (a.batched) {
      f8gemm::batched_gemm(x, w, a.layout, xs, ws, y, opt);
    } else {
      f8gemm::gemm(x, w, a.layout, xs, ws, y, opt);
    }
  } catch (const f8gemm::Error& e) {
    std::string hint = layout_hint(a);
    if (hint.empty() && (std::strstr(e.what(), "_scale must have shape") ||
                         std::strstr(e.what(), "_scale must have x's leading shape"))) {
      hint = scale_hint(a);
    }
    rethrow(op, e, gemm_names(), hint);
  }
}

void require_out_dtype(const char* op, const at::Tensor& out, at::ScalarType want) {
  if (out.scalar_type() != want) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.", op, ": invalid argument: output must have dtype ",
                                         torch_dtype_name(want), ", got ",
                                         torch_dtype_name(out.scalar_type())));
  }
}

at::Tensor gemm_functional(const GemmArgs& a, at::ScalarType out_dtype) {
  at::Tensor out = new_empty(a.XQ, gemm_out_shape(a), out_dtype);
  run_gemm(a, out);
  return out;
}

// The op entry points. Plain weight: WQ [N, K] (or [B, N, K]); preshuffled: preshuffle(WQ).

at::Tensor f8f8bf16_rowwise(const at::Tensor& XQ, const at::Tensor& WQ, const at::Tensor& x_scale,
                            const at::Tensor& w_scale, const std::optional<at::Tensor>& bias,
                            bool use_fast_accum) {
  return gemm_functional({"f8f8bf16_rowwise", XQ, WQ, x_scale, w_scale, bias, use_fast_accum,
                          WeightLayout::kPlain, false},
                         at::ScalarType::BFloat16);
}

at::Tensor f8f8f16_rowwise(const at::Tensor& XQ, const at::Tensor& WQ, const at::Tensor& x_scale,
                           const at::Tensor& w_scale, const std::optional<at::Tensor>& bias,
                           bool use_fast_accum) {
  return gemm_functional({"f8f8f16_rowwise", XQ, WQ, x_scale, w_scale, bias, use_fast_accum,
                          WeightLayout::kPlain, false},
                         at::ScalarType::Half);
}

void f8f8bf16_rowwise_out(const at::Tensor& XQ, const at::Tensor& WQ, const at::Tensor& x_scale,
                          const at::Tensor& w_scale, const at::Tensor& output,
                          const std::optional<at::Tensor>& bias, bool use_fast_accum) {
  const GemmArgs a{"f8f8bf16_rowwise_out", XQ, WQ, x_scale, w_scale, bias, use_fast_accum,
                   WeightLayout::kPlain, false};
  require_out_dtype(a.op, output, at::ScalarType::BFloat16);
  run_gemm(a, output);
}

/// The batched GEMMs are two internal ops: _rowwise_batched (functional) and _rowwise_batched_out
/// (writes `output`). The public f8f8bf16_rowwise_batched[_preshuffled], whose optional mutable
/// `output` follows FBGEMM, is a CompositeImplicitAutograd kernel choosing one of them, so that
/// traced graphs (torch.compile, opcheck) only see ops with plain schemas.
const char* batched_name(bool preshuffled) {
  return preshuffled ? "f8f8bf16_rowwise_batched_preshuffled" : "f8f8bf16_rowwise_batched";
}

at::Tensor rowwise_batched_impl(const at::Tensor& XQ, const at::Tensor& WQ,
                                const at::Tensor& x_scale, const at::Tensor& w_scale,
                                const std::optional<at::Tensor>& bias, bool use_fast_accum,
                                bool preshuffled) {
  return gemm_functional({batched_name(preshuffled), XQ, WQ, x_scale, w_scale, bias,
                          use_fast_accum,
                          preshuffled ? WeightLayout::kPreshuffled : WeightLayout::kPlain, true},
                         at::ScalarType::BFloat16);
}

void rowwise_batched_out_impl(const at::Tensor& XQ, const at::Tensor& WQ,
                              const at::Tensor& x_scale, const at::Tensor& w_scale,
                              const at::Tensor& output, const std::optional<at::Tensor>& bias,
                              bool use_fast_accum, bool preshuffled) {
  const GemmArgs a{batched_name(preshuffled), XQ, WQ, x_scale, w_scale, bias, use_fast_accum,
                   preshuffled ? WeightLayout::kPreshuffled : WeightLayout::kPlain, true};
  require_out_dtype(a.op, output, at::ScalarType::BFloat16);
  run_gemm(a, output);
}

at::Tensor batched_composite(const at::Tensor& XQ, const at::Tensor& WQ,
                             const at::Tensor& x_scale, const at::Tensor& w_scale,
                             const std::optional<at::Tensor>& bias, bool use_fast_accum,
                             const std::optional<at::Tensor>& output, bool preshuffled) {
  if (output.has_value() && output->defined()) {
    static const auto out_op =
        c10::Dispatcher::singleton()
            .findSchemaOrThrow("f8gemm::_rowwise_batched_out", "")
            .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                        const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                        bool, bool)>();
    out_op.call(XQ, WQ, x_scale, w_scale, *output, bias, use_fast_accum, preshuffled);
    return *output;  // FBGEMM's convention: the output argument is returned
  }
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("f8gemm::_rowwise_batched", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                            const at::Tensor&, const std::optional<at::Tensor>&, bool, bool)>();
  return op.call(XQ, WQ, x_scale, w_scale, bias, use_fast_accum, preshuffled);
}

at::Tensor f8f8bf16_rowwise_batched(const at::Tensor& XQ, const at::Tensor& WQ,
                                    const at::Tensor& x_scale, const at::Tensor& w_scale,
                                    const std::optional<at::Tensor>& bias, bool use_fast_accum,
                                    const std::optional<at::Tensor>& output) {
  return batched_composite(XQ, WQ, x_scale, w_scale, bias, use_fast_accum, output, false);
}

at::Tensor f8f8bf16_rowwise_batched_preshuffled(const at::Tensor& XQ, const at::Tensor& WQ,
                                                const at::Tensor& x_scale,
                                                const at::Tensor& w_scale,
                                                const std::optional<at::Tensor>& bias,
                                                bool use_fast_accum,
                                                const std::optional<at::Tensor>& output) {
  return batched_composite(XQ, WQ, x_scale, w_scale, bias, use_fast_accum, output, true);
}

at::Tensor f8f8bf16_rowwise_preshuffled(const at::Tensor& XQ, const at::Tensor& WQ,
                                        const at::Tensor& x_scale, const at::Tensor& w_scale,
                                        const std::optional<at::Tensor>& bias,
                                        bool use_fast_accum) {
  return gemm_functional({"f8f8bf16_rowwise_preshuffled", XQ, WQ, x_scale, w_scale, bias,
                          use_fast_accum, WeightLayout::kPreshuffled, false},
                         at::ScalarType::BFloat16);
}

at::Tensor f8f8f16_rowwise_preshuffled(const at::Tensor& XQ, const at::Tensor& WQ,
                                       const at::Tensor& x_scale, const at::Tensor& w_scale,
                                       const std::optional<at::Tensor>& bias,
                                       bool use_fast_accum) {
  return gemm_functional({"f8f8f16_rowwise_preshuffled", XQ, WQ, x_scale, w_scale, bias,
                          use_fast_accum, WeightLayout::kPreshuffled, false},
                         at::ScalarType::Half);
}

void f8f8bf16_rowwise_preshuffled_out(const at::Tensor& XQ, const at::Tensor& WQ,
                                      const at::Tensor& x_scale, const at::Tensor& w_scale,
                                      const at::Tensor& output,
                                      const std::optional<at::Tensor>& bias,
                                      bool use_fast_accum) {
  const GemmArgs a{"f8f8bf16_rowwise_preshuffled_out", XQ, WQ, x_scale, w_scale, bias,
                   use_fast_accum, WeightLayout::kPreshuffled, false};
  require_out_dtype(a.op, output, at::ScalarType::BFloat16);
  run_gemm(a, output);
}

// ------------------------------------------------------------- preshuffle / unshuffle / quantize

at::Tensor preshuffle(const at::Tensor& WQ) {
  const char* op = "preshuffle";
  if (WQ.dim() != 2 && WQ.dim() != 3) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.preshuffle: invalid argument: WQ must be [N, K] "
                                         "or [B, N, K], got shape ", WQ.sizes()));
  }
  const bool batched = WQ.dim() == 3;
  std::vector<int64_t> shape =
      f8gemm::preshuffled_shape(batched ? WQ.size(0) : 1, WQ.size(-2), WQ.size(-1));
  if (!batched) shape.erase(shape.begin());
  const TensorView w = view_of(WQ, op, "WQ", "torch.float8_e4m3fn (or torch.uint8)");
  at::Tensor out = new_empty(WQ, shape, WQ.scalar_type());
  const TensorView o = view_of(out, op, "output", "torch.float8_e4m3fn (or torch.uint8)");
  OnDevice on(WQ);
  try {
    f8gemm::preshuffle(w, o, on.stream);
  } catch (const f8gemm::Error& e) {
    static const Renames names = {{"the preshuffled weight", "the preshuffled output"},
                                  {"w", "WQ"}};
    rethrow(op, e, names);
  }
  return out;
}

at::Tensor unshuffle(const at::Tensor& WQ_shuffled, int64_t K) {
  const char* op = "unshuffle";
  if (WQ_shuffled.dim() != 3 && WQ_shuffled.dim() != 4) {
    C10_THROW_ERROR(ValueError,
                    c10::str("f8gemm.unshuffle: invalid argument: WQ_shuffled must be preshuffled "
                             "[ceil(K/128), N/8, 1024] or [B, ceil(K/128), N/8, 1024], got shape ",
                             WQ_shuffled.sizes()));
  }
  if (K <= 0 || K % 16 != 0) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.unshuffle: invalid argument: K must be a "
                                         "positive multiple of 16, got ", K));
  }
  const bool batched = WQ_shuffled.dim() == 4;
  const int64_t n = WQ_shuffled.size(-2) * f8gemm::kShuffleSlabRows;
  std::vector<int64_t> shape = {n, K};
  if (batched) shape.insert(shape.begin(), WQ_shuffled.size(0));
  const TensorView s = view_of(WQ_shuffled, op, "WQ_shuffled", "torch.float8_e4m3fn (or torch.uint8)");
  at::Tensor out = new_empty(WQ_shuffled, shape, WQ_shuffled.scalar_type());
  const TensorView o = view_of(out, op, "output", "torch.float8_e4m3fn (or torch.uint8)");
  OnDevice on(WQ_shuffled);
  try {
    f8gemm::unshuffle(s, o, on.stream);
  } catch (const f8gemm::Error& e) {
    static const Renames names = {{"the preshuffled weight", "WQ_shuffled"},
                                  {"out", "the unshuffled output"}};
    rethrow(op, e, names);
  }
  return out;
}

/// Rowwise quantisation (FBGEMM's quantize_fp8_row): returns (a_fp8, scale) with scale of shape
/// a.shape[:-1] (fp32, the dequantisation multiplier). use_triton is accepted and ignored.
/// scale_ub, a 1-element fp32 tensor: on a's CUDA device the kernel reads it (no host sync, legal
/// inside CUDA-graph capture; a value <= 0 or NaN there means no bound); anywhere else it is read
/// on the host: free for a CPU tensor, a sync for one on another GPU (refused during capture).
std::tuple<at::Tensor, at::Tensor> quantize_fp8_row(const at::Tensor& a,
                                                    const std::optional<at::Tensor>& scale_ub,
                                                    bool use_triton,
                                                    const std::optional<at::Tensor>& output) {
  (void)use_triton;
  const char* op = "quantize_fp8_row";
  if (a.dim() < 1) {
    C10_THROW_ERROR(ValueError, "f8gemm.quantize_fp8_row: invalid argument: a must have at least "
                                "1 dimension ([..., K]), got a 0-dimensional tensor");
  }
  f8gemm::QuantizeOptions opt;
  TensorView ub_view;
  if (scale_ub.has_value() && scale_ub->defined()) {
    const at::Tensor& ub = *scale_ub;
    if (ub.numel() != 1 || ub.scalar_type() != at::ScalarType::Float) {
      C10_THROW_ERROR(ValueError, c10::str("f8gemm.quantize_fp8_row: invalid argument: scale_ub "
                                           "must be a 1-element torch.float32 tensor, got shape ",
                                           ub.sizes(), " and dtype ",
                                           torch_dtype_name(ub.scalar_type())));
    }
  }
  if (scale_ub.has_value() && scale_ub->defined() && a.is_cuda() &&
      scale_ub->device() == a.device()) {
    ub_view = view_of(*scale_ub, op, "scale_ub", "torch.float32");
    opt.scale_ub_tensor = &ub_view;
  } else if (scale_ub.has_value() && scale_ub->defined()) {
    const at::Tensor& ub = *scale_ub;
    if (ub.is_cuda()) {
      if (stream_is_capturing(c10::cuda::getCurrentCUDAStream(ub.get_device()).stream())) {
        C10_THROW_ERROR(Error, "f8gemm.quantize_fp8_row: scale_ub is a CUDA tensor, and reading "
                               "it on the host (a sync) is not allowed during CUDA-graph capture; "
                               "pass scale_ub on a's device or as a CPU tensor");
      }
    }
    const float value = ub.item<float>();  // a sync for a CUDA tensor
    if (!(value > 0.0f) || value > 3.0e38f) {
      C10_THROW_ERROR(ValueError, c10::str("f8gemm.quantize_fp8_row: invalid argument: scale_ub "
                                           "must be positive and finite, got ", value));
    }
    opt.scale_ub = value;
  }
  const TensorView in = view_of(a, op, "a", "torch.bfloat16, torch.float16 or torch.float32");
  at::Tensor q;
  if (output.has_value() && output->defined()) {
    q = *output;
  } else {
    q = new_empty(a, a.sizes(), at::ScalarType::Float8_e4m3fn);
  }
  const TensorView qv = view_of(q, op, "output", "torch.float8_e4m3fn");
  at::Tensor scale = new_empty(a, a.sizes().slice(0, a.dim() - 1), at::ScalarType::Float);
  const TensorView sv = view_of(scale, op, "scale", "torch.float32");
  OnDevice on(a);
  opt.stream = on.stream;
  try {
    f8gemm::quantize_rows(in, qv, sv, opt);
  } catch (const f8gemm::Error& e) {
    static const Renames names = {{"the input's", "a's"}, {"input", "a"}, {"out_q", "output"},
                                  {"out_scale", "scale"}};
    rethrow(op, e, names);
  }
  return std::make_tuple(q, scale);
}

// ------------------------------------------------------------------------------- precompile

DType out_dtype_of(const std::optional<at::ScalarType>& s) {
  if (!s.has_value() || *s == at::ScalarType::BFloat16) return DType::kBF16;
  if (*s == at::ScalarType::Half) return DType::kF16;
  C10_THROW_ERROR(ValueError, c10::str("f8gemm.precompile: invalid argument: out_dtype must be "
                                       "torch.bfloat16 or torch.float16, got ",
                                       torch_dtype_name(*s)));
}

/// Compiles (disk-cached) and, on an sm_90 GPU, loads the kernel of one problem so that calls
/// with it need no compilation: what CUDA-graph capture requires. shape is [M, N, K] for the
/// single ops (M = the product of XQ's leading dimensions) or [B, M, N, K] for the batched ones.
void precompile(at::IntArrayRef shape, c10::string_view layout, bool use_fast_accum,
                std::optional<at::ScalarType> out_dtype, std::optional<at::ScalarType> bias_dtype,
                std::optional<at::Device> device) {
  if (shape.size() != 3 && shape.size() != 4) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.precompile: invalid argument: shape must be "
                                         "[M, N, K] or [B, M, N, K], got ", shape));
  }
  f8gemm::ProblemShape p;
  const size_t o = shape.size() - 3;
  p.batch = o ? shape[0] : 1;
  p.m = shape[o];
  p.n = shape[o + 1];
  p.k = shape[o + 2];
  if (layout == "preshuffled") {
    p.w_layout = WeightLayout::kPreshuffled;
  } else if (layout == "plain") {
    p.w_layout = WeightLayout::kPlain;
  } else {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.precompile: invalid argument: layout must be "
                                         "'preshuffled' or 'plain', got '", layout, "'"));
  }
  p.fast_accum = use_fast_accum;
  p.out_dtype = out_dtype_of(out_dtype);
  if (bias_dtype.has_value()) {
    p.has_bias = true;
    if (*bias_dtype == at::ScalarType::Float) {
      p.bias_dtype = DType::kF32;
    } else if (*bias_dtype == at::ScalarType::BFloat16) {
      p.bias_dtype = DType::kBF16;
    } else {
      C10_THROW_ERROR(ValueError, c10::str("f8gemm.precompile: invalid argument: bias_dtype must "
                                           "be None, torch.float32 or torch.bfloat16, got ",
                                           torch_dtype_name(*bias_dtype)));
    }
  }
  c10::cuda::OptionalCUDAGuard guard;
  if (device.has_value()) {
    if (!device->is_cuda()) {
      C10_THROW_ERROR(ValueError, c10::str("f8gemm.precompile: invalid argument: device must be "
                                           "a CUDA device, got ", *device));
    }
    guard.set_index(device->has_index() ? device->index() : c10::cuda::current_device());
  } else if (c10::cuda::device_count() > 0) {
    // torch's current device (the runtime's may differ: torch defers some device switches)
    guard.set_index(c10::cuda::current_device());
  }
  try {
    f8gemm::precompile({p});
  } catch (const f8gemm::Error& e) {
    rethrow("precompile", e, Renames{});
  }
}

// ------------------------------------------------------------------------------------ Meta

/// Meta (fake) implementations: output shapes and dtypes only, symbolic sizes allowed. They
/// check what the shape inference itself needs (ranks), with the same error types.
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

at::Tensor meta_gemm(const char* op, const at::Tensor& XQ, const at::Tensor& WQ,
                     WeightLayout layout, bool batched, at::ScalarType out_dtype) {
  c10::SymInt n = meta_weight_rows(op, WQ, layout, batched);
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
  return at::empty_symint(shape, XQ.options().dtype(out_dtype));
}

at::Tensor f8f8bf16_rowwise_meta(const at::Tensor& XQ, const at::Tensor& WQ, const at::Tensor&,
                                 const at::Tensor&, const std::optional<at::Tensor>&, bool) {
  return meta_gemm("f8f8bf16_rowwise", XQ, WQ, WeightLayout::kPlain, false,
                   at::ScalarType::BFloat16);
}

at::Tensor f8f8f16_rowwise_meta(const at::Tensor& XQ, const at::Tensor& WQ, const at::Tensor&,
                                const at::Tensor&, const std::optional<at::Tensor>&, bool) {
  return meta_gemm("f8f8f16_rowwise", XQ, WQ, WeightLayout::kPlain, false, at::ScalarType::Half);
}

void f8f8bf16_rowwise_out_meta(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                               const at::Tensor&, const at::Tensor&,
                               const std::optional<at::Tensor>&, bool) {}

at::Tensor rowwise_batched_meta(const at::Tensor& XQ, const at::Tensor& WQ, const at::Tensor&,
                                const at::Tensor&, const std::optional<at::Tensor>&, bool,
                                bool preshuffled) {
  return meta_gemm(batched_name(preshuffled), XQ, WQ,
                   preshuffled ? WeightLayout::kPreshuffled : WeightLayout::kPlain, true,
                   at::ScalarType::BFloat16);
}

void rowwise_batched_out_meta(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                              const at::Tensor&, const at::Tensor&,
                              const std::optional<at::Tensor>&, bool, bool) {}

at::Tensor f8f8bf16_rowwise_preshuffled_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                             const at::Tensor&, const at::Tensor&,
                                             const std::optional<at::Tensor>&, bool) {
  return meta_gemm("f8f8bf16_rowwise_preshuffled", XQ, WQ, WeightLayout::kPreshuffled, false,
                   at::ScalarType::BFloat16);
}

at::Tensor f8f8f16_rowwise_preshuffled_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                            const at::Tensor&, const at::Tensor&,
                                            const std::optional<at::Tensor>&, bool) {
  return meta_gemm("f8f8f16_rowwise_preshuffled", XQ, WQ, WeightLayout::kPreshuffled, false,
                   at::ScalarType::Half);
}

void f8f8bf16_rowwise_preshuffled_out_meta(const at::Tensor&, const at::Tensor&,
                                           const at::Tensor&, const at::Tensor&,
                                           const at::Tensor&, const std::optional<at::Tensor>&,
                                           bool) {}

at::Tensor preshuffle_meta(const at::Tensor& WQ) {
  if (WQ.dim() != 2 && WQ.dim() != 3) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.preshuffle: invalid argument: WQ must be [N, K] "
                                         "or [B, N, K], got ", WQ.dim(), "-D"));
  }
  const c10::SymInt k = WQ.sym_size(-1);
  std::vector<c10::SymInt> shape = {(k + (f8gemm::kShuffleBlockK - 1)) / f8gemm::kShuffleBlockK,
                                    WQ.sym_size(-2) / f8gemm::kShuffleSlabRows,
                                    c10::SymInt(f8gemm::kShuffleSlabBytes)};
  if (WQ.dim() == 3) shape.insert(shape.begin(), WQ.sym_size(0));
  return at::empty_symint(shape, WQ.options());
}

at::Tensor unshuffle_meta(const at::Tensor& WQ_shuffled, int64_t K) {
  if (WQ_shuffled.dim() != 3 && WQ_shuffled.dim() != 4) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.unshuffle: invalid argument: WQ_shuffled must "
                                         "be 3-D or 4-D preshuffled, got ", WQ_shuffled.dim(),
                                         "-D"));
  }
  std::vector<c10::SymInt> shape = {WQ_shuffled.sym_size(-2) * f8gemm::kShuffleSlabRows,
                                    c10::SymInt(K)};
  if (WQ_shuffled.dim() == 4) shape.insert(shape.begin(), WQ_shuffled.sym_size(0));
  return at::empty_symint(shape, WQ_shuffled.options());
}

std::tuple<at::Tensor, at::Tensor> quantize_fp8_row_meta(const at::Tensor& a,
                                                         const std::optional<at::Tensor>&, bool,
                                                         const std::optional<at::Tensor>& output) {
  if (a.dim() < 1) {
    C10_THROW_ERROR(ValueError, "f8gemm.quantize_fp8_row: invalid argument: a must have at least "
                                "1 dimension ([..., K]), got a 0-dimensional tensor");
  }
  at::Tensor q = output.has_value() && output->defined()
                     ? *output
                     : at::empty_symint(a.sym_sizes(), a.options().dtype(at::ScalarType::Float8_e4m3fn));
  const auto sizes = a.sym_sizes();
  at::Tensor scale = at::empty_symint(sizes.slice(0, sizes.size() - 1),
                                      a.options().dtype(at::ScalarType::Float));
  return std::make_tuple(q, scale);
}

}  // namespace
}  // namespace f8gemm_torch

// ------------------------------------------------------------------------------ registration

TORCH_LIBRARY(f8gemm, m) {
  // Inductor hands these ops contiguous inputs (the library validates, it never copies).
  const std::vector<at::Tag> tags = {at::Tag::needs_contiguous_strides};
  m.def("f8f8bf16_rowwise(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor? bias=None, bool use_fast_accum=True) -> Tensor", tags);
  m.def("f8f8bf16_rowwise_out(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor(a!) output, Tensor? bias=None, bool use_fast_accum=True) -> ()");
  m.def("f8f8f16_rowwise(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor? bias=None, bool use_fast_accum=True) -> Tensor", tags);
  m.def("f8f8bf16_rowwise_batched(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor? bias=None, bool use_fast_accum=True, Tensor(a!)? output=None) -> Tensor");
  m.def("f8f8bf16_rowwise_preshuffled(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor? bias=None, bool use_fast_accum=True) -> Tensor", tags);
  m.def("f8f8bf16_rowwise_preshuffled_out(Tensor XQ, Tensor WQ, Tensor x_scale, "
        "Tensor w_scale, Tensor(a!) output, Tensor? bias=None, bool use_fast_accum=True) -> ()");
  m.def("f8f8f16_rowwise_preshuffled(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor? bias=None, bool use_fast_accum=True) -> Tensor", tags);
  m.def("f8f8bf16_rowwise_batched_preshuffled(Tensor XQ, Tensor WQ, Tensor x_scale, "
        "Tensor w_scale, Tensor? bias=None, bool use_fast_accum=True, "
        "Tensor(a!)? output=None) -> Tensor");
  m.def("preshuffle(Tensor WQ) -> Tensor", tags);
  m.def("unshuffle(Tensor WQ_shuffled, int K) -> Tensor", tags);
  // Internal: the two forms behind the batched ops (see batched_composite).
  m.def("_rowwise_batched(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, Tensor? bias, "
        "bool use_fast_accum, bool preshuffled) -> Tensor", tags);
  m.def("_rowwise_batched_out(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor(a!) output, Tensor? bias, bool use_fast_accum, bool preshuffled) -> ()");
  m.def("quantize_fp8_row(Tensor a, Tensor? scale_ub=None, bool use_triton=True, "
        "Tensor(a!)? output=None) -> (Tensor, Tensor)");
  m.def("precompile(int[] shape, str layout='preshuffled', bool use_fast_accum=True, "
        "ScalarType? out_dtype=None, ScalarType? bias_dtype=None, Device? device=None) -> ()");
}

// CPU tensors reach the same code: the GEMMs reject them with the library's message ("XQ must
// be in GPU memory"); preshuffle, unshuffle and quantize_fp8_row run on the host.
#define F8GEMM_TORCH_IMPLS(m)                                                                  \
  m.impl("f8f8bf16_rowwise", TORCH_FN(f8gemm_torch::f8f8bf16_rowwise));                        \
  m.impl("f8f8bf16_rowwise_out", TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_out));                \
  m.impl("f8f8f16_rowwise", TORCH_FN(f8gemm_torch::f8f8f16_rowwise));                          \
  m.impl("_rowwise_batched", TORCH_FN(f8gemm_torch::rowwise_batched_impl));                    \
  m.impl("_rowwise_batched_out", TORCH_FN(f8gemm_torch::rowwise_batched_out_impl));            \
  m.impl("f8f8bf16_rowwise_preshuffled", TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_preshuffled)); \
  m.impl("f8f8bf16_rowwise_preshuffled_out",                                                   \
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_preshuffled_out));                            \
  m.impl("f8f8f16_rowwise_preshuffled", TORCH_FN(f8gemm_torch::f8f8f16_rowwise_preshuffled));  \
  m.impl("preshuffle", TORCH_FN(f8gemm_torch::preshuffle));                                    \
  m.impl("unshuffle", TORCH_FN(f8gemm_torch::unshuffle));                                      \
  m.impl("quantize_fp8_row", TORCH_FN(f8gemm_torch::quantize_fp8_row))

TORCH_LIBRARY_IMPL(f8gemm, CUDA, m) { F8GEMM_TORCH_IMPLS(m); }

TORCH_LIBRARY_IMPL(f8gemm, CPU, m) { F8GEMM_TORCH_IMPLS(m); }

TORCH_LIBRARY_IMPL(f8gemm, Meta, m) {
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
  m.impl("preshuffle", TORCH_FN(f8gemm_torch::preshuffle_meta));
  m.impl("unshuffle", TORCH_FN(f8gemm_torch::unshuffle_meta));
  m.impl("quantize_fp8_row", TORCH_FN(f8gemm_torch::quantize_fp8_row_meta));
}

// The public batched ops choose between the internal functional and out forms.
TORCH_LIBRARY_IMPL(f8gemm, CompositeImplicitAutograd, m) {
  m.impl("f8f8bf16_rowwise_batched", TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_batched));
  m.impl("f8f8bf16_rowwise_batched_preshuffled",
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_batched_preshuffled));
}

// precompile takes no tensor: it is dispatched through CompositeExplicitAutograd.
TORCH_LIBRARY_IMPL(f8gemm, CompositeExplicitAutograd, m) {
  m.impl("precompile", TORCH_FN(f8gemm_torch::precompile));
}

// --------------------------------------------------------------------- aliases and information

namespace f8gemm_torch {
namespace {

/// What `f8gemm info` prints (tools/cmd_basic.cpp), as one string: `python -m f8gemm info`.
std::string info() {
  const f8gemm::DeviceInfo d = f8gemm::device_info();
  std::string text = c10::str("f8gemm ", f8gemm::kVersion, "\n", "NVRTC ", d.nvrtc_major, ".",
                              d.nvrtc_minor, ", CUDA runtime ", d.runtime_version, ", driver ",
                              d.driver_version, "\n", "cache: ", d.cache_dir, "\n");
  if (!d.has_device) {
    return text + c10::str("GPU: none (", d.reason, "); kernels still compile for sm_90a\n");
  }
  return text + c10::str("GPU ", d.device, ": ", d.name, ", ", d.sm_count,
                         " SMs, compute capability ", d.cc_major, ".", d.cc_minor,
                         d.reason.empty() ? "" : ": ", d.reason, "\n");
}

int64_t preshuffle_layout_version() { return f8gemm::kPreshuffleLayoutVersion; }

}  // namespace
}  // namespace f8gemm_torch

// FBGEMM's ROCm names for its preshuffled GEMMs, same schemas. Only the names are shared: the
// weight layouts differ between vendors, so WQ must come from torch.ops.f8gemm.preshuffle.
TORCH_LIBRARY_FRAGMENT(f8gemm, m) {
  const std::vector<at::Tag> tags = {at::Tag::needs_contiguous_strides};
  m.def("f8f8bf16_rowwise_preshuffle(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor? bias=None, bool use_fast_accum=True) -> Tensor", tags);
  m.def("f8f8f16_rowwise_preshuffle(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor? bias=None, bool use_fast_accum=True) -> Tensor", tags);
  m.def("info() -> str", TORCH_FN(f8gemm_torch::info));
  m.def("preshuffle_layout_version() -> int", TORCH_FN(f8gemm_torch::preshuffle_layout_version));
}

TORCH_LIBRARY_IMPL(f8gemm, CUDA, m) {
  m.impl("f8f8bf16_rowwise_preshuffle", TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_preshuffled));
  m.impl("f8f8f16_rowwise_preshuffle", TORCH_FN(f8gemm_torch::f8f8f16_rowwise_preshuffled));
}

TORCH_LIBRARY_IMPL(f8gemm, CPU, m) {
  m.impl("f8f8bf16_rowwise_preshuffle", TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_preshuffled));
  m.impl("f8f8f16_rowwise_preshuffle", TORCH_FN(f8gemm_torch::f8f8f16_rowwise_preshuffled));
}

TORCH_LIBRARY_IMPL(f8gemm, Meta, m) {
  m.impl("f8f8bf16_rowwise_preshuffle",
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_preshuffled_meta));
  m.impl("f8f8f16_rowwise_preshuffle", TORCH_FN(f8gemm_torch::f8f8f16_rowwise_preshuffled_meta));
}
