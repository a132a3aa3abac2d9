/// \brief CPU tests of the rowwise quantisation kernels' host side: the exact SiLU against fp64, the
/// fused op's CPU reference against fp64, silu_mul_quantize_rows() and quantize_rows() with a
/// scale_ub tensor on host views, their argument checks, the launch plan, and the NVRTC compile of
/// the kernels (no spills).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../../kernels/quantize_shared.cuh"
#include "codegen.hpp"
#include "common/test_util.hpp"
#include "f8gemm/f8gemm.hpp"
#include "jit/jit.hpp"
#include "numerics.hpp"
#include "quantize.hpp"

namespace f8gemm {
namespace {

/// Distance in fp32 units in the last place between a float and an exact value.
double ulps(float got, double exact) {
  if (exact == 0.0) return got == 0.0f ? 0.0 : std::numeric_limits<double>::infinity();
  int e = 0;
  std::frexp(exact, &e);  // |exact| in [2^(e-1), 2^e)
  const double ulp = std::ldexp(1.0, std::max(e - 24, -149));
  return std::fabs(double(got) - exact) / ulp;
}

double silu64(double g) { return g / (1.0 + std::exp(-g)); }

/// One e4m3 unit in the last place at |v| (normal binades: 2^(e-3); subnormals: 2^-9).
double e4m3_ulp(double v) {
  const double a = std::fabs(v);
  if (a < 0.015625) return 0.001953125;
  int e = 0;
  std::frexp(a, &e);
  return std::ldexp(1.0, e - 4);
}

TEST(SiluExact, ExpIsWithinTwoUlpsOverItsWholeRange) {
  // Every 1/4096 of [-17, 88.7], plus random points: the reduced-range Taylor polynomial and the
  // two-part ln 2 keep the result within 2 ulp of exp (the header's claim).
  double worst = 0.0;
  float worst_t = 0.0f;
  auto check = [&](float t) {
    const float got = dev::rowq::exp_clamped(t);
    const double u = ulps(got, std::exp(double(t)));
    if (u > worst) {
      worst = u;
      worst_t = t;
    }
  };
  for (int i = -17 * 4096; i <= 887 * 4096 / 10; ++i) check(float(i) / 4096.0f);
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> dist(-17.0f, 88.7f);
  for (int i = 0; i < 200000; ++i) check(dist(rng));
  std::cout << "[ silu ] worst exp error " << worst << " ulp at t=" << worst_t << "\n";
  EXPECT_LE(worst, 2.0) << "at t=" << worst_t;
  // Outside the range: below -17 (and for a NaN, quiet or signalling, which clamps there) the
  // value is small enough that 1 + exp rounds to 1, as it would for the exact exp; above
  // 0x1.62e42ep+6 (the last float below ln FLT_MAX) it is +inf.
  const float inf = std::numeric_limits<float>::infinity();
  for (float t : {-17.0f, -17.5f, -100.0f, -1e30f, -inf, std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::signaling_NaN()}) {
    EXPECT_EQ(1.0f + dev::rowq::exp_clamped(t), 1.0f) << t;
    EXPECT_LT(dev::rowq::exp_clamped(t), 5e-8f) << t;
  }
  const float last_finite = 0x1.62e42ep+6f;
  EXPECT_FALSE(std::isinf(dev::rowq::exp_clamped(last_finite)));
  EXPECT_LE(ulps(dev::rowq::exp_clamped(last_finite), std::exp(double(last_finite))), 2.0);
  for (float t : {std::nextafter(last_finite, inf), 88.75f, 89.0f, 89.5f, 1e30f, inf}) {
    EXPECT_TRUE(std::isinf(dev::rowq::exp_clamped(t))) << t;
  }
}

TEST(SiluExact, SiluMulIsWithinFourUlpsOfFp64) {
  // exp within 2 ulp; 1 + e, the division and the product each add half an ulp: |rel err| <=
  // (2 + 3 * 0.5) * 2^-23 + O(2^-46), under 4 ulp of the exact fp64 value.
  std::mt19937_64 rng(2);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  double worst = 0.0;
  for (int i = 0; i < 500000; ++i) {
    const float g = normal(rng), u = normal(rng);
    const double exact = silu64(double(g)) * double(u);
    if (std::fabs(exact) < 1e-30) continue;
    worst = std::max(worst, ulps(numerics::silu_mul(g, u), exact));
  }
  for (float g : {-100.0f, -88.0f, -30.0f, -17.0f, -16.9f, 1e-20f, -1e-20f, 0.5f, 20.0f, 90.0f}) {
    const double exact = silu64(double(g)) * 1.5;
    if (std::fabs(exact) > 1e-37) worst = std::max(worst, ulps(numerics::silu_mul(g, 1.5f), exact));
  }
  std::cout << "[ silu ] worst silu*mul error " << worst << " ulp\n";
  EXPECT_LE(worst, 4.0);
  EXPECT_EQ(numerics::silu_mul(0.0f, 3.0f), 0.0f);
  EXPECT_EQ(numerics::silu_mul(std::numeric_limits<float>::infinity(), 1.0f),
            std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(numerics::silu_mul(-std::numeric_limits<float>::infinity(), 1.0f)));
  EXPECT_TRUE(std::isnan(numerics::silu_mul(std::nanf(""), 1.0f)));
}

/// The fused op's CPU reference against fp64: the scale within 4 fp32 ulp of max|h| / 448, and
/// each code within one e4m3 ulp of h * 448 / amax (the half ulp of rounding, plus a possible
/// flip at a near-tie from h's own fp32 error, of relative size 2^-21 << one e4m3 ulp).
TEST(SiluMulQuantizeHost, MatchesFp64WithinOneE4m3Ulp) {
  std::mt19937_64 rng(3);
  const int64_t rows = 7, cols = 1000;
  std::vector<float> in(static_cast<size_t>(rows * 2 * cols));
  std::normal_distribution<double> normal(0.0, 1.0);
  for (size_t i = 0; i < in.size(); ++i) {
    in[i] = float(std::ldexp(normal(rng), int(int64_t(i) / (2 * cols)) - 3));
  }
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(to_string(dtype));
    std::vector<uint16_t> half(in.size());
    std::vector<double> exact_in(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      half[i] = dtype == DType::kBF16 ? numerics::double_to_bf16(in[i]) : numerics::double_to_f16(in[i]);
      exact_in[i] = dtype == DType::kF32 ? double(in[i])
                    : dtype == DType::kBF16 ? numerics::bf16_to_double(half[i])
                                            : numerics::f16_to_double(half[i]);
    }
    const void* data = dtype == DType::kF32 ? static_cast<const void*>(in.data()) : half.data();
    std::vector<uint8_t> q(static_cast<size_t>(rows * cols));
    std::vector<float> scale(static_cast<size_t>(rows));
    numerics::silu_mul_quantize_rows_host(data, dtype, rows, cols, 1e-12f, 0.0f, q.data(),
                                          scale.data());
    int bad = 0;
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<double> h(static_cast<size_t>(cols));
      double amax = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        h[c] = silu64(exact_in[r * 2 * cols + c]) * exact_in[r * 2 * cols + cols + c];
        amax = std::max(amax, std::fabs(h[c]));
      }
      EXPECT_LE(ulps(scale[r], amax / 448.0), 4.0) << "row " << r;
      for (int64_t c = 0; c < cols; ++c) {
        const double want = h[c] * 448.0 / amax;
        const double got = numerics::e4m3_to_float(q[r * cols + c]);
        bad += std::fabs(got - want) > e4m3_ulp(want);
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

TEST(SiluMulQuantizeHost, IsSiluMulThenQuantizeRowsBitForBit) {
  std::mt19937_64 rng(4);
  const int64_t rows = 5, cols = 48;
  std::vector<float> in = test::random_f32(rng, size_t(rows * 2 * cols), 3.0);
  in[7] = std::numeric_limits<float>::quiet_NaN();  // row 0: a NaN gate
  for (int64_t c = 0; c < 2 * cols; ++c) in[size_t(2 * cols + c)] = 0.0f;  // row 1: all zero
  for (float ub : {0.0f, 0.25f}) {
    std::vector<uint8_t> q(static_cast<size_t>(rows * cols)), q_ref(q.size());
    std::vector<float> s(static_cast<size_t>(rows)), s_ref(s.size());
    numerics::silu_mul_quantize_rows_host(in.data(), DType::kF32, rows, cols, 1e-12f, ub, q.data(),
                                          s.data());
    std::vector<float> h(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        h[r * cols + c] = numerics::silu_mul(in[r * 2 * cols + c], in[r * 2 * cols + cols + c]);
      }
    }
    numerics::quantize_rows_host(h.data(), DType::kF32, rows, cols, 1e-12f, ub, q_ref.data(),
                                 s_ref.data());
    EXPECT_EQ(q, q_ref);
    EXPECT_EQ(0, std::memcmp(s.data(), s_ref.data(), s.size() * sizeof(float)));
    EXPECT_EQ(q[7], 0x7f);                     // NaN stays NaN
    EXPECT_EQ(s[1], 1e-12f / 448.0f);          // the eps path
  }
}

// ---- the public API on host views --------------------------------------------------------------

TEST(SiluMulQuantizeApi, HostViewsRunTheReference) {
  std::mt19937_64 rng(5);
  const int64_t lead0 = 2, lead1 = 3, cols = 40;
  const int64_t rows = lead0 * lead1;
  std::vector<uint16_t> in = test::random_half_bits(rng, size_t(rows * 2 * cols), 2.0, DType::kBF16);
  std::vector<uint8_t> q(static_cast<size_t>(rows * cols)), q_ref(q.size());
  std::vector<float> s(static_cast<size_t>(rows)), s_ref(s.size());
  float ub_value = 0.5f;
  QuantizeOptions o;
  const TensorView ub = make_view(&ub_value, DType::kF32, {1});
  o.scale_ub_tensor = &ub;
  silu_mul_quantize_rows(make_view(in.data(), DType::kBF16, {lead0, lead1, 2 * cols}),
                         make_view(q.data(), DType::kE4M3, {lead0, lead1, cols}),
                         make_view(s.data(), DType::kF32, {lead0, lead1}), o);
  numerics::silu_mul_quantize_rows_host(in.data(), DType::kBF16, rows, cols, 1e-12f, 0.5f,
                                        q_ref.data(), s_ref.data());
  EXPECT_EQ(q, q_ref);
  EXPECT_EQ(0, std::memcmp(s.data(), s_ref.data(), s.size() * sizeof(float)));
}

TEST(QuantizeRowsApi, ScaleUbTensorOnTheHostIsTheBound) {
  std::mt19937_64 rng(6);
  const int64_t rows = 4, cols = 64;
  std::vector<float> in = test::random_f32(rng, size_t(rows * cols), 2.0);
  for (float value : {0.5f, 0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN()}) {
    std::vector<uint8_t> q(static_cast<size_t>(rows * cols)), q_ref(q.size());
    std::vector<float> s(static_cast<size_t>(rows)), s_ref(s.size());
    QuantizeOptions o;
    o.scale_ub = 100.0f;  // replaced by the tensor
    const TensorView ub = make_view(&value, DType::kF32, {1});
    o.scale_ub_tensor = &ub;
    quantize_rows(make_view(in.data(), DType::kF32, {rows, cols}),
                  make_view(q.data(), DType::kE4M3, {rows, cols}),
                  make_view(s.data(), DType::kF32, {rows}), o);
    // <= 0 and NaN mean no bound, exactly as a scale_ub of 0 does.
    const float host_ub = value > 0.0f ? value : 0.0f;
    numerics::quantize_rows_host(in.data(), DType::kF32, rows, cols, 1e-12f, host_ub,
                                 q_ref.data(), s_ref.data());
    EXPECT_EQ(q, q_ref) << value;
    EXPECT_EQ(0, std::memcmp(s.data(), s_ref.data(), s.size() * sizeof(float))) << value;
  }
}

// Only a null input kept its default: a null out_q or out_scale was streamed into the message
// (undefined behaviour; libstdc++ left "f8gemm: invalid argument: " and nothing else).
TEST(QuantizeRowsApi, ANullArgumentNameKeepsTheDefault) {
  std::vector<float> in(4 * 32), s(4);
  std::vector<uint8_t> q(4 * 32);
  QuantizeArgNames names;
  names.out_q = nullptr;
  names.out_scale = nullptr;
  QuantizeOptions o;
  o.names = &names;
  const TensorView iv = make_view(in.data(), DType::kF32, {4, 32});
  const TensorView sv = make_view(s.data(), DType::kF32, {4});
  F8GEMM_EXPECT_INVALID(
      quantize_rows(iv, make_view(q.data(), DType::kU8, {4, 32}), sv, o),
      "out_q must be float8_e4m3fn, got uint8");
  F8GEMM_EXPECT_INVALID(
      quantize_rows(iv, make_view(q.data(), DType::kE4M3, {4, 32}),
                    make_view(s.data(), DType::kF32, {3}), o),
      "out_scale must hold one value per row (4), got 3");
  F8GEMM_EXPECT_INVALID(
      silu_mul_quantize_rows(iv, make_view(q.data(), DType::kE4M3, {4, 16}),
                             make_view(s.data(), DType::kI32, {4}), o),
      "out_scale must be float32, got int32");
}

// scale_ub_tensor is read as one float (by the host path, or by the kernel on the GPU): a
// pointer that is not 4-byte aligned is refused by name, not read misaligned.
TEST(QuantizeRowsApi, AMisalignedScaleUbTensorIsRefused) {
  std::vector<float> in(4 * 32, 1.0f), s(4);
  std::vector<uint8_t> q(4 * 32);
  alignas(8) unsigned char ub_bytes[8] = {};
  const TensorView ub = make_view(ub_bytes + 1, DType::kF32, {1});
  QuantizeOptions o;
  o.scale_ub_tensor = &ub;
  F8GEMM_EXPECT_INVALID(quantize_rows(make_view(in.data(), DType::kF32, {4, 32}),
                                      make_view(q.data(), DType::kE4M3, {4, 32}),
                                      make_view(s.data(), DType::kF32, {4}), o),
                        "scale_ub must be a 4-byte aligned, non-null pointer");
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(make_view(in.data(), DType::kF32, {4, 32}),
                                               make_view(q.data(), DType::kE4M3, {4, 16}),
                                               make_view(s.data(), DType::kF32, {4}), o),
                        "scale_ub must be a 4-byte aligned, non-null pointer");
}

TEST(SiluMulQuantizeApi, RejectsBadArguments) {
  std::vector<float> in(2 * 3 * 32);
  std::vector<uint8_t> q(2 * 3 * 16);
  std::vector<float> s(6), s2(6);
  const TensorView gu = make_view(in.data(), DType::kF32, {6, 32});
  const TensorView qv = make_view(q.data(), DType::kE4M3, {6, 16});
  const TensorView sv = make_view(s.data(), DType::kF32, {6});
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(make_view(in.data(), DType::kE4M3, {6, 32}), qv, sv),
                 "gate_up must be bfloat16, float16 or float32");
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(make_view(in.data(), DType::kF32, {6, 31}), qv, sv),
                 "must be positive and even");
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(gu, make_view(q.data(), DType::kU8, {6, 16}), sv),
                 "out_q must be float8_e4m3fn");
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(gu, make_view(q.data(), DType::kE4M3, {6, 32}), sv),
                 "out_q must have gate_up's shape with the last dimension halved");
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(gu, qv, make_view(s.data(), DType::kF32, {5})),
                 "out_scale must hold one value per row");
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(gu, qv, make_view(s.data(), DType::kBF16, {6})),
                 "out_scale must be float32");
  TensorView strided = make_view(in.data(), DType::kF32, {3, 32});
  strided.stride[0] = 64;
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(strided, make_view(q.data(), DType::kE4M3, {3, 16}),
                                        make_view(s.data(), DType::kF32, {3})),
                 "gate_up must be contiguous");
  TensorView on_gpu = qv;
  on_gpu.device = 0;
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(gu, on_gpu, sv), "must be in the same memory");
  QuantizeOptions o;
  o.eps = 0.0f;
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(gu, qv, sv, o), "eps must be positive");
  QuantizeOptions u;
  const TensorView two = make_view(s2.data(), DType::kF32, {2});
  u.scale_ub_tensor = &two;
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(gu, qv, sv, u),
                        "scale_ub must be one float32 value");
  TensorView ub_gpu = make_view(s2.data(), DType::kF32, {1});
  ub_gpu.device = 0;
  u.scale_ub_tensor = &ub_gpu;
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(gu, qv, sv, u),
                        "scale_ub must be in the input's memory");
  F8GEMM_EXPECT_INVALID(quantize_rows(make_view(in.data(), DType::kF32, {6, 32}),
                               make_view(q.data(), DType::kE4M3, {6, 32}), sv, u),
                 "scale_ub must be in the input's memory");
  QuantizeOptions inf_eps;
  inf_eps.eps = std::numeric_limits<float>::infinity();  // every scale inf, every code 0 before
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(gu, qv, sv, inf_eps),
                        "eps must be positive and finite");
  F8GEMM_EXPECT_INVALID(quantize_rows(make_view(in.data(), DType::kF32, {6, 32}),
                               make_view(q.data(), DType::kE4M3, {6, 32}), sv, inf_eps),
                 "eps must be positive and finite");
  // Hand-built views are checked before their shapes are read, as in every other entry point.
  // [3, 6148914691236517206, 2]: the row count 3 * 6148914691236517206 wrapped to 2 before, and
  // the call wrote two scales.
  TensorView huge = make_view(in.data(), DType::kF32, {3, 2, 2});
  huge.shape[1] = 6148914691236517206;
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(huge, make_view(q.data(), DType::kE4M3, {3, 2, 1}),
                                        make_view(s.data(), DType::kF32, {2})),
                 "gate_up has more than 2^63 elements");
  TensorView negative = make_view(in.data(), DType::kF32, {2, 8});
  negative.shape[0] = -2;
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(negative, make_view(q.data(), DType::kE4M3, {2, 4}),
                                        make_view(s.data(), DType::kF32, {2})),
                 "gate_up has a negative dimension");
  TensorView rank5 = sv;
  rank5.rank = 5;  // numel() would read past shape[]
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(gu, qv, rank5),
                        "out_scale must have rank 0..4, got 5");
  TensorView ub_rank = make_view(s2.data(), DType::kF32, {1});
  ub_rank.rank = -1;
  u.scale_ub_tensor = &ub_rank;
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(gu, qv, sv, u),
                        "scale_ub must have rank 0..4, got -1");
  // Rows of no values have no scale: K = 0 (2I = 0) is refused rather than leaving the scales
  // unwritten.
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(make_view(in.data(), DType::kF32, {6, 0}),
                                        make_view(q.data(), DType::kE4M3, {6, 0}), sv),
                 "gate_up's last dimension must be positive and even");
  F8GEMM_EXPECT_INVALID(quantize_rows(make_view(in.data(), DType::kF32, {6, 0}),
                               make_view(q.data(), DType::kE4M3, {6, 0}), sv),
                 "K (input's last dimension) must be positive");
  // Empty work is valid and touches nothing.
  silu_mul_quantize_rows(make_view(in.data(), DType::kF32, {0, 32}),
                         make_view(q.data(), DType::kE4M3, {0, 16}),
                         make_view(s.data(), DType::kF32, {0}));
}

// out_scale of gate_up's rank less one holds one value per row in gate_up's leading shape: the
// right count in another shape ([3, 2] for [2, 3] rows) is refused, not filled in row order.
TEST(SiluMulQuantizeApi, AScaleOfTheRightCountInAnotherShapeIsRefused) {
  std::vector<float> in(2 * 3 * 32), s(6);
  std::vector<uint8_t> q(2 * 3 * 16);
  const TensorView gu = make_view(in.data(), DType::kF32, {2, 3, 32});
  const TensorView qv = make_view(q.data(), DType::kE4M3, {2, 3, 16});
  F8GEMM_EXPECT_INVALID(silu_mul_quantize_rows(gu, qv, make_view(s.data(), DType::kF32, {3, 2})),
                        "out_scale must hold one value per row (6)");
  silu_mul_quantize_rows(gu, qv, make_view(s.data(), DType::kF32, {2, 3}));
  silu_mul_quantize_rows(gu, qv, make_view(s.data(), DType::kF32, {6}));
}

// ---- the launch plan ---------------------------------------------------------------------------

TEST(RowQuantizePlan, SmallMSpreadsARowLargeMGoesWideAndEveryPlanCoversTheRow) {
  using detail::plan_row_quantize;
  // Decode: one row of 16384 bf16 is 1024 packs over 8 CTAs of 128 threads, one pack each.
  auto p = plan_row_quantize(1, 16384, true, 132);
  EXPECT_EQ(p.cluster, 8);
  EXPECT_EQ(p.threads, 128);
  EXPECT_EQ(p.chunk, 128);
  EXPECT_EQ(p.clusters, 1);
  EXPECT_EQ(plan_row_quantize(16, 16384, true, 132).cluster, 8);   // 128 CTAs on 132 SMs
  // 896 packs: 4 CTAs of 224 threads; 8 would leave each under 4 warps.
  EXPECT_EQ(plan_row_quantize(16, 14336, true, 132).cluster, 4);
  EXPECT_EQ(plan_row_quantize(16, 14336, true, 132).threads, 224);
  // A bf16/fp16 plan of `op`: whether it is wide, its cluster and its threads.
  using detail::RowOp;
  auto expect_plan = [](int64_t rows, int64_t cols, RowOp op, bool wide, int cluster,
                        int threads) {
    const auto q = plan_row_quantize(rows, cols, true, 132, op, true);
    SCOPED_TRACE(testing::Message() << "rows=" << rows << " cols=" << cols);
    EXPECT_EQ(q.wide, wide);
    EXPECT_EQ(q.cluster, cluster);
    EXPECT_EQ(q.threads, threads);
    return q;
  };
  // Prefill below kWideAllRows, where the wide entries hold the row in no fewer CTAs: a row per
  // CTA, one pack per thread, no cluster; the grid walks the rows.
  EXPECT_EQ(expect_plan(512, 4096, RowOp::kPlain, false, 1, 256).clusters, 512);
  // From kWideAllRows rows on the plain op is wide: four packs a thread, 64 threads a row.
  EXPECT_EQ(expect_plan(2048, 4096, RowOp::kPlain, true, 1, 64).clusters, 2048);
  EXPECT_EQ(expect_plan(1 << 20, 4096, RowOp::kPlain, true, 1, 64).clusters, 132 * 16);
  // Long rows: one pack a thread needs a cluster of 4 for 14336 values, four packs none, so
  // from kWideMinRows rows on the plain op is wide; not below, nor for fp32 inputs (the
  // default), which have no wide entry.
  EXPECT_EQ(plan_row_quantize(2048, 14336, true, 132).cluster, 4);
  EXPECT_FALSE(plan_row_quantize(2048, 14336, true, 132).wide);
  expect_plan(127, 14336, RowOp::kPlain, false, 4, 224);
  expect_plan(128, 14336, RowOp::kPlain, true, 1, 224);
  // SiLU·mul's wide entry keeps two packs a thread: a cluster of 2 for 14336 values, not 4.
  expect_plan(128, 14336, RowOp::kSiluMul, true, 2, 224);
  expect_plan(127, 14336, RowOp::kSiluMul, false, 4, 224);
  // The dependents (programmatic launch) are let in as the CTAs start up to 128 rows, whatever
  // the grid (64 rows of 14336 are 256 CTAs in clusters of 4), and from 129 rows once each CTA
  // is done (card 77).
  EXPECT_TRUE(plan_row_quantize(1, 4096, true, 132).early_dependents);
  EXPECT_TRUE(plan_row_quantize(16, 14336, true, 132).early_dependents);
  EXPECT_TRUE(expect_plan(64, 14336, RowOp::kPlain, false, 4, 224).early_dependents);
  EXPECT_TRUE(expect_plan(127, 14336, RowOp::kSiluMul, false, 4, 224).early_dependents);
  EXPECT_TRUE(expect_plan(128, 14336, RowOp::kSiluMul, true, 2, 224).early_dependents);
  EXPECT_FALSE(plan_row_quantize(129, 4096, true, 132).early_dependents);
  EXPECT_FALSE(expect_plan(512, 4096, RowOp::kPlain, false, 1, 256).early_dependents);
  EXPECT_FALSE(expect_plan(2048, 4096, RowOp::kPlain, true, 1, 64).early_dependents);
  for (RowOp op : {RowOp::kPlain, RowOp::kSiluMul}) {
    for (bool sixteen : {true, false}) {
      for (bool vec : {true, false}) {
        for (int64_t rows : {1, 2, 3, 16, 17, 64, 127, 128, 133, 2047, 2048, 4096}) {
          for (int64_t cols : {16, 48, 1008, 4096, 8192, 14336, 16384, 28672, 65536, 262144}) {
            const auto q = plan_row_quantize(rows, vec ? cols : cols + 3, vec, 132, op, sixteen);
            const int64_t packs = vec ? cols / 16 : cols + 3;
            SCOPED_TRACE(testing::Message()
                         << "rows=" << rows << " cols=" << cols << " vec=" << vec
                         << " silu=" << (op == RowOp::kSiluMul) << " 16-bit=" << sixteen);
            EXPECT_TRUE(!q.wide || (vec && sixteen && rows >= dev::rowq::kWideMinRows));
            EXPECT_TRUE(q.cluster == 1 || q.cluster == 2 || q.cluster == 4 || q.cluster == 8);
            EXPECT_GE(q.chunk * q.cluster, packs);
            EXPECT_LT(q.chunk * (q.cluster - 1), packs);  // no CTA of a cluster is left idle
            EXPECT_EQ(q.threads % 32, 0);
            EXPECT_GE(q.threads, 32);
            EXPECT_LE(q.threads, 256);
            EXPECT_GE(q.clusters, 1);
            EXPECT_EQ(q.early_dependents, rows <= 128);
            EXPECT_LE(q.clusters, rows);
          }
        }
      }
    }
  }
}

// ---- the kernels compile for sm_90a without spills ------------------------------------------------

TEST(QuantizeKernels, CompileWithoutSpills) {
  test::TempDir dir("f8gemm_quantize_kernels_test");
  test::ScopedEnv cache("F8GEMM_CACHE_DIR");
  cache.set(dir.path());
  jit::clear_memory_cache();
  auto inst = detail::util_instance();
  ASSERT_NE(inst, nullptr);
  EXPECT_EQ(inst->spill_bytes(), 0) << inst->log();
  for (std::string entry :
       {"f8gemm_quantize_f32", "f8gemm_quantize_bf16", "f8gemm_quantize_f16",
        "f8gemm_silu_mul_quantize_f32", "f8gemm_silu_mul_quantize_bf16",
        "f8gemm_silu_mul_quantize_f16", "f8gemm_quantize_bf16_wide", "f8gemm_quantize_f16_wide",
        "f8gemm_silu_mul_quantize_bf16_wide", "f8gemm_silu_mul_quantize_f16_wide"}) {
    const bool wide = entry.size() > 5 && entry.compare(entry.size() - 5, 5, "_wide") == 0;
    int registers = -1;
    for (const jit::KernelResources& r : inst->resources()) {
      if (r.is_entry && r.entry == entry) {
        registers = r.registers;
        EXPECT_EQ(r.stack_frame, 0) << entry;
      }
    }
    // At 256 threads, 80 registers still leave 3 CTAs (24 warps) per SM for a memory-bound loop.
    // A wide entry holds two or four packs a thread: at 96 registers two CTAs of 256 threads
    // still fit per SM, with two to four times the bytes in flight of one pack a thread.
    EXPECT_GT(registers, 0) << entry << "\n" << inst->log();
    EXPECT_LE(registers, wide ? 96 : 80) << entry;
    std::cout << "[ instance ] util." << entry << " regs=" << registers << "\n";
  }
  jit::clear_memory_cache();
}

}  // namespace
}  // namespace f8gemm

// The checks alone (session 42: the torch ops run them over outputs not yet allocated): each
// refuses what its call refuses, with the same error, and reads no memory (the views' addresses
// are fake device addresses); a call they pass would pass its own checks.
TEST(CheckOnlyApi, TheChecksOfEachCallWithoutTheCall) {
  using f8gemm::test::dev_view;
  const f8gemm::TensorView in = dev_view(0x100000, f8gemm::DType::kBF16, {4, 256});
  const f8gemm::TensorView q = dev_view(0x200000, f8gemm::DType::kE4M3, {4, 256});
  const f8gemm::TensorView s = dev_view(0x300000, f8gemm::DType::kF32, {4});
  EXPECT_NO_THROW(f8gemm::check_quantize_rows(in, q, s));
  f8gemm::TensorView strided = in;
  strided.stride[0] = 512;  // rows apart: not contiguous
  F8GEMM_EXPECT_INVALID(f8gemm::check_quantize_rows(strided, q, s), "input must be contiguous");
  F8GEMM_EXPECT_INVALID(f8gemm::check_quantize_rows(in, q, dev_view(0x300000, f8gemm::DType::kF32, {3})),
                        "must hold one value per row (4)");
  const f8gemm::TensorView gate_up = dev_view(0x100000, f8gemm::DType::kBF16, {4, 512});
  EXPECT_NO_THROW(f8gemm::check_silu_mul_quantize_rows(gate_up, q, s));
  F8GEMM_EXPECT_INVALID(f8gemm::check_silu_mul_quantize_rows(gate_up, gate_up, s),
                        "must be float8_e4m3fn");
  const f8gemm::TensorView w = dev_view(0x100000, f8gemm::DType::kE4M3, {256, 128});
  const f8gemm::TensorView shuffled = dev_view(0x400000, f8gemm::DType::kE4M3, {1, 32, 1024});
  EXPECT_NO_THROW(f8gemm::check_preshuffle(w, shuffled));
  EXPECT_NO_THROW(f8gemm::check_unshuffle(shuffled, w));
  F8GEMM_EXPECT_INVALID(f8gemm::check_preshuffle(dev_view(0x100001, f8gemm::DType::kE4M3, {256, 128}),
                                                 shuffled),
                        "16-byte aligned");
  // Overlapping outputs are refused too: the checks include the aliasing rules.
  F8GEMM_EXPECT_INVALID(f8gemm::check_preshuffle(w, dev_view(0x100000, f8gemm::DType::kE4M3, {1, 32, 1024})),
                        "overlaps w in memory");
}
