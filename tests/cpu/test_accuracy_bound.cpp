/// \brief The accuracy bounds (numerics.hpp, README "Accuracy") against the tensor-core model and
/// the recorded GPU runs: correct results pass with the margin the derivation claims, and a
/// result with one corrupted element fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "common/test_util.hpp"
#include "numerics.hpp"
#include "reference.hpp"

namespace f8gemm {
namespace {

/// gamma as it stood before the fast-mode cap (the runs in tests/data/ were checked with it):
/// every k32 step of the chain charged 2^-13 * abs_ref.
double gamma_before_cap(int64_t k, bool fast) {
  const double steps = fast ? double((k + 31) / 32) : 4.0;
  return steps * 0x1p-13 + double((k + 127) / 128) * 0x1p-24;
}

/// One random problem (normal e4m3 operands, log-uniform scales, as the GPU tests draw them), its
/// fp64 reference and the emulated tensor-core output.
struct Emulated {
  int64_t m = 0, n = 0, k = 0;
  bool fast = true;
  std::vector<double> ref, abs_ref;
  std::vector<uint16_t> y;

  Emulated(uint64_t seed, int64_t m_, int64_t n_, int64_t k_, bool fast_)
      : m(m_), n(n_), k(k_), fast(fast_) {
    std::mt19937_64 rng(seed);
    const auto x = test::random_e4m3(rng, size_t(m * k));
    const auto w = test::random_e4m3(rng, size_t(n * k));
    const auto xs = test::random_scales(rng, size_t(m));
    const auto ws = test::random_scales(rng, size_t(n));
    ref.resize(size_t(m * n));
    abs_ref.resize(size_t(m * n));
    numerics::reference_gemm(1, m, n, k, x.data(), w.data(), xs.data(), ws.data(), nullptr,
                             DType::kF32, ref.data(), abs_ref.data());
    y = test::emulated_tensor_core_gemm(1, m, n, k, x.data(), w.data(), xs.data(), ws.data(),
                                        DType::kBF16, fast);
  }
  test::CheckStats check(const std::vector<uint16_t>& out, double gamma) const {
    return test::compare_to_reference(ref, abs_ref, out.data(), DType::kBF16, gamma);
  }
  test::CheckStats check(const std::vector<uint16_t>& out) const {
    return check(out, numerics::accumulation_gamma(k, fast));
  }
  /// The element whose bound is tightest relative to its own value: largest |ref| / bound.
  size_t tightest_relative() const {
    const double gamma = numerics::accumulation_gamma(k, fast);
    size_t best = 0;
    double best_q = 0.0;
    for (size_t i = 0; i < ref.size(); ++i) {
      const double q =
          std::fabs(ref[i]) / numerics::element_bound(ref[i], abs_ref[i], DType::kBF16, gamma);
      if (q > best_q) best_q = q, best = i;
    }
    return best;
  }
  /// The element with the smallest bound.
  size_t tightest_absolute() const {
    const double gamma = numerics::accumulation_gamma(k, fast);
    size_t best = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      if (numerics::element_bound(ref[i], abs_ref[i], DType::kBF16, gamma) <
          numerics::element_bound(ref[best], abs_ref[best], DType::kBF16, gamma)) {
        best = i;
      }
    }
    return best;
  }
};

/// One bf16 ulp of |v|'s binade.
double bf16_ulp(double v) { return std::ldexp(1.0, std::ilogb(v) - 7); }

/// y with element i moved by `delta`, rounded back into bf16 (away from its value, so that the
/// move is at least |delta| minus half an ulp).
std::vector<uint16_t> corrupted(const std::vector<uint16_t>& y, size_t i, double delta) {
  std::vector<uint16_t> bad = y;
  bad[i] = numerics::double_to_bf16(numerics::bf16_to_double(y[i]) + delta);
  return bad;
}

// ---- the formula --------------------------------------------------------------------------------

TEST(AccuracyBound, FastModeStepTermIsClampedBetween4And14) {
  // Between 4 and 14 steps the fast-mode gamma is the step term (plus the fp32 accumulator's
  // 2^-23 per step); up to K = 128 it is precise mode's 4 steps, and from K = 448 it stays at
  // 14 * 2^-13, 18x tighter than before at K = 8192.
  EXPECT_EQ(numerics::accumulation_gamma(32, true), 4 * 0x1p-13 + 0x1p-23);
  EXPECT_EQ(numerics::accumulation_gamma(160, true), 5 * 0x1p-13 + 5 * 0x1p-23);
  EXPECT_EQ(numerics::accumulation_gamma(256, true), 8 * 0x1p-13 + 8 * 0x1p-23);
  EXPECT_EQ(numerics::accumulation_gamma(448, true), 14 * 0x1p-13 + 14 * 0x1p-23);
  EXPECT_EQ(numerics::accumulation_gamma(8192, true), 14 * 0x1p-13 + 256 * 0x1p-23);
  EXPECT_GT(gamma_before_cap(8192, true) / numerics::accumulation_gamma(8192, true), 17.0);
  // Precise mode: 4 chained steps per 128-deep block, blocks added in fp32.
  EXPECT_EQ(numerics::accumulation_gamma(8192, false),
            4 * 0x1p-13 + 4 * 0x1p-23 + 64 * 0x1p-24);
  // The RMS bound: rounding alone in precise mode, the drift added in quadrature in fast mode.
  EXPECT_NEAR(numerics::rel_rms_bound(8192, false, DType::kBF16), 1.83e-3, 0.01e-3);
  EXPECT_NEAR(numerics::rel_rms_bound(8192, false, DType::kF16), 4.30e-4, 0.01e-4);
  EXPECT_NEAR(numerics::rel_rms_bound(8192, true, DType::kBF16), 3.44e-3, 0.01e-3);
  EXPECT_NEAR(numerics::rel_rms_bound(1024, true, DType::kBF16), 2.07e-3, 0.01e-3);
}

// ---- the model's results pass -----------------------------------------------------------------

TEST(AccuracyBound, EmulatedTensorCoresPassBothModes) {
  struct Case {
    int64_t m, n, k;
  };
  for (const Case& c : {Case{32, 64, 8192}, Case{64, 128, 1024}, Case{64, 128, 256},
                        Case{128, 128, 64}}) {
    for (bool fast : {true, false}) {
      const Emulated e(uint64_t(c.k) * 2 + fast, c.m, c.n, c.k, fast);
      const test::CheckStats s = e.check(e.y);
      std::cout << "[ emulated ] M,N,K=" << c.m << "," << c.n << "," << c.k
                << (fast ? " fast " : " precise ") << s << "\n";
      SCOPED_TRACE("M,N,K=" + std::to_string(c.m) + "," + std::to_string(c.n) + "," +
                   std::to_string(c.k) + (fast ? " fast" : " precise"));
      EXPECT_TRUE(numerics::within_bounds(s.rel_rms, s.max_ratio, s.nonfinite,
                                          int64_t(e.y.size()), c.k, fast, DType::kBF16))
          << s << " rel_rms bound " << numerics::rel_rms_bound(c.k, fast, DType::kBF16);
      // Tight enough to mean something: the worst element uses a sizable part of its bound.
      EXPECT_GT(s.max_ratio, 0.1) << s;
    }
  }
}

// ---- mutations: one corrupted element fails ---------------------------------------------------

TEST(AccuracyBound, EightUlpsInOneElementFail) {
  for (int64_t k : {int64_t(8192), int64_t(1024)}) {
    for (bool fast : {true, false}) {
      SCOPED_TRACE("K=" + std::to_string(k) + (fast ? " fast" : " precise"));
      const Emulated e(77 + uint64_t(k) + fast, 32, 64, k, fast);
      ASSERT_LE(e.check(e.y).max_ratio, 1.0);
      const size_t i = e.tightest_relative();
      const double y_i = numerics::bf16_to_double(e.y[i]);
      const auto bad = corrupted(e.y, i, std::copysign(8 * bf16_ulp(y_i), y_i));
      EXPECT_GT(e.check(bad).max_ratio, 1.0) << "8 ulps on element " << i << " (" << y_i << ")";
      if (fast && k == 8192) {
        // Before the cap, gamma was 256 * 2^-13 here and the same corruption passed.
        EXPECT_LE(e.check(bad, gamma_before_cap(k, fast)).max_ratio, 1.0);
      }
    }
  }
}

TEST(AccuracyBound, OneUlpOfTheLargestValueFails) {
  // An error the size of one ulp of the largest output, in the element with the smallest bound:
  // caught wherever gamma * abs_ref is below that ulp, i.e. fast mode up to K ~ 512 and precise
  // mode up to K ~ 4096 for unit-normal operands.
  struct Case {
    int64_t k;
    bool fast;
  };
  for (const Case& c : {Case{256, true}, Case{1024, false}, Case{4096, false}}) {
    SCOPED_TRACE("K=" + std::to_string(c.k) + (c.fast ? " fast" : " precise"));
    const Emulated e(5 + uint64_t(c.k) + c.fast, 32, 64, c.k, c.fast);
    ASSERT_LE(e.check(e.y).max_ratio, 1.0);
    double largest = 0.0;
    for (uint16_t v : e.y) largest = std::max(largest, std::fabs(numerics::bf16_to_double(v)));
    const size_t i = e.tightest_absolute();
    const auto bad = corrupted(e.y, i, bf16_ulp(largest));
    EXPECT_GT(e.check(bad).max_ratio, 1.0) << "one ulp of " << largest << " on element " << i;
  }
}

TEST(AccuracyBound, ANonFiniteElementFails) {
  // compare_to_reference leaves a NaN or inf out of max_ratio and rel_rms (it has no ratio) and
  // counts it: the count alone must fail the check, as a poisoned element left unwritten does.
  const Emulated e(11, 32, 64, 256, true);
  const test::CheckStats good = e.check(e.y);
  ASSERT_TRUE(numerics::within_bounds(good.rel_rms, good.max_ratio, good.nonfinite,
                                      int64_t(e.y.size()), e.k, e.fast, DType::kBF16))
      << good;
  for (uint16_t poison : {uint16_t(0x7fc0), uint16_t(0xff80)}) {  // NaN, -inf
    std::vector<uint16_t> bad = e.y;
    bad[bad.size() / 3] = poison;
    const test::CheckStats s = e.check(bad);
    EXPECT_EQ(s.nonfinite, 1) << s;
    EXPECT_LE(s.max_ratio, 1.0) << s;
    EXPECT_FALSE(numerics::within_bounds(s.rel_rms, s.max_ratio, s.nonfinite,
                                         int64_t(bad.size()), e.k, e.fast, DType::kBF16))
        << "poison " << poison << " " << s;
  }
}

TEST(AccuracyBound, OneFp16SubnormalUlpOnAnExactZeroFails) {
  // Where the reference is exactly 0 (abs_ref 0: every product 0), the bound is the subnormal
  // slack alone, half of fp16's smallest subnormal 2^-24: the right output 0 passes, 2^-24 fails.
  const double gamma = numerics::accumulation_gamma(1024, true);
  EXPECT_EQ(numerics::element_bound(0.0, 0.0, DType::kF16, gamma), 0x1p-25);
  const std::vector<double> ref = {0.0, 1.0}, abs_ref = {0.0, 1.0};
  const std::vector<uint16_t> right = {0x0000, 0x3c00}, off = {0x0001, 0x3c00};
  EXPECT_EQ(test::compare_to_reference(ref, abs_ref, right.data(), DType::kF16, gamma).max_ratio,
            0.0);
  EXPECT_GT(test::compare_to_reference(ref, abs_ref, off.data(), DType::kF16, gamma).max_ratio,
            1.0);
}

// ---- every recorded GPU run stays inside the bounds, with margin --------------------------------

TEST(AccuracyBound, HoldsForEveryRunInTheRecordedGpuLog) {
  // tests/data/gpu-tests-2026-11-30.log: the H200 run of the GPU tests, checked with
  // gamma_before_cap. Its max_ratio r bounds the ratio under the new gamma by
  // r * gamma_before / gamma (the rounding term u*|ref| is common to both). Fast mode: at most
  // 0.55 (a margin of 1.8x over the worst run) and, at K = 8192 where the accumulation term
  // dominates, at least 0.2 (the bound is not loose). Precise mode keeps its gamma; its worst run
  // (0.62 at K = 1024) is mostly the output's rounding, which u*|ref| bounds exactly.
  const std::string path =
      std::string(F8GEMM_SOURCE_DIR) + "/tests/data/gpu-tests-2026-11-30.log";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "cannot read " << path;
  const std::regex line_re(
      R"(\[ accuracy \] B,M,N,K=(\d+),(\d+),(\d+),(\d+) \S+ (fast|precise) bfloat16 \{rel_rms=([0-9.e+-]+), max_ratio=([0-9.e+-]+), nonfinite=0\})");
  std::string line;
  int runs = 0;
  double worst_fast_8192 = 0.0;
  while (std::getline(in, line)) {
    std::smatch f;
    if (!std::regex_search(line, f, line_re)) continue;
    ++runs;
    const int64_t b = std::stoll(f[1]), m = std::stoll(f[2]), n = std::stoll(f[3]);
    const int64_t k = std::stoll(f[4]);
    const bool fast = f[5] == "fast";
    const double rel_rms = std::stod(f[6]), ratio = std::stod(f[7]);
    const double gamma = numerics::accumulation_gamma(k, fast);
    const double upper = ratio * std::max(1.0, gamma_before_cap(k, fast) / gamma);
    EXPECT_LE(upper, fast ? 0.55 : 0.7) << line;
    EXPECT_TRUE(numerics::within_bounds(rel_rms, upper, 0, b * m * n, k, fast, DType::kBF16))
        << line << " rel_rms bound " << numerics::rel_rms_bound(k, fast, DType::kBF16);
    if (fast && k == 8192) worst_fast_8192 = std::max(worst_fast_8192, upper);
  }
  EXPECT_EQ(runs, 36) << "9 shapes (long K, 8 MSLK) x 2 layouts x 2 modes in " << path;
  EXPECT_GE(worst_fast_8192, 0.2);
}

}  // namespace
}  // namespace f8gemm
