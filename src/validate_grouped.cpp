/// \brief Argument validation of grouped_gemm() and grouped_gemm_padded() (see grouped.hpp):
/// every check runs before any device access, and a failure throws Error(kInvalidArgument)
/// naming the argument. The group sizes themselves stay on the device and are not read here:
/// the kernel clamps them (README "Grouped GEMM"). The shape rules come first and also stand
/// alone in check_grouped_shapes(), where a size may be kUnknownSize (validate.hpp known()).
#include <algorithm>
#include <string>

#include "check.hpp"
#include "grouped.hpp"
#include "validate.hpp"

namespace f8gemm::detail {

namespace {

std::string sizes_str(const GroupedProblem& s) {
  return concat(s.padded ? "G,M_max,N,K = " : "G,total_M,N,K = ", size_str(s.groups), ",",
                size_str(s.rows), ",", size_str(s.n), ",", size_str(s.k));
}

/// Throws unless value <= limit (or value is unknown), naming the size, the limit and the reason.
void require_at_most(const char* what, int64_t value, int64_t limit, const char* why,
                     const GroupedProblem& s) {
  F8GEMM_REQUIRE(!known(value) || value <= limit, kInvalidArgument,
                 "sizes exceed the int32 index range: ", what, " = ", value, " is more than ",
                 limit, " (", why, "; ", sizes_str(s), ")");
}

/// The sizes against the kernel's index limits (validate.hpp), with the grouped kernel's own:
/// G <= kMaxGroups, and rows counted over the whole stacked (or padded) tensor, since the tensor
/// maps of X and Y span all groups. Each limit is checked where its sizes are known (all of
/// them are in a call; a shape-only check may leave some unknown), and every known size is >= 0.
void validate_grouped_sizes(const GroupedProblem& s) {
  F8GEMM_REQUIRE(!known(s.groups) || s.groups <= kMaxGroups, kInvalidArgument, "G = ", s.groups,
                 " groups is more than the ", kMaxGroups,
                 " a call supports (the kernel keeps each group's first row, end row and first "
                 "tile in shared memory; ", sizes_str(s), ")");
  require_at_most(s.padded ? "M_max" : "total_M", s.rows, kMaxM,
                  "a tile's rows past its group's end stay in int32", s);
  // G <= 4096 and (padded) M_max <= kMaxM, both checked above, keep this product inside int64.
  const int64_t total_rows = s.padded ? known_mul(s.groups, s.rows, "", "G * M_max") : s.rows;
  if (s.padded) {
    require_at_most("G * M_max", total_rows, kMaxM,
                    "the kernel addresses the padded rows as one stacked tensor", s);
  }
  require_at_most("N", s.n, kMaxN, "the rasterisation group of up to 64 x N/8 tiles is int32", s);
  require_at_most("K", s.k, kMaxK, "the k-block count (K + 127) / 128 is int32", s);
  // Every group's last tile may be partial, so the tiles of all groups are at most
  // (total_rows / 8 + G) * ceil(N / 8) for tiles of 8 x 8 or more.
  if (known(total_rows) && known(s.groups) && known(s.n)) {
    const int64_t tiles_m = total_rows / 8 + s.groups, tiles_n = (s.n + 7) / 8;
    F8GEMM_REQUIRE(tiles_m <= kMaxTiles / tiles_n, kInvalidArgument,
                   "sizes exceed the int32 tile index range: (rows / 8 + G) * ceil(N / 8) is "
                   "more than ", kMaxTiles, " (", sizes_str(s), ")");
  }
  // TMA's stride limit applies to one group's W and, padded, to one group's X and Y.
  const int64_t max_stride =
      s.padded ? std::max({known_mul(s.rows, s.k, "", "M_max * K"),
                           known_mul(s.n, s.k, "", "N * K"),
                           known_mul(known_mul(s.rows, s.n, "", "M_max * N"), 2, "",
                                     "M_max * N * 2 bytes")})
               : known_mul(s.n, s.k, "", "N * K");
  F8GEMM_REQUIRE(max_stride < kMaxBatchStrideBytes, kInvalidArgument,
                 "sizes exceed TMA's stride limit: one group of ",
                 s.padded ? "X, W or Y" : "W", " must be smaller than 2^40 bytes, got ",
                 max_stride, " (", sizes_str(s), ")");
}

/// The shape rules of a grouped call over its checked tensors: the options a grouped call
/// refuses, m_sizes' dtype and [G], ranks, K % 16, N % 8, W's plain or padded preshuffled shape,
/// the scales' and output's shapes, then the size limits. Sizes may be unknown where the views'
/// are (check_grouped_shapes).
GroupedProblem grouped_shape_rules(const GemmTensors& t, WeightLayout layout,
                                   const TensorView& m_sizes, const GemmOptions& opt,
                                   bool padded, bool allow_unknown) {
  const TensorView& x = t.x;
  const TensorView& w = t.w;
  const TensorView& xs = t.x_scale;
  const TensorView& ws = t.w_scale;
  const TensorView& out = t.out;
  const GemmArgNames& n = t.names;
  F8GEMM_REQUIRE(opt.trace == nullptr, kUnsupported,
                 "GemmOptions::trace is for gemm() and batched_gemm(); grouped_gemm() does not "
                 "record its tiles");
  F8GEMM_REQUIRE(opt.epilogue_op == EpilogueOp::kNone, kUnsupported,
                 "GemmOptions::epilogue_op is for gemm() and batched_gemm(); grouped_gemm() has "
                 "no epilogue operation (got ", to_string(opt.epilogue_op), ")");
  const TensorView* bias = t.bias;
  const bool shuffled = layout == WeightLayout::kPreshuffled;
  F8GEMM_REQUIRE(m_sizes.dtype == DType::kI32 || m_sizes.dtype == DType::kI64, kInvalidArgument,
                 n.m_sizes, " must have dtype int32 or int64, got ", to_string(m_sizes.dtype));
  require_view(m_sizes, n.m_sizes, allow_unknown);

  GroupedProblem s;
  s.padded = padded;
  if (padded) {
    require_rank(x, n.x, 3, "[G, M_max, K] (the padded form)");
    s.rows = x.shape[1];
  } else {
    require_rank(x, n.x, 2, "[total_M, K] (the stacked form: every group's rows, in group order)");
    s.rows = x.shape[0];
  }
  s.k = x.shape[x.rank - 1];
  F8GEMM_REQUIRE(!known(s.k) || (s.k > 0 && s.k % 16 == 0), kInvalidArgument, "K (", n.x,
                 "'s last dimension) must be a positive multiple of 16 (TMA moves 16-byte rows), "
                 "got ", s.k);
  if (shuffled) {
    require_rank(w, n.w, 4, "preshuffled [G, ceil(K/128), N/8, 1024]");
  } else {
    require_rank(w, n.w, 3, "[G, N, K] (a plain weight)");
  }
  // G and N come from the first argument that knows them (SharedSize): w, then the other
  // inputs, the output last; each offers them only at the rank that carries them. K comes
  // from x, and every other tensor must agree with all three.
  SharedSize groups;
  groups.offer(w.shape[0], n.w);
  if (m_sizes.rank == 1) groups.offer(m_sizes.shape[0], n.m_sizes);
  if (padded) {
    groups.offer(x.shape[0], n.x);
    if (xs.rank == 2) groups.offer(xs.shape[0], n.x_scale);
  }
  if (ws.rank == 2) groups.offer(ws.shape[0], n.w_scale);
  if (bias && bias->rank == 2) groups.offer(bias->shape[0], n.bias);
  if (padded && out.rank == 3) groups.offer(out.shape[0], n.out);
  s.groups = groups.value;
  SharedSize n_size;
  n_size.offer(shuffled ? known_mul(w.shape[2], kShuffleSlabRows, n.w,
                                    "'s N/8 dimension times 8 (N)")
                        : w.shape[1],
               n.w);
  if (ws.rank == 2) n_size.offer(ws.shape[1], n.w_scale);
  if (bias && bias->rank == 2) n_size.offer(bias->shape[1], n.bias);
  if (out.rank == (padded ? 3 : 2)) n_size.offer(out.shape[out.rank - 1], n.out);
  s.n = n_size.value;
  if (shuffled) {
    // W's N/8 dimension is N's first source: where it is known, N came from it.
    require_shape(w, n.w, {s.groups, known_ceil_div(s.k, kShuffleBlockK), w.shape[2],
                           kShuffleSlabBytes},
                  Layout("preshuffled [G, ceil(K/128), N/8, 1024] matching ", n.x, "'s K"));
  } else {
    require_shape(w, n.w, {s.groups, s.n, s.k}, Layout("[G, N, K] matching ", n.x, "'s K"));
  }
  F8GEMM_REQUIRE(!known(s.n) || (s.n > 0 && s.n % 8 == 0), kInvalidArgument, "N (",
                 n_size.from == n.w ? concat(n.w, "'s rows") : concat("from ", n_size.from),
                 ") must be a positive multiple of 8, got ", s.n);
  F8GEMM_REQUIRE(m_sizes.rank == 1, kInvalidArgument, n.m_sizes,
                 " must be 1-D [G] (one size per group), got shape ", shape_str(m_sizes));
  F8GEMM_REQUIRE(may_equal(m_sizes.shape[0], s.groups), kInvalidArgument, n.m_sizes, " has ",
                 size_str(m_sizes.shape[0]), " groups but ", groups.from, " has ",
                 size_str(s.groups), " (", n.w, " ", shape_str(w), ")");
  if (padded) {
    F8GEMM_REQUIRE(may_equal(x.shape[0], s.groups), kInvalidArgument, n.x, " has ",
                   size_str(x.shape[0]), " groups but ", groups.from, " has ",
                   size_str(s.groups), " (", n.x, " ", shape_str(x), ", ", n.w, " ",
                   shape_str(w), ")");
    require_shape(xs, n.x_scale, {s.groups, s.rows}, "[G, M_max]");
    require_shape(out, n.out, {s.groups, s.rows, s.n}, "[G, M_max, N]");
  } else {
    require_shape(xs, n.x_scale, {s.rows}, "[total_M]");
    require_shape(out, n.out, {s.rows, s.n}, "[total_M, N]");
  }
  require_shape(ws, n.w_scale, {s.groups, s.n}, "[G, N]");
  if (bias) require_shape(*bias, n.bias, {s.groups, s.n}, "[G, N]");

  s.w_layout = layout;
  s.out_dtype = out.dtype;
  s.has_bias = bias != nullptr;
  s.bias_dtype = bias ? bias->dtype : DType::kF32;
  s.fast_accum = opt.fast_accum;
  s.sizes_dtype = m_sizes.dtype;
  validate_grouped_sizes(s);
  return s;
}

}  // namespace

void validate_grouped_problem(const GroupedProblem& s) {
  F8GEMM_REQUIRE(s.groups >= 0 && s.rows >= 0, kInvalidArgument,
                 "G and the rows must be >= 0, got G = ", s.groups, ", rows = ", s.rows, " (N = ",
                 s.n, ", K = ", s.k, ")");
  F8GEMM_REQUIRE(s.n > 0 && s.n % 8 == 0, kInvalidArgument,
                 "N must be a positive multiple of 8, got ", sizes_str(s));
  F8GEMM_REQUIRE(s.k > 0 && s.k % 16 == 0, kInvalidArgument,
                 "K must be a positive multiple of 16 (TMA moves 16-byte rows), got ", sizes_str(s));
  F8GEMM_REQUIRE(s.w_layout == WeightLayout::kPlain || s.w_layout == WeightLayout::kPreshuffled,
                 kInvalidArgument, "w_layout must be kPlain or kPreshuffled");
  F8GEMM_REQUIRE(s.out_dtype == DType::kBF16 || s.out_dtype == DType::kF16, kInvalidArgument,
                 "the output dtype must be bfloat16 or float16, got ", to_string(s.out_dtype));
  F8GEMM_REQUIRE(!s.has_bias || s.bias_dtype == DType::kF32 || s.bias_dtype == DType::kBF16,
                 kInvalidArgument, "the bias dtype must be float32 or bfloat16, got ",
                 to_string(s.bias_dtype));
  F8GEMM_REQUIRE(s.sizes_dtype == DType::kI32 || s.sizes_dtype == DType::kI64, kInvalidArgument,
                 "the sizes dtype must be int32 or int64, got ", to_string(s.sizes_dtype));
  validate_grouped_sizes(s);
}

ValidatedGrouped validate_grouped_call(const TensorView& x, const TensorView& w, WeightLayout layout,
                                       const TensorView& xs, const TensorView& ws,
                                       const TensorView& m_sizes, const TensorView& out,
                                       const GemmOptions& opt, bool padded) {
  // The shape rules first, as check_grouped_shapes() runs them alone (a Meta kernel's checks).
  const GemmTensors t = require_gemm_tensors(x, w, layout, xs, ws, out, opt);
  const GemmArgNames& n = t.names;
  ValidatedGrouped v;
  v.shape = grouped_shape_rules(t, layout, m_sizes, opt, padded, false);

  require_memory(m_sizes, n.m_sizes, dtype_size(m_sizes.dtype));
  v.device = require_gemm_placement(t);
  // The sizes are read by the kernel alone (no host sync, graph-safe): they must be where it runs.
  F8GEMM_REQUIRE(m_sizes.device == v.device, kInvalidArgument, n.m_sizes,
                 " must be on the GPU with ", n.x, " (cuda:", v.device,
                 "): the kernel reads the group sizes there and the host never does; got ",
                 place_str(m_sizes.device));
  require_disjoint(out, n.out, m_sizes, n.m_sizes);
  return v;
}

}  // namespace f8gemm::detail

namespace f8gemm {

GroupedProblem check_grouped_shapes(const TensorView& x, const TensorView& w,
                                    WeightLayout w_layout, const TensorView& x_scale,
                                    const TensorView& w_scale, const TensorView& m_sizes,
                                    const TensorView& out, const GemmOptions& options,
                                    bool padded) {
  const detail::GemmTensors t =
      detail::require_gemm_tensors(x, w, w_layout, x_scale, w_scale, out, options, true);
  return detail::grouped_shape_rules(t, w_layout, m_sizes, options, padded, true);
}

}  // namespace f8gemm
