/// \brief Argument validation (validate.hpp): every check runs before any device access, and a
/// failure throws Error(kInvalidArgument) naming the argument or the size at fault.
#include "validate.hpp"

#include <string>

#include "check.hpp"
#include "launch.hpp"

namespace f8gemm {
namespace detail {

namespace {

/// shape_str with every size as a number (a negative one included).
std::string raw_shape_str(const TensorView& t) {
  std::string s = "[";
  for (int i = 0; i < t.rank; ++i) s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "]";
}

}  // namespace

std::string size_str(int64_t size) { return known(size) ? std::to_string(size) : "?"; }

std::string shape_str(const TensorView& t) {
  std::string s = "[";
  for (int i = 0; i < t.rank; ++i) s += (i ? ", " : "") + size_str(t.shape[i]);
  return s + "]";
}

int64_t known_product(const TensorView& t, int begin, int end) {
  // A zero makes the product 0 whatever the other sizes, unknown ones included.
  for (int i = begin; i < end; ++i) {
    if (t.shape[i] == 0) return 0;
  }
  int64_t product = 1;
  for (int i = begin; i < end; ++i) {
    if (!known(t.shape[i])) return kUnknownSize;
    product *= t.shape[i];
  }
  return product;
}

int64_t known_mul(int64_t a, int64_t b, const char* name, const char* what) {
  if (!known(a) || !known(b)) return kUnknownSize;
  int64_t product = 0;
  F8GEMM_REQUIRE(!__builtin_mul_overflow(a, b, &product), kInvalidArgument,
                 "sizes exceed int64: ", name, what, " = ", a, " * ", b,
                 " is more than 2^63 - 1");
  return product;
}

void require_dtype(const TensorView& t, const char* name, DType a, DType b, bool allow_b) {
  F8GEMM_REQUIRE(t.dtype == a || (allow_b && t.dtype == b), kInvalidArgument, name,
                 " must have dtype ", to_string(a), allow_b ? " or " : "",
                 allow_b ? to_string(b) : "", ", got ", to_string(t.dtype));
}

void require_rank(const TensorView& t, const char* name, int rank, const Layout& layout) {
  F8GEMM_REQUIRE(t.rank == rank, kInvalidArgument, name, " must be ", rank, "-D ", layout.a,
                 layout.b, layout.c, ", got shape ", shape_str(t));
}

void require_shape(const TensorView& t, const char* name, std::initializer_list<int64_t> dims,
                   const Layout& layout) {
  bool ok = t.rank == int(dims.size());
  int i = 0;
  for (int64_t d : dims) ok = ok && may_equal(t.shape[i++], d);
  if (!ok) {
    std::string want = "[";
    i = 0;
    for (int64_t d : dims) want += (i++ ? ", " : "") + size_str(d);
    throw Error(ErrorCode::kInvalidArgument,
                concat(name, " must have shape ", want, "] (", layout.a, layout.b, layout.c,
                       "), got ", shape_str(t)));
  }
}

void require_memory(const TensorView& t, const char* name, int alignment) {
  F8GEMM_REQUIRE(t.is_contiguous(), kInvalidArgument, name,
                 " must be contiguous (row-major), got shape ", shape_str(t), " with other strides");
  F8GEMM_REQUIRE(t.numel() == 0 || t.data != nullptr, kInvalidArgument, name,
                 " has a null data pointer");
  F8GEMM_REQUIRE(reinterpret_cast<uintptr_t>(t.data) % alignment == 0, kInvalidArgument, name,
                 " must be ", alignment, "-byte aligned, got address ", t.data);
}

void require_view(const TensorView& t, const char* name, bool allow_unknown) {
  F8GEMM_REQUIRE(t.rank >= 0 && t.rank <= kMaxRank, kInvalidArgument, name, " must have rank 0..",
                 kMaxRank, ", got ", t.rank);
  // Every later message reads a negative device as the host.
  F8GEMM_REQUIRE(t.device >= kHost, kInvalidArgument, name,
                 "'s device must be kHost (-1) or a CUDA device ordinal, got ", t.device);
  int64_t product = 1;
  for (int i = 0; i < t.rank; ++i) {
    if (allow_unknown && !known(t.shape[i])) continue;
    F8GEMM_REQUIRE(t.shape[i] >= 0, kInvalidArgument, name, " has a negative dimension: shape ",
                   raw_shape_str(t));
    if (t.shape[i] == 0) continue;
    F8GEMM_REQUIRE(!__builtin_mul_overflow(product, t.shape[i], &product), kInvalidArgument, name,
                   " has more than 2^63 elements: shape ",
                   allow_unknown ? shape_str(t) : raw_shape_str(t));
  }
}

GemmTensors require_gemm_tensors(const TensorView& x, const TensorView& w, WeightLayout layout,
                                 const TensorView& xs, const TensorView& ws, const TensorView& out,
                                 const GemmOptions& opt, bool allow_unknown) {
  // A null name would be streamed into a message (undefined): it keeps the C++ name.
  static const GemmArgNames kDefaultNames;
  GemmArgNames n = opt.names ? *opt.names : kDefaultNames;
  for (const char* GemmArgNames::*field :
       {&GemmArgNames::x, &GemmArgNames::w, &GemmArgNames::x_scale, &GemmArgNames::w_scale,
        &GemmArgNames::out, &GemmArgNames::bias, &GemmArgNames::m_sizes}) {
    if (n.*field == nullptr) n.*field = kDefaultNames.*field;
  }
  const bool shuffled = layout == WeightLayout::kPreshuffled;
  F8GEMM_REQUIRE(layout == WeightLayout::kPlain || shuffled, kInvalidArgument,
                 "w_layout must be kPlain or kPreshuffled");
  require_pdl(opt.pdl, "GemmOptions::pdl");
  require_dtype(x, n.x, DType::kE4M3);
  require_dtype(w, n.w, DType::kE4M3, DType::kU8, shuffled);
  require_dtype(xs, n.x_scale, DType::kF32);
  require_dtype(ws, n.w_scale, DType::kF32);
  F8GEMM_REQUIRE(out.dtype == DType::kBF16 || out.dtype == DType::kF16, kInvalidArgument,
                 n.out, " must have dtype bfloat16 or float16, got ", to_string(out.dtype));
  const TensorView* bias = opt.bias && opt.bias->defined() ? opt.bias : nullptr;
  if (bias) require_dtype(*bias, n.bias, DType::kF32, DType::kBF16, true);
  // Before any shape is read: a hand-built view may hold anything.
  require_view(x, n.x, allow_unknown);
  require_view(w, n.w, allow_unknown);
  require_view(xs, n.x_scale, allow_unknown);
  require_view(ws, n.w_scale, allow_unknown);
  require_view(out, n.out, allow_unknown);
  if (bias) require_view(*bias, n.bias, allow_unknown);
  return GemmTensors{x, w, xs, ws, out, bias, n};
}

std::string place_str(int device) {
  return device < 0 ? std::string("the host") : concat("cuda:", device);
}

namespace {

/// require_disjoint of `written` against each tensor the GEMM reads (x, w, the scales, bias).
void require_disjoint_from_inputs(const GemmTensors& t, const TensorView& written,
                                  const char* name) {
  const GemmArgNames& n = t.names;
  require_disjoint(written, name, t.x, n.x);
  require_disjoint(written, name, t.w, n.w);
  require_disjoint(written, name, t.x_scale, n.x_scale);
  require_disjoint(written, name, t.w_scale, n.w_scale);
  if (t.bias) require_disjoint(written, name, *t.bias, n.bias);
}

}  // namespace

int require_gemm_placement(const GemmTensors& t) {
  const GemmArgNames& n = t.names;
  require_memory(t.x, n.x, 16);
  require_memory(t.w, n.w, 16);
  require_memory(t.x_scale, n.x_scale, 4);
  require_memory(t.w_scale, n.w_scale, 4);
  require_memory(t.out, n.out, 16);
  if (t.bias) require_memory(*t.bias, n.bias, dtype_size(t.bias->dtype));
  const int device = t.x.device;
  F8GEMM_REQUIRE(device >= 0, kInvalidArgument, n.x, " must be in GPU memory, got host memory");
  auto same = [&](const TensorView& v, const char* name) {
    F8GEMM_REQUIRE(v.device == device, kInvalidArgument, name, " is on ", place_str(v.device),
                   " but ", n.x, " is on cuda:", device);
  };
  same(t.w, n.w);
  same(t.x_scale, n.x_scale);
  same(t.w_scale, n.w_scale);
  same(t.out, n.out);
  if (t.bias) same(*t.bias, n.bias);
  require_disjoint_from_inputs(t, t.out, n.out);
  return device;
}

Validated validate_call(const TensorView& x, const TensorView& w, WeightLayout layout,
                        const TensorView& xs, const TensorView& ws, const TensorView& out,
                        const GemmOptions& opt, bool batched) {
  // The shape rules first, as check_gemm_shapes() runs them alone: a Meta kernel then refuses
  // what the call refuses, with the same Error.
  const GemmTensors t = require_gemm_tensors(x, w, layout, xs, ws, out, opt);
  const GemmArgNames& n = t.names;
  Validated v;
  v.shape = gemm_shape_rules(t, layout, opt, batched);
  v.pdl = use_pdl(opt.pdl) ? Pdl::kOn : Pdl::kOff;
  v.shape.chained = opt.prefetch_w && v.pdl == Pdl::kOn;
  if (opt.trace) {
    const GemmTrace& tr = *opt.trace;
    F8GEMM_REQUIRE(tr.data != nullptr, kInvalidArgument, "trace.data is null");
    F8GEMM_REQUIRE(reinterpret_cast<uintptr_t>(tr.data) % 8 == 0, kInvalidArgument,
                   "trace.data must be 8-byte aligned");
    F8GEMM_REQUIRE(tr.tiles >= 1 && tr.tiles <= dev::kTraceMaxTiles, kInvalidArgument,
                   "trace.tiles must be in [1, ", dev::kTraceMaxTiles, "], got ", tr.tiles);
    F8GEMM_REQUIRE(tr.words >= 0, kInvalidArgument, "trace.words must be >= 0, got ", tr.words);
  }

  v.device = require_gemm_placement(t);
  if (opt.trace) {
    // The instrumented kernel writes the trace while it reads the inputs and writes out.
    const TensorView trace = make_view(opt.trace->data, DType::kI64, {opt.trace->words}, v.device);
    require_disjoint_from_inputs(t, trace, "trace.data");
    require_disjoint(trace, "trace.data", t.out, n.out);
  }
  return v;
}

void require_contiguous(const TensorView& t, const char* name, int alignment) {
  F8GEMM_REQUIRE(t.is_contiguous(), kInvalidArgument, name, " must be contiguous");
  F8GEMM_REQUIRE(t.numel() == 0 || t.data != nullptr, kInvalidArgument, name,
                 " has a null data pointer");
  F8GEMM_REQUIRE(reinterpret_cast<uintptr_t>(t.data) % alignment == 0, kInvalidArgument, name,
                 " must be ", alignment, "-byte aligned");
}

void require_disjoint(const TensorView& out, const char* out_name, const TensorView& in,
                      const char* in_name) {
  const int64_t out_n = out.numel(), in_n = in.numel();
  if (out_n == 0 || in_n == 0) return;
  // 128-bit ends: numel() < 2^63 and an element is at most 8 bytes, so nothing wraps.
  using U = unsigned __int128;
  const U out_begin = reinterpret_cast<uintptr_t>(out.data);
  const U in_begin = reinterpret_cast<uintptr_t>(in.data);
  const U out_end = out_begin + U(out_n) * U(dtype_size(out.dtype));
  const U in_end = in_begin + U(in_n) * U(dtype_size(in.dtype));
  F8GEMM_REQUIRE(out_end <= in_begin || in_end <= out_begin, kInvalidArgument, out_name,
                 " overlaps ", in_name, " in memory (", out_name, " ", shape_str(out), " at ",
                 out.data, ", ", in_name, " ", shape_str(in), " at ", in.data,
                 "): the kernel would read ", in_name, " while it writes ", out_name,
                 "; pass an output of its own");
}

}  // namespace detail

ProblemShape gemm_problem(const TensorView& x, const TensorView& w, WeightLayout w_layout,
                          const TensorView& x_scale, const TensorView& w_scale,
                          const TensorView& out, const GemmOptions& options) {
  return detail::validate_call(x, w, w_layout, x_scale, w_scale, out, options, false).shape;
}

ProblemShape batched_gemm_problem(const TensorView& x, const TensorView& w, WeightLayout w_layout,
                                  const TensorView& x_scale, const TensorView& w_scale,
                                  const TensorView& out, const GemmOptions& options) {
  return detail::validate_call(x, w, w_layout, x_scale, w_scale, out, options, true).shape;
}

}  // namespace f8gemm
