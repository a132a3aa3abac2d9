/// \brief Every argument check of grouped_gemm() / grouped_gemm_padded(): kInvalidArgument naming the argument, before any device access (fake pointers, no GPU).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/test_util.hpp"
#include "f8gemm/f8gemm.hpp"
#include "grouped.hpp"
#include "jit/jit.hpp"

namespace f8gemm {
namespace {

// Fake device addresses, 2^44-byte aligned and never dereferenced: every check runs before the
// first CUDA call. Distinct per tensor so that a mix-up cannot go unseen, and far enough apart
// that no tensor the limits admit overlaps the next (the output must not overlap an input).
constexpr uintptr_t kX = uintptr_t(1) << 44, kW = uintptr_t(2) << 44, kXs = uintptr_t(3) << 44,
                    kWs = uintptr_t(4) << 44, kOut = uintptr_t(5) << 44,
                    kBias = uintptr_t(6) << 44, kSizes = uintptr_t(7) << 44;

using test::dev_view;
using test::expect_error;
using test::fake;

/// The arguments of one grouped call; the defaults are valid. Stacked: x [total_M, K],
/// x_scale [total_M], out [total_M, N]; padded: x [G, M_max, K], x_scale [G, M_max],
/// out [G, M_max, N]. Both: w [G, N, K] (or preshuffled), w_scale [G, N], bias [G, N] fp32,
/// m_sizes [G] int32.
struct Args {
  TensorView x, w, xs, ws, sizes, out, bias;
  WeightLayout layout = WeightLayout::kPlain;
  bool padded = false;
  bool with_bias = false;
  bool fast = true;
  const GemmArgNames* names = nullptr;

  GemmOptions options() const {
    GemmOptions o;
    o.bias = with_bias ? &bias : nullptr;
    o.fast_accum = fast;
    o.names = names;
    return o;
  }
  /// The public entry point of this form.
  void call() const {
    if (padded) {
      grouped_gemm_padded(x, w, layout, xs, ws, sizes, out, options());
    } else {
      grouped_gemm(x, w, layout, xs, ws, sizes, out, options());
    }
  }
  detail::ValidatedGrouped validate() const {
    return detail::validate_grouped_call(x, w, layout, xs, ws, sizes, out, options(), padded);
  }
};

/// rows: total_M (stacked) or M_max (padded).
Args grouped_args(int64_t g, int64_t rows, int64_t n, int64_t k, bool padded = false,
                  WeightLayout layout = WeightLayout::kPlain) {
  Args a;
  a.layout = layout;
  a.padded = padded;
  a.x = padded ? dev_view(kX, DType::kE4M3, {g, rows, k}) : dev_view(kX, DType::kE4M3, {rows, k});
  a.w = layout == WeightLayout::kPlain
            ? dev_view(kW, DType::kE4M3, {g, n, k})
            : dev_view(kW, DType::kE4M3, preshuffled_shape(g, n, k));
  a.xs = padded ? dev_view(kXs, DType::kF32, {g, rows}) : dev_view(kXs, DType::kF32, {rows});
  a.ws = dev_view(kWs, DType::kF32, {g, n});
  a.sizes = dev_view(kSizes, DType::kI32, {g});
  a.out = padded ? dev_view(kOut, DType::kBF16, {g, rows, n})
                 : dev_view(kOut, DType::kBF16, {rows, n});
  a.bias = dev_view(kBias, DType::kF32, {g, n});
  return a;
}

constexpr int64_t G = 8, M = 200, N = 136, K = 272;

/// Both forms and both layouts of the valid baseline.
std::vector<Args> all_forms() {
  std::vector<Args> forms;
  for (bool padded : {false, true}) {
    for (WeightLayout layout : {WeightLayout::kPlain, WeightLayout::kPreshuffled}) {
      Args a = grouped_args(G, M, N, K, padded, layout);
      a.with_bias = true;
      forms.push_back(a);
    }
  }
  return forms;
}

std::string form_name(const Args& a) {
  return std::string(a.padded ? "padded " : "stacked ") +
         (a.layout == WeightLayout::kPlain ? "plain" : "preshuffled");
}

/// Expects every form's public call to throw kInvalidArgument containing `needle` after `edit`.
void expect_invalid_in_every_form(const std::function<void(Args&)>& edit,
                                  const std::string& needle) {
  for (Args a : all_forms()) {
    SCOPED_TRACE(form_name(a));
    edit(a);
    expect_error([&] { a.call(); }, ErrorCode::kInvalidArgument, needle);
  }
}

// ---- the valid baseline ------------------------------------------------------------------

TEST(GroupedValidation, ValidCallsGiveTheirShape) {
  for (Args a : all_forms()) {
    SCOPED_TRACE(form_name(a));
    const detail::ValidatedGrouped v = a.validate();
    EXPECT_EQ(v.device, 0);
    EXPECT_EQ(v.shape.groups, G);
    EXPECT_EQ(v.shape.rows, M);
    EXPECT_EQ(v.shape.n, N);
    EXPECT_EQ(v.shape.k, K);
    EXPECT_EQ(v.shape.padded, a.padded);
    EXPECT_EQ(v.shape.w_layout, a.layout);
    EXPECT_EQ(v.shape.out_dtype, DType::kBF16);
    EXPECT_TRUE(v.shape.has_bias);
    EXPECT_EQ(v.shape.bias_dtype, DType::kF32);
    EXPECT_TRUE(v.shape.fast_accum);
    EXPECT_EQ(v.shape.sizes_dtype, DType::kI32);
  }
  // Accepted variants: int64 sizes, bf16 bias (2-byte aligned), fp16 out, uint8 preshuffled W,
  // precise mode, no bias, an undefined bias view, x_scale 4-byte aligned.
  Args a = grouped_args(G, M, N, K, false, WeightLayout::kPreshuffled);
  a.sizes.dtype = DType::kI64;
  a.with_bias = true;
  a.bias.dtype = DType::kBF16;
  a.bias.data = fake(kBias, 2);
  a.out.dtype = DType::kF16;
  a.w.dtype = DType::kU8;
  a.fast = false;
  a.xs.data = fake(kXs, 4);
  const detail::ValidatedGrouped v = a.validate();
  EXPECT_EQ(v.shape.sizes_dtype, DType::kI64);
  EXPECT_EQ(v.shape.bias_dtype, DType::kBF16);
  EXPECT_EQ(v.shape.out_dtype, DType::kF16);
  EXPECT_FALSE(v.shape.fast_accum);
  a.with_bias = false;
  EXPECT_FALSE(a.validate().shape.has_bias);
  a.with_bias = true;
  a.bias = TensorView{};
  EXPECT_FALSE(a.validate().shape.has_bias);
}

// GemmOptions::trace records gemm() and batched_gemm() only: a grouped call refuses it.
TEST(GroupedValidation, ATraceIsRefused) {
  GemmTrace t;
  t.data = static_cast<unsigned long long*>(fake(0x900000));
  t.words = 1 << 20;
  t.tiles = 8;
  for (Args a : all_forms()) {
    SCOPED_TRACE(form_name(a));
    expect_error([&] {
      GemmOptions o = a.options();
      o.trace = &t;
      if (a.padded) {
        grouped_gemm_padded(a.x, a.w, a.layout, a.xs, a.ws, a.sizes, a.out, o);
      } else {
        grouped_gemm(a.x, a.w, a.layout, a.xs, a.ws, a.sizes, a.out, o);
      }
    }, ErrorCode::kUnsupported, "grouped_gemm() does not record its tiles");
  }
}

TEST(GroupedValidation, AnEpilogueOperationIsRefused) {
  for (Args a : all_forms()) {
    SCOPED_TRACE(form_name(a));
    expect_error([&] {
      GemmOptions o = a.options();
      o.epilogue_op = EpilogueOp::kSiluMul;
      if (a.padded) {
        grouped_gemm_padded(a.x, a.w, a.layout, a.xs, a.ws, a.sizes, a.out, o);
      } else {
        grouped_gemm(a.x, a.w, a.layout, a.xs, a.ws, a.sizes, a.out, o);
      }
    }, ErrorCode::kUnsupported, "grouped_gemm() has no epilogue operation (got silu_mul)");
  }
}

TEST(GroupedValidation, RaggedEdgesAreValid) {
  // N a multiple of 8 but not of 128, K a multiple of 16 but not of 128, odd row counts.
  for (Args a : {grouped_args(3, 7, 8, 16), grouped_args(3, 1, 24, 48, true),
                 grouped_args(1, 129, 1032, 144, false, WeightLayout::kPreshuffled)}) {
    SCOPED_TRACE(form_name(a));
    EXPECT_NO_THROW(a.validate());
  }
}

TEST(GroupedValidation, EmptyProblemsReturnWithoutLaunching) {
  // total_M == 0, M_max == 0 or G == 0: valid, and nothing is launched, so even fake pointers
  // are safe. Empty tensors may have null data pointers. As gemm() does, an empty call gives the
  // answer a non-empty one would: no sm_90 GPU, kNoDevice.
  std::vector<Args> empty = {grouped_args(G, 0, N, K), grouped_args(G, 0, N, K, true),
                             grouped_args(0, M, N, K),
                             grouped_args(0, M, N, K, true, WeightLayout::kPreshuffled),
                             grouped_args(0, 0, N, K)};
  for (Args a : empty) {
    SCOPED_TRACE(form_name(a));
    for (TensorView* t : {&a.x, &a.w, &a.xs, &a.ws, &a.sizes, &a.out, &a.bias}) {
      if (t->numel() == 0) t->data = nullptr;
    }
    a.with_bias = true;
    if (test::have_sm90()) {
      EXPECT_NO_THROW(a.call());
    } else {
      expect_error([&] { a.call(); }, ErrorCode::kNoDevice, "");
    }
  }
  // G == 0 with rows: no row is in a group, so none is written (the output keeps its values).
  EXPECT_EQ(grouped_args(0, M, N, K).validate().shape.groups, 0);
}

// ---- dtypes ------------------------------------------------------------------------------

TEST(GroupedValidation, WrongDtypeOfEachTensor) {
  for (DType bad : {DType::kBF16, DType::kU8, DType::kF32}) {
    expect_invalid_in_every_form([&](Args& a) { a.x.dtype = bad; },
                                 "x must have dtype float8_e4m3fn");
  }
  expect_invalid_in_every_form([](Args& a) { a.w.dtype = DType::kBF16; }, "w must have dtype");
  {
    Args a = grouped_args(G, M, N, K);
    a.w.dtype = DType::kU8;  // uint8 only for the preshuffled form
    F8GEMM_EXPECT_INVALID(a.call(), "w must have dtype float8_e4m3fn, got uint8");
  }
  expect_invalid_in_every_form([](Args& a) { a.xs.dtype = DType::kBF16; },
                               "x_scale must have dtype float32");
  expect_invalid_in_every_form([](Args& a) { a.ws.dtype = DType::kF16; },
                               "w_scale must have dtype float32");
  for (DType bad : {DType::kF32, DType::kE4M3, DType::kI32}) {
    expect_invalid_in_every_form([&](Args& a) { a.out.dtype = bad; },
                                 "out must have dtype bfloat16 or float16");
  }
  for (DType bad : {DType::kF16, DType::kE4M3}) {
    expect_invalid_in_every_form([&](Args& a) { a.bias.dtype = bad; },
                                 "bias must have dtype float32 or bfloat16");
  }
  expect_invalid_in_every_form([](Args& a) { a.sizes.dtype = DType::kF32; },
                               "m_sizes must have dtype int32 or int64, got float32");
  for (DType bad : {DType::kU8, DType::kBF16, DType::kE4M3}) {
    expect_invalid_in_every_form([&](Args& a) { a.sizes.dtype = bad; },
                                 "m_sizes must have dtype int32 or int64");
  }
  expect_invalid_in_every_form([](Args& a) { a.layout = static_cast<WeightLayout>(7); },
                               "w_layout must be kPlain or kPreshuffled");
}

// ---- ranks and shapes --------------------------------------------------------------------

TEST(GroupedValidation, WrongRankOfX) {
  {
    Args a = grouped_args(G, M, N, K);
    a.x = dev_view(kX, DType::kE4M3, {G, M, K});  // padded-shaped x to the stacked form
    F8GEMM_EXPECT_INVALID(a.call(), "x must be 2-D [total_M, K] (the stacked form");
  }
  {
    Args a = grouped_args(G, M, N, K, true);
    a.x = dev_view(kX, DType::kE4M3, {M, K});  // stacked-shaped x to the padded form
    F8GEMM_EXPECT_INVALID(a.call(), "x must be 3-D [G, M_max, K] (the padded form)");
  }
}

TEST(GroupedValidation, WrongRankOrShapeOfW) {
  {
    Args a = grouped_args(G, M, N, K);
    a.w = dev_view(kW, DType::kE4M3, {N, K});  // one expert's weight
    F8GEMM_EXPECT_INVALID(a.call(),
                          "w must be 3-D [G, N, K] (a plain weight), got shape [136, 272]");
  }
  {
    Args a = grouped_args(G, M, N, K);
    a.w = dev_view(kW, DType::kE4M3, {G, N, K + 16});
    F8GEMM_EXPECT_INVALID(a.call(), "w must have shape [8, 136, 272] ([G, N, K] matching x's K)");
  }
  {
    // A plain weight to the preshuffled form, and a preshuffled one to the plain form.
    Args a = grouped_args(G, M, N, K, false, WeightLayout::kPreshuffled);
    a.w = dev_view(kW, DType::kE4M3, {G, N, K});
    F8GEMM_EXPECT_INVALID(a.call(), "w must be 4-D preshuffled [G, ceil(K/128), N/8, 1024]");
    Args b = grouped_args(G, M, N, K);
    b.w = dev_view(kW, DType::kE4M3, preshuffled_shape(G, N, K));
    F8GEMM_EXPECT_INVALID(b.call(), "w must be 3-D [G, N, K]");
  }
  {
    // Preshuffled for another K.
    Args a = grouped_args(G, M, N, K, true, WeightLayout::kPreshuffled);
    a.w = dev_view(kW, DType::kE4M3, preshuffled_shape(G, N, K + 128));
    F8GEMM_EXPECT_INVALID(a.call(),
                          "w must have shape [8, 3, 17, 1024] (preshuffled [G, ceil(K/128), "
                          "N/8, 1024] matching x's K)");
  }
}

TEST(GroupedValidation, KMustBeAPositiveMultipleOf16) {
  for (int64_t k : {int64_t(8), int64_t(264), int64_t(0)}) {
    expect_invalid_in_every_form(
        [&](Args& a) { a = grouped_args(G, M, N, k, a.padded, a.layout); },
        "must be a positive multiple of 16");
  }
}

TEST(GroupedValidation, NMustBeAPositiveMultipleOf8) {
  for (int64_t n : {int64_t(12), int64_t(0)}) {
    Args a = grouped_args(G, M, n, K);
    F8GEMM_EXPECT_INVALID(a.call(), "N (w's rows) must be a positive multiple of 8, got " +
                                 std::to_string(n));
  }
}

TEST(GroupedValidation, SizesTensorMustBeOneSizePerGroup) {
  expect_invalid_in_every_form([](Args& a) { a.sizes = dev_view(kSizes, DType::kI32, {G - 1}); },
                               "m_sizes has 7 groups but w has 8");
  expect_invalid_in_every_form([](Args& a) { a.sizes = dev_view(kSizes, DType::kI64, {G + 1}); },
                               "m_sizes has 9 groups but w has 8");
  expect_invalid_in_every_form([](Args& a) { a.sizes = dev_view(kSizes, DType::kI32, {1, G}); },
                               "m_sizes must be 1-D [G] (one size per group), got shape [1, 8]");
  expect_invalid_in_every_form(
      [](Args& a) {
        a.sizes.rank = 0;  // a scalar (make_view builds ranks 1..4 only)
      },
      "m_sizes must be 1-D [G] (one size per group), got shape []");
}

TEST(GroupedValidation, ShapeMismatchStacked) {
  auto bad = [](const std::function<void(Args&)>& edit, const std::string& needle) {
    Args a = grouped_args(G, M, N, K);
    a.with_bias = true;
    edit(a);
    F8GEMM_EXPECT_INVALID(a.call(), needle);
  };
  bad([](Args& a) { a.xs = dev_view(kXs, DType::kF32, {M + 1}); },
      "x_scale must have shape [200] ([total_M]), got [201]");
  bad([](Args& a) { a.xs = dev_view(kXs, DType::kF32, {M, 1}); }, "x_scale must have shape [200]");
  bad([](Args& a) { a.ws = dev_view(kWs, DType::kF32, {N}); },
      "w_scale must have shape [8, 136] ([G, N]), got [136]");
  bad([](Args& a) { a.ws = dev_view(kWs, DType::kF32, {G, N + 8}); }, "w_scale must have shape");
  bad([](Args& a) { a.out = dev_view(kOut, DType::kBF16, {M, N + 8}); },
      "out must have shape [200, 136] ([total_M, N]), got [200, 144]");
  bad([](Args& a) { a.out = dev_view(kOut, DType::kBF16, {M - 1, N}); }, "out must have shape");
  bad([](Args& a) { a.bias = dev_view(kBias, DType::kF32, {N}); },
      "bias must have shape [8, 136] ([G, N]), got [136]");
}

TEST(GroupedValidation, ShapeMismatchPadded) {
  auto bad = [](const std::function<void(Args&)>& edit, const std::string& needle) {
    Args a = grouped_args(G, M, N, K, true);
    a.with_bias = true;
    edit(a);
    F8GEMM_EXPECT_INVALID(a.call(), needle);
  };
  bad([](Args& a) { a.x = dev_view(kX, DType::kE4M3, {G - 1, M, K}); },
      "x has 7 groups but w has 8");
  bad([](Args& a) { a.xs = dev_view(kXs, DType::kF32, {G * M}); },
      "x_scale must have shape [8, 200] ([G, M_max]), got [1600]");
  bad([](Args& a) { a.out = dev_view(kOut, DType::kBF16, {G * M, N}); },
      "out must have shape [8, 200, 136] ([G, M_max, N]), got [1600, 136]");
  bad([](Args& a) { a.ws = dev_view(kWs, DType::kF32, {G + 1, N}); }, "w_scale must have shape");
  bad([](Args& a) { a.bias = dev_view(kBias, DType::kF32, {1, N}); }, "bias must have shape");
}

TEST(GroupedValidation, ArgumentNamesComeFromTheOptions) {
  const GemmArgNames names{"XQ", "WQ", "x_scale", "w_scale", "output", "bias", "M_sizes"};
  Args a = grouped_args(G, M, N, K);
  a.names = &names;
  a.sizes = dev_view(kSizes, DType::kI32, {G - 1});
  F8GEMM_EXPECT_INVALID(a.call(), "M_sizes has 7 groups but WQ has 8");
  a = grouped_args(G, M, N, K);
  a.names = &names;
  a.sizes.device = kHost;
  F8GEMM_EXPECT_INVALID(a.call(), "M_sizes must be on the GPU with XQ (cuda:0)");
  a = grouped_args(G, M, N, K);
  a.names = &names;
  a.out.dtype = DType::kF32;
  F8GEMM_EXPECT_INVALID(a.call(), "output must have dtype bfloat16 or float16");
}

// ---- memory ------------------------------------------------------------------------------

TEST(GroupedValidation, MisalignedPointers) {
  expect_invalid_in_every_form([](Args& a) { a.x.data = fake(kX, 8); }, "x must be 16-byte aligned");
  expect_invalid_in_every_form([](Args& a) { a.w.data = fake(kW, 4); }, "w must be 16-byte aligned");
  expect_invalid_in_every_form([](Args& a) { a.xs.data = fake(kXs, 2); },
                               "x_scale must be 4-byte aligned");
  expect_invalid_in_every_form([](Args& a) { a.ws.data = fake(kWs, 1); },
                               "w_scale must be 4-byte aligned");
  expect_invalid_in_every_form([](Args& a) { a.out.data = fake(kOut, 2); },
                               "out must be 16-byte aligned");
  expect_invalid_in_every_form([](Args& a) { a.bias.data = fake(kBias, 2); },
                               "bias must be 4-byte aligned");
  expect_invalid_in_every_form([](Args& a) { a.sizes.data = fake(kSizes, 2); },
                               "m_sizes must be 4-byte aligned");
  expect_invalid_in_every_form(
      [](Args& a) {
        a.sizes.dtype = DType::kI64;
        a.sizes.data = fake(kSizes, 4);
      },
      "m_sizes must be 8-byte aligned");
}

TEST(GroupedValidation, NullDataPointers) {
  expect_invalid_in_every_form([](Args& a) { a.x.data = nullptr; }, "x has a null data pointer");
  expect_invalid_in_every_form([](Args& a) { a.sizes.data = nullptr; },
                               "m_sizes has a null data pointer");
  expect_invalid_in_every_form([](Args& a) { a.out.data = nullptr; },
                               "out has a null data pointer");
}

TEST(GroupedValidation, NonContiguousStrides) {
  expect_invalid_in_every_form([](Args& a) { a.x.stride[a.x.rank - 2] *= 2; },
                               "x must be contiguous (row-major)");
  expect_invalid_in_every_form([](Args& a) { a.sizes.stride[0] = 2; },
                               "m_sizes must be contiguous (row-major)");
  expect_invalid_in_every_form([](Args& a) { a.out.stride[a.out.rank - 1] = 2; },
                               "out must be contiguous (row-major)");
  expect_invalid_in_every_form([](Args& a) { a.ws.stride[0] = 1; },
                               "w_scale must be contiguous (row-major)");
}

TEST(GroupedValidation, NegativeDimensionsInHandBuiltViewsAreRejected) {
  expect_invalid_in_every_form([](Args& a) { a.sizes.shape[0] = -8; },
                               "m_sizes has a negative dimension");
  expect_invalid_in_every_form([](Args& a) { a.x.shape[0] = -1; }, "x has a negative dimension");
  expect_invalid_in_every_form([](Args& a) { a.sizes.rank = kMaxRank + 1; },
                               "m_sizes must have rank 0..4");
}

// ---- devices -----------------------------------------------------------------------------

TEST(GroupedValidation, SizesMustBeOnTheGpuWithX) {
  // The sizes are read by the kernel only (no host sync), so a host tensor cannot serve.
  expect_invalid_in_every_form([](Args& a) { a.sizes.device = kHost; },
                               "m_sizes must be on the GPU with x (cuda:0): the kernel reads "
                               "the group sizes there and the host never does; got the host");
  expect_invalid_in_every_form([](Args& a) { a.sizes.device = 1; },
                               "m_sizes must be on the GPU with x (cuda:0)");
  expect_invalid_in_every_form([](Args& a) { a.sizes.device = 1; }, "got cuda:1");
}

TEST(GroupedValidation, DeviceMismatch) {
  expect_invalid_in_every_form([](Args& a) { a.w.device = 1; }, "w is on cuda:1 but x is on cuda:0");
  expect_invalid_in_every_form([](Args& a) { a.xs.device = kHost; },
                               "x_scale is on the host but x is on cuda:0");
  expect_invalid_in_every_form([](Args& a) { a.ws.device = 1; }, "w_scale is on cuda:1");
  expect_invalid_in_every_form([](Args& a) { a.out.device = kHost; }, "out is on the host");
  expect_invalid_in_every_form([](Args& a) { a.bias.device = 1; }, "bias is on cuda:1");
  expect_invalid_in_every_form([](Args& a) { a.x.device = kHost; }, "x must be in GPU memory");
  // Everything on the host: x is the one named.
  expect_invalid_in_every_form(
      [](Args& a) {
        for (TensorView* v : {&a.x, &a.w, &a.xs, &a.ws, &a.sizes, &a.out, &a.bias}) v->device = kHost;
      },
      "x must be in GPU memory");
}

// ---- limits ------------------------------------------------------------------------------

TEST(GroupedValidation, GroupsPastTheLimitAreRejectedWithTheLimit) {
  const int64_t too_many = detail::kMaxGroups + 1;
  for (bool padded : {false, true}) {
    Args a = grouped_args(too_many, 64, 8, 16, padded);
    F8GEMM_EXPECT_INVALID(a.call(), "G = 4097 groups is more than the 4096 a call supports");
  }
  EXPECT_NO_THROW(grouped_args(detail::kMaxGroups, 64, 8, 16).validate());
  EXPECT_NO_THROW(grouped_args(detail::kMaxGroups, 3, 8, 16, true).validate());
}

TEST(GroupedValidation, SizesBeyondTheInt32IndexRangeAreRejected) {
  {
    Args a = grouped_args(2, int64_t(1) << 31, 8, 16);
    F8GEMM_EXPECT_INVALID(a.call(),
                          "sizes exceed the int32 index range: total_M = 2147483648 is more "
                          "than 2147483392 (a tile's rows past its group's end stay in int32; "
                          "G,total_M,N,K = 2,2147483648,8,16)");
  }
  {
    // Each group's M_max fits; the padded rows of all groups, addressed as one tensor, do not.
    Args a = grouped_args(4096, int64_t(1) << 20, 8, 16, true);
    F8GEMM_EXPECT_INVALID(a.call(), "G * M_max = 4294967296 is more than 2147483392");
  }
  {
    Args a = grouped_args(2, 16, int64_t(1) << 28, 16);
    F8GEMM_EXPECT_INVALID(a.call(), "N = 268435456 is more than 268435200");
  }
  {
    Args a = grouped_args(2, 16, 8, 2147483632);
    F8GEMM_EXPECT_INVALID(a.call(), "K = 2147483632 is more than 2147483392");
  }
  {
    // (2^24 / 8 + 2) * 2^12 tiles > 2^30.
    Args a = grouped_args(2, int64_t(1) << 24, int64_t(1) << 15, 16);
    F8GEMM_EXPECT_INVALID(a.call(), "(rows / 8 + G) * ceil(N / 8) is more than 1073741824");
  }
  {
    // One group's W of 2^28 x 2^13 bytes = 2^41.
    Args a = grouped_args(1, 16, int64_t(1) << 27, int64_t(1) << 14);
    F8GEMM_EXPECT_INVALID(a.call(),
                          "TMA's stride limit: one group of W must be smaller than 2^40 bytes");
  }
  // The limits themselves pass.
  EXPECT_NO_THROW(grouped_args(2, 2147483392, 8, 16).validate());
  EXPECT_NO_THROW(grouped_args(2, 16, 268435200, 16).validate());
}

// Each group's last tile may be partial: the tile bound counts G tiles beyond rows / 8. At
// N = 2^15 (2^12 tiles across), rows / 8 + G = 2^18 is exactly 2^30 tiles and passes; 8 rows more
// (one more tile row) do not, although rows / 8 alone would still be 2^30 tiles or fewer.
TEST(GroupedValidation, TheTileBoundCountsOnePartialTilePerGroup) {
  constexpr int64_t kN = int64_t(1) << 15;
  for (int64_t g : {int64_t(2), int64_t(4096)}) {
    SCOPED_TRACE("G = " + std::to_string(g));
    const int64_t rows = ((int64_t(1) << 18) - g) * 8;
    EXPECT_NO_THROW(grouped_args(g, rows, kN, 16).validate());
    Args over = grouped_args(g, rows + 8, kN, 16);
    ASSERT_LE((rows + 8) / 8 * (kN / 8), int64_t(1) << 30);
    F8GEMM_EXPECT_INVALID(over.validate(),
                          "(rows / 8 + G) * ceil(N / 8) is more than 1073741824");
  }
}


// ---- the public problem, precompile() and is_ready() ---------------------------------------

TEST(GroupedProblem, GroupedProblemIsTheValidatedShape) {
  for (Args a : all_forms()) {
    SCOPED_TRACE(form_name(a));
    const GroupedProblem p = a.padded
                                 ? grouped_problem(a.x, a.w, a.layout, a.xs, a.ws, a.sizes, a.out,
                                                   a.options(), true)
                                 : grouped_problem(a.x, a.w, a.layout, a.xs, a.ws, a.sizes, a.out,
                                                   a.options());
    const detail::ValidatedGrouped v = a.validate();
    EXPECT_EQ(p.groups, v.shape.groups);
    EXPECT_EQ(p.rows, v.shape.rows);
    EXPECT_EQ(p.n, v.shape.n);
    EXPECT_EQ(p.k, v.shape.k);
    EXPECT_EQ(p.padded, a.padded);
    EXPECT_EQ(p.has_bias, v.shape.has_bias);
  }
}

TEST(GroupedProblem, PrecompileRejectsWhatACallWould) {
  const GroupedProblem good = test::grouped(8, 64, 256, 512);
  auto with = [&](const std::function<void(GroupedProblem&)>& change) {
    GroupedProblem p = good;
    change(p);
    return p;
  };
  const std::vector<std::pair<GroupedProblem, std::string>> bad = {
      {with([](GroupedProblem& p) { p.n = 100; }), "N must be a positive multiple of 8"},
      {with([](GroupedProblem& p) { p.k = 40; }), "K must be a positive multiple of 16"},
      {with([](GroupedProblem& p) { p.groups = -1; }), "must be >= 0"},
      {with([](GroupedProblem& p) { p.groups = detail::kMaxGroups + 1; }), "4096"},
      {with([](GroupedProblem& p) { p.out_dtype = DType::kF32; }), "bfloat16 or float16"},
      {with([](GroupedProblem& p) { p.sizes_dtype = DType::kF32; }), "int32 or int64"},
      {with([](GroupedProblem& p) {
         p.has_bias = true;
         p.bias_dtype = DType::kF16;
       }),
       "float32 or bfloat16"},
      {with([](GroupedProblem& p) { p.rows = int64_t(1) << 40; }), "int32 index range"},
  };
  for (const auto& [p, needle] : bad) {
    SCOPED_TRACE(needle);
    // The bad problem is last: every problem is checked before the first compile.
    const int64_t compiles = jit::stats().compiles;
    expect_error([&] { precompile(std::vector<GroupedProblem>{good, p}); },
                 ErrorCode::kInvalidArgument, needle);
    EXPECT_EQ(jit::stats().compiles, compiles);
  }
}

TEST(GroupedProblem, EmptyProblemsAreReady) {
  GroupedProblem p;
  p.rows = 0;
  EXPECT_TRUE(is_ready(p));
  p.rows = 64;
  p.groups = 0;
  EXPECT_TRUE(is_ready(p));
}

// An empty problem launches nothing (is_ready() holds for it): precompile() compiles nothing
// for it, with or without a GPU. The sizes are ones no other test compiles, so that an instance
// built for them could not come from the memory cache.
TEST(GroupedProblem, PrecompileOfAnEmptyProblemCompilesNothing) {
  test::TempDir dir("f8gemm_grouped_precompile_empty");
  test::ScopedEnv cache("F8GEMM_CACHE_DIR");
  cache.set(dir.path());
  const GroupedProblem no_rows = test::grouped(8, 0, 1048, 528);
  const GroupedProblem no_groups = test::grouped(0, 64, 1048, 528);
  const int64_t before = jit::stats().compiles;
  precompile(std::vector<GroupedProblem>{no_rows, no_groups});
  EXPECT_EQ(jit::stats().compiles, before);
}

TEST(GroupedProblem, PrecompileWithoutAGpuCompilesTheGroupedInstance) {
  if (test::have_any_device()) GTEST_SKIP() << "a GPU is present: precompile loads there";
  test::TempDir dir("f8gemm_grouped_precompile");
  test::ScopedEnv cache("F8GEMM_CACHE_DIR");
  cache.set(dir.path());
  const GroupedProblem p = test::grouped(8, 64, 1024, 512);
  const int64_t before = jit::stats().compiles;
  precompile(std::vector<GroupedProblem>{p});
  EXPECT_GE(jit::stats().compiles, before + 1);
  // Without a GPU nothing is loaded: the problem is not ready to run.
  EXPECT_FALSE(is_ready(p));
}

}  // namespace
}  // namespace f8gemm
