/// \brief Every entry point refuses an output that shares a byte with an input it reads (or with
/// its other output) before any device access: gemm, batched_gemm, grouped_gemm(_padded),
/// quantize_rows, silu_mul_quantize_rows, preshuffle and unshuffle (fake device pointers, or
/// host buffers for the host paths, no GPU).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/test_util.hpp"
#include "f8gemm/f8gemm.hpp"

namespace f8gemm {
namespace {

using test::dev_view;
using test::expect_error;

constexpr int64_t M = 64, N = 128, K = 256;
// One fake arena: each tensor's place is an offset into it, so that the tests can put an output
// exactly one byte into an input, or exactly at its end.
constexpr uintptr_t kBase = uintptr_t(1) << 40;
constexpr uintptr_t kX = kBase;                    // M * K = 16 KiB
constexpr uintptr_t kW = kBase + (1 << 20);        // N * K = 32 KiB
constexpr uintptr_t kXs = kBase + (2 << 20);       // M floats
constexpr uintptr_t kWs = kBase + (3 << 20);       // N floats
constexpr uintptr_t kOut = kBase + (4 << 20);      // M * N bf16 = 16 KiB
constexpr uintptr_t kBias = kBase + (5 << 20);     // N floats
constexpr uintptr_t kSizes = kBase + (6 << 20);    // G int32

struct Gemm {
  TensorView x = dev_view(kX, DType::kE4M3, {M, K});
  TensorView w = dev_view(kW, DType::kE4M3, {N, K});
  TensorView xs = dev_view(kXs, DType::kF32, {M});
  TensorView ws = dev_view(kWs, DType::kF32, {N});
  TensorView out = dev_view(kOut, DType::kBF16, {M, N});
  TensorView bias = dev_view(kBias, DType::kF32, {N});
  void call() const {
    GemmOptions o;
    o.bias = &bias;
    gemm(x, w, WeightLayout::kPlain, xs, ws, out, o);
  }
};

TEST(Aliasing, GemmOutputOverlappingAnyInputIsRejectedNamingBoth) {
  F8GEMM_EXPECT_PASSES_VALIDATION(Gemm{}.call());
  const struct {
    uintptr_t at;
    const char* needle;
  } cases[] = {
      {kX, "out overlaps x in memory"},
      {kX + M * K - 16, "out overlaps x in memory"},  // out's first 16 bytes are x's last
      {kW + 4096, "out overlaps w in memory"},
      {kXs, "out overlaps x_scale in memory"},
      {kWs - 16, "out overlaps w_scale in memory"},  // out starts before, ends inside
      {kBias, "out overlaps bias in memory"},
  };
  for (const auto& c : cases) {
    Gemm g;
    g.out.data = test::fake(c.at);
    F8GEMM_EXPECT_INVALID(g.call(), c.needle);
  }
  // Touching is not overlapping: out ending exactly where x begins, or beginning at x's end.
  Gemm before;
  before.out.data = test::fake(kX - M * N * 2);
  F8GEMM_EXPECT_PASSES_VALIDATION(before.call());
  Gemm after;
  after.out.data = test::fake(kX + M * K);
  F8GEMM_EXPECT_PASSES_VALIDATION(after.call());
  // Inputs may share memory with each other: only the output is written.
  Gemm shared;
  shared.ws.data = shared.bias.data;
  F8GEMM_EXPECT_PASSES_VALIDATION(shared.call());
}

TEST(Aliasing, BatchedAndGroupedOutputsOverlappingAnInputAreRejected) {
  const int64_t B = 2;
  TensorView x = dev_view(kX, DType::kE4M3, {B, M, K});
  TensorView w = dev_view(kW, DType::kE4M3, {B, N, K});
  TensorView xs = dev_view(kXs, DType::kF32, {B, M});
  TensorView ws = dev_view(kWs, DType::kF32, {B, N});
  TensorView out = dev_view(kOut, DType::kBF16, {B, M, N});
  F8GEMM_EXPECT_PASSES_VALIDATION(batched_gemm(x, w, WeightLayout::kPlain, xs, ws, out));
  TensorView bad = dev_view(kW + B * N * K - 16, DType::kBF16, {B, M, N});  // w's last 16 bytes
  F8GEMM_EXPECT_INVALID(batched_gemm(x, w, WeightLayout::kPlain, xs, ws, bad), "out overlaps w");

  const int64_t G = 4;
  TensorView gw = dev_view(kW, DType::kE4M3, {G, N, K});
  TensorView gws = dev_view(kWs, DType::kF32, {G, N});
  TensorView sizes = dev_view(kSizes, DType::kI32, {G});
  TensorView gx = dev_view(kX, DType::kE4M3, {M, K});
  TensorView gxs = dev_view(kXs, DType::kF32, {M});
  TensorView gout = dev_view(kOut, DType::kBF16, {M, N});
  F8GEMM_EXPECT_PASSES_VALIDATION(
      grouped_gemm(gx, gw, WeightLayout::kPlain, gxs, gws, sizes, gout));
  // Its last 16 bytes cover m_sizes.
  TensorView on_sizes = dev_view(kSizes + 16 - M * N * 2, DType::kBF16, {M, N});
  F8GEMM_EXPECT_INVALID(grouped_gemm(gx, gw, WeightLayout::kPlain, gxs, gws, sizes, on_sizes),
                 "out overlaps m_sizes");
  TensorView on_x = dev_view(kX + 16, DType::kBF16, {G, M, N});
  F8GEMM_EXPECT_INVALID(grouped_gemm_padded(dev_view(kX, DType::kE4M3, {G, M, K}), gw,
                                     WeightLayout::kPlain, dev_view(kXs, DType::kF32, {G, M}),
                                     gws, sizes, on_x),
                 "out overlaps x");
}

TEST(Aliasing, QuantizeOutputsOverlappingTheInputEachOtherOrScaleUbAreRejected) {
  // Host buffers: the host path is real, so a call that passes validation runs.
  std::vector<uint16_t> in(M * K, 0x3f80);  // bf16 1.0
  std::vector<uint8_t> q(M * K);
  std::vector<float> s(M + 1);
  const TensorView iv = make_view(in.data(), DType::kBF16, {M, K});
  const TensorView qv = make_view(q.data(), DType::kE4M3, {M, K});
  const TensorView sv = make_view(s.data(), DType::kF32, {M});
  quantize_rows(iv, qv, sv);  // passes and runs
  F8GEMM_EXPECT_INVALID(quantize_rows(iv, make_view(in.data(), DType::kE4M3, {M, K}), sv),
                 "out_q overlaps input in memory");
  F8GEMM_EXPECT_INVALID(quantize_rows(iv, qv, make_view(in.data() + 8, DType::kF32, {M})),
                 "out_scale overlaps input in memory");
  F8GEMM_EXPECT_INVALID(quantize_rows(iv, qv, make_view(q.data() + 64, DType::kF32, {M})),
                 "out_scale overlaps out_q in memory");
  QuantizeOptions o;
  const TensorView ub = make_view(s.data() + M - 1, DType::kF32, {1});  // sv's last value
  o.scale_ub_tensor = &ub;
  F8GEMM_EXPECT_INVALID(quantize_rows(iv, qv, sv, o), "out_scale overlaps scale_ub in memory");
  const TensorView ub_apart = make_view(s.data() + M, DType::kF32, {1});  // just past sv
  o.scale_ub_tensor = &ub_apart;
  s[M] = 0.0f;
  quantize_rows(iv, qv, sv, o);  // touching is not overlapping

  std::vector<uint16_t> gu(M * 2 * K, 0x3f80);
  const TensorView gv = make_view(gu.data(), DType::kBF16, {M, 2 * K});
  silu_mul_quantize_rows(gv, qv, sv);
  F8GEMM_EXPECT_INVALID(
      silu_mul_quantize_rows(gv, make_view(gu.data() + M * K, DType::kE4M3, {M, K}), sv),
      "out_q overlaps gate_up in memory");
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(gv, qv, make_view(q.data(), DType::kF32, {M})),
                 "out_scale overlaps out_q in memory");
}

// The quantized codes must not land on the bound they are computed with: a scale_ub inside
// out_q is refused as one inside out_scale is (the host path read it after writing codes there).
TEST(Aliasing, AScaleUbInsideOutQIsRejected) {
  std::vector<uint16_t> in(M * K, 0x3f80);  // bf16 1.0
  std::vector<uint8_t> q(M * K);
  std::vector<float> s(M);
  const TensorView iv = make_view(in.data(), DType::kBF16, {M, K});
  const TensorView qv = make_view(q.data(), DType::kE4M3, {M, K});
  const TensorView sv = make_view(s.data(), DType::kF32, {M});
  const TensorView ub = make_view(q.data() + 64, DType::kF32, {1});
  QuantizeOptions o;
  o.scale_ub_tensor = &ub;
  F8GEMM_EXPECT_INVALID(quantize_rows(iv, qv, sv, o), "out_q overlaps scale_ub in memory");
  std::vector<uint16_t> gu(M * 2 * K, 0x3f80);
  F8GEMM_EXPECT_INVALID(
      silu_mul_quantize_rows(make_view(gu.data(), DType::kBF16, {M, 2 * K}), qv, sv, o),
      "out_q overlaps scale_ub in memory");
}

TEST(Aliasing, ShuffledAndPlainWeightsMustNotOverlap) {
  // The host preshuffle in place wrote 1,984 of 4,096 bytes wrong before this check.
  const int64_t n = 16, k = 256;
  std::vector<uint8_t> buf(2 * n * k);
  const TensorView plain = make_view(buf.data(), DType::kE4M3, {n, k});
  const TensorView shuffled_in_place = make_view(buf.data(), DType::kE4M3, {2, n / 8, 1024});
  F8GEMM_EXPECT_INVALID(preshuffle(plain, shuffled_in_place),
                 "the preshuffled weight overlaps w in memory");
  F8GEMM_EXPECT_INVALID(unshuffle(shuffled_in_place, plain),
                 "out overlaps the preshuffled weight in memory");
  const TensorView apart = make_view(buf.data() + n * k, DType::kE4M3, {2, n / 8, 1024});
  preshuffle(plain, apart);
  unshuffle(apart, plain);
}

}  // namespace
}  // namespace f8gemm
