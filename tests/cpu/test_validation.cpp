/// \brief Every argument check of gemm() / batched_gemm() / preshuffle() / unshuffle() / quantize_rows(): kInvalidArgument naming the argument, before any device access (fake pointers, no GPU).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/test_util.hpp"
#include "f8gemm/f8gemm.hpp"
#include "numerics.hpp"

namespace f8gemm {
namespace {

using test::have_any_device;
using test::have_sm90;

// Fake device addresses: 16-byte (indeed 2^44-byte) aligned and never dereferenced, because
// every check runs before the first CUDA call. Distinct per tensor so that a mix-up cannot go
// unseen, and 2^44 bytes apart so that no tensor the limits admit (2^40 bytes a batch) overlaps
// the next one: the output must not overlap an input (require_disjoint).
constexpr uintptr_t kX = uintptr_t(1) << 44, kW = uintptr_t(2) << 44, kXs = uintptr_t(3) << 44,
                    kWs = uintptr_t(4) << 44, kOut = uintptr_t(5) << 44,
                    kBias = uintptr_t(6) << 44;

using test::dev_view;
using test::expect_error;
using test::fake;

/// The arguments of one GEMM call; the defaults are valid.
struct Args {
  TensorView x, w, xs, ws, out, bias;
  WeightLayout layout = WeightLayout::kPlain;
  bool with_bias = false;
  bool fast = true;

  GemmOptions options() const {
    GemmOptions o;
    o.bias = with_bias ? &bias : nullptr;
    o.fast_accum = fast;
    return o;
  }
  void batched() const { batched_gemm(x, w, layout, xs, ws, out, options()); }
  void single() const { gemm(x, w, layout, xs, ws, out, options()); }
};

/// Valid batched arguments: X [B,M,K], W [B,N,K] (or preshuffled), xs [B,M], ws [B,N],
/// out [B,M,N] bf16, bias [B,N] fp32.
Args batched_args(int64_t b, int64_t m, int64_t n, int64_t k,
                  WeightLayout layout = WeightLayout::kPlain) {
  Args a;
  a.layout = layout;
  a.x = dev_view(kX, DType::kE4M3, {b, m, k});
  a.w = layout == WeightLayout::kPlain
            ? dev_view(kW, DType::kE4M3, {b, n, k})
            : dev_view(kW, DType::kE4M3, preshuffled_shape(b, n, k));
  a.xs = dev_view(kXs, DType::kF32, {b, m});
  a.ws = dev_view(kWs, DType::kF32, {b, n});
  a.out = dev_view(kOut, DType::kBF16, {b, m, n});
  a.bias = dev_view(kBias, DType::kF32, {b, n});
  return a;
}

/// Valid single-GEMM arguments with X [lead..., K]: W [N,K] (or [KB,N/8,1024]), xs with X's
/// leading shape, ws [N], out [lead..., N], bias [N].
Args single_args(std::vector<int64_t> lead, int64_t n, int64_t k,
                 WeightLayout layout = WeightLayout::kPlain) {
  Args a;
  a.layout = layout;
  std::vector<int64_t> xshape = lead, oshape = lead;
  xshape.push_back(k);
  oshape.push_back(n);
  a.x = dev_view(kX, DType::kE4M3, xshape);
  if (layout == WeightLayout::kPlain) {
    a.w = dev_view(kW, DType::kE4M3, {n, k});
  } else {
    auto s = preshuffled_shape(1, n, k);
    a.w = dev_view(kW, DType::kE4M3, {s[1], s[2], s[3]});
  }
  a.xs = dev_view(kXs, DType::kF32, lead.empty() ? std::vector<int64_t>{1} : lead);
  a.ws = dev_view(kWs, DType::kF32, {n});
  a.out = dev_view(kOut, DType::kBF16, oshape);
  a.bias = dev_view(kBias, DType::kF32, {n});
  return a;
}

constexpr int64_t B = 2, M = 64, N = 128, K = 256;

// ---- the valid baseline ------------------------------------------------------------------

TEST(Validation, FullyValidCallsWithoutAGpuThrowNoDevice) {
  if (have_sm90()) GTEST_SKIP() << "an sm_90 GPU is present: the fake pointers would be used";
  for (WeightLayout layout : {WeightLayout::kPlain, WeightLayout::kPreshuffled}) {
    for (bool bias : {false, true}) {
      Args a = batched_args(B, M, N, K, layout);
      a.with_bias = bias;
      expect_error([&] { a.batched(); }, ErrorCode::kNoDevice, "");
      Args s = single_args({M}, N, K, layout);
      s.with_bias = bias;
      expect_error([&] { s.single(); }, ErrorCode::kNoDevice, "");
    }
  }
  // Accepted variants: bf16 bias, fp16 out, uint8 preshuffled W, precise mode, an undefined bias
  // view (treated as no bias), x_scale 4-byte (not 16-byte) aligned, bf16 bias 2-byte aligned.
  Args a = batched_args(B, M, N, K, WeightLayout::kPreshuffled);
  a.with_bias = true;
  a.bias.dtype = DType::kBF16;
  a.bias.data = fake(kBias, 2);
  a.out.dtype = DType::kF16;
  a.w.dtype = DType::kU8;
  a.fast = false;
  a.xs.data = fake(kXs, 4);
  expect_error([&] { a.batched(); }, ErrorCode::kNoDevice, "");
  Args u = batched_args(B, M, N, K);
  u.with_bias = true;
  u.bias = TensorView{};
  expect_error([&] { u.batched(); }, ErrorCode::kNoDevice, "");
}

// ---- dtypes ------------------------------------------------------------------------------

TEST(Validation, WrongDtypeOfEachTensor) {
  Args a = batched_args(B, M, N, K);
  a.with_bias = true;
  for (DType bad : {DType::kBF16, DType::kU8, DType::kF32}) {
    Args t = a;
    t.x.dtype = bad;
    F8GEMM_EXPECT_INVALID(t.batched(), "x must have dtype float8_e4m3fn");
    F8GEMM_EXPECT_INVALID(t.single(), "x must have dtype");
  }
  {
    Args t = a;
    t.w.dtype = DType::kBF16;
    F8GEMM_EXPECT_INVALID(t.batched(), "w must have dtype");
    // uint8 is accepted only for the preshuffled form (a byte buffer holding e4m3 codes).
    t.w.dtype = DType::kU8;
    F8GEMM_EXPECT_INVALID(t.batched(), "w must have dtype float8_e4m3fn, got uint8");
  }
  {
    Args t = a;
    t.xs.dtype = DType::kBF16;
    F8GEMM_EXPECT_INVALID(t.batched(), "x_scale must have dtype float32");
  }
  {
    Args t = a;
    t.ws.dtype = DType::kF16;
    F8GEMM_EXPECT_INVALID(t.batched(), "w_scale must have dtype float32");
  }
  for (DType bad : {DType::kF32, DType::kE4M3, DType::kU8}) {
    Args t = a;
    t.out.dtype = bad;
    F8GEMM_EXPECT_INVALID(t.batched(), "out must have dtype bfloat16 or float16");
  }
  for (DType bad : {DType::kF16, DType::kE4M3}) {
    Args t = a;
    t.bias.dtype = bad;
    F8GEMM_EXPECT_INVALID(t.batched(), "bias must have dtype float32 or bfloat16");
  }
  {
    Args t = a;
    t.layout = static_cast<WeightLayout>(7);
    F8GEMM_EXPECT_INVALID(t.batched(), "w_layout must be kPlain or kPreshuffled");
  }
}

// ---- ranks -------------------------------------------------------------------------------

TEST(Validation, WrongRank) {
  {
    Args t = batched_args(B, M, N, K);
    t.x = dev_view(kX, DType::kE4M3, {M, K});
    F8GEMM_EXPECT_INVALID(t.batched(), "x must be 3-D [B, M, K]");
  }
  {
    Args t = batched_args(B, M, N, K);
    t.w = dev_view(kW, DType::kE4M3, {N, K});
    F8GEMM_EXPECT_INVALID(t.batched(), "w must be 3-D");
  }
  {
    Args t = batched_args(B, M, N, K, WeightLayout::kPreshuffled);
    t.w = dev_view(kW, DType::kE4M3, {2, N / 8, 1024});
    F8GEMM_EXPECT_INVALID(t.batched(), "w must be 4-D");
  }
  {
    Args t = batched_args(B, M, N, K);
    t.xs = dev_view(kXs, DType::kF32, {B * M});
    F8GEMM_EXPECT_INVALID(t.batched(), "x_scale must have shape [2, 64]");
  }
  {
    Args t = batched_args(B, M, N, K);
    t.ws = dev_view(kWs, DType::kF32, {B, N, 1});
    F8GEMM_EXPECT_INVALID(t.batched(), "w_scale must have shape [2, 128]");
  }
  {
    Args t = batched_args(B, M, N, K);
    t.out = dev_view(kOut, DType::kBF16, {B * M, N});
    F8GEMM_EXPECT_INVALID(t.batched(), "out must have shape [2, 64, 128]");
  }
  {
    Args t = batched_args(B, M, N, K);
    t.with_bias = true;
    t.bias = dev_view(kBias, DType::kF32, {B * N});
    F8GEMM_EXPECT_INVALID(t.batched(), "bias must have shape [2, 128]");
  }
  {
    Args t = single_args({M}, N, K);
    t.w = dev_view(kW, DType::kE4M3, {1, N, K});
    F8GEMM_EXPECT_INVALID(t.single(), "w must be 2-D [N, K]");
  }
  {
    // A hand-built rank-0 view (make_view refuses rank 0).
    Args t = single_args({M}, N, K);
    t.x = TensorView{};
    t.x.data = fake(kX);
    t.x.dtype = DType::kE4M3;
    F8GEMM_EXPECT_INVALID(t.single(), "x must be [..., K]");
  }
}

// ---- shapes ------------------------------------------------------------------------------

TEST(Validation, ShapeMismatchBatched) {
  auto bad = [](auto edit, const char* needle) {
    Args t = batched_args(B, M, N, K);
    t.with_bias = true;
    edit(t);
    F8GEMM_EXPECT_INVALID(t.batched(), needle);
  };
  bad([](Args& t) { t.w = dev_view(kW, DType::kE4M3, {B + 1, N, K}); }, "w must have shape [2, 128, 256]");
  bad([](Args& t) { t.w = dev_view(kW, DType::kE4M3, {B, N, K + 16}); }, "w must have shape [2, 128, 256]");
  bad([](Args& t) { t.xs = dev_view(kXs, DType::kF32, {B, M + 1}); }, "x_scale must have shape [2, 64]");
  bad([](Args& t) { t.xs = dev_view(kXs, DType::kF32, {B + 1, M}); }, "x_scale must have shape");
  bad([](Args& t) { t.xs = dev_view(kXs, DType::kF32, {M, B}); }, "x_scale must have shape");
  bad([](Args& t) { t.ws = dev_view(kWs, DType::kF32, {B, N + 8}); }, "w_scale must have shape [2, 128]");
  bad([](Args& t) { t.ws = dev_view(kWs, DType::kF32, {1, N}); }, "w_scale must have shape");
  bad([](Args& t) { t.out = dev_view(kOut, DType::kBF16, {B, M, N + 8}); }, "out must have shape [2, 64, 128]");
  bad([](Args& t) { t.out = dev_view(kOut, DType::kBF16, {B, M + 1, N}); }, "out must have shape");
  bad([](Args& t) { t.out = dev_view(kOut, DType::kBF16, {B + 1, M, N}); }, "out must have shape");
  bad([](Args& t) { t.bias = dev_view(kBias, DType::kF32, {B, N + 8}); }, "bias must have shape [2, 128]");
  // One bias row shared by the batch is not a form batched_gemm takes.
  bad([](Args& t) { t.bias = dev_view(kBias, DType::kF32, {1, N}); }, "bias must have shape");
}

TEST(Validation, ShapeMismatchPreshuffled) {
  auto bad = [](std::vector<int64_t> wshape) {
    Args t = batched_args(B, M, N, K, WeightLayout::kPreshuffled);
    t.w = dev_view(kW, DType::kE4M3, std::move(wshape));
    F8GEMM_EXPECT_INVALID(t.batched(), "w must have shape [2, 2, ");
  };
  bad({B, 3, N / 8, 1024});   // ceil(256/128) = 2 k-blocks, not 3
  bad({B, 1, N / 8, 1024});
  bad({B + 1, 2, N / 8, 1024});
  bad({B, 2, N / 8, 512});
  // N comes from the preshuffled shape, so an N that disagrees with w_scale/out is caught there.
  Args t = batched_args(B, M, N, K, WeightLayout::kPreshuffled);
  t.w = dev_view(kW, DType::kE4M3, {B, 2, N / 8 + 1, 1024});
  F8GEMM_EXPECT_INVALID(t.batched(), "w_scale must have shape [2, 136]");
  Args s = single_args({M}, N, K, WeightLayout::kPreshuffled);
  s.w = dev_view(kW, DType::kE4M3, {3, N / 8, 1024});
  F8GEMM_EXPECT_INVALID(s.single(), "w must have shape [2, 16, 1024]");
}

TEST(Validation, ShapeMismatchSingle) {
  auto bad = [](auto edit, const char* needle) {
    Args t = single_args({2, 3}, N, K);
    t.with_bias = true;
    edit(t);
    F8GEMM_EXPECT_INVALID(t.single(), needle);
  };
  bad([](Args& t) { t.w = dev_view(kW, DType::kE4M3, {N, K + 16}); }, "w must have shape [128, 256]");
  bad([](Args& t) { t.xs = dev_view(kXs, DType::kF32, {7}); }, "x_scale must have x's leading shape (M = 6");
  // Right count (6), wrong leading shape.
  bad([](Args& t) { t.xs = dev_view(kXs, DType::kF32, {3, 2}); }, "x_scale must have x's leading shape");
  bad([](Args& t) { t.xs = dev_view(kXs, DType::kF32, {2, 3, 1}); }, "x_scale must have x's leading shape");
  bad([](Args& t) { t.ws = dev_view(kWs, DType::kF32, {N + 8}); }, "w_scale must have shape [128]");
  bad([](Args& t) { t.ws = dev_view(kWs, DType::kF32, {1, N}); }, "w_scale must have shape [128]");
  bad([](Args& t) { t.out = dev_view(kOut, DType::kBF16, {2, 3, N + 8}); }, "out must have shape x.shape[:-1] + [N]");
  bad([](Args& t) { t.out = dev_view(kOut, DType::kBF16, {3, 2, N}); }, "out must have shape");
  bad([](Args& t) { t.out = dev_view(kOut, DType::kBF16, {6 * N}); }, "out must have shape");
  bad([](Args& t) { t.out = dev_view(kOut, DType::kBF16, {7, N}); }, "out must have shape");
  bad([](Args& t) { t.bias = dev_view(kBias, DType::kF32, {N + 8}); }, "bias must have shape [128]");
  bad([](Args& t) { t.bias = dev_view(kBias, DType::kF32, {1, N}); }, "bias must have shape [128]");
}

TEST(Validation, KMustBeAPositiveMultipleOf16) {
  for (int64_t k : {int64_t(0), int64_t(8), int64_t(200), int64_t(264) + 4}) {
    SCOPED_TRACE(k);
    // Every other tensor is consistent with this K, so only the K rule can fire.
    Args t = batched_args(B, M, N, k);
    F8GEMM_EXPECT_INVALID(t.batched(), "K (x's last dimension) must be a positive multiple of 16");
    Args s = single_args({M}, N, k);
    F8GEMM_EXPECT_INVALID(s.single(), "positive multiple of 16");
  }
  Args t = batched_args(B, M, N, 200);
  F8GEMM_EXPECT_INVALID(t.batched(), "got 200");
}

TEST(Validation, NMustBeAPositiveMultipleOf8) {
  for (int64_t n : {int64_t(0), int64_t(4), int64_t(100), int64_t(130)}) {
    SCOPED_TRACE(n);
    Args t = batched_args(B, M, n, K);
    F8GEMM_EXPECT_INVALID(t.batched(), "N (w's rows) must be a positive multiple of 8");
    Args s = single_args({M}, n, K);
    F8GEMM_EXPECT_INVALID(s.single(), "N (w's rows) must be a positive multiple of 8");
  }
  Args p = batched_args(B, M, N, K, WeightLayout::kPreshuffled);
  p.w = dev_view(kW, DType::kE4M3, {B, 2, 0, 1024});
  F8GEMM_EXPECT_INVALID(p.batched(), "N (w's rows) must be a positive multiple of 8, got 0");
}

TEST(Validation, SiluMulEpilogueTakesHalfTheColumnsAndAnEvenGateUpSplit) {
  // The output is [.., N/2] (gate then up in W's 2I rows): the full N is refused, N/2 passes.
  for (WeightLayout layout : {WeightLayout::kPlain, WeightLayout::kPreshuffled}) {
    SCOPED_TRACE(int(layout));
    Args t = batched_args(B, M, N, K, layout);
    GemmOptions o = t.options();
    o.epilogue_op = EpilogueOp::kSiluMul;
    F8GEMM_EXPECT_INVALID(batched_gemm(t.x, t.w, t.layout, t.xs, t.ws, t.out, o),
                   "out must have shape [2, 64, 64] ([B, M, N/2])");
    const TensorView half = dev_view(kOut, DType::kBF16, {B, M, N / 2});
    F8GEMM_EXPECT_PASSES_VALIDATION(batched_gemm(t.x, t.w, t.layout, t.xs, t.ws, half, o));
    Args s = single_args({3, 5}, N, K, layout);
    o = s.options();
    o.epilogue_op = EpilogueOp::kSiluMul;
    F8GEMM_EXPECT_INVALID(gemm(s.x, s.w, s.layout, s.xs, s.ws, s.out, o),
                   "out must have shape x.shape[:-1] + [N/2] (N/2 = 64), got [3, 5, 128]");
    const TensorView half_single = dev_view(kOut, DType::kBF16, {3, 5, N / 2});
    F8GEMM_EXPECT_PASSES_VALIDATION(gemm(s.x, s.w, s.layout, s.xs, s.ws, half_single, o));
  }
  // 2I = 136: I = 68 is not a multiple of 8 (the output's 16-byte rows).
  Args t = batched_args(B, M, 136, K);
  t.out = dev_view(kOut, DType::kBF16, {B, M, 68});
  GemmOptions o = t.options();
  o.epilogue_op = EpilogueOp::kSiluMul;
  F8GEMM_EXPECT_INVALID(batched_gemm(t.x, t.w, t.layout, t.xs, t.ws, t.out, o),
                 "with the SiLU·mul epilogue, N (w's rows: gate then up, 2I) must be a multiple "
                 "of 16, got 136");
  o.epilogue_op = EpilogueOp(7);
  F8GEMM_EXPECT_INVALID(batched_gemm(t.x, t.w, t.layout, t.xs, t.ws, t.out, o),
                 "epilogue_op must be kNone or kSiluMul, got 7");
  ProblemShape p;
  p.n = 136;
  p.k = K;
  p.epilogue_op = EpilogueOp::kSiluMul;
  F8GEMM_EXPECT_INVALID(validate_problem(p), "multiple of 16, got 136");
}

// ---- memory: alignment, contiguity, null -------------------------------------------------

TEST(Validation, MisalignedPointers) {
  auto bad = [](auto edit, const char* needle) {
    Args t = batched_args(B, M, N, K);
    t.with_bias = true;
    edit(t);
    F8GEMM_EXPECT_INVALID(t.batched(), needle);
  };
  // TMA needs 16-byte aligned global addresses for X, W and the vectorised stores of out.
  bad([](Args& t) { t.x.data = fake(kX, 8); }, "x must be 16-byte aligned");
  bad([](Args& t) { t.w.data = fake(kW, 8); }, "w must be 16-byte aligned");
  bad([](Args& t) { t.out.data = fake(kOut, 8); }, "out must be 16-byte aligned");
  bad([](Args& t) { t.xs.data = fake(kXs, 2); }, "x_scale must be 4-byte aligned");
  bad([](Args& t) { t.ws.data = fake(kWs, 2); }, "w_scale must be 4-byte aligned");
  bad([](Args& t) { t.bias.data = fake(kBias, 2); }, "bias must be 4-byte aligned");
  bad([](Args& t) {
    t.bias.dtype = DType::kBF16;
    t.bias.data = fake(kBias, 1);
  }, "bias must be 2-byte aligned");
  Args p = batched_args(B, M, N, K, WeightLayout::kPreshuffled);
  p.w.data = fake(kW, 8);
  F8GEMM_EXPECT_INVALID(p.batched(), "w must be 16-byte aligned");
}

TEST(Validation, NullDataPointers) {
  auto bad = [](auto edit, const char* needle) {
    Args t = batched_args(B, M, N, K);
    t.with_bias = true;
    edit(t);
    F8GEMM_EXPECT_INVALID(t.batched(), needle);
  };
  bad([](Args& t) { t.x.data = nullptr; }, "x has a null data pointer");
  bad([](Args& t) { t.w.data = nullptr; }, "w has a null data pointer");
  bad([](Args& t) { t.xs.data = nullptr; }, "x_scale has a null data pointer");
  bad([](Args& t) { t.ws.data = nullptr; }, "w_scale has a null data pointer");
  bad([](Args& t) { t.out.data = nullptr; }, "out has a null data pointer");
  bad([](Args& t) { t.bias.data = nullptr; }, "bias has a null data pointer");
}

TEST(Validation, NonContiguousStrides) {
  auto bad = [](auto edit, const char* needle) {
    Args t = batched_args(B, M, N, K);
    t.with_bias = true;
    edit(t);
    F8GEMM_EXPECT_INVALID(t.batched(), needle);
  };
  // Pitched rows (a slice of a wider tensor), a transposed view and a batch gap.
  bad([](Args& t) { t.x.stride[1] = 2 * K; t.x.stride[0] = 2 * K * M; }, "x must be contiguous");
  bad([](Args& t) { t.x.stride[2] = M; t.x.stride[1] = 1; }, "x must be contiguous");
  bad([](Args& t) { t.w.stride[0] = N * K + 16; }, "w must be contiguous");
  bad([](Args& t) { t.xs.stride[1] = 2; }, "x_scale must be contiguous");
  bad([](Args& t) { t.ws.stride[0] = 0; }, "w_scale must be contiguous");
  bad([](Args& t) { t.out.stride[1] = N + 8; }, "out must be contiguous");
  bad([](Args& t) { t.bias.stride[1] = 2; }, "bias must be contiguous");
  Args p = batched_args(B, M, N, K, WeightLayout::kPreshuffled);
  p.w.stride[2] = 2048;
  F8GEMM_EXPECT_INVALID(p.batched(), "w must be contiguous");
}

TEST(Validation, SizeOneDimensionsMayCarryAnyStride) {
  if (have_sm90()) GTEST_SKIP() << "an sm_90 GPU is present: the fake pointers would be used";
  // torch gives size-1 dimensions arbitrary strides; they do not make a tensor non-contiguous.
  Args t = batched_args(1, M, N, K);
  t.with_bias = true;
  t.x.stride[0] = 12345;
  t.w.stride[0] = 7;
  t.out.stride[0] = 0;
  t.bias.stride[0] = 99;
  F8GEMM_EXPECT_PASSES_VALIDATION(t.batched());
}

// ---- devices -----------------------------------------------------------------------------

TEST(Validation, DeviceMismatch) {
  auto bad = [](auto edit, const char* needle) {
    Args t = batched_args(B, M, N, K);
    t.with_bias = true;
    edit(t);
    F8GEMM_EXPECT_INVALID(t.batched(), needle);
  };
  bad([](Args& t) { t.w.device = 1; }, "w is on cuda:1 but x is on cuda:0");
  bad([](Args& t) { t.xs.device = 1; }, "x_scale is on cuda:1");
  bad([](Args& t) { t.ws.device = 1; }, "w_scale is on cuda:1");
  bad([](Args& t) { t.out.device = 1; }, "out is on cuda:1");
  bad([](Args& t) { t.bias.device = 1; }, "bias is on cuda:1");
  bad([](Args& t) { t.w.device = kHost; }, "w is on the host");
  bad([](Args& t) { t.out.device = kHost; }, "out is on the host");
  bad([](Args& t) { t.xs.device = kHost; }, "x_scale is on the host");
  bad([](Args& t) { t.x.device = kHost; }, "x must be in GPU memory");
  // Everything on the host: x is the one named.
  bad([](Args& t) {
    for (TensorView* v : {&t.x, &t.w, &t.xs, &t.ws, &t.out, &t.bias}) v->device = kHost;
  }, "x must be in GPU memory");
  Args s = single_args({M}, N, K);
  s.x.device = 1;
  F8GEMM_EXPECT_INVALID(s.single(), "w is on cuda:0 but x is on cuda:1");
}

// A null field of GemmArgNames was streamed into the message (undefined behaviour; libstdc++
// then dropped the rest of the line, leaving "f8gemm: invalid argument: "). It keeps the default.
TEST(Validation, ANullArgumentNameKeepsTheDefault) {
  GemmArgNames names;
  names.x = nullptr;
  names.w = "WQ";
  names.out = nullptr;
  Args t = batched_args(B, M, N, K);
  GemmOptions o = t.options();
  o.names = &names;
  t.x.dtype = DType::kF32;
  F8GEMM_EXPECT_INVALID(batched_gemm(t.x, t.w, t.layout, t.xs, t.ws, t.out, o),
                        "x must have dtype float8_e4m3fn, got float32");
  t = batched_args(B, M, N, K);
  t.out.data = t.x.data;
  F8GEMM_EXPECT_INVALID(batched_gemm(t.x, t.w, t.layout, t.xs, t.ws, t.out, o),
                        "out overlaps x in memory");
  t = batched_args(B, M, N, K);
  t.w.device = 1;
  F8GEMM_EXPECT_INVALID(batched_gemm(t.x, t.w, t.layout, t.xs, t.ws, t.out, o),
                        "WQ is on cuda:1 but x is on cuda:0");
}

TEST(Validation, ConsistentlyOnAMissingDeviceIsNoDevice) {
  if (have_any_device()) GTEST_SKIP() << "a GPU is present: cuda:1 might exist";
  Args t = batched_args(B, M, N, K);
  for (TensorView* v : {&t.x, &t.w, &t.xs, &t.ws, &t.out}) v->device = 1;
  expect_error([&] { t.batched(); }, ErrorCode::kNoDevice, "");
}

// ---- int32 index range -------------------------------------------------------------------

TEST(Validation, SizesBeyondInt32AreRejectedBeforeAnything) {
  constexpr int64_t kBig = int64_t(1) << 31;  // INT32_MAX + 1
  {
    Args t = batched_args(1, kBig, 8, 16);
    F8GEMM_EXPECT_INVALID(t.batched(),
                          "sizes exceed the int32 index range: M = 2147483648 is more than "
                          "2147483392 (a tile's rows past M stay in int32; "
                          "B,M,N,K = 1,2147483648,8,16)");
  }
  {
    Args t = batched_args(1, 1, 8, kBig);
    F8GEMM_EXPECT_INVALID(t.batched(), "int32 index range");
  }
  {
    Args t = batched_args(1, 1, kBig, 16);
    F8GEMM_EXPECT_INVALID(t.batched(), "int32 index range");
  }
  {
    Args t = batched_args(kBig, 1, 8, 16);
    F8GEMM_EXPECT_INVALID(t.batched(), "int32 index range");
  }
  {
    // Each size fits, but B * ceil(M/8) * ceil(N/8) = 2^16 * 2^13 * 2^13 = 2^42 tiles do not.
    Args t = batched_args(int64_t(1) << 16, int64_t(1) << 16, int64_t(1) << 16, 16);
    F8GEMM_EXPECT_INVALID(t.batched(), "int32 tile index range");
  }
  {
    // The single form flattens [2^16, 2^16, K] into M = 2^32.
    Args s = single_args({int64_t(1) << 16, int64_t(1) << 16}, 8, 16);
    F8GEMM_EXPECT_INVALID(s.single(), "int32 index range");
  }
}

// Issue 8, defect 1: sizes inside int32 whose kernel expressions are not. kKBlocks = (K + 127)
// / 128, kWTiles = (N + BN - 1) / BN and the rasterisation group (up to 64 x N/8 tiles) are int
// template constants; NVRTC only warned (#61-D) and built a kernel without a single wgmma.
TEST(Validation, SizesWhoseKernelIndicesOverflowInt32AreRejectedWithTheLimit) {
  {
    // The repro: K = 2^31 - 16 fits int32, K + 127 does not.
    Args t = batched_args(1, 1, 8, 2147483632);
    F8GEMM_EXPECT_INVALID(t.batched(), "K = 2147483632 is more than 2147483392");
  }
  {
    Args t = batched_args(1, 1, 2147483640, 16);  // N + BN - 1 overflows for any BN > 8
    F8GEMM_EXPECT_INVALID(t.batched(), "N = 2147483640 is more than 268435200");
  }
  {
    Args t = batched_args(1, 1, int64_t(1) << 28, 16);  // raster 64 x 2^25 tiles = 2^31
    F8GEMM_EXPECT_INVALID(t.batched(), "N = 268435456 is more than 268435200");
  }
  {
    Args t = batched_args(1, 2147483520, 8, 16);  // M + 255 overflows
    F8GEMM_EXPECT_INVALID(t.batched(), "M = 2147483520 is more than 2147483392");
  }
  {
    // 2^30 + 2^12 tiles of 8 x 8: t + gridDim.x could pass 2^31.
    Args t = batched_args(1, (int64_t(1) << 21) + 8, int64_t(1) << 15, 16);
    F8GEMM_EXPECT_INVALID(t.batched(), "B * ceil(M/8) * ceil(N/8) is more than 1073741824");
  }
  if (have_sm90()) return;  // the limits themselves pass: they would launch on fake pointers
  F8GEMM_EXPECT_PASSES_VALIDATION(batched_args(1, 1, 8, 2147483392).batched());
  F8GEMM_EXPECT_PASSES_VALIDATION(batched_args(1, 1, 268435200, 16).batched());
  F8GEMM_EXPECT_PASSES_VALIDATION(batched_args(1, 2147483392, 8, 16).batched());
  F8GEMM_EXPECT_PASSES_VALIDATION(
      batched_args(1, int64_t(1) << 21, int64_t(1) << 15, 16).batched());
}

// Issue 8, defect 2: precompile() and choose_config() check sizes as a call does, before the cost
// model (signed overflow in estimate_us) or NVRTC sees them, and compile nothing for a bad list.
TEST(Validation, PrecompileAndChooseConfigCheckSizesLikeACall) {
  struct Case {
    int64_t b, m, n, k;
    const char* needle;
  };
  const Case cases[] = {
      {INT64_MAX, 1, 8, 16, "B = 9223372036854775807 is more than 2147483647"},
      {100000, 100000, 256, 100000, "B * ceil(M/8) * ceil(N/8) is more than"},
      {1, 1, 8, int64_t(1) << 32, "K = 4294967296 is more than 2147483392"},
      {1, 1, 8, 2147483632, "K = 2147483632 is more than"},
      {1, 16, 256, 40, "K must be a positive multiple of 16"},
      {1, 16, 20, 256, "N must be a positive multiple of 8"},
      {-1, 16, 256, 256, "B and M must be non-negative"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.b) + "," + std::to_string(c.m) + "," + std::to_string(c.n) +
                 "," + std::to_string(c.k));
    ProblemShape p;
    p.batch = c.b;
    p.m = c.m;
    p.n = c.n;
    p.k = c.k;
    F8GEMM_EXPECT_INVALID(precompile({p}), c.needle);
    F8GEMM_EXPECT_INVALID(choose_config(p), c.needle);
    // The same answer as the call: batched_gemm rejects the first three for their sizes too.
  }
  // A bad problem anywhere in the list is reported before the good one before it is compiled.
  ProblemShape bad;
  bad.n = 128;
  bad.k = 40;
  ProblemShape good;
  good.n = 128;
  good.k = 128;
  F8GEMM_EXPECT_INVALID(precompile({good, bad}), "K must be a positive multiple of 16");
}

TEST(Validation, ValidateProblemChecksEveryField) {
  ProblemShape p;
  p.n = 128;
  p.k = 256;
  EXPECT_NO_THROW(validate_problem(p));
  ProblemShape layout = p;
  layout.w_layout = static_cast<WeightLayout>(7);
  F8GEMM_EXPECT_INVALID(validate_problem(layout), "w_layout must be kPlain or kPreshuffled");
  ProblemShape out = p;
  out.out_dtype = DType::kF32;
  F8GEMM_EXPECT_INVALID(validate_problem(out), "the output dtype must be bfloat16 or float16");
  ProblemShape bias = p;
  bias.has_bias = true;
  bias.bias_dtype = DType::kF16;
  F8GEMM_EXPECT_INVALID(validate_problem(bias), "the bias dtype must be float32 or bfloat16");
  ProblemShape m = p;
  m.m = -1;
  F8GEMM_EXPECT_INVALID(validate_problem(m), "B and M must be non-negative");
  ProblemShape stride = p;  // every size within its limit, one batch of X past TMA's 2^40 bytes
  stride.m = int64_t(1) << 25;
  stride.n = 8;
  stride.k = int64_t(1) << 16;
  F8GEMM_EXPECT_INVALID(validate_problem(stride), "TMA's stride limit");
  ProblemShape empty = p;  // B = 0 or M = 0 is a valid problem with no work
  empty.m = 0;
  EXPECT_NO_THROW(validate_problem(empty));
  empty.batch = 0;
  EXPECT_NO_THROW(validate_problem(empty));
}

// TMA takes a stride below 2^40 bytes: one batch of exactly 2^40 is refused, 16 bytes a row
// less passes. X's M * K and W's N * K each reach the limit (Y's M * N * 2 cannot without
// passing the tile limit first).
TEST(Validation, ABatchOfExactly2To40BytesIsPastTmasStrideLimit) {
  ProblemShape p;
  p.n = 8;
  p.m = int64_t(1) << 24;
  p.k = int64_t(1) << 16;  // X: 2^24 * 2^16 = 2^40 bytes
  F8GEMM_EXPECT_INVALID(validate_problem(p), "smaller than 2^40 bytes, got 1099511627776");
  p.k -= 16;
  EXPECT_NO_THROW(validate_problem(p));
  ProblemShape w;
  w.m = 16;
  w.n = int64_t(1) << 24;
  w.k = int64_t(1) << 16;  // W: 2^24 * 2^16 = 2^40 bytes
  F8GEMM_EXPECT_INVALID(validate_problem(w), "smaller than 2^40 bytes, got 1099511627776");
  w.k -= 16;
  EXPECT_NO_THROW(validate_problem(w));
}

// ---- layouts -----------------------------------------------------------------------------

TEST(Validation, PlainWeightPassedAsPreshuffledAndViceVersa) {
  {
    Args t = batched_args(B, M, N, K, WeightLayout::kPlain);
    t.layout = WeightLayout::kPreshuffled;  // plain [B,N,K] under the preshuffled flag
    F8GEMM_EXPECT_INVALID(t.batched(), "w must be 4-D preshuffled");
  }
  {
    Args t = batched_args(B, M, N, K, WeightLayout::kPreshuffled);
    t.layout = WeightLayout::kPlain;  // [B,KB,N/8,1024] under the plain flag
    F8GEMM_EXPECT_INVALID(t.batched(), "w must be 3-D [B, N, K] (a plain weight)");
  }
  {
    Args s = single_args({M}, N, K, WeightLayout::kPlain);
    s.layout = WeightLayout::kPreshuffled;
    F8GEMM_EXPECT_INVALID(s.single(), "w must be 3-D preshuffled");
  }
  {
    Args s = single_args({M}, N, K, WeightLayout::kPreshuffled);
    s.layout = WeightLayout::kPlain;
    F8GEMM_EXPECT_INVALID(s.single(), "w must be 2-D [N, K] (a plain weight)");
  }
  {
    // A batched plain W [B,N,K] handed to the single form as preshuffled: rank 3 matches, the
    // shape does not: its last dimension is K = 256, not 1024 (N/8 is read from dimension 1).
    Args s = single_args({M}, N, K, WeightLayout::kPreshuffled);
    s.w = dev_view(kW, DType::kE4M3, {2, N, K});
    F8GEMM_EXPECT_INVALID(s.single(), "w must have shape [2, 128, 1024]");
  }
}

// ---- the single-GEMM forms ---------------------------------------------------------------

TEST(Validation, SingleGemmFormsPassValidation) {
  if (have_sm90()) GTEST_SKIP() << "an sm_90 GPU is present: the fake pointers would be used";
  for (WeightLayout layout : {WeightLayout::kPlain, WeightLayout::kPreshuffled}) {
    // X [2, 3, K] flattens into M = 6; x_scale [2, 3] (X's leading shape); out [2, 3, N].
    Args s = single_args({2, 3}, N, K, layout);
    s.with_bias = true;
    F8GEMM_EXPECT_PASSES_VALIDATION(s.single());
    // x_scale 1-D [M] and out 2-D [M, N] are accepted too.
    Args f = s;
    f.xs = dev_view(kXs, DType::kF32, {6});
    f.out = dev_view(kOut, DType::kBF16, {6, N});
    F8GEMM_EXPECT_PASSES_VALIDATION(f.single());
    // X [K] is one row: x_scale [1], out [N].
    Args one = single_args({}, N, K, layout);
    one.out = dev_view(kOut, DType::kBF16, {N});
    F8GEMM_EXPECT_PASSES_VALIDATION(one.single());
    // Rank 4: [2, 2, 2, K].
    Args r4 = single_args({2, 2, 2}, N, K, layout);
    F8GEMM_EXPECT_PASSES_VALIDATION(r4.single());
  }
}

TEST(Validation, TheProblemIsChainedWithPdlOnAndPrefetchW) {
  // ProblemShape::chained keys the tuned table; it must follow the call's options, with the
  // F8GEMM_PDL switch read for Pdl::kDefault as the launch reads it.
  const Args a = batched_args(1, 1, 4096, 4096, WeightLayout::kPreshuffled);
  auto chained = [&](Pdl pdl, bool prefetch_w) {
    GemmOptions o = a.options();
    o.pdl = pdl;
    o.prefetch_w = prefetch_w;
    return batched_gemm_problem(a.x, a.w, a.layout, a.xs, a.ws, a.out, o).chained;
  };
  test::ScopedEnv env("F8GEMM_PDL");
  env.unset();
  EXPECT_TRUE(chained(Pdl::kOn, true));
  EXPECT_FALSE(chained(Pdl::kOn, false));
  EXPECT_FALSE(chained(Pdl::kOff, true));
  EXPECT_FALSE(chained(Pdl::kDefault, true));
  env.set("1");
  EXPECT_TRUE(chained(Pdl::kDefault, true));
  EXPECT_FALSE(chained(Pdl::kOff, true));
  EXPECT_FALSE(chained(Pdl::kDefault, false));
}

// GemmOptions::trace: its fields are checked with the other arguments, before any device
// access; a valid trace then reaches the device lookup like any call.
TEST(Validation, TraceFieldsAreCheckedBeforeAnyDeviceAccess) {
  Args a = batched_args(B, M, N, K);
  GemmTrace t;
  t.data = static_cast<unsigned long long*>(fake(0x700000));
  t.words = trace_words(132, 8);
  t.tiles = 8;
  auto call = [&](const GemmTrace& tr) {
    GemmOptions o = a.options();
    o.trace = &tr;
    batched_gemm(a.x, a.w, a.layout, a.xs, a.ws, a.out, o);
  };
  GemmTrace bad = t;
  bad.data = nullptr;
  F8GEMM_EXPECT_INVALID(call(bad), "trace.data is null");
  bad = t;
  bad.data = static_cast<unsigned long long*>(fake(0x700000, 4));
  F8GEMM_EXPECT_INVALID(call(bad), "trace.data must be 8-byte aligned");
  for (int tiles : {0, -3, (1 << 20) + 1}) {
    bad = t;
    bad.tiles = tiles;
    F8GEMM_EXPECT_INVALID(call(bad),
                          "trace.tiles must be in [1, 1048576], got " + std::to_string(tiles));
  }
  bad = t;
  bad.words = -1;
  F8GEMM_EXPECT_INVALID(call(bad), "trace.words must be >= 0, got -1");
  // The kernel writes the trace beside out: neither may share a byte with it, nor any input.
  bad = t;
  bad.data = static_cast<unsigned long long*>(fake(kOut, 64));
  F8GEMM_EXPECT_INVALID(call(bad), "trace.data overlaps out in memory");
  bad.data = static_cast<unsigned long long*>(fake(kWs - 8 * (t.words - 1)));  // last word: ws's
  F8GEMM_EXPECT_INVALID(call(bad), "trace.data overlaps w_scale in memory");
  bad.data = static_cast<unsigned long long*>(fake(kWs - 8 * t.words));  // ends where ws begins
  F8GEMM_EXPECT_PASSES_VALIDATION(call(bad));
  // The tensors are checked first: a bad tensor is reported even with a bad trace.
  Args wrong = a;
  wrong.xs.dtype = DType::kBF16;
  expect_error([&] {
    GemmOptions o = wrong.options();
    bad = t;
    bad.data = nullptr;
    o.trace = &bad;
    batched_gemm(wrong.x, wrong.w, wrong.layout, wrong.xs, wrong.ws, wrong.out, o);
  }, ErrorCode::kInvalidArgument, "x_scale");
  F8GEMM_EXPECT_PASSES_VALIDATION(call(t));
}

TEST(Validation, EmptyProblemsPassValidationAndStillNeedAnSm90) {
  // M = 0 (and B = 0) do no work, but report the same as a real call: no sm_90, no success.
  // Null data pointers are fine for empty tensors.
  Args s = single_args({0}, N, K);
  s.x.data = nullptr;
  s.xs.data = nullptr;
  s.out.data = nullptr;
  Args b = batched_args(B, 0, N, K, WeightLayout::kPreshuffled);
  Args b0 = batched_args(0, M, N, K);
  for (const Args* a : {&s, &b, &b0}) {
    auto call = [&] {
      if (a == &s) a->single(); else a->batched();
    };
    if (have_sm90()) {
      // No kernel runs for an empty problem, so the fake pointers are never touched.
      EXPECT_NO_THROW(call());
    } else {
      expect_error(call, ErrorCode::kNoDevice, "");
    }
  }
}

TEST(Validation, NegativeDimensionsInHandBuiltViewsAreRejected) {
  // make_view refuses negative sizes, but a TensorView is a plain struct: a negative M with
  // strides to match is "contiguous" and must still be refused, not launched.
  Args t = batched_args(B, M, N, K);
  t.x.shape[1] = -M;
  t.x.stride[0] = -M * K;
  t.xs.shape[1] = -M;
  t.xs.stride[0] = -M;
  t.out.shape[1] = -M;
  t.out.stride[0] = -M * N;
  F8GEMM_EXPECT_INVALID(t.batched(), "");
  Args s = single_args({M}, N, K);
  s.x.shape[0] = -M;
  s.xs.shape[0] = -M;
  s.out.shape[0] = -M;
  F8GEMM_EXPECT_INVALID(s.single(), "");
  Args nb = batched_args(B, M, N, K);
  for (TensorView* v : {&nb.x, &nb.w, &nb.xs, &nb.ws, &nb.out}) v->shape[0] = -B;
  F8GEMM_EXPECT_INVALID(nb.batched(), "");
}

// Issue 8, defect 8: a single-form x [-2, -3, K] with strides to match flattened into M = 6 and
// passed, with x_scale [6] and out [6, N].
TEST(Validation, NegativeDimensionsWhoseProductIsPositiveAreRejected) {
  Args s = single_args({6}, N, K);
  s.x.rank = 3;
  s.x.shape[0] = -2;
  s.x.shape[1] = -3;
  s.x.shape[2] = K;
  s.x.stride[0] = -3 * K;
  s.x.stride[1] = K;
  s.x.stride[2] = 1;
  ASSERT_TRUE(s.x.is_contiguous());
  F8GEMM_EXPECT_INVALID(s.single(), "x has a negative dimension: shape [-2, -3, 256]");
  // The same for every tensor of every entry point.
  Args b = batched_args(B, M, N, K);
  b.bias.shape[0] = -B;
  b.bias.shape[1] = -N;
  b.with_bias = true;
  F8GEMM_EXPECT_INVALID(b.batched(), "bias has a negative dimension");
  TensorView w = dev_view(kW, DType::kE4M3, {N, K});
  TensorView shuffled = dev_view(kOut, DType::kE4M3, preshuffled_shape(1, N, K));
  shuffled.shape[0] = -shuffled.shape[0];
  shuffled.shape[1] = -shuffled.shape[1];
  F8GEMM_EXPECT_INVALID(preshuffle(w, shuffled), "the preshuffled weight has a negative dimension");
  TensorView in = dev_view(kX, DType::kBF16, {2, 3, 64});
  TensorView q = dev_view(kW, DType::kE4M3, {2, 3, 64});
  TensorView sc = dev_view(kXs, DType::kF32, {6});
  sc.shape[0] = -6;
  F8GEMM_EXPECT_INVALID(quantize_rows(in, q, sc), "out_scale has a negative dimension");
}

// A device below kHost (-1) is neither memory: every placement message would call it the host.
TEST(Validation, ADeviceBelowTheHostIsRejectedByName) {
  Args s = single_args({M}, N, K);
  s.w.device = -5;
  F8GEMM_EXPECT_INVALID(s.single(),
                        "w's device must be kHost (-1) or a CUDA device ordinal, got -5");
  Args b = batched_args(B, M, N, K);
  b.out.device = -2;
  F8GEMM_EXPECT_INVALID(b.batched(), "out's device must be kHost (-1) or a CUDA device ordinal");
  TensorView in = dev_view(kX, DType::kBF16, {2, 64});
  TensorView q = dev_view(kW, DType::kE4M3, {2, 64});
  TensorView sc = dev_view(kXs, DType::kF32, {2});
  in.device = -7;
  F8GEMM_EXPECT_INVALID(quantize_rows(in, q, sc), "got -7");
  test::expect_error([] { make_view(nullptr, DType::kF32, {4}, -3); }, ErrorCode::kInvalidArgument,
                     "make_view: device must be kHost (-1) or a CUDA device ordinal, got -3");
}

TEST(Validation, ViewsWithARankPastTheMaximumOrTooManyElementsAreRejected) {
  Args s = single_args({M}, N, K);
  s.x.rank = kMaxRank + 1;  // would read past shape[]
  F8GEMM_EXPECT_INVALID(s.single(), "x must have rank 0..4, got 5");
  Args big = single_args({M}, N, K);
  big.x.rank = 4;
  big.x.shape[0] = big.x.shape[1] = big.x.shape[2] = int64_t(1) << 30;  // 2^90 elements
  big.x.shape[3] = 0;  // numel() 0, but its running product overflows before the zero
  F8GEMM_EXPECT_INVALID(big.single(), "x has more than 2^63 elements");
}

// make_view computed its row-major strides with an unchecked product: [2^62, 4] overflowed
// int64 (undefined behaviour) and gave a view; [2^40, 2^40, 0] gave a view whose numel()
// overflows before the zero. It refuses both as require_view does, and keeps what that admits.
TEST(Validation, MakeViewRefusesShapesWhoseNonzeroDimensionsPassInt64) {
  const int64_t big = int64_t(1) << 62, huge = int64_t(1) << 40;
  F8GEMM_EXPECT_INVALID(make_view(fake(kX), DType::kU8, {big, 4}),
                        "make_view: shape [4611686018427387904, 4]: the product of its nonzero "
                        "dimensions passes int64");
  F8GEMM_EXPECT_INVALID(make_view(fake(kX), DType::kU8, {huge, huge, 0}),
                        "make_view: shape [1099511627776, 1099511627776, 0]: the product");
  // The zero dimensions are skipped wherever they stand: a zero first must not hide the
  // overflow of the nonzero ones behind it (2^62 * 4 passes int64 as [2^62, 4] does).
  F8GEMM_EXPECT_INVALID(make_view(fake(kX), DType::kU8, {0, big, 4}),
                        "make_view: shape [0, 4611686018427387904, 4]: the product of its nonzero "
                        "dimensions passes int64");
  const TensorView v = make_view(fake(kX), DType::kU8, {0, big, 1});
  EXPECT_EQ(v.numel(), 0);
  EXPECT_EQ(v.stride[0], big);
  const TensorView w = make_view(fake(kX), DType::kU8, {big, 1});
  EXPECT_EQ(w.numel(), big);
}

// ---- preshuffle / unshuffle --------------------------------------------------------------

TEST(ValidationShuffle, BadArguments) {
  const int64_t b = 2, n = 136, k = 272;  // ceil(272/128) = 3 k-blocks, 17 slabs of 8 rows
  auto w = [&] { return dev_view(kW, DType::kE4M3, {b, n, k}); };
  auto o = [&] { return dev_view(kOut, DType::kE4M3, preshuffled_shape(b, n, k)); };
  {
    TensorView t = w();
    t.dtype = DType::kBF16;
    F8GEMM_EXPECT_INVALID(preshuffle(t, o()), "w must be float8_e4m3fn (or uint8), got bfloat16");
  }
  {
    TensorView t = o();
    t.dtype = DType::kF32;
    F8GEMM_EXPECT_INVALID(preshuffle(w(), t), "the preshuffled weight must be float8_e4m3fn");
  }
  F8GEMM_EXPECT_INVALID(preshuffle(dev_view(kW, DType::kE4M3, {n * k}), o()),
                        "w must be [N, K] or [B, N, K]");
  F8GEMM_EXPECT_INVALID(preshuffle(dev_view(kW, DType::kE4M3, {1, b, n, k}), o()),
                        "w must be [N, K] or [B, N, K]");
  for (int64_t bad_n : {int64_t(0), int64_t(12), int64_t(130)}) {
    F8GEMM_EXPECT_INVALID(preshuffle(dev_view(kW, DType::kE4M3, {b, bad_n, k}),
                              dev_view(kOut, DType::kE4M3, {b, 3, 17, 1024})),
                   "N (w's rows) must be a positive multiple of 8");
  }
  for (int64_t bad_k : {int64_t(0), int64_t(24), int64_t(100)}) {
    F8GEMM_EXPECT_INVALID(preshuffle(dev_view(kW, DType::kE4M3, {b, n, bad_k}),
                              dev_view(kOut, DType::kE4M3, {b, 1, 17, 1024})),
                   "K (w's last dimension) must be a positive multiple of 16");
  }
  F8GEMM_EXPECT_INVALID(preshuffle(w(), dev_view(kOut, DType::kE4M3, {b, 2, 17, 1024})),
                 "the preshuffled weight must have shape [B, 3, 17, 1024]");
  F8GEMM_EXPECT_INVALID(preshuffle(w(), dev_view(kOut, DType::kE4M3, {b, 3, 17, 512})),
                 "the preshuffled weight must have shape");
  F8GEMM_EXPECT_INVALID(preshuffle(w(), dev_view(kOut, DType::kE4M3, {b + 1, 3, 17, 1024})),
                 "the preshuffled weight must have shape");
  // A rank-3 output for a batched W and a rank-4 output for a 2-D W.
  F8GEMM_EXPECT_INVALID(preshuffle(w(), dev_view(kOut, DType::kE4M3, {3, 17, 1024})),
                 "the preshuffled weight must have shape");
  F8GEMM_EXPECT_INVALID(preshuffle(dev_view(kW, DType::kE4M3, {n, k}), o()),
                 "the preshuffled weight must have shape [3, 17, 1024]");
  {
    TensorView t = w();
    t.stride[1] = k + 16;
    F8GEMM_EXPECT_INVALID(preshuffle(t, o()), "w must be contiguous");
  }
  {
    TensorView t = w();
    t.data = fake(kW, 8);
    F8GEMM_EXPECT_INVALID(preshuffle(t, o()), "w must be 16-byte aligned");
  }
  {
    TensorView t = o();
    t.data = fake(kOut, 8);
    F8GEMM_EXPECT_INVALID(preshuffle(w(), t), "the preshuffled weight must be 16-byte aligned");
  }
  {
    TensorView t = w();
    t.device = kHost;
    F8GEMM_EXPECT_INVALID(preshuffle(t, o()),
                          "w and the preshuffled weight must be in the same memory");
  }
  // unshuffle(shuffled, out) checks the same pair with the roles swapped.
  F8GEMM_EXPECT_INVALID(unshuffle(dev_view(kOut, DType::kE4M3, {b, 2, 17, 1024}), w()),
                 "the preshuffled weight must have shape [B, 3, 17, 1024]");
  {
    TensorView t = w();
    t.dtype = DType::kF16;
    F8GEMM_EXPECT_INVALID(unshuffle(o(), t), "must be float8_e4m3fn (or uint8), got float16");
  }
  {
    TensorView t = o();
    t.device = 1;
    F8GEMM_EXPECT_INVALID(unshuffle(t, w()), "must be in the same memory");
  }
}

/// preshuffle() then unshuffle() of random e4m3 bytes, both views on the host: the shuffled bytes
/// are numerics::preshuffle_host's and the round trip gives the weight back. `plain` and
/// `shuffled` are the views' dtypes (float8_e4m3fn or uint8: the bytes are the same).
void expect_host_round_trip(std::mt19937_64& rng, int64_t b, int64_t n, int64_t k, DType plain,
                            DType shuffled) {
  std::vector<uint8_t> w = test::random_e4m3(rng, size_t(b * n * k));
  const auto shape = preshuffled_shape(b, n, k);
  const size_t bytes = size_t(shape[0] * shape[1] * shape[2] * shape[3]);
  std::vector<uint8_t> expect(bytes), got(bytes, 0xAB);
  numerics::preshuffle_host(w.data(), b, n, k, expect.data());
  preshuffle(make_view(w.data(), plain, {b, n, k}), make_view(got.data(), shuffled, shape));
  EXPECT_EQ(got, expect);
  std::vector<uint8_t> back(w.size(), 0xCD);
  unshuffle(make_view(got.data(), DType::kE4M3, shape), make_view(back.data(), plain, {b, n, k}));
  EXPECT_EQ(back, w);
}

TEST(ValidationShuffle, HostPathMatchesNumerics) {
  // Both views on the host: preshuffle()/unshuffle() run numerics::preshuffle_host, no GPU.
  std::mt19937_64 rng(101);
  struct Shape {
    int64_t b, n, k;
  };
  for (const Shape& sh : {Shape{3, 136, 272}, Shape{1, 8, 16}, Shape{2, 264, 1040}}) {
    SCOPED_TRACE(testing::Message() << sh.b << "x" << sh.n << "x" << sh.k);
    expect_host_round_trip(rng, sh.b, sh.n, sh.k, DType::kE4M3, DType::kU8);
  }
}

TEST(ValidationShuffle, DevicePathWithoutAGpuIsNoDevice) {
  if (have_sm90()) GTEST_SKIP() << "an sm_90 GPU is present: the fake pointers would be used";
  const int64_t b = 2, n = 136, k = 272;
  TensorView w = dev_view(kW, DType::kE4M3, {b, n, k});
  TensorView o = dev_view(kOut, DType::kE4M3, preshuffled_shape(b, n, k));
  expect_error([&] { preshuffle(w, o); }, ErrorCode::kNoDevice, "");
  expect_error([&] { unshuffle(o, w); }, ErrorCode::kNoDevice, "");
}

// The plain weight may be uint8 as well as float8_e4m3fn (the bytes are the same), on either
// side: preshuffle()'s input and unshuffle()'s output.
TEST(ValidationShuffle, APlainWeightOfUint8IsAccepted) {
  std::mt19937_64 rng(102);
  expect_host_round_trip(rng, 1, 8, 144, DType::kU8, DType::kE4M3);
}

// Device ordinals past the last the library tracks (64) are refused as an argument, not looked
// up: the properties table has 64 entries, and ordinal 64 read past it. 63 is only absent here.
TEST(ValidationShuffle, ADeviceOrdinalPastTheLastTrackedIsOutOfRange) {
  const int64_t b = 1, n = 8, k = 16;
  for (int device : {64, 1000}) {
    SCOPED_TRACE(device);
    TensorView w = dev_view(kW, DType::kE4M3, {b, n, k});
    TensorView o = dev_view(kOut, DType::kE4M3, preshuffled_shape(b, n, k));
    w.device = o.device = device;
    expect_error([&] { preshuffle(w, o); }, ErrorCode::kInvalidArgument,
                 "device ordinal " + std::to_string(device) + " is out of range");
  }
  TensorView w = dev_view(kW, DType::kE4M3, {b, n, k});
  TensorView o = dev_view(kOut, DType::kE4M3, preshuffled_shape(b, n, k));
  w.device = o.device = 63;
  expect_error([&] { preshuffle(w, o); }, ErrorCode::kNoDevice, "");
}

// preshuffled_shape computed ceil(K/128) as (K + 127) / 128: K past 2^63 - 128 overflowed int64
// (undefined behaviour; in practice a negative k-block count), and negative sizes gave negative
// or zero dimensions. Every K gives its k-blocks now, and a negative size is refused by name.
TEST(ValidationShuffle, PreshuffledShapeTakesEveryKAndRefusesNegativeSizes) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(preshuffled_shape(1, 8, max), (std::vector<int64_t>{1, max / 128 + 1, 1, 1024}));
  EXPECT_EQ(preshuffled_shape(2, 136, 272), (std::vector<int64_t>{2, 3, 17, 1024}));
  EXPECT_EQ(preshuffled_shape(0, 8, 0), (std::vector<int64_t>{0, 0, 1, 1024}));
  F8GEMM_EXPECT_INVALID(preshuffled_shape(-1, 8, 16),
                        "preshuffled_shape: batch must be >= 0, got -1");
  F8GEMM_EXPECT_INVALID(preshuffled_shape(1, -8, 16), "preshuffled_shape: n must be >= 0, got -8");
  F8GEMM_EXPECT_INVALID(preshuffled_shape(1, 8, -16),
                        "preshuffled_shape: k must be >= 0, got -16");
}

// ---- quantize_rows -----------------------------------------------------------------------

TEST(ValidationQuantize, BadArguments) {
  const int64_t rows = 6, cols = 96;
  auto in = [&](DType d = DType::kBF16) { return dev_view(kX, d, {2, 3, cols}); };
  auto q = [&] { return dev_view(kW, DType::kE4M3, {2, 3, cols}); };
  auto sc = [&] { return dev_view(kXs, DType::kF32, {2, 3}); };
  for (DType bad : {DType::kE4M3, DType::kU8}) {
    F8GEMM_EXPECT_INVALID(quantize_rows(in(bad), q(), sc()),
                          "input must be bfloat16, float16 or float32");
  }
  {
    TensorView t = in();
    t.rank = 0;
    F8GEMM_EXPECT_INVALID(quantize_rows(t, q(), sc()), "input must be [..., K]");
  }
  {
    TensorView t = q();
    t.dtype = DType::kU8;
    F8GEMM_EXPECT_INVALID(quantize_rows(in(), t, sc()), "out_q must be float8_e4m3fn");
  }
  {
    TensorView t = sc();
    t.dtype = DType::kBF16;
    F8GEMM_EXPECT_INVALID(quantize_rows(in(), q(), t), "out_scale must be float32");
  }
  F8GEMM_EXPECT_INVALID(quantize_rows(in(), dev_view(kW, DType::kE4M3, {rows, cols}), sc()),
                 "out_q must have the input's shape");
  F8GEMM_EXPECT_INVALID(quantize_rows(in(), dev_view(kW, DType::kE4M3, {2, 3, cols + 1}), sc()),
                 "out_q must have the input's shape");
  F8GEMM_EXPECT_INVALID(quantize_rows(in(), q(), dev_view(kXs, DType::kF32, {rows + 1})),
                 "out_scale must hold one value per row (6)");
  for (float eps : {0.0f, -1e-6f, std::numeric_limits<float>::quiet_NaN()}) {
    QuantizeOptions o;
    o.eps = eps;
    F8GEMM_EXPECT_INVALID(quantize_rows(in(), q(), sc(), o), "eps must be positive");
  }
  {
    TensorView t = in();
    t.data = fake(kX, 1);
    F8GEMM_EXPECT_INVALID(quantize_rows(t, q(), sc()), "input must be 2-byte aligned");
    TensorView f = in(DType::kF32);
    f.data = fake(kX, 2);
    F8GEMM_EXPECT_INVALID(quantize_rows(f, q(), sc()), "input must be 4-byte aligned");
  }
  {
    TensorView t = sc();
    t.data = fake(kXs, 2);
    F8GEMM_EXPECT_INVALID(quantize_rows(in(), q(), t), "out_scale must be 4-byte aligned");
  }
  {
    TensorView t = in();
    t.stride[1] = 2 * cols;
    F8GEMM_EXPECT_INVALID(quantize_rows(t, q(), sc()), "input must be contiguous");
    TensorView u = q();
    u.stride[0] = 0;
    F8GEMM_EXPECT_INVALID(quantize_rows(in(), u, sc()), "out_q must be contiguous");
  }
  {
    TensorView t = q();
    t.device = kHost;
    F8GEMM_EXPECT_INVALID(quantize_rows(in(), t, sc()),
                          "input and out_q must be in the same memory");
    TensorView s = sc();
    s.device = 1;
    F8GEMM_EXPECT_INVALID(quantize_rows(in(), q(), s),
                          "input and out_scale must be in the same memory");
  }
  {
    const int64_t big = int64_t(1) << 31;
    F8GEMM_EXPECT_INVALID(quantize_rows(dev_view(kX, DType::kF32, {big, 16}),
                                 dev_view(kW, DType::kE4M3, {big, 16}),
                                 dev_view(kXs, DType::kF32, {big})),
                   "too many rows: 2147483648");
  }
}

TEST(ValidationQuantize, HostPathMatchesNumerics) {
  std::mt19937_64 rng(202);
  const int64_t rows = 5, cols = 200;
  std::vector<float> in = test::random_f32(rng, size_t(rows * cols), 3.0);
  for (float ub : {0.0f, 1.5f}) {
    SCOPED_TRACE(ub);
    std::vector<uint8_t> q(in.size(), 0xEE), q_ref(in.size());
    std::vector<float> s(rows, -1.0f), s_ref(rows);
    QuantizeOptions o;
    o.scale_ub = ub;
    quantize_rows(make_view(in.data(), DType::kF32, {rows, cols}),
                  make_view(q.data(), DType::kE4M3, {rows, cols}),
                  make_view(s.data(), DType::kF32, {rows}), o);
    numerics::quantize_rows_host(in.data(), DType::kF32, rows, cols, o.eps, ub, q_ref.data(),
                                 s_ref.data());
    EXPECT_EQ(q, q_ref);
    EXPECT_EQ(0, std::memcmp(s.data(), s_ref.data(), s.size() * sizeof(float)));
  }
}

TEST(ValidationQuantize, DevicePathWithoutAGpuIsNoDevice) {
  if (have_sm90()) GTEST_SKIP() << "an sm_90 GPU is present: the fake pointers would be used";
  expect_error([&] {
    quantize_rows(dev_view(kX, DType::kBF16, {4, 64}), dev_view(kW, DType::kE4M3, {4, 64}),
                  dev_view(kXs, DType::kF32, {4}));
  }, ErrorCode::kNoDevice, "");
}

}  // namespace
}  // namespace f8gemm
