/// \brief The seeded random operands (testing/random.hpp) hold their bytes: the CLI's bench, run
/// and demo draw their inputs from them, and the committed logs quote output hashes of those
/// inputs (docs/logs/2026-11-30-precise-hash.log). The hashes below were taken from the
/// generators as they were in tools/bench_util.cpp before they moved to testing/.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "numerics.hpp"
#include "random.hpp"

namespace f8gemm::test {
namespace {

/// FNV-1a 64 of `bytes` bytes.
uint64_t fnv1a(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// Sizes past 2 Mi pairs or values run on several threads; odd sizes end on half a pair.
TEST(Random, E4m3CodesKeepTheirBytes) {
  struct Case {
    uint64_t seed;
    size_t count;
    float stddev;
    uint64_t hash;
  };
  for (const Case& c : {Case{2, 3000001, 100.0f, 0x384a3eeecc24f368ull},
                        Case{0xBEEF1, 4097, 100.0f, 0xe937dbf811d5c0daull},
                        Case{7, 1000, 1.0f, 0xff2fc3dd039583a7ull}}) {
    std::vector<uint8_t> codes(c.count);
    random_e4m3_codes(codes.data(), codes.size(), c.seed, c.stddev);
    EXPECT_EQ(fnv1a(codes.data(), codes.size()), c.hash) << "seed " << c.seed << ", " << c.count;
  }
}

TEST(Random, UniformF32KeepsItsBytes) {
  struct Case {
    uint64_t seed;
    size_t count;
    float lo, hi;
    uint64_t hash;
  };
  for (const Case& c : {Case{1, 2500001, -1.0f, 1.0f, 0x9535ca5a333bb02dull},
                        Case{3, 1000, 0.5e-3f, 1.5e-3f, 0x6a1c8bebd7c38e4bull},
                        Case{2, 4096, -0.5f, 0.5f, 0xcc47562b05f738c1ull}}) {
    std::vector<float> values(c.count);
    random_uniform_f32(values.data(), values.size(), c.seed, c.lo, c.hi);
    EXPECT_EQ(fnv1a(values.data(), values.size() * sizeof(float)), c.hash)
        << "seed " << c.seed << ", " << c.count;
  }
}

TEST(Random, E4m3CodesAreNeverNanAndSpreadBothSigns) {
  std::vector<uint8_t> codes(1 << 16);
  random_e4m3_codes(codes.data(), codes.size(), 11, 100.0f);
  size_t negative = 0;
  for (uint8_t c : codes) {
    EXPECT_NE(c & 0x7f, 0x7f) << "NaN code";
    negative += c >> 7;
  }
  EXPECT_GT(negative, codes.size() * 45 / 100);
  EXPECT_LT(negative, codes.size() * 55 / 100);
}

TEST(Random, TheTestsFormDrawsItsSeedFromTheirGenerator) {
  std::mt19937_64 a(5), b(5);
  const auto codes = random_e4m3(a, 777, 2.0);
  std::vector<uint8_t> expect(777);
  random_e4m3_codes(expect.data(), expect.size(), b(), 2.0f);
  EXPECT_EQ(codes, expect);
  EXPECT_EQ(a(), b()) << "one draw from the caller's generator";
}

// The normal floats that `tune` quantises per row: their moments are those of normal(0, stddev).
// Both generators share one Box-Muller loop by construction, so the rounding check only guards
// that sharing (the codes' bytes are held fixed above).
TEST(Random, NormalFloatsAreTheCodesBeforeRounding) {
  const size_t n = 200001;  // odd: the last pair's second value is dropped
  std::vector<float> values(n);
  random_normal_f32(values.data(), n, 42, 100.0f);
  std::vector<uint8_t> codes(n);
  random_e4m3_codes(codes.data(), n, 42, 100.0f);
  double sum = 0.0, sum_sq = 0.0;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(numerics::float_to_e4m3(values[i]), codes[i]) << i;
    sum += values[i];
    sum_sq += double(values[i]) * values[i];
  }
  // Mean within 4 standard errors (100 / sqrt(n) = 0.22), standard deviation within 1%.
  EXPECT_NEAR(sum / double(n), 0.0, 0.9);
  EXPECT_NEAR(std::sqrt(sum_sq / double(n)), 100.0, 1.0);
}

}  // namespace
}  // namespace f8gemm::test
