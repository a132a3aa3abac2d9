/// \brief Argument validation (validate.hpp): every check runs before any device access, and a
/// failure throws Error(kInvalidArgument) naming the argument or the size at fault.
#include "validate.hpp"

#include <algorithm>
#include <string>

#include "check.hpp"
#include "launch.hpp"

namespace f8gemm {
namespace detail {

std::string shape_str(const TensorView& t) {
  std::string s = "[";
  for (int i = 0; i < t.rank; ++i) s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "]";
}

namespace {

std::string sizes_str(const ProblemShape& p) {
  return concat("B,M,N,K = ", p.batch, ",", p.m, ",", p.n, ",", p.k);
}

}  // namespace

void require_dtype(const TensorView& t, const char* name, DType a, DType b, bool allow_b) {
  F8GEMM_REQUIRE(t.dtype == a || (allow_b && t.dtype == b), kInvalidArgument, name,
                 " must have dtype ", to_string(a), allow_b ? " or " : "",
                 allow_b ? to_string(b) : "", ", got ", to_string(t.dtype));
}

void require_rank(const TensorView& t, const char* name, int rank, const std::string& layout) {
  F8GEMM_REQUIRE(t.rank == rank, kInvalidArgument, name, " must be ", rank, "-D ", layout,
                 ", got shape ", shape_str(t));
}

void require_shape(const TensorView& t, const char* name, std::initializer_list<int64_t> dims,
                   const std::string& layout) {
  bool ok = t.rank == int(dims.size());
  int i = 0;
  for (int64_t d : dims) ok = ok && t.shape[i++] == d;
  if (!ok) {
    std::string want = "[";
    i = 0;
    for (int64_t d : dims) want += (i++ ? ", " : "") + std::to_string(d);
    throw Error(ErrorCode::kInvalidArgument, concat(name, " must have shape ", want, "] (", layout,
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

namespace {

/// Throws unless value <= limit, naming the size, the limit and the reason for it.
void require_at_most(const char* what, int64_t value, int64_t limit, const char* why,
                     const ProblemShape& p) {
  F8GEMM_REQUIRE(value <= limit, kInvalidArgument, "sizes exceed the int32 index range: ", what,
                 " = ", value, " is more than ", limit, " (", why, "; ", sizes_str(p), ")");
}

}  // namespace

void require_view(const TensorView& t, const char* name) {
  F8GEMM_REQUIRE(t.rank >= 0 && t.rank <= kMaxRank, kInvalidArgument, name, " must have rank 0..",
                 kMaxRank, ", got ", t.rank);
  int64_t product = 1;
  for (int i = 0; i < t.rank; ++i) {
    F8GEMM_REQUIRE(t.shape[i] >= 0, kInvalidArgument, name, " has a negative dimension: shape ",
                   shape_str(t));
    if (t.shape[i] == 0) continue;
    F8GEMM_REQUIRE(!__builtin_mul_overflow(product, t.shape[i], &product), kInvalidArgument, name,
                   " has more than 2^63 elements: shape ", shape_str(t));
  }
}

GemmTensors require_gemm_tensors(const TensorView& x, const TensorView& w, WeightLayout layout,
                                 const TensorView& xs, const TensorView& ws, const TensorView& out,
                                 const GemmOptions& opt) {
  static const GemmArgNames kDefaultNames;
  const GemmArgNames& n = opt.names ? *opt.names : kDefaultNames;
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
  require_view(x, n.x);
  require_view(w, n.w);
  require_view(xs, n.x_scale);
  require_view(ws, n.w_scale);
  require_view(out, n.out);
  if (bias) require_view(*bias, n.bias);
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
  const GemmTensors t = require_gemm_tensors(x, w, layout, xs, ws, out, opt);
  const GemmArgNames& n = t.names;
  const TensorView* bias = t.bias;
  const std::string x_s = concat(n.x, "'s");  // "x's"
  const bool shuffled = layout == WeightLayout::kPreshuffled;

  Validated v;
  ProblemShape& p = v.shape;
  if (batched) {
    require_rank(x, n.x, 3, "[B, M, K]");
    p.batch = x.shape[0];
    p.m = x.shape[1];
    p.k = x.shape[2];
  } else {
    F8GEMM_REQUIRE(x.rank >= 1, kInvalidArgument, n.x,
                   " must be [..., K] with at least 1 dimension");
    p.batch = 1;
    p.k = x.shape[x.rank - 1];
    p.m = 1;
    for (int i = 0; i + 1 < x.rank; ++i) p.m *= x.shape[i];  // require_view: no overflow
  }
  F8GEMM_REQUIRE(p.k > 0 && p.k % 16 == 0, kInvalidArgument, "K (", x_s, " last dimension) must ",
                 "be a positive multiple of 16 (TMA moves 16-byte rows), got ", p.k);
  const int lead = batched ? 1 : 0;  // index of N (or K-blocks) in w's shape
  if (shuffled) {
    require_rank(w, n.w, 3 + lead, batched ? "preshuffled [B, ceil(K/128), N/8, 1024]"
                                           : "preshuffled [ceil(K/128), N/8, 1024]");
    p.n = w.shape[lead + 1] * 8;
    if (batched) {
      require_shape(w, n.w, {p.batch, (p.k + 127) / 128, w.shape[2], 1024},
                    concat("preshuffled [B, ceil(K/128), N/8, 1024] matching ", n.x));
    } else {
      require_shape(w, n.w, {(p.k + 127) / 128, w.shape[1], 1024},
                    concat("preshuffled [ceil(K/128), N/8, 1024] matching ", x_s, " K"));
    }
  } else {
    require_rank(w, n.w, 2 + lead, batched ? "[B, N, K] (a plain weight)" : "[N, K] (a plain weight)");
    p.n = w.shape[lead];
    if (batched) {
      require_shape(w, n.w, {p.batch, p.n, p.k}, concat("[B, N, K] matching ", n.x, " [B, M, K]"));
    } else {
      require_shape(w, n.w, {p.n, p.k}, concat("[N, K] matching ", x_s, " K"));
    }
  }
  F8GEMM_REQUIRE(p.n > 0 && p.n % 8 == 0, kInvalidArgument,
                 "N (", n.w, "'s rows) must be a positive multiple of 8, got ", p.n);
  F8GEMM_REQUIRE(opt.epilogue_op == EpilogueOp::kNone || opt.epilogue_op == EpilogueOp::kSiluMul,
                 kInvalidArgument, "epilogue_op must be kNone or kSiluMul, got ",
                 int(opt.epilogue_op));
  const bool silu_mul = opt.epilogue_op == EpilogueOp::kSiluMul;
  F8GEMM_REQUIRE(!silu_mul || p.n % 16 == 0, kInvalidArgument, "with the SiLU·mul epilogue, N (",
                 n.w, "'s rows: gate then up, 2I) must be a multiple of 16, got ", p.n);
  const int64_t out_n = silu_mul ? p.n / 2 : p.n;  // Y's columns
  const char* out_n_name = silu_mul ? "N/2" : "N";

  if (batched) {
    require_shape(xs, n.x_scale, {p.batch, p.m}, "[B, M]");
    require_shape(ws, n.w_scale, {p.batch, p.n}, "[B, N]");
    require_shape(out, n.out, {p.batch, p.m, out_n}, silu_mul ? "[B, M, N/2]" : "[B, M, N]");
    if (bias) require_shape(*bias, n.bias, {p.batch, p.n}, "[B, N]");
  } else {
    // x_scale has x's leading shape (what quantize_rows produces), or is 1-D [M].
    bool xs_ok = xs.numel() == p.m && (xs.rank == 1 || xs.rank == x.rank - 1);
    for (int i = 0; xs_ok && xs.rank == x.rank - 1 && i < xs.rank; ++i) {
      xs_ok = xs.shape[i] == x.shape[i];
    }
    F8GEMM_REQUIRE(xs_ok, kInvalidArgument, n.x_scale, " must have ", x_s, " leading shape (M = ",
                   p.m, " values), got ", shape_str(xs), " for ", n.x, " ", shape_str(x));
    require_shape(ws, n.w_scale, {p.n}, "[N]");
    bool out_ok = out.rank == x.rank && out.shape[out.rank - 1] == out_n;
    for (int i = 0; out_ok && i + 1 < x.rank; ++i) out_ok = out.shape[i] == x.shape[i];
    if (!out_ok && out.rank == 2) out_ok = out.shape[0] == p.m && out.shape[1] == out_n;
    F8GEMM_REQUIRE(out_ok, kInvalidArgument, n.out, " must have shape ", n.x, ".shape[:-1] + [",
                   out_n_name, "] (", out_n_name, " = ", out_n, "), got ", shape_str(out), " for ",
                   n.x, " ", shape_str(x));
    if (bias) require_shape(*bias, n.bias, {p.n}, "[N]");
  }

  p.w_layout = layout;
  p.out_dtype = out.dtype;
  p.has_bias = bias != nullptr;
  p.bias_dtype = bias ? bias->dtype : DType::kF32;
  p.fast_accum = opt.fast_accum;
  v.pdl = use_pdl(opt.pdl) ? Pdl::kOn : Pdl::kOff;
  p.chained = opt.prefetch_w && v.pdl == Pdl::kOn;
  p.epilogue_op = opt.epilogue_op;
  validate_problem(p);
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

void validate_problem(const ProblemShape& p) {
  using detail::sizes_str;
  F8GEMM_REQUIRE(p.w_layout == WeightLayout::kPlain || p.w_layout == WeightLayout::kPreshuffled,
                 kInvalidArgument, "w_layout must be kPlain or kPreshuffled, got ", int(p.w_layout));
  F8GEMM_REQUIRE(p.out_dtype == DType::kBF16 || p.out_dtype == DType::kF16, kInvalidArgument,
                 "the output dtype must be bfloat16 or float16, got ", to_string(p.out_dtype));
  F8GEMM_REQUIRE(!p.has_bias || p.bias_dtype == DType::kF32 || p.bias_dtype == DType::kBF16,
                 kInvalidArgument, "the bias dtype must be float32 or bfloat16, got ",
                 to_string(p.bias_dtype));
  F8GEMM_REQUIRE(p.batch >= 0 && p.m >= 0, kInvalidArgument, "B and M must be non-negative (",
                 sizes_str(p), ")");
  F8GEMM_REQUIRE(p.n > 0 && p.n % 8 == 0, kInvalidArgument,
                 "N must be a positive multiple of 8, got ", p.n, " (", sizes_str(p), ")");
  F8GEMM_REQUIRE(p.epilogue_op == EpilogueOp::kNone || p.epilogue_op == EpilogueOp::kSiluMul,
                 kInvalidArgument, "epilogue_op must be kNone or kSiluMul, got ",
                 int(p.epilogue_op));
  F8GEMM_REQUIRE(p.epilogue_op != EpilogueOp::kSiluMul || p.n % 16 == 0, kInvalidArgument,
                 "with the SiLU·mul epilogue N (gate then up rows, 2I) must be a multiple of 16, "
                 "got ", p.n, " (", sizes_str(p), ")");
  F8GEMM_REQUIRE(p.k > 0 && p.k % 16 == 0, kInvalidArgument,
                 "K must be a positive multiple of 16 (TMA moves 16-byte rows), got ", p.k, " (",
                 sizes_str(p), ")");
  detail::require_at_most("B", p.batch, detail::kMaxBatch, "the batch index is int32", p);
  detail::require_at_most("M", p.m, detail::kMaxM, "a tile's rows past M stay in int32", p);
  detail::require_at_most("N", p.n, detail::kMaxN, "the rasterisation group of up to 64 x N/8 tiles is int32", p);
  detail::require_at_most("K", p.k, detail::kMaxK, "the k-block count (K + 127) / 128 is int32", p);
  // B, M, N and K are now in int32, so these products fit in int64.
  const int64_t tiles_bm = p.batch * ((p.m + 7) / 8), tiles_n = (p.n + 7) / 8;
  F8GEMM_REQUIRE(tiles_bm <= detail::kMaxTiles / tiles_n, kInvalidArgument,
                 "sizes exceed the int32 tile index range: B * ceil(M/8) * ceil(N/8) is more than ",
                 detail::kMaxTiles, " (", sizes_str(p), ")");
  const int64_t max_stride = std::max({p.m * p.k, p.n * p.k, p.m * p.n * 2});
  F8GEMM_REQUIRE(max_stride < detail::kMaxBatchStrideBytes, kInvalidArgument,
                 "sizes exceed TMA's stride limit: one batch of X, W or Y must be smaller than "
                 "2^40 bytes, got ", max_stride, " (", sizes_str(p), ")");
}

}  // namespace f8gemm
