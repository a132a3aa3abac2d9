/// \brief Tests of host numerics: e4m3/bf16/fp16 rounding, fp64 reference, preshuffle, quantise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "numerics.hpp"
#include "reference.hpp"

namespace f8gemm::numerics {
namespace {

constexpr float kInfF = std::numeric_limits<float>::infinity();
constexpr float kNanF = std::numeric_limits<float>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

/// Independent e4m3fn decode from the definition: (-1)^s * 2^(e-7) * (1 + m/8), or m/8 * 2^-6.
double reference_e4m3(int code) {
  const int s = code >> 7, e = (code >> 3) & 15, m = code & 7;
  if (e == 15 && m == 7) return kNan;
  const double mag =
      e == 0 ? (m / 8.0) * std::pow(2.0, -6) : (1.0 + m / 8.0) * std::pow(2.0, e - 7);
  return s ? -mag : mag;
}

bool is_nan_code(int code) { return (code & 0x7f) == 0x7f; }

/// The e4m3 code nearest to v by exhaustive search, ties to the even code (the one with mantissa
/// LSB 0), saturating at 448 as satfinite does.
uint8_t brute_force_e4m3(float v) {
  if (std::isnan(v)) return 0x7f;
  const double target = std::fmin(std::fabs(static_cast<double>(v)), 448.0);
  int best = 0;
  double best_dist = kInf;
  for (int c = 0; c <= 0x7e; ++c) {
    const double d = std::fabs(reference_e4m3(c) - target);
    if (d < best_dist || (d == best_dist && (c & 1) == 0)) {
      best = c;
      best_dist = d;
    }
  }
  return static_cast<uint8_t>((std::signbit(v) ? 0x80 : 0) | best);
}

// ---------------------------------------------------------------------------------------------
// e4m3 decode

TEST(E4m3Decode, AllCodesMatchDefinition) {
  const float* table = e4m3_table();
  for (int c = 0; c < 256; ++c) {
    const float got = e4m3_to_float(static_cast<uint8_t>(c));
    const double want = reference_e4m3(c);
    if (is_nan_code(c)) {
      EXPECT_TRUE(std::isnan(got)) << "code " << c;
      EXPECT_TRUE(std::isnan(table[c])) << "code " << c;
      continue;
    }
    EXPECT_EQ(static_cast<double>(got), want) << "code " << c;
    EXPECT_EQ(std::signbit(got), (c & 0x80) != 0) << "code " << c;
    EXPECT_EQ(std::memcmp(&got, &table[c], sizeof got), 0) << "table differs at code " << c;
  }
}

TEST(E4m3Decode, SpecialCodes) {
  EXPECT_TRUE(std::isnan(e4m3_to_float(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3_to_float(0xff)));
  EXPECT_EQ(e4m3_to_float(0x01), 0.001953125f);   // 2^-9, smallest subnormal
  EXPECT_EQ(e4m3_to_float(0x07), 7.0f / 512.0f);  // largest subnormal
  EXPECT_EQ(e4m3_to_float(0x08), 0.015625f);      // 2^-6, smallest normal
  EXPECT_EQ(e4m3_to_float(0x38), 1.0f);
  EXPECT_EQ(e4m3_to_float(0x7e), 448.0f);
  EXPECT_EQ(e4m3_to_float(0xfe), -448.0f);
  EXPECT_EQ(e4m3_to_float(0xc4), -3.0f);
  EXPECT_EQ(e4m3_to_float(0x00), 0.0f);
  EXPECT_FALSE(std::signbit(e4m3_to_float(0x00)));
  EXPECT_TRUE(std::signbit(e4m3_to_float(0x80)));
  EXPECT_EQ(e4m3_to_float(0x80), 0.0f);
}

// ---------------------------------------------------------------------------------------------
// float -> e4m3

TEST(FloatToE4m3, RoundTripsEveryFiniteCode) {
  int checked = 0;
  for (int c = 0; c < 256; ++c) {
    if (is_nan_code(c)) continue;
    EXPECT_EQ(float_to_e4m3(static_cast<float>(reference_e4m3(c))), c) << "code " << c;
    ++checked;
  }
  EXPECT_EQ(checked, 254);
  EXPECT_EQ(float_to_e4m3(-0.0f), 0x80);
  EXPECT_EQ(float_to_e4m3(0.0f), 0x00);
}

TEST(FloatToE4m3, MidpointsTieToEven) {
  for (int c = 0; c < 0x7e; ++c) {
    const float lo = static_cast<float>(reference_e4m3(c));
    const float hi = static_cast<float>(reference_e4m3(c + 1));
    const float mid = (lo + hi) / 2;  // exact: both have 4 significant bits
    const int even = (c & 1) ? c + 1 : c;
    EXPECT_EQ(float_to_e4m3(mid), even) << "between codes " << c << " and " << c + 1;
    EXPECT_EQ(float_to_e4m3(-mid), 0x80 | even) << "between codes " << c << " and " << c + 1;
    EXPECT_EQ(float_to_e4m3(std::nextafter(mid, 0.0f)), c) << "just below mid " << c;
    EXPECT_EQ(float_to_e4m3(std::nextafter(mid, kInfF)), c + 1) << "just above mid " << c;
  }
  // Hand cases: 1.0625 lies between 1 (0x38, even) and 1.125 (0x39); 1.1875 between 0x39 and 0x3a.
  EXPECT_EQ(float_to_e4m3(1.0625f), 0x38);
  EXPECT_EQ(float_to_e4m3(1.1875f), 0x3a);
  // 17 lies between 16 (0x58) and 18 (0x59), 19 between 18 and 20 (0x5a).
  EXPECT_EQ(float_to_e4m3(17.0f), 0x58);
  EXPECT_EQ(float_to_e4m3(19.0f), 0x5a);
}

TEST(FloatToE4m3, SaturatesAndNaN) {
  EXPECT_EQ(float_to_e4m3(448.0f), 0x7e);
  EXPECT_EQ(float_to_e4m3(449.0f), 0x7e);
  EXPECT_EQ(float_to_e4m3(464.0f), 0x7e);  // the 448/480 midpoint: 480 does not exist
  EXPECT_EQ(float_to_e4m3(479.0f), 0x7e);
  EXPECT_EQ(float_to_e4m3(500.0f), 0x7e);
  EXPECT_EQ(float_to_e4m3(1e30f), 0x7e);
  EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::max()), 0x7e);
  EXPECT_EQ(float_to_e4m3(kInfF), 0x7e);
  EXPECT_EQ(float_to_e4m3(-500.0f), 0xfe);
  EXPECT_EQ(float_to_e4m3(-kInfF), 0xfe);
  EXPECT_EQ(float_to_e4m3(kNanF), 0x7f);
  EXPECT_EQ(float_to_e4m3(-kNanF), 0x7f);
  EXPECT_EQ(float_to_e4m3(432.0f), 0x7e);  // 416/448 midpoint, 448 (mantissa 110) is even
  EXPECT_EQ(float_to_e4m3(431.0f), 0x7d);
}

TEST(FloatToE4m3, SubnormalNormalBoundaryAndTiny) {
  // Largest subnormal 7/512 (0x07), smallest normal 8/512 (0x08): the midpoint 7.5/512 goes even.
  EXPECT_EQ(float_to_e4m3(7.5f / 512.0f), 0x08);
  EXPECT_EQ(float_to_e4m3(std::nextafter(7.5f / 512.0f, 0.0f)), 0x07);
  EXPECT_EQ(float_to_e4m3(8.5f / 512.0f), 0x08);  // between 0x08 and 0x09 (9/512)
  EXPECT_EQ(float_to_e4m3(std::nextafter(8.5f / 512.0f, 1.0f)), 0x09);
  EXPECT_EQ(float_to_e4m3(6.5f / 512.0f), 0x06);
  EXPECT_EQ(float_to_e4m3(5.5f / 512.0f), 0x06);
  // Half the smallest subnormal ties to 0; anything above it rounds to 2^-9.
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -10)), 0x00);
  EXPECT_EQ(float_to_e4m3(std::nextafter(std::ldexp(1.0f, -10), 1.0f)), 0x01);
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.5f, -9)), 0x02);  // 1.5 * 2^-9: tie between 1 and 2
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -11)), 0x00);
  EXPECT_EQ(float_to_e4m3(1e-30f), 0x00);
  EXPECT_EQ(float_to_e4m3(-1e-30f), 0x80);
  EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::denorm_min()), 0x00);
  EXPECT_EQ(float_to_e4m3(-std::ldexp(1.0f, -9)), 0x81);
}

TEST(FloatToE4m3, RandomValuesMatchExhaustiveNearest) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> expo(-13, 9);
  for (int i = 0; i < 20000; ++i) {
    float v = std::ldexp(mant(gen), expo(gen));
    if (gen() & 1) v = -v;
    ASSERT_EQ(float_to_e4m3(v), brute_force_e4m3(v)) << "value " << v;
  }
}

// ---------------------------------------------------------------------------------------------
// double -> bf16 / fp16

TEST(DoubleToBf16, BasicsAndTies) {
  EXPECT_EQ(double_to_bf16(1.0), 0x3f80);
  EXPECT_EQ(double_to_bf16(-2.0), 0xc000);
  EXPECT_EQ(double_to_bf16(0.0), 0x0000);
  EXPECT_EQ(double_to_bf16(-0.0), 0x8000);
  // bf16 has 7 stored mantissa bits: ulp(1) = 2^-7. 1 + 2^-8 is a tie: down to even 0x3f80.
  EXPECT_EQ(double_to_bf16(1.0 + std::ldexp(1.0, -8)), 0x3f80);
  // 1 + 3*2^-8 is a tie between 0x3f81 (odd) and 0x3f82 (even).
  EXPECT_EQ(double_to_bf16(1.0 + 3 * std::ldexp(1.0, -8)), 0x3f82);
  EXPECT_EQ(double_to_bf16(std::nextafter(1.0 + std::ldexp(1.0, -8), 2.0)), 0x3f81);
  EXPECT_EQ(double_to_bf16(0.1), 0x3dcd);  // 0.1 = 1.6 * 2^-4, 1.6 * 128 = 204.8 -> 205 = 0x4d
}

TEST(DoubleToBf16, NoDoubleRoundingThroughFloat) {
  // 1 + 2^-8 + 2^-30 is just above the bf16 midpoint, so it must round up to 1 + 2^-7. Rounded
  // to fp32 first, the 2^-30 (below fp32's half ulp 2^-24) is lost and the value becomes the
  // exact tie 1 + 2^-8, which then goes down to 1.0: the two paths really differ.
  const double v = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  ASSERT_EQ(static_cast<float>(v), 1.0f + std::ldexp(1.0f, -8));
  EXPECT_EQ(double_to_bf16(v), 0x3f81);
  EXPECT_EQ(double_to_bf16(-v), 0xbf81);
}

TEST(DoubleToBf16, OverflowSubnormalsNaN) {
  const double max_bf16 = std::ldexp(255.0, 120);  // 0x7f7f = 2^127 * (2 - 2^-7)
  const double threshold = std::ldexp(1.0 - std::ldexp(1.0, -9), 128);
  EXPECT_EQ(double_to_bf16(max_bf16), 0x7f7f);
  EXPECT_EQ(double_to_bf16(threshold), 0x7f80);
  EXPECT_EQ(double_to_bf16(std::nextafter(threshold, 0.0)), 0x7f7f);
  EXPECT_EQ(double_to_bf16(-threshold), 0xff80);
  EXPECT_EQ(double_to_bf16(1e300), 0x7f80);
  EXPECT_EQ(double_to_bf16(kInf), 0x7f80);
  EXPECT_EQ(double_to_bf16(-kInf), 0xff80);
  EXPECT_EQ(double_to_bf16(std::ldexp(1.0, -133)), 0x0001);    // smallest bf16 subnormal
  EXPECT_EQ(double_to_bf16(std::ldexp(1.0, -134)), 0x0000);    // tie with 0
  EXPECT_EQ(double_to_bf16(std::ldexp(1.5, -133)), 0x0002);    // tie between 1 and 2
  EXPECT_EQ(double_to_bf16(std::ldexp(1.0, -126)), 0x0080);    // smallest normal
  EXPECT_EQ(double_to_bf16(std::ldexp(127.0, -133)), 0x007f);  // largest subnormal
  EXPECT_EQ(double_to_bf16(std::ldexp(127.5, -133)), 0x0080);  // tie, up into the normals
  EXPECT_EQ(double_to_bf16(1e-300), 0x0000);
  EXPECT_EQ(double_to_bf16(kNan), 0x7fc0);
  EXPECT_EQ(double_to_bf16(-kNan), 0xffc0);
}

// Every value past the largest finite one overflows to inf, in each binade above it: the first
// binade past the format's top exponent included (there the exponent field is all ones, and a
// nonzero mantissa would be a NaN).
TEST(DoubleToHalf, EveryBinadePastTheTopOverflowsToInf) {
  for (int e = 128; e <= 140; ++e) {
    for (double mant : {1.0, 1.25, 1.5, 1.99}) {
      const double v = std::ldexp(mant, e);
      EXPECT_EQ(double_to_bf16(v), 0x7f80) << v;
      EXPECT_EQ(double_to_bf16(-v), 0xff80) << v;
    }
  }
  for (int e = 16; e <= 28; ++e) {
    for (double mant : {1.0, 1.25, 1.5, 1.99}) {
      const double v = std::ldexp(mant, e);  // 65536 * mant and up
      EXPECT_EQ(double_to_f16(v), 0x7c00) << v;
      EXPECT_EQ(double_to_f16(-v), 0xfc00) << v;
    }
  }
}

TEST(DoubleToBf16, DecodeAndRoundTripAllCodes) {
  EXPECT_EQ(bf16_to_double(0x3f80), 1.0);
  EXPECT_EQ(bf16_to_double(0xc020), -2.5);
  EXPECT_EQ(bf16_to_double(0x0001), std::ldexp(1.0, -133));
  EXPECT_EQ(bf16_to_double(0x7f80), kInf);
  EXPECT_TRUE(std::isnan(bf16_to_double(0x7fc1)));
  for (int b = 0; b < 65536; ++b) {
    const uint16_t bits = static_cast<uint16_t>(b);
    if ((bits & 0x7f80) == 0x7f80 && (bits & 0x7f)) continue;  // NaN payloads
    ASSERT_EQ(double_to_bf16(bf16_to_double(bits)), bits) << "bits " << b;
  }
}

TEST(DoubleToF16, BasicsTiesAndDoubleRounding) {
  EXPECT_EQ(double_to_f16(1.0), 0x3c00);
  EXPECT_EQ(double_to_f16(-1.5), 0xbe00);
  EXPECT_EQ(double_to_f16(-0.0), 0x8000);
  EXPECT_EQ(double_to_f16(1.0 + std::ldexp(1.0, -11)), 0x3c00);      // tie, down to even
  EXPECT_EQ(double_to_f16(1.0 + 3 * std::ldexp(1.0, -11)), 0x3c02);  // tie, up to even
  // Same construction as for bf16: 2^-30 is lost by fp32, which would leave a tie and give 0x3c00.
  const double v = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -30);
  ASSERT_EQ(static_cast<float>(v), 1.0f + std::ldexp(1.0f, -11));
  EXPECT_EQ(double_to_f16(v), 0x3c01);
  EXPECT_EQ(double_to_f16(1.0 / 3.0), 0x3555);
}

TEST(DoubleToF16, OverflowSubnormalsNaN) {
  EXPECT_EQ(double_to_f16(65504.0), 0x7bff);
  EXPECT_EQ(double_to_f16(65519.99), 0x7bff);
  EXPECT_EQ(double_to_f16(std::nextafter(65520.0, 0.0)), 0x7bff);
  EXPECT_EQ(double_to_f16(65520.0), 0x7c00);
  EXPECT_EQ(double_to_f16(-65520.0), 0xfc00);
  EXPECT_EQ(double_to_f16(1e10), 0x7c00);
  EXPECT_EQ(double_to_f16(kInf), 0x7c00);
  EXPECT_EQ(double_to_f16(std::ldexp(1.0, -24)), 0x0001);
  EXPECT_EQ(double_to_f16(std::ldexp(1.0, -25)), 0x0000);  // tie with 0
  EXPECT_EQ(double_to_f16(std::nextafter(std::ldexp(1.0, -25), 1.0)), 0x0001);
  EXPECT_EQ(double_to_f16(std::ldexp(3.0, -25)), 0x0002);  // 1.5 ulp: tie between 1 and 2
  EXPECT_EQ(double_to_f16(std::ldexp(1023.0, -24)), 0x03ff);
  EXPECT_EQ(double_to_f16(std::ldexp(1023.5, -24)), 0x0400);  // up into the smallest normal
  EXPECT_EQ(double_to_f16(-std::ldexp(5.0, -24)), 0x8005);
  EXPECT_EQ(double_to_f16(kNan), 0x7e00);
  EXPECT_EQ(double_to_f16(-kNan), 0xfe00);
}

TEST(DoubleToF16, DecodeAndRoundTripAllCodes) {
  EXPECT_EQ(f16_to_double(0x3c00), 1.0);
  EXPECT_EQ(f16_to_double(0x0001), std::ldexp(1.0, -24));
  EXPECT_EQ(f16_to_double(0x03ff), std::ldexp(1023.0, -24));
  EXPECT_EQ(f16_to_double(0x7bff), 65504.0);
  EXPECT_EQ(f16_to_double(0x3555), 0.333251953125);
  EXPECT_EQ(f16_to_double(0xfc00), -kInf);
  EXPECT_TRUE(std::isnan(f16_to_double(0x7e00)));
  EXPECT_TRUE(std::signbit(f16_to_double(0x8000)));
  for (int b = 0; b < 65536; ++b) {
    const uint16_t bits = static_cast<uint16_t>(b);
    if ((bits & 0x7c00) == 0x7c00 && (bits & 0x3ff)) continue;
    ASSERT_EQ(double_to_f16(f16_to_double(bits)), bits) << "bits " << b;
  }
}

/// The result of rounding v must be a nearest neighbour, ties to the even code.
template <typename Round, typename Decode>
void expect_nearest(Round round, Decode decode, double v) {
  const uint16_t r = round(v);
  const double got = decode(r);
  const double err = std::fabs(got - v);
  for (int delta : {-1, 1}) {
    const uint16_t nb = static_cast<uint16_t>(r + delta);
    if (((nb ^ r) & 0x8000) != 0) continue;  // crossed the sign bit
    const double other = decode(nb);
    if (std::isnan(other) || std::isinf(other)) continue;
    const double other_err = std::fabs(other - v);
    ASSERT_LE(err, other_err) << "value " << v;
    if (err == other_err) {
      ASSERT_EQ(r & 1, 0) << "tie not to even for " << v;
    }
  }
}

TEST(DoubleToHalf, RandomValuesRoundToNearest) {
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  // Exponents stop one short of the top binade so no sample overflows (tested separately above).
  std::uniform_int_distribution<int> expo_f16(-26, 14), expo_bf16(-136, 126);
  for (int i = 0; i < 20000; ++i) {
    const double sign = (gen() & 1) ? -1.0 : 1.0;
    expect_nearest(double_to_f16, f16_to_double, sign * std::ldexp(mant(gen), expo_f16(gen)));
    expect_nearest(double_to_bf16, bf16_to_double, sign * std::ldexp(mant(gen), expo_bf16(gen)));
  }
}

TEST(UnitRoundoff, Values) {
  EXPECT_EQ(unit_roundoff(DType::kBF16), 0.00390625);
  EXPECT_EQ(unit_roundoff(DType::kF16), std::ldexp(1.0, -11));
  try {
    unit_roundoff(DType::kF32);
    FAIL() << "expected f8gemm::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

TEST(RoundOutput, BothTypes) {
  const std::vector<double> in = {1.0, -2.5, 65520.0,
                                  1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30)};
  std::vector<uint16_t> out(in.size());
  round_output(in.data(), in.size(), DType::kBF16, out.data());
  EXPECT_EQ(out, (std::vector<uint16_t>{0x3f80, 0xc020, 0x4780, 0x3f81}));
  round_output(in.data(), in.size(), DType::kF16, out.data());
  EXPECT_EQ(out, (std::vector<uint16_t>{0x3c00, 0xc100, 0x7c00, 0x3c04}));  // 2^-8 is exact in fp16
  EXPECT_THROW(round_output(in.data(), in.size(), DType::kF32, out.data()), Error);
}

// ---------------------------------------------------------------------------------------------
// reference_gemm

constexpr uint8_t kOne = 0x38, kTwo = 0x40, kMinusOne = 0xb8, kMinusTwo = 0xc0, kHalf = 0x30,
                  kThree = 0x44, kOneAndHalf = 0x3c;

/// B=2, M=2, N=8, K=16, built so each sum is easy by hand:
///   batch 0: X[0,0,:] = 1; X[0,1,k] = 2 (k < 8), -1 (k >= 8);
///            W[0,n,k] = 1 for k <= n, 3 at k = 8+n, else 0
///            -> acc[0,0,n] = (n+1) + 3 = n+4,  acc[0,1,n] = 2(n+1) - 3 = 2n-1,
///               |acc|[0,0,n] = n+4,            |acc|[0,1,n] = 2(n+1) + 3 = 2n+5.
///   batch 1: X[1,0,:] = 0.5; X[1,1,k] = -2 (k even), 0 (k odd);
///            W[1,n,2n] = -1, W[1,n,2n+1] = 1.5, else 0
///            -> acc[1,0,n] = -0.5 + 0.75 = 0.25, acc[1,1,n] = 2; |acc| = 1.25 and 2.
///   scales: xs = {0.5, 0.25 | 3, -1}, ws[0,n] = n+1, ws[1,n] = n-4.
struct SmallCase {
  static constexpr int64_t B = 2, M = 2, N = 8, K = 16;
  std::vector<uint8_t> x = std::vector<uint8_t>(B * M * K, 0);
  std::vector<uint8_t> w = std::vector<uint8_t>(B * N * K, 0);
  std::vector<float> xs = {0.5f, 0.25f, 3.0f, -1.0f};
  std::vector<float> ws = std::vector<float>(B * N);
  SmallCase() {
    for (int k = 0; k < K; ++k) {
      x[0 * K + k] = kOne;
      x[1 * K + k] = k < 8 ? kTwo : kMinusOne;
      x[2 * K + k] = kHalf;
      x[3 * K + k] = (k % 2 == 0) ? kMinusTwo : 0x00;
    }
    for (int n = 0; n < N; ++n) {
      for (int k = 0; k <= n; ++k) w[(0 * N + n) * K + k] = kOne;
      w[(0 * N + n) * K + 8 + n] = kThree;
      w[(1 * N + n) * K + 2 * n] = kMinusOne;
      w[(1 * N + n) * K + 2 * n + 1] = kOneAndHalf;
      ws[0 * N + n] = static_cast<float>(n + 1);
      ws[1 * N + n] = static_cast<float>(n - 4);
    }
  }
};

TEST(ReferenceGemm, HandComputedWithF32Bias) {
  SmallCase c;
  // bias[0,n] = -0.5 n, bias[1,n] = 0.25 n.
  std::vector<float> bias(16);
  for (int n = 0; n < 8; ++n) {
    bias[n] = -0.5f * n;
    bias[8 + n] = 0.25f * n;
  }
  std::vector<double> ref(32, -1.0), abs_ref(32, -1.0);
  reference_gemm(2, 2, 8, 16, c.x.data(), c.w.data(), c.xs.data(), c.ws.data(), bias.data(),
                 DType::kF32, ref.data(), abs_ref.data(), 1);
  // [0,0,n] = 0.5 (n+1)(n+4) - 0.5n;   [0,1,n] = 0.25 (n+1)(2n-1) - 0.5n.
  const double ref00[8] = {2, 4.5, 8, 12.5, 18, 24.5, 32, 40.5};
  const double ref01[8] = {-0.25, 0, 1.25, 3.5, 6.75, 11, 16.25, 22.5};
  // |.|: 0.5 (n+1)(n+4) + 0.5n and 0.25 (n+1)(2n+5) + 0.5n.
  const double abs00[8] = {2, 5.5, 10, 15.5, 22, 29.5, 38, 47.5};
  const double abs01[8] = {1.25, 4, 7.75, 12.5, 18.25, 25, 32.75, 41.5};
  // [1,0,n] = 3 (n-4) 0.25 + 0.25n = n - 3;  [1,1,n] = -(n-4) 2 + 0.25n = 8 - 1.75n.
  const double ref10[8] = {-3, -2, -1, 0, 1, 2, 3, 4};
  const double ref11[8] = {8, 6.25, 4.5, 2.75, 1, -0.75, -2.5, -4.25};
  // |.|: 3.75 |n-4| + 0.25n and 2 |n-4| + 0.25n.
  const double abs10[8] = {15, 11.5, 8, 4.5, 1, 5, 9, 13};
  const double abs11[8] = {8, 6.25, 4.5, 2.75, 1, 3.25, 5.5, 7.75};
  for (int n = 0; n < 8; ++n) {
    EXPECT_EQ(ref[0 * 8 + n], ref00[n]) << n;
    EXPECT_EQ(ref[1 * 8 + n], ref01[n]) << n;
    EXPECT_EQ(ref[2 * 8 + n], ref10[n]) << n;
    EXPECT_EQ(ref[3 * 8 + n], ref11[n]) << n;
    EXPECT_EQ(abs_ref[0 * 8 + n], abs00[n]) << n;
    EXPECT_EQ(abs_ref[1 * 8 + n], abs01[n]) << n;
    EXPECT_EQ(abs_ref[2 * 8 + n], abs10[n]) << n;
    EXPECT_EQ(abs_ref[3 * 8 + n], abs11[n]) << n;
  }
}

TEST(ReferenceGemm, HandComputedWithBf16BiasAndNoBias) {
  SmallCase c;
  // bf16 bits and their exact values: 1.5, -2.5, 0.10009765625 (bf16 of 0.1), 0.
  const uint16_t bits[4] = {0x3fc0, 0xc020, 0x3dcd, 0x0000};
  const double vals[4] = {1.5, -2.5, 0.10009765625, 0.0};
  std::vector<uint16_t> bias(16);
  for (int i = 0; i < 16; ++i) bias[i] = bits[i % 4];
  std::vector<double> ref(32), abs_ref(32), plain(32);
  reference_gemm(2, 2, 8, 16, c.x.data(), c.w.data(), c.xs.data(), c.ws.data(), bias.data(),
                 DType::kBF16, ref.data(), abs_ref.data(), 2);
  reference_gemm(2, 2, 8, 16, c.x.data(), c.w.data(), c.xs.data(), c.ws.data(), nullptr,
                 DType::kF32, plain.data(), nullptr, 0);
  for (int n = 0; n < 8; ++n) {
    const double bv0 = vals[n % 4], bv1 = vals[(8 + n) % 4];
    const double r00 = 0.5 * (n + 1) * (n + 4), r01 = 0.25 * (n + 1) * (2 * n - 1);
    const double r10 = 0.75 * (n - 4), r11 = -2.0 * (n - 4);
    EXPECT_EQ(ref[0 * 8 + n], r00 + bv0) << n;
    EXPECT_EQ(ref[1 * 8 + n], r01 + bv0) << n;
    EXPECT_EQ(ref[2 * 8 + n], r10 + bv1) << n;
    EXPECT_EQ(ref[3 * 8 + n], r11 + bv1) << n;
    EXPECT_EQ(abs_ref[2 * 8 + n], 3.75 * std::abs(n - 4) + std::fabs(bv1)) << n;
    EXPECT_EQ(plain[0 * 8 + n], r00) << n;
    EXPECT_EQ(plain[1 * 8 + n], r01) << n;
    EXPECT_EQ(plain[2 * 8 + n], r10) << n;
    EXPECT_EQ(plain[3 * 8 + n], r11) << n;
  }
}

TEST(ReferenceGemm, MatchesNaiveLoopOnRaggedShapes) {
  // Shapes that cut through every tile edge: M odd, N not a multiple of 64, K crossing the
  // 256-wide k slice. The sums are exact, so the tiled result must equal a naive loop bit for bit.
  std::mt19937 gen(3);
  const int64_t B = 2, M = 37, N = 70, K = 300;
  std::vector<uint8_t> x(B * M * K), w(B * N * K);
  auto finite_code = [&gen]() {
    const int c = static_cast<int>(gen() & 0xff);
    return static_cast<uint8_t>(is_nan_code(c) ? 0x38 : c);
  };
  for (auto& v : x) v = finite_code();
  for (auto& v : w) v = finite_code();
  std::vector<float> xs(B * M), ws(B * N), bias(B * N);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (auto& v : xs) v = dist(gen);
  for (auto& v : ws) v = dist(gen);
  for (auto& v : bias) v = dist(gen);
  std::vector<double> ref(B * M * N), abs_ref(B * M * N), ref1(B * M * N);
  reference_gemm(B, M, N, K, x.data(), w.data(), xs.data(), ws.data(), bias.data(), DType::kF32,
                 ref.data(), abs_ref.data(), 3);
  reference_gemm(B, M, N, K, x.data(), w.data(), xs.data(), ws.data(), bias.data(), DType::kF32,
                 ref1.data(), nullptr, 1);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double p =
              reference_e4m3(x[(b * M + i) * K + k]) * reference_e4m3(w[(b * N + j) * K + k]);
          acc += p;
          mag += std::fabs(p);
        }
        const double s = static_cast<double>(xs[b * M + i]) * ws[b * N + j];
        const int64_t o = (b * M + i) * N + j;
        ASSERT_EQ(ref[o], s * acc + bias[b * N + j]) << b << "," << i << "," << j;
        ASSERT_EQ(abs_ref[o], std::fabs(s) * mag + std::fabs(bias[b * N + j]))
            << b << "," << i << "," << j;
        ASSERT_EQ(ref1[o], ref[o]);
      }
    }
  }
}

TEST(ReferenceGemm, RejectsBadBiasDtype) {
  SmallCase c;
  std::vector<float> bias(16, 0.0f);
  std::vector<double> ref(32);
  EXPECT_THROW(reference_gemm(2, 2, 8, 16, c.x.data(), c.w.data(), c.xs.data(), c.ws.data(),
                              bias.data(), DType::kF16, ref.data()),
               Error);
}

// ---------------------------------------------------------------------------------------------
// preshuffle

/// The header's layout, written out independently of the implementation.
int64_t shuffled_offset(int64_t b, int64_t row, int64_t col, int64_t n, int64_t k) {
  const int64_t kb_count = (k + 127) / 128;
  const int64_t kb = col / 128, c = col % 128, nb = row / 8, r = row % 8;
  return ((b * kb_count + kb) * (n / 8) + nb) * 1024 + r * 128 + (((c / 16) ^ r) * 16) + (c % 16);
}

TEST(Preshuffle, LayoutAndRoundTrip) {
  std::mt19937 gen(5);
  const int64_t shapes[][3] = {
      {1, 8, 16}, {1, 16, 144}, {2, 24, 272}, {3, 8, 128}, {1, 1280, 8192}};
  for (const auto& s : shapes) {
    const int64_t B = s[0], N = s[1], K = s[2], KB = (K + 127) / 128;
    std::vector<uint8_t> w(B * N * K);
    for (auto& v : w) v = static_cast<uint8_t>(gen() | 1);  // odd: never equal to padding 0
    const size_t total = static_cast<size_t>(B * KB * (N / 8) * 1024);
    std::vector<uint8_t> out(total, 0xcc), back(w.size(), 0);
    preshuffle_host(w.data(), B, N, K, out.data());
    std::vector<uint8_t> expected(total, 0);  // padding (k >= K) must be zero
    for (int64_t b = 0; b < B; ++b)
      for (int64_t row = 0; row < N; ++row)
        for (int64_t col = 0; col < K; ++col)
          expected[shuffled_offset(b, row, col, N, K)] = w[(b * N + row) * K + col];
    ASSERT_TRUE(out == expected) << "layout differs for B=" << B << " N=" << N << " K=" << K;
    unshuffle_host(out.data(), B, N, K, back.data());
    ASSERT_TRUE(back == w) << "round trip differs for B=" << B << " N=" << N << " K=" << K;
  }
}

TEST(Preshuffle, SpotBytesAndPadding) {
  // B=1, N=16, K=144: KB=2. W[0,9,130] is in slab (kb=1, nb=1), r=1, c=2, 16-byte chunk 0 ^ 1 = 1:
  // ((0*2+1)*2+1)*1024 + 1*128 + 1*16 + 2 = 3218.
  const int64_t N = 16, K = 144;
  std::vector<uint8_t> w(N * K, 0);
  w[9 * K + 130] = 0xab;
  w[0 * K + 0] = 0x11;    // slab 0, r 0, chunk 0 -> offset 0
  w[7 * K + 127] = 0x22;  // slab (0, 0), r 7, c 127: chunk 7 ^ 7 = 0 -> 7*128 + 15 = 911
  std::vector<uint8_t> out(2 * 2 * 1024, 0xcc);
  preshuffle_host(w.data(), 1, N, K, out.data());
  EXPECT_EQ(out[3218], 0xab);
  EXPECT_EQ(out[0], 0x11);
  EXPECT_EQ(out[911], 0x22);
  size_t nonzero = 0;
  for (uint8_t v : out) nonzero += v != 0;
  EXPECT_EQ(nonzero, 3u);

  // With W all ones, the k-block 1 slab for rows 0..7 holds 16 real bytes per row (c < 16, which
  // row r stores at chunk 0 ^ r) and 112 zero padding bytes.
  std::fill(w.begin(), w.end(), 0x38);
  preshuffle_host(w.data(), 1, N, K, out.data());
  const uint8_t* slab = out.data() + 2 * 1024;  // (kb=1, nb=0)
  for (int r = 0; r < 8; ++r) {
    for (int pos = 0; pos < 128; ++pos) {
      const bool real = pos / 16 == (0 ^ r);
      EXPECT_EQ(slab[r * 128 + pos], real ? 0x38 : 0x00) << "r " << r << " pos " << pos;
    }
  }
}

TEST(Preshuffle, RejectsBadShapes) {
  std::vector<uint8_t> w(12 * 128), out(2 * 1024 * 2);
  try {
    preshuffle_host(w.data(), 1, 12, 128, out.data());
    FAIL() << "expected f8gemm::Error for N=12";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("n must be"), std::string::npos) << e.what();
  }
  EXPECT_THROW(preshuffle_host(w.data(), 1, 8, 24, out.data()), Error);
  EXPECT_THROW(unshuffle_host(out.data(), 1, 12, 128, w.data()), Error);
  EXPECT_THROW(unshuffle_host(out.data(), 1, 8, 100, w.data()), Error);
}

// ---------------------------------------------------------------------------------------------
// quantize_rows_host

TEST(QuantizeRows, Fp32HandCase) {
  // amax 3.5: 448 / 3.5 = 128 exactly, so 1 -> 128 (0x70), 0.25 -> 32 (0x60), 2 -> 256 (0x78).
  const std::vector<float> in = {1.0f, -3.5f, 0.25f, 2.0f};
  std::vector<uint8_t> q(4);
  float scale = 0;
  quantize_rows_host(in.data(), DType::kF32, 1, 4, 1e-12f, 0.0f, q.data(), &scale);
  EXPECT_EQ(scale, 3.5f / 448.0f);
  EXPECT_EQ(q, (std::vector<uint8_t>{0x70, 0xfe, 0x60, 0x78}));
}

TEST(QuantizeRows, ScaleUpperBoundClamps) {
  // amax 10 clamped to 5: inv = 89.6, 10 and 5 saturate to 448, 2.5 -> 224 (0x76), -1 -> -89.6
  // between 88 (0xeb) and 96: 88.
  const std::vector<float> in = {10.0f, 5.0f, 2.5f, -1.0f};
  std::vector<uint8_t> q(4);
  float scale = 0;
  quantize_rows_host(in.data(), DType::kF32, 1, 4, 1e-12f, 5.0f, q.data(), &scale);
  EXPECT_EQ(scale, 5.0f / 448.0f);
  EXPECT_EQ(q, (std::vector<uint8_t>{0x7e, 0x7e, 0x76, 0xeb}));
}

TEST(QuantizeRows, MultipliesByReciprocalNotDividesByScale) {
  // Rows found by search where x * (448 / amax) and x / (amax / 448) round differently in fp32 and
  // land on opposite sides of an e4m3 midpoint, so only the documented formula passes.
  // Row 0: x * inv is exactly 19 (tie 18/20 -> 20 = 0x5a); x / scale is 18.999998 (-> 18 = 0x59).
  // Row 1: x * inv is 17.000002 (-> 18 = 0x59); x / scale is exactly 17 (tie -> 16 = 0x58).
  const std::vector<float> in = {0x1.ff478p+0f, 0x1.5af084p-4f, 0x1.00077ep+0f, 0x1.36e488p-5f};
  std::vector<uint8_t> q(4);
  float scale[2];
  quantize_rows_host(in.data(), DType::kF32, 2, 2, 1e-12f, 0.0f, q.data(), scale);
  EXPECT_EQ(q, (std::vector<uint8_t>{0x7e, 0x5a, 0x7e, 0x59}));
}

TEST(QuantizeRows, ZeroRowUsesEps) {
  const std::vector<float> in(64, 0.0f);
  std::vector<uint8_t> q(64, 0xcc);
  float scale[1] = {0};
  quantize_rows_host(in.data(), DType::kF32, 1, 64, 1e-6f, 0.0f, q.data(), scale);
  EXPECT_EQ(scale[0], 1e-6f / 448.0f);
  for (uint8_t v : q) EXPECT_EQ(v, 0x00);
}

// eps is a floor on amax, not only a stand-in for a zero row: a row whose amax is below eps is
// scaled by eps (d = max(amax, eps)), so its values quantise as small codes, not up to 448.
TEST(QuantizeRows, RowBelowEpsIsScaledByEps) {
  const std::vector<float> in = {1e-7f, -5e-8f, 0.0f, 2.5e-8f};
  std::vector<uint8_t> q(4, 0xcc);
  float scale = 0;
  const float eps = 1e-6f;
  quantize_rows_host(in.data(), DType::kF32, 1, 4, eps, 0.0f, q.data(), &scale);
  EXPECT_EQ(scale, eps / 448.0f);
  const float inv = 448.0f / eps;
  for (size_t c = 0; c < in.size(); ++c) {
    EXPECT_EQ(q[c], float_to_e4m3(in[c] * inv)) << "column " << c;
  }
  EXPECT_LT(q[0], 0x68);  // 1e-7 * 448 / 1e-6 = 44.8 (0x63), far below 448 (0x7e)
}

TEST(QuantizeRows, Bf16AndFp16Inputs) {
  // bf16 {2, -3, 1, 0.25}: amax 3, inv = 448/3 = 149.33: 298.7 -> 288 (0x79), -3 -> 0xfe,
  // 149.3 -> 144 (0x71), 37.3 -> 36 (0x61).
  const std::vector<uint16_t> bf = {0x4000, 0xc040, 0x3f80, 0x3e80};
  std::vector<uint8_t> q(4);
  float scale = 0;
  quantize_rows_host(bf.data(), DType::kBF16, 1, 4, 1e-12f, 0.0f, q.data(), &scale);
  EXPECT_EQ(scale, 3.0f / 448.0f);
  EXPECT_EQ(q, (std::vector<uint8_t>{0x79, 0xfe, 0x71, 0x61}));
  // fp16 {1, -5, 0.5, 0}: amax 5, inv = 89.6: 89.6 -> 88 (0x6b), -448 (0xfe), 44.8 -> 44 (0x63).
  const std::vector<uint16_t> h = {0x3c00, 0xc500, 0x3800, 0x0000};
  quantize_rows_host(h.data(), DType::kF16, 1, 4, 1e-12f, 0.0f, q.data(), &scale);
  EXPECT_EQ(scale, 5.0f / 448.0f);
  EXPECT_EQ(q, (std::vector<uint8_t>{0x6b, 0xfe, 0x63, 0x00}));
  EXPECT_THROW(quantize_rows_host(h.data(), DType::kE4M3, 1, 4, 1e-12f, 0.0f, q.data(), &scale),
               Error);
}

TEST(QuantizeRows, NaNElementDoesNotPoisonRow) {
  const std::vector<float> in = {1.0f, kNanF, -2.0f};
  std::vector<uint8_t> q(3);
  float scale = 0;
  quantize_rows_host(in.data(), DType::kF32, 1, 3, 1e-12f, 0.0f, q.data(), &scale);
  EXPECT_EQ(scale, 2.0f / 448.0f);
  EXPECT_EQ(q, (std::vector<uint8_t>{0x76, 0x7f, 0xfe}));  // inv = 224: 1 -> 224 = 1.75 * 2^7
}

TEST(QuantizeRows, RandomRowsExactFormulaAndHalfUlpError) {
  std::mt19937 gen(9);
  const int64_t rows = 64, cols = 513;
  std::vector<float> in(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    // Rows of very different magnitudes, 2^-20 .. 2^20.
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const float mag = std::ldexp(1.0f, static_cast<int>(r % 41) - 20);
    for (int64_t c = 0; c < cols; ++c) in[r * cols + c] = dist(gen) * mag;
  }
  std::vector<uint8_t> q(rows * cols);
  std::vector<float> scale(rows);
  const float eps = 1e-12f;
  quantize_rows_host(in.data(), DType::kF32, rows, cols, eps, 0.0f, q.data(), scale.data());
  for (int64_t r = 0; r < rows; ++r) {
    float amax = 0;
    for (int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(in[r * cols + c]));
    ASSERT_EQ(scale[r], amax / 448.0f) << "row " << r;
    const float inv = 448.0f / amax;
    for (int64_t c = 0; c < cols; ++c) {
      const float x = in[r * cols + c];
      ASSERT_EQ(q[r * cols + c], float_to_e4m3(x * inv)) << r << "," << c;
      if (std::fabs(x) == amax) {
        EXPECT_EQ(q[r * cols + c], x > 0 ? 0x7e : 0xfe);
      }
      // Half an e4m3 ulp is at most 2^-4 of |x| for normals, and 2^-10 * scale in the
      // subnormal range; 1e-5 relative covers the fp32 roundings of inv and scale.
      const double deq = static_cast<double>(e4m3_to_float(q[r * cols + c])) * scale[r];
      const double bound = (std::fabs(x) * 0.0625 + std::ldexp(scale[r], -10)) * (1 + 1e-5);
      ASSERT_LE(std::fabs(deq - x), bound) << r << "," << c;
    }
  }
}

}  // namespace
}  // namespace f8gemm::numerics
