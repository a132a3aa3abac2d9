/// \brief The shape rules of gemm() and batched_gemm() (validate.hpp gemm_shape_rules) and of a
/// problem (validate_problem), in one place for the call and for check_gemm_shapes(), which runs
/// them alone before any tensor exists (the PyTorch extension's Meta kernels). A size may be
/// kUnknownSize only there: each rule is checked with the sizes that are known, so a symbolic M
/// still leaves K % 16, N % 8 and W's shape checked.
#include <algorithm>
#include <string>

#include "check.hpp"
#include "validate.hpp"

namespace f8gemm {
namespace detail {

namespace {

/// "B,M,N,K = 2,64,128,256" ("?" for an unknown size).
std::string sizes_str(const ProblemShape& p) {
  return concat("B,M,N,K = ", size_str(p.batch), ",", size_str(p.m), ",", size_str(p.n), ",",
                size_str(p.k));
}

/// Throws unless value <= limit (or value is unknown), naming the size, the limit and the reason.
void require_at_most(const char* what, int64_t value, int64_t limit, const char* why,
                     const ProblemShape& p) {
  F8GEMM_REQUIRE(!known(value) || value <= limit, kInvalidArgument,
                 "sizes exceed the int32 index range: ", what, " = ", value, " is more than ",
                 limit, " (", why, "; ", sizes_str(p), ")");
}

/// The k-blocks of a preshuffled W: ceil(K / 128), unknown with K (no overflow for any K).
int64_t k_blocks(int64_t k) { return known_ceil_div(k, kShuffleBlockK); }

/// "WQ's rows" where N comes from W, else "from w_scale" (or the argument that gave it).
std::string n_source(const SharedSize& n_size, const char* w_name) {
  return n_size.from == w_name ? concat(w_name, "'s rows") : concat("from ", n_size.from);
}

}  // namespace

ProblemShape gemm_shape_rules(const GemmTensors& t, WeightLayout layout, const GemmOptions& opt,
                              bool batched) {
  const TensorView& x = t.x;
  const TensorView& w = t.w;
  const TensorView& xs = t.x_scale;
  const TensorView& ws = t.w_scale;
  const TensorView& out = t.out;
  const TensorView* bias = t.bias;
  const GemmArgNames& n = t.names;
  const bool shuffled = layout == WeightLayout::kPreshuffled;

  ProblemShape p;
  if (batched) {
    require_rank(x, n.x, 3, "[B, M, K]");
    p.m = x.shape[1];
    p.k = x.shape[2];
  } else {
    F8GEMM_REQUIRE(x.rank >= 1, kInvalidArgument, n.x,
                   " must be [..., K] with at least 1 dimension");
    p.batch = 1;
    p.k = x.shape[x.rank - 1];
    p.m = known_product(x, 0, x.rank - 1);  // require_view: no overflow
  }
  F8GEMM_REQUIRE(!known(p.k) || (p.k > 0 && p.k % 16 == 0), kInvalidArgument, "K (", n.x,
                 "'s last dimension) must be a positive multiple of 16 (TMA moves 16-byte rows), "
                 "got ", p.k);
  const int lead = batched ? 1 : 0;  // index of N (or K-blocks) in w's shape
  if (shuffled) {
    require_rank(w, n.w, 3 + lead, batched ? "preshuffled [B, ceil(K/128), N/8, 1024]"
                                           : "preshuffled [ceil(K/128), N/8, 1024]");
  } else {
    require_rank(w, n.w, 2 + lead, batched ? "[B, N, K] (a plain weight)" : "[N, K] (a plain weight)");
  }
  const bool silu_mul = opt.epilogue_op == EpilogueOp::kSiluMul;
  // B and N come from the first argument that knows them (SharedSize): x and w, then the other
  // inputs, the output last. Each argument offers them only at the rank that carries them.
  if (batched) {
    SharedSize batch;
    batch.offer(x.shape[0], n.x);
    batch.offer(w.shape[0], n.w);
    if (xs.rank == 2) batch.offer(xs.shape[0], n.x_scale);
    if (ws.rank == 2) batch.offer(ws.shape[0], n.w_scale);
    if (bias && bias->rank == 2) batch.offer(bias->shape[0], n.bias);
    if (out.rank == 3) batch.offer(out.shape[0], n.out);
    p.batch = batch.value;
  }
  SharedSize n_size;
  n_size.offer(shuffled ? known_mul(w.shape[lead + 1], kShuffleSlabRows, n.w,
                                    "'s N/8 dimension times 8 (N)")
                        : w.shape[lead],
               n.w);
  if (ws.rank == 1 + lead) n_size.offer(ws.shape[lead], n.w_scale);
  if (bias && bias->rank == 1 + lead) n_size.offer(bias->shape[lead], n.bias);
  if (batched ? out.rank == 3 : (out.rank == x.rank || out.rank == 2)) {
    const int64_t cols = out.shape[out.rank - 1];  // N, or N/2 with the SiLU·mul epilogue
    // out's N/2 is doubled only where nothing before it gave N: else out's shape check below
    // compares it with N / 2, and a huge last dimension gets that message, not an overflow's.
    if (!silu_mul) n_size.offer(cols, n.out);
    else if (!known(n_size.value))
      n_size.offer(known_mul(cols, 2, n.out, "'s last dimension times 2 (N)"), n.out);
  }
  p.n = n_size.value;
  if (shuffled) {
    // W's N/8 dimension is N's first source: where it is known, N came from it.
    if (batched) {
      require_shape(w, n.w, {p.batch, k_blocks(p.k), w.shape[2], kShuffleSlabBytes},
                    Layout("preshuffled [B, ceil(K/128), N/8, 1024] matching ", n.x));
    } else {
      require_shape(w, n.w, {k_blocks(p.k), w.shape[1], kShuffleSlabBytes},
                    Layout("preshuffled [ceil(K/128), N/8, 1024] matching ", n.x, "'s K"));
    }
  } else {
    if (batched) {
      require_shape(w, n.w, {p.batch, p.n, p.k}, Layout("[B, N, K] matching ", n.x, " [B, M, K]"));
    } else {
      require_shape(w, n.w, {p.n, p.k}, Layout("[N, K] matching ", n.x, "'s K"));
    }
  }
  F8GEMM_REQUIRE(!known(p.n) || (p.n > 0 && p.n % 8 == 0), kInvalidArgument,
                 "N (", n_source(n_size, n.w), ") must be a positive multiple of 8, got ", p.n);
  F8GEMM_REQUIRE(opt.epilogue_op == EpilogueOp::kNone || silu_mul, kInvalidArgument,
                 "epilogue_op must be kNone or kSiluMul, got ", int(opt.epilogue_op));
  F8GEMM_REQUIRE(!silu_mul || !known(p.n) || p.n % 16 == 0, kInvalidArgument,
                 "with the SiLU·mul epilogue, N (", n_source(n_size, n.w),
                 ": gate then up, 2I) must be a multiple of 16, got ", p.n);
  const int64_t out_n = silu_mul && known(p.n) ? p.n / 2 : p.n;  // Y's columns
  const char* out_n_name = silu_mul ? "N/2" : "N";

  if (batched) {
    require_shape(xs, n.x_scale, {p.batch, p.m}, "[B, M]");
    require_shape(ws, n.w_scale, {p.batch, p.n}, "[B, N]");
    require_shape(out, n.out, {p.batch, p.m, out_n}, silu_mul ? "[B, M, N/2]" : "[B, M, N]");
    if (bias) require_shape(*bias, n.bias, {p.batch, p.n}, "[B, N]");
  } else {
    // x_scale has x's leading shape (what quantize_rows produces), or is 1-D [M].
    bool xs_ok = may_equal(known_product(xs, 0, xs.rank), p.m) &&
                 (xs.rank == 1 || xs.rank == x.rank - 1);
    for (int i = 0; xs_ok && xs.rank == x.rank - 1 && i < xs.rank; ++i) {
      xs_ok = may_equal(xs.shape[i], x.shape[i]);
    }
    F8GEMM_REQUIRE(xs_ok, kInvalidArgument, n.x_scale, " must have ", n.x, "'s leading shape (M = ",
                   size_str(p.m), " values), got ", shape_str(xs), " for ", n.x, " ",
                   shape_str(x));
    require_shape(ws, n.w_scale, {p.n}, "[N]");
    bool out_ok = out.rank == x.rank && may_equal(out.shape[out.rank - 1], out_n);
    for (int i = 0; out_ok && i + 1 < x.rank; ++i) out_ok = may_equal(out.shape[i], x.shape[i]);
    if (!out_ok && out.rank == 2) {
      out_ok = may_equal(out.shape[0], p.m) && may_equal(out.shape[1], out_n);
    }
    F8GEMM_REQUIRE(out_ok, kInvalidArgument, n.out, " must have shape ", n.x, ".shape[:-1] + [",
                   out_n_name, "] (", out_n_name, " = ", size_str(out_n), "), got ",
                   shape_str(out), " for ", n.x, " ", shape_str(x));
    if (bias) require_shape(*bias, n.bias, {p.n}, "[N]");
  }

  p.w_layout = layout;
  p.out_dtype = out.dtype;
  p.has_bias = bias != nullptr;
  p.bias_dtype = bias ? bias->dtype : DType::kF32;
  p.fast_accum = opt.fast_accum;
  p.epilogue_op = opt.epilogue_op;
  check_problem(p, /*allow_unknown=*/true);  // the sizes are unknown only where the views' are
  return p;
}

void check_problem(const ProblemShape& p, bool allow_unknown) {
  // Outside a shape-only check every size is known: kUnknownSize is then a negative size.
  auto unknown = [allow_unknown](int64_t size) { return allow_unknown && !known(size); };
  F8GEMM_REQUIRE(p.w_layout == WeightLayout::kPlain || p.w_layout == WeightLayout::kPreshuffled,
                 kInvalidArgument, "w_layout must be kPlain or kPreshuffled, got ", int(p.w_layout));
  F8GEMM_REQUIRE(p.out_dtype == DType::kBF16 || p.out_dtype == DType::kF16, kInvalidArgument,
                 "the output dtype must be bfloat16 or float16, got ", to_string(p.out_dtype));
  F8GEMM_REQUIRE(!p.has_bias || p.bias_dtype == DType::kF32 || p.bias_dtype == DType::kBF16,
                 kInvalidArgument, "the bias dtype must be float32 or bfloat16, got ",
                 to_string(p.bias_dtype));
  F8GEMM_REQUIRE((unknown(p.batch) || p.batch >= 0) && (unknown(p.m) || p.m >= 0),
                 kInvalidArgument, "B and M must be non-negative, got B = ", p.batch, ", M = ",
                 p.m, " (N = ", p.n, ", K = ", p.k, ")");
  F8GEMM_REQUIRE(unknown(p.n) || (p.n > 0 && p.n % 8 == 0), kInvalidArgument,
                 "N must be a positive multiple of 8, got ", p.n, " (", sizes_str(p), ")");
  F8GEMM_REQUIRE(p.epilogue_op == EpilogueOp::kNone || p.epilogue_op == EpilogueOp::kSiluMul,
                 kInvalidArgument, "epilogue_op must be kNone or kSiluMul, got ",
                 int(p.epilogue_op));
  F8GEMM_REQUIRE(p.epilogue_op != EpilogueOp::kSiluMul || unknown(p.n) || p.n % 16 == 0,
                 kInvalidArgument,
                 "with the SiLU·mul epilogue N (gate then up rows, 2I) must be a multiple of 16, "
                 "got ", p.n, " (", sizes_str(p), ")");
  F8GEMM_REQUIRE(unknown(p.k) || (p.k > 0 && p.k % 16 == 0), kInvalidArgument,
                 "K must be a positive multiple of 16 (TMA moves 16-byte rows), got ", p.k, " (",
                 sizes_str(p), ")");
  require_at_most("B", p.batch, kMaxBatch, "the batch index is int32", p);
  require_at_most("M", p.m, kMaxM, "a tile's rows past M stay in int32", p);
  require_at_most("N", p.n, kMaxN, "the rasterisation group of up to 64 x N/8 tiles is int32", p);
  require_at_most("K", p.k, kMaxK, "the k-block count (K + 127) / 128 is int32", p);
  // Every known size is now in int32 (and >= 0), so these products fit in int64; each bound
  // needs all of its sizes.
  if (known(p.batch) && known(p.m) && known(p.n)) {
    const int64_t tiles_bm = p.batch * ((p.m + 7) / 8), tiles_n = (p.n + 7) / 8;
    F8GEMM_REQUIRE(tiles_bm <= kMaxTiles / tiles_n, kInvalidArgument,
                   "sizes exceed the int32 tile index range: B * ceil(M/8) * ceil(N/8) is more "
                   "than ", kMaxTiles, " (", sizes_str(p), ")");
  }
  const int64_t max_stride =
      std::max({known_mul(p.m, p.k, "", "M * K"), known_mul(p.n, p.k, "", "N * K"),
                known_mul(known_mul(p.m, p.n, "", "M * N"), 2, "", "M * N * 2 bytes")});
  F8GEMM_REQUIRE(max_stride < kMaxBatchStrideBytes, kInvalidArgument,
                 "sizes exceed TMA's stride limit: one batch of X, W or Y must be smaller than "
                 "2^40 bytes, got ", max_stride, " (", sizes_str(p), ")");
}

}  // namespace detail

void validate_problem(const ProblemShape& problem) { detail::check_problem(problem, false); }

ProblemShape check_gemm_shapes(const TensorView& x, const TensorView& w, WeightLayout w_layout,
                               const TensorView& x_scale, const TensorView& w_scale,
                               const TensorView& out, const GemmOptions& options, bool batched) {
  const detail::GemmTensors t =
      detail::require_gemm_tensors(x, w, w_layout, x_scale, w_scale, out, options, true);
  return detail::gemm_shape_rules(t, w_layout, options, batched);
}

}  // namespace f8gemm
