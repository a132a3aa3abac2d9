/// \brief check_gemm_shapes() and check_grouped_shapes(), the shape-only checks that the PyTorch
/// extension's Meta kernels run: the same Error as the call for every shape the call refuses, and
/// sizes that may be kUnknownSize (a rule that needs one is skipped, the others hold).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/test_util.hpp"
#include "f8gemm/f8gemm.hpp"

namespace f8gemm {
namespace {

using test::dev_view;

constexpr uintptr_t kX = uintptr_t(1) << 44, kW = uintptr_t(2) << 44, kXs = uintptr_t(3) << 44,
                    kWs = uintptr_t(4) << 44, kOut = uintptr_t(5) << 44,
                    kBias = uintptr_t(6) << 44, kSizes = uintptr_t(7) << 44;
constexpr int64_t U = kUnknownSize;

/// One gemm(), batched_gemm() or grouped_gemm() call: fake device pointers (never dereferenced:
/// the *_problem functions validate and return), valid by default.
struct Call {
  TensorView x, w, xs, ws, out, bias, sizes;
  WeightLayout layout = WeightLayout::kPlain;
  enum Kind { kSingle, kBatched, kGrouped } kind = kSingle;
  bool with_bias = true;
  EpilogueOp epilogue = EpilogueOp::kNone;

  GemmOptions options() const {
    GemmOptions o;
    o.bias = with_bias ? &bias : nullptr;
    o.epilogue_op = epilogue;
    return o;
  }
  /// The message of the Error that the call's full validation throws ("" when it passes).
  std::string call_error() const {
    try {
      if (kind == kSingle) (void)gemm_problem(x, w, layout, xs, ws, out, options());
      if (kind == kBatched) (void)batched_gemm_problem(x, w, layout, xs, ws, out, options());
      if (kind == kGrouped) (void)grouped_problem(x, w, layout, xs, ws, sizes, out, options());
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  /// The message of the Error that the shape-only check throws ("" when it passes).
  std::string shape_error() const {
    try {
      if (kind == kGrouped) {
        (void)check_grouped_shapes(x, w, layout, xs, ws, sizes, out, options(), false);
      } else {
        (void)check_gemm_shapes(x, w, layout, xs, ws, out, options(), kind == kBatched);
      }
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

/// X [2, 8, 256], W [64, 256] (or preshuffled [2, 8, 1024]), x_scale [2, 8], w_scale [64],
/// out [2, 8, 64] bf16, bias [64] fp32.
Call single(WeightLayout layout = WeightLayout::kPlain) {
  Call c;
  c.layout = layout;
  c.x = dev_view(kX, DType::kE4M3, {2, 8, 256});
  c.w = layout == WeightLayout::kPlain ? dev_view(kW, DType::kE4M3, {64, 256})
                                       : dev_view(kW, DType::kE4M3, {2, 8, 1024});
  c.xs = dev_view(kXs, DType::kF32, {2, 8});
  c.ws = dev_view(kWs, DType::kF32, {64});
  c.out = dev_view(kOut, DType::kBF16, {2, 8, 64});
  c.bias = dev_view(kBias, DType::kF32, {64});
  return c;
}

/// X [3, 8, 256], W [3, 64, 256], x_scale [3, 8], w_scale [3, 64], out [3, 8, 64], bias [3, 64].
Call batched() {
  Call c;
  c.kind = Call::kBatched;
  c.x = dev_view(kX, DType::kE4M3, {3, 8, 256});
  c.w = dev_view(kW, DType::kE4M3, {3, 64, 256});
  c.xs = dev_view(kXs, DType::kF32, {3, 8});
  c.ws = dev_view(kWs, DType::kF32, {3, 64});
  c.out = dev_view(kOut, DType::kBF16, {3, 8, 64});
  c.bias = dev_view(kBias, DType::kF32, {3, 64});
  return c;
}

/// Stacked: X [40, 256], W [4, 64, 256], x_scale [40], w_scale [4, 64], m_sizes [4] int32,
/// out [40, 64], bias [4, 64].
Call grouped() {
  Call c;
  c.kind = Call::kGrouped;
  c.x = dev_view(kX, DType::kE4M3, {40, 256});
  c.w = dev_view(kW, DType::kE4M3, {4, 64, 256});
  c.xs = dev_view(kXs, DType::kF32, {40});
  c.ws = dev_view(kWs, DType::kF32, {4, 64});
  c.sizes = dev_view(kSizes, DType::kI32, {4});
  c.out = dev_view(kOut, DType::kBF16, {40, 64});
  c.bias = dev_view(kBias, DType::kF32, {4, 64});
  return c;
}

void set_shape(TensorView& v, std::vector<int64_t> shape) {
  v.rank = int(shape.size());
  for (int i = 0; i < v.rank; ++i) v.shape[i] = shape[i];
}

struct Refusal {
  const char* what;
  std::function<Call()> call;
  const char* needle;
};

TEST(ShapeChecks, RefuseWhatTheCallRefusesWithTheSameError) {
  const std::vector<Refusal> refusals = {
      {"K % 16", [] { Call c = single(); set_shape(c.x, {2, 8, 200}); set_shape(c.w, {64, 200});
                      return c; }, "K (x's last dimension) must be a positive multiple of 16"},
      {"N % 8", [] { Call c = single(); set_shape(c.w, {60, 256}); set_shape(c.ws, {60});
                     set_shape(c.out, {2, 8, 60}); set_shape(c.bias, {60}); return c; },
       "N (w's rows) must be a positive multiple of 8, got 60"},
      {"W's K", [] { Call c = single(); set_shape(c.w, {64, 128}); return c; },
       "w must have shape [64, 256]"},
      {"padded W", [] { Call c = single(WeightLayout::kPreshuffled); set_shape(c.w, {3, 8, 1024});
                        return c; }, "w must have shape [2, 8, 1024]"},
      {"slab bytes", [] { Call c = single(WeightLayout::kPreshuffled);
                          set_shape(c.w, {2, 8, 512}); return c; }, "w must have shape"},
      {"x_scale", [] { Call c = single(); set_shape(c.xs, {2, 7}); return c; },
       "x_scale must have x's leading shape"},
      {"w_scale", [] { Call c = single(); set_shape(c.ws, {63}); return c; },
       "w_scale must have shape [64]"},
      {"out", [] { Call c = single(); set_shape(c.out, {2, 8, 32}); return c; },
       "out must have shape x.shape[:-1] + [N]"},
      {"bias shape", [] { Call c = single(); set_shape(c.bias, {32}); return c; },
       "bias must have shape [64]"},
      {"bias dtype", [] { Call c = single(); c.bias.dtype = DType::kF16; return c; },
       "bias must have dtype float32 or bfloat16"},
      {"out dtype", [] { Call c = single(); c.out.dtype = DType::kF32; return c; },
       "out must have dtype bfloat16 or float16"},
      {"x dtype", [] { Call c = single(); c.x.dtype = DType::kBF16; return c; },
       "x must have dtype float8_e4m3fn"},
      {"SiLU·mul N % 16", [] { Call c = single(); c.epilogue = EpilogueOp::kSiluMul;
                               set_shape(c.w, {24, 256}); set_shape(c.ws, {24});
                               set_shape(c.bias, {24}); set_shape(c.out, {2, 8, 12}); return c; },
       "must be a multiple of 16, got 24"},
      {"batched W", [] { Call c = batched(); set_shape(c.w, {2, 64, 256}); return c; },
       "w must have shape [3, 64, 256]"},
      {"batched x_scale", [] { Call c = batched(); set_shape(c.xs, {3, 7}); return c; },
       "x_scale must have shape [3, 8]"},
      {"batched bias", [] { Call c = batched(); set_shape(c.bias, {64}); return c; },
       "bias must have shape [3, 64]"},
      {"grouped K", [] { Call c = grouped(); set_shape(c.x, {40, 200});
                         set_shape(c.w, {4, 64, 200}); return c; },
       "K (x's last dimension) must be a positive multiple of 16"},
      {"grouped sizes", [] { Call c = grouped(); set_shape(c.sizes, {3}); return c; },
       "m_sizes has 3 groups but w has 4"},
      {"grouped sizes dtype", [] { Call c = grouped(); c.sizes.dtype = DType::kF32; return c; },
       "m_sizes must have dtype int32 or int64"},
      {"grouped w_scale", [] { Call c = grouped(); set_shape(c.ws, {4, 56}); return c; },
       "w_scale must have shape [4, 64]"},
      {"grouped out", [] { Call c = grouped(); set_shape(c.out, {39, 64}); return c; },
       "out must have shape [40, 64]"},
  };
  for (const Refusal& r : refusals) {
    SCOPED_TRACE(r.what);
    const Call c = r.call();
    const std::string message = c.call_error();
    EXPECT_NE(message.find(r.needle), std::string::npos) << message;
    EXPECT_EQ(c.shape_error(), message);
  }
  // Valid shapes pass both; what is left to the call is memory and place.
  for (const Call& c : {single(), single(WeightLayout::kPreshuffled), batched(), grouped()}) {
    EXPECT_EQ(c.call_error(), "");
    EXPECT_EQ(c.shape_error(), "");
    Call host = c;
    host.x.device = kHost;
    EXPECT_NE(host.call_error().find("x must be in GPU memory"), std::string::npos);
    EXPECT_EQ(host.shape_error(), "");  // the device is not a shape
  }
}

// x_scale in X's leading shape is checked size by size, the last one included: where the
// product cannot tell (a zero, or an unknown size, among X's), only that size shows the mismatch.
TEST(ShapeChecks, XScalesLastLeadingSizeMustBeXs) {
  Call empty = single();  // X [0, 3, 256]: M = 0, and x_scale [0, 5] also holds 0 values
  set_shape(empty.x, {0, 3, 256});
  set_shape(empty.xs, {0, 5});
  set_shape(empty.out, {0, 3, 64});
  const std::string needle = "x_scale must have x's leading shape (M = 0 values), got [0, 5]";
  EXPECT_NE(empty.call_error().find(needle), std::string::npos) << empty.call_error();
  EXPECT_NE(empty.shape_error().find(needle), std::string::npos) << empty.shape_error();
  set_shape(empty.xs, {0, 3});
  EXPECT_EQ(empty.shape_error(), "");
  Call symbolic = single();  // X [?, 3, 256] against x_scale [?, 4]
  set_shape(symbolic.x, {U, 3, 256});
  set_shape(symbolic.xs, {U, 4});
  set_shape(symbolic.out, {U, 3, 64});
  EXPECT_NE(symbolic.shape_error().find("got [?, 4] for x [?, 3, 256]"), std::string::npos)
      << symbolic.shape_error();
  set_shape(symbolic.xs, {U, 3});
  EXPECT_EQ(symbolic.shape_error(), "");
}

TEST(ShapeChecks, UnknownSizesSkipOnlyTheRulesThatNeedThem) {
  // M unknown (a symbolic token count): every rule on K and N still holds.
  Call c = single();
  set_shape(c.x, {U, 256});
  set_shape(c.xs, {U});
  set_shape(c.out, {U, 64});
  const ProblemShape p = check_gemm_shapes(c.x, c.w, c.layout, c.xs, c.ws, c.out, c.options(),
                                           false);
  EXPECT_EQ(p.m, U);
  EXPECT_EQ(p.n, 64);
  EXPECT_EQ(p.k, 256);
  Call bad_k = c;
  set_shape(bad_k.x, {U, 200});
  set_shape(bad_k.w, {64, 200});
  EXPECT_NE(bad_k.shape_error().find("multiple of 16 (TMA moves 16-byte rows), got 200"),
            std::string::npos);
  Call bad_ws = c;
  set_shape(bad_ws.ws, {63});
  EXPECT_NE(bad_ws.shape_error().find("w_scale must have shape [64]"), std::string::npos);
  Call bad_out = c;
  set_shape(bad_out.out, {U, 32});
  EXPECT_NE(bad_out.shape_error().find("out must have shape"), std::string::npos);
  // x_scale's M against X's is skipped while M is unknown, and printed as "?".
  Call other_m = c;
  set_shape(other_m.xs, {5});
  EXPECT_EQ(other_m.shape_error(), "");
  Call wrong_rank = c;
  set_shape(wrong_rank.xs, {U, 2, 3});
  EXPECT_NE(wrong_rank.shape_error().find("(M = ? values), got [?, 2, 3]"), std::string::npos);

  // A zero among X's leading sizes makes M 0 whatever the unknown ones.
  Call empty = c;
  set_shape(empty.x, {0, U, 256});
  set_shape(empty.xs, {5});
  set_shape(empty.out, {0, U, 64});
  EXPECT_NE(empty.shape_error().find("(M = 0 values), got [5]"), std::string::npos);

  // N unknown in W: W's K still holds, and N comes from the next argument that knows it.
  Call n = single();
  n.with_bias = false;
  set_shape(n.w, {U, 256});
  set_shape(n.ws, {U});
  set_shape(n.out, {2, 8, U});
  EXPECT_EQ(n.shape_error(), "");
  set_shape(n.w, {U, 128});
  EXPECT_NE(n.shape_error().find("w must have shape [?, 256]"), std::string::npos);

  // K unknown: the padded k-blocks cannot be checked, the slab bytes can.
  Call k = single(WeightLayout::kPreshuffled);
  set_shape(k.x, {2, 8, U});
  set_shape(k.w, {3, 8, 1024});
  EXPECT_EQ(k.shape_error(), "");
  set_shape(k.w, {3, 8, 512});
  EXPECT_NE(k.shape_error().find("w must have shape [?, 8, 1024]"), std::string::npos);

  // A limit that the known sizes break still holds: N past kMaxN with M unknown.
  Call big = single();
  big.with_bias = false;
  set_shape(big.x, {U, 16});
  set_shape(big.w, {int64_t(1) << 28, 16});
  set_shape(big.ws, {int64_t(1) << 28});
  set_shape(big.xs, {U});
  set_shape(big.out, {U, int64_t(1) << 28});
  EXPECT_NE(big.shape_error().find("N = 268435456 is more than"), std::string::npos);

  // Grouped, total_M unknown: the groups, K and N still hold.
  Call g = grouped();
  set_shape(g.x, {U, 256});
  set_shape(g.xs, {U});
  set_shape(g.out, {U, 64});
  EXPECT_EQ(g.shape_error(), "");
  Call g_sizes = g;
  set_shape(g_sizes.sizes, {3});
  EXPECT_NE(g_sizes.shape_error().find("m_sizes has 3 groups but w has 4"), std::string::npos);
  // G unknown in W: it comes from m_sizes, and w_scale and bias must agree with it.
  Call g_groups = g;
  set_shape(g_groups.w, {U, 64, 256});
  set_shape(g_groups.sizes, {3});
  EXPECT_NE(g_groups.shape_error().find("w_scale must have shape [3, 64] ([G, N]), got [4, 64]"),
            std::string::npos);
  set_shape(g_groups.ws, {U, 64});
  EXPECT_NE(g_groups.shape_error().find("bias must have shape [3, 64]"), std::string::npos);
  set_shape(g_groups.bias, {U, 64});
  EXPECT_EQ(g_groups.shape_error(), "");
}

TEST(ShapeChecks, SharedSizesComeFromTheFirstArgumentThatKnowsThem) {
  // G: W's unknown, m_sizes' 5000 is past the 4096 groups a call takes.
  Call g = grouped();
  g.with_bias = false;
  set_shape(g.w, {U, 64, 256});
  set_shape(g.ws, {U, 64});
  set_shape(g.sizes, {5000});
  EXPECT_NE(g.shape_error().find("G = 5000 groups is more than the 4096"), std::string::npos);
  set_shape(g.sizes, {U});
  set_shape(g.ws, {4, 64});
  EXPECT_EQ(g.shape_error(), "");  // G from w_scale: 4
  set_shape(g.ws, {4, 60});
  set_shape(g.w, {U, U, 256});
  EXPECT_NE(g.shape_error().find("N (from w_scale) must be a positive multiple of 8, got 60"),
            std::string::npos);
  set_shape(g.ws, {4, 64});
  set_shape(g.out, {40, 72});  // N from w_scale: 64
  EXPECT_NE(g.shape_error().find("out must have shape [40, 64]"), std::string::npos);

  // B: X's unknown, W's 3 is checked against x_scale's 2.
  Call b = batched();
  set_shape(b.x, {U, 8, 256});
  EXPECT_EQ(b.shape_error(), "");
  set_shape(b.xs, {2, 8});
  EXPECT_NE(b.shape_error().find("x_scale must have shape [3, 8] ([B, M]), got [2, 8]"),
            std::string::npos);
  set_shape(b.w, {U, 64, 256});  // B from x_scale: 2, against w_scale's 3
  EXPECT_NE(b.shape_error().find("w_scale must have shape [2, 64]"), std::string::npos);

  // N: W's unknown, w_scale's 63 is no multiple of 8 and out's 32 is not w_scale's 64.
  Call n = single();
  set_shape(n.w, {U, 256});
  set_shape(n.ws, {63});
  EXPECT_NE(n.shape_error().find("N (from w_scale) must be a positive multiple of 8, got 63"),
            std::string::npos);
  set_shape(n.ws, {64});
  set_shape(n.out, {2, 8, 32});
  EXPECT_NE(n.shape_error().find("out must have shape x.shape[:-1] + [N] (N = 64)"),
            std::string::npos);
  // With the SiLU·mul epilogue the output's columns are N/2: 12 of them make N = 24.
  Call silu = single();
  silu.with_bias = false;
  silu.epilogue = EpilogueOp::kSiluMul;
  set_shape(silu.w, {U, 256});
  set_shape(silu.ws, {U});
  set_shape(silu.out, {2, 8, 12});
  EXPECT_NE(silu.shape_error().find("N (from out: gate then up, 2I) must be a multiple of 16, "
                                    "got 24"),
            std::string::npos);
}

TEST(ShapeChecks, SizesPastInt64AreRefusedNotWrapped) {
  const int64_t slabs = (int64_t(1) << 61) + 1;  // N/8: 8 times it wraps to N = 8
  const char* n_overflow =
      "sizes exceed int64: w's N/8 dimension times 8 (N) = 2305843009213693953 * 8";
  // Shape-only: no element count bounds W's known sizes.
  Call c = single(WeightLayout::kPreshuffled);
  c.with_bias = false;
  set_shape(c.x, {U, 128});
  set_shape(c.w, {U, slabs, U});
  set_shape(c.xs, {U});
  set_shape(c.ws, {8});
  set_shape(c.out, {U, 8});
  EXPECT_NE(c.shape_error().find(n_overflow), std::string::npos) << c.shape_error();
  // A call: a zero dimension leaves W with no elements, whatever its N/8.
  Call call = single(WeightLayout::kPreshuffled);
  call.with_bias = false;
  set_shape(call.x, {16, 128});
  set_shape(call.w, {1, slabs, 0});
  set_shape(call.xs, {16});
  set_shape(call.ws, {8});
  set_shape(call.out, {16, 8});
  EXPECT_NE(call.call_error().find(n_overflow), std::string::npos) << call.call_error();
  EXPECT_EQ(call.shape_error(), call.call_error());
  // Grouped, the same N/8.
  Call g = grouped();
  g.layout = WeightLayout::kPreshuffled;
  g.with_bias = false;
  set_shape(g.x, {U, 128});
  set_shape(g.w, {U, 1, slabs, U});  // G from m_sizes
  set_shape(g.xs, {U});
  set_shape(g.ws, {4, 8});
  set_shape(g.out, {U, 8});
  EXPECT_NE(g.shape_error().find(n_overflow), std::string::npos) << g.shape_error();

  // K near 2^63: ceil(K / 128) without K + 127.
  const int64_t k = INT64_MAX - 15;  // 2^63 - 16, a multiple of 16
  Call kc = single(WeightLayout::kPreshuffled);
  kc.with_bias = false;
  set_shape(kc.x, {1, k});
  set_shape(kc.w, {1, 8, 1024});
  set_shape(kc.xs, {1});
  set_shape(kc.out, {1, 64});
  EXPECT_NE(kc.call_error().find("w must have shape [72057594037927936, 8, 1024]"),
            std::string::npos) << kc.call_error();
  EXPECT_EQ(kc.shape_error(), kc.call_error());
  set_shape(kc.w, {U, 8, 1024});
  EXPECT_NE(kc.shape_error().find("K = 9223372036854775792 is more than"), std::string::npos)
      << kc.shape_error();
  Call kg = grouped();
  kg.layout = WeightLayout::kPreshuffled;
  kg.with_bias = false;
  set_shape(kg.x, {1, k});
  set_shape(kg.w, {4, 1, 8, 1024});
  set_shape(kg.xs, {1});
  set_shape(kg.out, {1, 64});
  EXPECT_NE(kg.call_error().find("w must have shape [4, 72057594037927936, 8, 1024]"),
            std::string::npos) << kg.call_error();
  EXPECT_EQ(kg.shape_error(), kg.call_error());
  // SiLU·mul: the output's columns times 2.
  Call silu = single();
  silu.with_bias = false;
  silu.epilogue = EpilogueOp::kSiluMul;
  set_shape(silu.w, {U, 256});
  set_shape(silu.ws, {U});
  set_shape(silu.out, {U, U, (int64_t(1) << 62) + 8});
  EXPECT_NE(silu.shape_error().find("sizes exceed int64: out's last dimension times 2 (N)"),
            std::string::npos) << silu.shape_error();
  // Where W gave N, out's columns are not doubled: a huge last dimension leaves the first rule
  // that fails, W's K here, as the call at c82ca4b reported it (a review's differential test).
  Call known_n = single();
  known_n.with_bias = false;
  known_n.epilogue = EpilogueOp::kSiluMul;
  set_shape(known_n.x, {16, 128});
  set_shape(known_n.w, {64, 96});
  set_shape(known_n.xs, {16});
  set_shape(known_n.ws, {64});
  set_shape(known_n.out, {0, (int64_t(1) << 62) + 8});
  EXPECT_NE(known_n.call_error().find("w must have shape [64, 128]"), std::string::npos)
      << known_n.call_error();
  EXPECT_EQ(known_n.shape_error(), known_n.call_error());
  // The call's own overflow message prints a negative size as it is, not as "?" (only the
  // shape-only check has unknown sizes).
  Call negative = single();
  set_shape(negative.x, {7, int64_t(1) << 62, -1});
  EXPECT_NE(negative.call_error().find("shape [7, 4611686018427387904, -1]"), std::string::npos)
      << negative.call_error();
}

TEST(ShapeChecks, OnlyTheShapeChecksTakeUnknownSizes) {
  // A call's sizes are all known: kUnknownSize is a negative dimension there.
  Call c = single();
  set_shape(c.x, {U, 256});
  set_shape(c.xs, {U});
  set_shape(c.out, {U, 64});
  EXPECT_NE(c.call_error().find("x has a negative dimension: shape [-1, 256]"),
            std::string::npos);
  // ... and validate_problem() (precompile, choose_config) refuses it as before.
  ProblemShape p;
  p.m = U;
  p.n = 64;
  p.k = 256;
  F8GEMM_EXPECT_INVALID(validate_problem(p), "B and M must be non-negative, got B = 1, M = -1");
  GroupedProblem g;
  g.rows = U;
  F8GEMM_EXPECT_INVALID(precompile(std::vector<GroupedProblem>{g}),
                        "G and the rows must be >= 0, got G = 1, rows = -1");
}

}  // namespace
}  // namespace f8gemm
