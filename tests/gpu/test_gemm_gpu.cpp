/// \brief GPU tests of gemm()/batched_gemm()/preshuffle()/unshuffle()/quantize_rows() on an sm_90 GPU against the fp64 references (host and GPU); every test skips without one.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <iostream>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "check.hpp"
#include "codegen.hpp"
#include "common/test_util.hpp"
#include "config.hpp"
#include "f8gemm/f8gemm.hpp"
#include "numerics.hpp"
#include "reference_gpu.hpp"
#include "trace_summary.hpp"

namespace f8gemm {
namespace {

using test::CheckStats;
using test::DeviceBuffer;

/// The accumulation term of the element bound for this K and mode (numerics::accumulation_gamma,
/// README "Accuracy").
double gamma_for(int64_t k, bool fast) { return numerics::accumulation_gamma(k, fast); }

std::string describe(int64_t b, int64_t m, int64_t n, int64_t k, WeightLayout layout, bool fast,
                     DType out) {
  std::ostringstream os;
  os << "B,M,N,K=" << b << "," << m << "," << n << "," << k << " "
     << (layout == WeightLayout::kPlain ? "plain" : "preshuffled") << " "
     << (fast ? "fast" : "precise") << " " << to_string(out);
  return os.str();
}

/// Both bounds of README "Accuracy" (numerics.hpp): every element within its bound, and the
/// relative RMS error within rel_rms_bound from numerics::kMinCountForRms outputs on.
void expect_accurate(const CheckStats& s, int64_t k, DType out, int64_t count, bool fast,
                     const std::string& what) {
  EXPECT_EQ(s.nonfinite, 0) << what << " " << s;
  EXPECT_LE(s.max_ratio, 1.0) << what << " " << s;
  if (count >= numerics::kMinCountForRms) {
    EXPECT_LE(s.rel_rms, numerics::rel_rms_bound(k, fast, out)) << what << " " << s;
  }
}

/// Host operands of one batched problem and (lazily) its fp64 reference.
struct HostGemm {
  int64_t b = 0, m = 0, n = 0, k = 0;
  std::vector<uint8_t> x, w;  // [B,M,K], plain [B,N,K]
  std::vector<float> xs, ws;  // [B,M], [B,N]
  bool has_bias = false;
  DType bias_dtype = DType::kF32;
  std::vector<float> bias_f32;
  std::vector<uint16_t> bias_bf16;
  std::vector<double> ref, abs_ref;

  const void* bias_ptr() const {
    if (!has_bias) return nullptr;
    return bias_dtype == DType::kF32 ? static_cast<const void*>(bias_f32.data())
                                     : static_cast<const void*>(bias_bf16.data());
  }
  int64_t out_count() const { return b * m * n; }

  const HostGemm& reference() {
    if (ref.empty() && out_count() > 0) {
      ref.resize(size_t(out_count()));
      abs_ref.resize(size_t(out_count()));
      numerics::reference_gemm(b, m, n, k, x.data(), w.data(), xs.data(), ws.data(), bias_ptr(),
                               bias_dtype, ref.data(), abs_ref.data());
    }
    return *this;
  }
  CheckStats check(const std::vector<uint16_t>& y, DType out, bool fast) {
    reference();
    return test::compare_to_reference(ref, abs_ref, y.data(), out, gamma_for(k, fast));
  }
};

/// Random normal e4m3 operands (never zeros), log-uniform scales, optional bias of ~|y| size.
HostGemm random_gemm(std::mt19937_64& rng, int64_t b, int64_t m, int64_t n, int64_t k,
                     bool has_bias = false, DType bias_dtype = DType::kF32) {
  HostGemm h;
  h.b = b;
  h.m = m;
  h.n = n;
  h.k = k;
  h.x = test::random_e4m3(rng, size_t(b * m * k));
  h.w = test::random_e4m3(rng, size_t(b * n * k));
  h.xs = test::random_scales(rng, size_t(b * m));
  h.ws = test::random_scales(rng, size_t(b * n));
  h.has_bias = has_bias;
  h.bias_dtype = bias_dtype;
  if (has_bias) {
    // |sum| ~ sqrt(K) for unit-variance operands: a bias of that size moves the result visibly.
    const double sd = std::sqrt(double(k));
    if (bias_dtype == DType::kF32) {
      h.bias_f32 = test::random_f32(rng, size_t(b * n), sd);
    } else {
      h.bias_bf16 = test::random_half_bits(rng, size_t(b * n), sd, DType::kBF16);
    }
  }
  return h;
}

/// Small-integer operands: every product and partial sum is an exact integer.
HostGemm small_int_gemm(std::mt19937_64& rng, int64_t b, int64_t m, int64_t n, int64_t k, int lim) {
  HostGemm h;
  h.b = b;
  h.m = m;
  h.n = n;
  h.k = k;
  h.x = test::small_int_e4m3(rng, size_t(b * m * k), -lim, lim);
  h.w = test::small_int_e4m3(rng, size_t(b * n * k), -lim, lim);
  h.xs = test::pow2_scales(rng, size_t(b * m), -3, 3);
  h.ws = test::pow2_scales(rng, size_t(b * n), -3, 3);
  return h;
}


/// Device copies of a HostGemm: plain W and W preshuffled on the GPU, out with a guard tail.
struct DeviceGemm {
  const HostGemm& host;  // declared first: it is initialised first
  DeviceBuffer x, w, w_shuffled, xs, ws, bias, out;

  explicit DeviceGemm(const HostGemm& h)
      : host(h),
        x(DeviceBuffer::from(h.x)),
        w(DeviceBuffer::from(h.w)),
        xs(DeviceBuffer::from(h.xs)),
        ws(DeviceBuffer::from(h.ws)),
        out(size_t(h.out_count()) * 2 + test::kGuardBytes) {
    const auto shape = preshuffled_shape(h.b, h.n, h.k);
    w_shuffled = DeviceBuffer(size_t(shape[0] * shape[1] * shape[2] * shape[3]));
    preshuffle(w_view(), w_shuffled.view(DType::kE4M3, shape));
    if (h.has_bias) {
      bias = h.bias_dtype == DType::kF32 ? DeviceBuffer::from(h.bias_f32)
                                         : DeviceBuffer::from(h.bias_bf16);
    }
    F8GEMM_CHECK_CUDA(cudaDeviceSynchronize());
  }

  TensorView x_view() const { return x.view(DType::kE4M3, {host.b, host.m, host.k}); }
  TensorView w_view() const { return w.view(DType::kE4M3, {host.b, host.n, host.k}); }
  TensorView w_for(WeightLayout layout) const {
    return layout == WeightLayout::kPlain
               ? w_view()
               : w_shuffled.view(DType::kE4M3, preshuffled_shape(host.b, host.n, host.k));
  }
  TensorView xs_view() const { return xs.view(DType::kF32, {host.b, host.m}); }
  TensorView ws_view() const { return ws.view(DType::kF32, {host.b, host.n}); }
  TensorView out_view(DType dtype) const { return out.view(dtype, {host.b, host.m, host.n}); }
  TensorView bias_view() const { return bias.view(host.bias_dtype, {host.b, host.n}); }

  /// Enqueues poison + batched_gemm on `stream` without waiting.
  void launch(WeightLayout layout, DType out_dtype, bool fast, const Config* config,
              cudaStream_t stream, const GemmTrace* trace = nullptr) {
    F8GEMM_CHECK_CUDA(cudaMemsetAsync(out.get(), 0xFF, out.bytes(), stream));
    const TensorView b = host.has_bias ? bias_view() : TensorView{};
    GemmOptions o;
    o.bias = host.has_bias ? &b : nullptr;
    o.fast_accum = fast;
    o.stream = stream;
    o.config = config;
    o.trace = trace;
    batched_gemm(x_view(), w_for(layout), layout, xs_view(), ws_view(), out_view(out_dtype), o);
  }

  /// The output's [B,M,N] bits; checks that the guard tail is untouched.
  std::vector<uint16_t> result(cudaStream_t stream) {
    return test::output_bits(out, size_t(host.out_count()), stream);
  }

  std::vector<uint16_t> run(WeightLayout layout, DType out_dtype, bool fast,
                            const Config* config = nullptr, cudaStream_t stream = nullptr,
                            const GemmTrace* trace = nullptr) {
    // A kernel that never finishes ends the run naming the test and the config.
    const test::HangLabel label(test::current_test_name() + " " +
                                (config ? config->name() : std::string("(the chosen config)")));
    launch(layout, out_dtype, fast, config, stream, trace);
    return result(stream);
  }
};

/// First index where two bit vectors differ, for a readable failure.
std::string first_difference(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b) {
  if (a.size() != b.size()) return "sizes differ";
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) {
      std::ostringstream os;
      os << "element " << i << ": 0x" << std::hex << a[i] << " vs 0x" << b[i];
      return os.str();
    }
  }
  return "";
}

std::vector<uint16_t> rounded_reference(HostGemm& h, DType out) {
  h.reference();
  std::vector<uint16_t> bits(h.ref.size());
  numerics::round_output(h.ref.data(), h.ref.size(), out, bits.data());
  return bits;
}

/// Compiles the instances for these (config, problem) pairs on every core before the launches
/// need them (the JIT is thread-safe); rethrows the first failure.
void warm_instances(const std::vector<std::pair<Config, ProblemShape>>& work) {
  std::atomic<size_t> next{0};
  std::vector<std::exception_ptr> errors(work.size());
  auto worker = [&] {
    for (size_t i = next++; i < work.size(); i = next++) {
      try {
        detail::gemm_instance(detail::make_spec(work[i].first, work[i].second));
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  const unsigned threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

ProblemShape shape_of(const HostGemm& h, WeightLayout layout, bool fast, DType out) {
  ProblemShape p;
  p.batch = h.b;
  p.m = h.m;
  p.n = h.n;
  p.k = h.k;
  p.w_layout = layout;
  p.out_dtype = out;
  p.has_bias = h.has_bias;
  p.bias_dtype = h.bias_dtype;
  p.fast_accum = fast;
  return p;
}

// ---- the checker itself (host only: it runs without a GPU) ---------------------------------

TEST(HostChecker, AcceptsCorrectRoundingAndCatchesErrors) {
  std::mt19937_64 rng(7);
  HostGemm h = random_gemm(rng, 2, 33, 24, 160, true, DType::kBF16);
  for (DType out : {DType::kBF16, DType::kF16}) {
    std::vector<uint16_t> y = rounded_reference(h, out);
    // Correct rounding is within u*|ref| of ref: ratio <= 1 even with gamma = 0.
    CheckStats s = test::compare_to_reference(h.ref, h.abs_ref, y.data(), out, 0.0);
    EXPECT_LE(s.max_ratio, 1.0) << s;
    EXPECT_EQ(s.nonfinite, 0);
    EXPECT_LT(s.rel_rms, numerics::unit_roundoff(out));
    // The host checker agrees with check_against_reference on the same data.
    CheckStats t = test::check_against_reference(h.b, h.m, h.n, h.k, h.x.data(), h.w.data(),
                                                 h.xs.data(), h.ws.data(), h.bias_ptr(),
                                                 h.bias_dtype, y.data(), out, 0.0);
    EXPECT_EQ(t.max_ratio, s.max_ratio);
    EXPECT_EQ(t.rel_rms, s.rel_rms);
    // Four ulps off in one element (the largest) breaks the bound; a NaN is counted.
    size_t big = 0;
    for (size_t i = 0; i < h.ref.size(); ++i) {
      if (std::fabs(h.ref[i]) > std::fabs(h.ref[big])) big = i;
    }
    std::vector<uint16_t> bad = y;
    bad[big] = uint16_t(bad[big] + 4);
    EXPECT_GT(test::compare_to_reference(h.ref, h.abs_ref, bad.data(), out, 0.0).max_ratio, 1.0);
    bad = y;
    bad[3] = out == DType::kBF16 ? 0x7fc0 : 0x7e00;
    EXPECT_EQ(test::compare_to_reference(h.ref, h.abs_ref, bad.data(), out, 0.0).nonfinite, 1);
    bad[3] = 0xFFFF;  // the poison value is a NaN in both types
    EXPECT_EQ(test::compare_to_reference(h.ref, h.abs_ref, bad.data(), out, 0.0).nonfinite, 1);
  }
}

TEST(HostChecker, SiluMulCheckerAcceptsCorrectRoundingAndCatchesASwappedPair) {
  std::mt19937_64 rng(8);
  // 40 rows of I = 24 outputs from a merged GEMM of 2I = 48 rows (gate, then up), with a bias.
  HostGemm h = random_gemm(rng, 1, 40, 48, 256, true, DType::kF32);
  h.reference();
  const int64_t rows = h.m, cols = h.n / 2;
  for (DType out : {DType::kBF16, DType::kF16}) {
    std::vector<double> want(size_t(rows * cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < cols; ++i) {
        want[size_t(r * cols + i)] = numerics::silu_mul_reference(h.ref[size_t(r * 2 * cols + i)],
                                                                  h.ref[size_t(r * 2 * cols + cols + i)]);
      }
    }
    std::vector<uint16_t> y(want.size());
    numerics::round_output(want.data(), want.size(), out, y.data());
    CheckStats s = test::compare_silu_mul_to_reference(h.ref, h.abs_ref, rows, cols, y.data(), out, 0.0);
    EXPECT_LE(s.max_ratio, 1.0) << s;
    EXPECT_EQ(s.nonfinite, 0);
    // With the accumulation term of K = 256 in fast mode (what the GPU test allows), one wrong
    // element breaks its bound wherever the GEMM resolves it: where g, u and SiLU(g) are each
    // over eight times their accumulation error (e_g, e_u, and max |SiLU'| e_g), D <= |h| / 4
    // and the bound is under |h| / 2, so a zero fails there, and so does gate and up trading
    // places (SiLU(u) * g) wherever that moves h by more than |h| / 2. (Elsewhere the GEMM's own bound cannot tell the
    // value from its neighbours either; fp16 also flushes |h| < 2^-25 to zero.)
    const double gamma = gamma_for(h.k, true);
    int64_t resolved = 0, zero_passed = 0, swaps = 0, swap_passed = 0;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < cols; ++i) {
        const size_t gate = size_t(r * 2 * cols + i), up = gate + size_t(cols);
        const double g = h.ref[gate], u = h.ref[up];
        const double e_g = gamma * h.abs_ref[gate], e_u = gamma * h.abs_ref[up];
        const double silu_g = g / (1.0 + std::exp(-g));
        if (std::fabs(g) <= 8 * e_g || std::fabs(u) <= 8 * e_u || std::fabs(silu_g) <= 8.8 * e_g) {
          continue;
        }
        ++resolved;
        const double want = numerics::silu_mul_reference(g, u);
        const double bound =
            numerics::silu_mul_bound(g, u, h.abs_ref[gate], h.abs_ref[up], out, gamma);
        zero_passed += std::fabs(want) <= bound;
        const double swapped = numerics::silu_mul_reference(u, g);
        if (std::fabs(swapped - want) > std::fabs(want) / 2) {
          ++swaps;
          swap_passed += std::fabs(swapped - want) <= bound;
        }
      }
    }
    std::cout << "[ silu checker ] " << to_string(out) << ": " << resolved << " of " << rows * cols
              << " elements resolved, " << swaps << " of them with a swap that moves h\n";
    EXPECT_GE(resolved, rows * cols / 3) << to_string(out);
    EXPECT_GE(swaps, resolved / 4) << to_string(out);
    EXPECT_EQ(zero_passed, 0) << "of " << resolved << " " << to_string(out);
    EXPECT_EQ(swap_passed, 0) << "of " << swaps << " " << to_string(out);
    // And through the checker: one swapped element, the first that its bound catches.
    size_t first = 0;
    for (size_t e = 0; e < size_t(rows * cols); ++e) {
      const size_t gate = (e / size_t(cols)) * size_t(2 * cols) + e % size_t(cols);
      const size_t up = gate + size_t(cols);
      const double want = numerics::silu_mul_reference(h.ref[gate], h.ref[up]);
      const double swapped = numerics::silu_mul_reference(h.ref[up], h.ref[gate]);
      if (std::fabs(swapped - want) > 2.0 * numerics::silu_mul_bound(h.ref[gate], h.ref[up],
                                                                     h.abs_ref[gate],
                                                                     h.abs_ref[up], out, gamma)) {
        first = e;
        std::vector<uint16_t> bad = y;
        numerics::round_output(&swapped, 1, out, &bad[e]);
        EXPECT_GT(test::compare_silu_mul_to_reference(h.ref, h.abs_ref, rows, cols, bad.data(),
                                                      out, gamma)
                      .max_ratio,
                  1.0)
            << "element " << first;
        break;
      }
    }
    std::vector<uint16_t> bad;
    bad = y;
    bad[5] = 0xFFFF;  // the poison value
    EXPECT_EQ(test::compare_silu_mul_to_reference(h.ref, h.abs_ref, rows, cols, bad.data(), out, gamma)
                  .nonfinite,
              1);
  }
}

// ---- random shapes against the host fp64 reference ------------------------------------------

TEST(GemmGpu, RandomShapesBothLayoutsBothModes) {
  F8GEMM_SKIP_WITHOUT_SM90();
  const int64_t ms[] = {0, 1, 3, 7, 8, 31, 64, 65, 127, 128, 129, 200, 257, 1000};
  const int64_t ns[] = {8, 16, 24, 120, 128, 136, 256, 264, 1280};
  const int64_t ks[] = {16, 32, 112, 128, 144, 256, 1040};
  std::mt19937_64 rng(20251201);
  std::uniform_int_distribution<int> batch(1, 4);
  // 20 shapes; M, N and K cycle through their lists (periods 14, 9, 7: every value appears and the
  // combinations vary), B is random.
  for (int i = 0; i < 20; ++i) {
    HostGemm h = random_gemm(rng, batch(rng), ms[i % 14], ns[(i * 4) % 9], ks[(i * 3) % 7]);
    DeviceGemm d(h);
    for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
      for (bool fast : {false, true}) {
        const std::string what = describe(h.b, h.m, h.n, h.k, layout, fast, DType::kBF16);
        SCOPED_TRACE(what);
        const std::vector<uint16_t> y = d.run(layout, DType::kBF16, fast);
        if (h.m == 0) {
          EXPECT_TRUE(test::still_poisoned(d.out)) << "M = 0 wrote to out";
          continue;
        }
        expect_accurate(h.check(y, DType::kBF16, fast), h.k, DType::kBF16, h.out_count(), fast, what);
      }
    }
  }
}

// ---- exact results on small integers ---------------------------------------------------------

TEST(GemmGpu, SmallIntegersAreExactBitForBit) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(31337);
  struct Case {
    int64_t b, m, n, k;
    int lim;
  };
  // Values in -2..2 with K = 64: |sum| <= 4 * 64 = 256, an integer bf16 holds exactly (8
  // significant bits); in -1..1 with K = 256 the same bound spans two k-blocks (precise mode's
  // promotion). Power-of-two scales keep every product exact.
  for (const Case& c : {Case{2, 200, 136, 64, 2}, Case{1, 5, 264, 64, 2}, Case{3, 64, 128, 64, 2},
                        Case{2, 130, 256, 256, 1}, Case{1, 1, 1280, 256, 1}}) {
    HostGemm h = small_int_gemm(rng, c.b, c.m, c.n, c.k, c.lim);
    DeviceGemm d(h);
    for (DType out : {DType::kBF16, DType::kF16}) {
      const std::vector<uint16_t> expect = rounded_reference(h, out);
      for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
        for (bool fast : {false, true}) {
          SCOPED_TRACE(describe(h.b, h.m, h.n, h.k, layout, fast, out));
          const std::vector<uint16_t> y = d.run(layout, out, fast);
          EXPECT_TRUE(y == expect) << first_difference(y, expect);
        }
      }
    }
  }
}

// ---- plain W and preshuffled W give the same bits ------------------------------------------

TEST(GemmGpu, PlainEqualsPreshuffledBitForBit) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(4242);
  struct Case {
    int64_t b, m, n, k;
  };
  for (const Case& c : {Case{3, 77, 136, 272}, Case{2, 1, 1280, 1040}, Case{1, 300, 264, 528},
                        Case{4, 32, 8, 16}}) {
    HostGemm h = random_gemm(rng, c.b, c.m, c.n, c.k);
    DeviceGemm d(h);
    for (bool fast : {false, true}) {
      SCOPED_TRACE(describe(h.b, h.m, h.n, h.k, WeightLayout::kPlain, fast, DType::kBF16));
      // The same config for both: only the W path differs.
      const Config config =
          choose_config(shape_of(h, WeightLayout::kPreshuffled, fast, DType::kBF16));
      const auto shuffled = d.run(WeightLayout::kPreshuffled, DType::kBF16, fast, &config);
      const auto plain = d.run(WeightLayout::kPlain, DType::kBF16, fast, &config);
      EXPECT_TRUE(shuffled == plain) << config.name() << ": " << first_difference(shuffled, plain);
      // Unforced, when the choice is the same for both layouts (no table says otherwise).
      if (choose_config(shape_of(h, WeightLayout::kPlain, fast, DType::kBF16)) == config) {
        const auto a = d.run(WeightLayout::kPreshuffled, DType::kBF16, fast);
        const auto b = d.run(WeightLayout::kPlain, DType::kBF16, fast);
        EXPECT_TRUE(a == b) << first_difference(a, b);
        EXPECT_TRUE(a == shuffled) << first_difference(a, shuffled);
      }
    }
  }
}

// ---- bias and fp16 output --------------------------------------------------------------------

TEST(GemmGpu, BiasAndFp16OutputAgainstTheReference) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(555);
  struct Case {
    int64_t b, m, n, k;
  };
  // A prefill-like shape (tiled path) and a decode-like one (swap path).
  for (const Case& c : {Case{2, 100, 264, 400}, Case{3, 4, 520, 272}}) {
    for (DType bias_dtype : {DType::kF32, DType::kBF16}) {
      HostGemm h = random_gemm(rng, c.b, c.m, c.n, c.k, true, bias_dtype);
      DeviceGemm d(h);
      for (DType out : {DType::kBF16, DType::kF16}) {
        for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
          for (bool fast : {false, true}) {
            const std::string what = describe(h.b, h.m, h.n, h.k, layout, fast, out) +
                                     " bias " + to_string(bias_dtype);
            SCOPED_TRACE(what);
            expect_accurate(h.check(d.run(layout, out, fast), out, fast), h.k, out, h.out_count(), fast,
                            what);
          }
        }
      }
    }
  }
  // fp16 without bias too.
  HostGemm h = random_gemm(rng, 2, 129, 136, 1040);
  DeviceGemm d(h);
  for (bool fast : {false, true}) {
    const std::string what = describe(h.b, h.m, h.n, h.k, WeightLayout::kPreshuffled, fast, DType::kF16);
    expect_accurate(h.check(d.run(WeightLayout::kPreshuffled, DType::kF16, fast), DType::kF16, fast),
                    h.k, DType::kF16, h.out_count(), fast, what);
  }
}

// ---- long K: each mode against its own bound -------------------------------------------------

TEST(GemmGpu, LongKEachModeWithinItsBound) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(8192);
  HostGemm h = random_gemm(rng, 2, 128, 256, 8192);
  DeviceGemm d(h);
  for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
    for (bool fast : {false, true}) {
      const std::string what = describe(h.b, h.m, h.n, h.k, layout, fast, DType::kBF16);
      SCOPED_TRACE(what);
      const CheckStats s = h.check(d.run(layout, DType::kBF16, fast), DType::kBF16, fast);
      std::cout << "[ accuracy ] " << what << " " << s << "\n";
      expect_accurate(s, h.k, DType::kBF16, h.out_count(), fast, what);
    }
  }
}

// ---- two streams -----------------------------------------------------------------------------

TEST(GemmGpu, TwoNonBlockingStreamsInterleaved) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(2);
  HostGemm ha = random_gemm(rng, 2, 200, 264, 528);
  HostGemm hb = random_gemm(rng, 3, 7, 1280, 1040, true, DType::kBF16);
  DeviceGemm da(ha), db(hb);
  cudaStream_t sa = nullptr, sb = nullptr;
  F8GEMM_CHECK_CUDA(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
  F8GEMM_CHECK_CUDA(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
  // Six rounds; each round re-poisons on its own stream, so the final output is the last launch's.
  for (int round = 0; round < 6; ++round) {
    const bool fast = round % 2 == 0;
    da.launch(WeightLayout::kPreshuffled, DType::kBF16, fast, nullptr, sa);
    db.launch(round % 3 == 0 ? WeightLayout::kPlain : WeightLayout::kPreshuffled, DType::kF16,
              !fast, nullptr, sb);
  }
  // Round 5: a fast = false (precise) on sa, b fast = true on sb with preshuffled W.
  const std::vector<uint16_t> ya = da.result(sa), yb = db.result(sb);
  F8GEMM_CHECK_CUDA(cudaStreamDestroy(sa));
  F8GEMM_CHECK_CUDA(cudaStreamDestroy(sb));
  expect_accurate(ha.check(ya, DType::kBF16, false), ha.k, DType::kBF16, ha.out_count(), false, "stream a");
  expect_accurate(hb.check(yb, DType::kF16, true), hb.k, DType::kF16, hb.out_count(), true, "stream b");
}

// ---- MSLK shapes with the GPU reference -----------------------------------------------------

TEST(GemmGpu, MslkShapesAgainstTheGpuReference) {
  F8GEMM_SKIP_WITHOUT_SM90();
  struct Case {
    int64_t b, m, n, k;
  };
  std::mt19937_64 rng(1234);
  for (const Case& c : {Case{16, 1, 1280, 8192}, Case{4, 1, 8192, 1024}, Case{4, 32, 1280, 8192},
                        Case{8, 64, 8192, 1024}, Case{2, 128, 7424, 8192},
                        Case{2, 1024, 1280, 8192}, Case{2, 4096, 8192, 1024},
                        Case{1, 64, 1280, 8192}, Case{4, 0, 8192, 1024}}) {
    HostGemm h = random_gemm(rng, c.b, c.m, c.n, c.k);
    DeviceGemm d(h);
    for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
      for (bool fast : {false, true}) {
        const std::string what = describe(h.b, h.m, h.n, h.k, layout, fast, DType::kBF16);
        SCOPED_TRACE(what);
        d.run(layout, DType::kBF16, fast);
        if (h.m == 0) {
          EXPECT_TRUE(test::still_poisoned(d.out)) << "M = 0 wrote to out";
          continue;
        }
        const detail::CheckResult r =
            detail::reference_check(d.x_view(), d.w_view(), d.xs_view(), d.ws_view(), nullptr,
                                    d.out_view(DType::kBF16), gamma_for(h.k, fast), nullptr);
        const CheckStats s{r.rel_rms, r.max_ratio, r.nonfinite};
        std::cout << "[ accuracy ] " << what << " " << s << "\n";
        expect_accurate(s, h.k, DType::kBF16, h.out_count(), fast, what);
      }
    }
  }
}

TEST(GemmGpu, GpuReferenceAgreesWithTheHostChecker) {
  F8GEMM_SKIP_WITHOUT_SM90();
  // The two checkers define the same statistics: on one output they must agree.
  std::mt19937_64 rng(99);
  for (DType bias_dtype : {DType::kF32, DType::kBF16}) {
    HostGemm h = random_gemm(rng, 2, 70, 136, 400, true, bias_dtype);
    DeviceGemm d(h);
    const auto y = d.run(WeightLayout::kPreshuffled, DType::kBF16, true);
    const CheckStats host = h.check(y, DType::kBF16, true);
    const TensorView bias = d.bias_view();
    const detail::CheckResult gpu =
        detail::reference_check(d.x_view(), d.w_view(), d.xs_view(), d.ws_view(), &bias,
                                d.out_view(DType::kBF16), gamma_for(h.k, true), nullptr);
    EXPECT_EQ(gpu.nonfinite, host.nonfinite);
    EXPECT_NEAR(gpu.rel_rms, host.rel_rms, 1e-6 * host.rel_rms + 1e-12);
    EXPECT_NEAR(gpu.max_ratio, host.max_ratio, 1e-6 * host.max_ratio + 1e-12);
    EXPECT_GT(host.max_ratio, 0.0);
  }
}

// ---- every config family, forced -------------------------------------------------------------

TEST(GemmGpu, EveryConfigFamilyForcedOnARaggedShape) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(77);
  // M = 77, N = 136, K = 272: no dimension is a multiple of any tile (K has 3 k-blocks, the last
  // one 16 bytes).
  HostGemm h = random_gemm(rng, 3, 77, 136, 272);
  DeviceGemm d(h);
  std::vector<Config> configs;
  auto add = [&](KernelPath path, int bm, int bn, int raster) {
    Config c;
    c.path = path;
    c.bm = bm;
    c.bn = bn;
    c.raster = raster;
    // The deepest ring up to 8 stages that fits in shared memory.
    for (c.stages = 8; c.stages > 2 && detail::config_smem_bytes(c) > detail::kMaxSmemBytes;) {
      --c.stages;
    }
    configs.push_back(c);
  };
  int raster = 0;
  const int rasters[] = {8, 0, 1, 3, 64};
  for (int bn : {8, 16, 64, 96, 128, 136, 192, 256}) add(KernelPath::kTiled, 64, bn, rasters[raster++ % 5]);
  for (int bn : {8, 64, 128, 192, 256}) add(KernelPath::kTiled, 128, bn, rasters[raster++ % 5]);
  for (int bn : {64, 128, 256}) {
    add(KernelPath::kTiled, 128, bn, rasters[raster++ % 5]);
    configs.back().cluster_m = 2;
  }
  for (int bn : {64, 136, 176, 256}) add(KernelPath::kPingPong, 64, bn, rasters[raster++ % 5]);
  for (int bn : {112, 160}) add(KernelPath::kPingPong, 128, bn, rasters[raster++ % 5]);
  add(KernelPath::kPingPong, 64, 128, 8);
  configs.back().cluster_m = 2;
  for (int bn : {8, 16, 24, 32, 48, 64, 96, 128}) add(KernelPath::kSwapAB, 64, bn, rasters[raster++ % 5]);
  for (int bn : {8, 16, 32, 64, 128}) add(KernelPath::kSwapAB, 128, bn, rasters[raster++ % 5]);

  std::vector<std::pair<Config, ProblemShape>> work;
  for (const Config& c : configs) {
    for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
      for (bool fast : {false, true}) {
        const ProblemShape p = shape_of(h, layout, fast, DType::kBF16);
        if (detail::config_illegal_reason(c, p).empty()) work.emplace_back(c, p);
      }
    }
  }
  warm_instances(work);
  for (const auto& [c, p] : work) {
    const std::string what =
        c.name() + " " + describe(p.batch, p.m, p.n, p.k, p.w_layout, p.fast_accum, p.out_dtype);
    SCOPED_TRACE(what);
    const auto y = d.run(p.w_layout, DType::kBF16, p.fast_accum, &c);
    expect_accurate(h.check(y, DType::kBF16, p.fast_accum), h.k, DType::kBF16, h.out_count(), p.fast_accum, what);
  }

  // A forced config that cannot run this problem: a bn = 256 ping-pong in precise mode (only the
  // cooperative schedule promotes in slices).
  Config wide;
  wide.path = KernelPath::kPingPong;
  wide.bm = 64;
  wide.bn = 256;
  wide.stages = 4;
  try {
    d.run(WeightLayout::kPreshuffled, DType::kBF16, false, &wide);
    ADD_FAILURE() << "a bn=256 ping-pong config ran in precise mode";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
    // The one spelling of this refusal (config_unfit_message), as the CPU tests check elsewhere.
    EXPECT_EQ(e.message().rfind("config " + wide.name() + " cannot run B,M,N,K=3,77,136,272: ", 0),
              0u)
        << e.what();
  }
}

// ---- the SiLU·mul epilogue -------------------------------------------------------------------

/// Runs the SiLU·mul epilogue (EpilogueOp::kSiluMul) of d's merged weight [B, 2I, K] into a
/// poisoned [B, M, I] output with a guard tail, and returns its bits (the guard checked).
std::vector<uint16_t> run_silu_mul(DeviceGemm& d, WeightLayout layout, DType out_dtype, bool fast,
                                   const Config* config) {
  const HostGemm& h = d.host;
  const int64_t count = h.b * h.m * (h.n / 2);
  DeviceBuffer out(size_t(count) * 2 + test::kGuardBytes);
  test::poison(out);
  const test::HangLabel label(test::current_test_name() + " silu_mul " +
                              (config ? config->name() : std::string("(the chosen config)")));
  const TensorView b = h.has_bias ? d.bias_view() : TensorView{};
  GemmOptions o;
  o.bias = h.has_bias ? &b : nullptr;
  o.fast_accum = fast;
  o.config = config;
  o.epilogue_op = EpilogueOp::kSiluMul;
  batched_gemm(d.x_view(), d.w_for(layout), layout, d.xs_view(), d.ws_view(),
               out.view(out_dtype, {h.b, h.m, h.n / 2}), o);
  return test::output_bits(out, size_t(count), nullptr);
}

TEST(GemmGpu, SiluMulEpilogueEveryStoreKindAndWLoadOnARaggedShape) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(91);
  // B = 2, M = 77, I = 136 (N = 2I = 272), K = 272: no size is a multiple of a tile (the last
  // tile of bn = 256 holds 8 gate and 8 up rows; K's last k-block is 16 bytes).
  std::vector<HostGemm> hosts;
  hosts.push_back(random_gemm(rng, 2, 77, 272, 272));
  hosts.push_back(random_gemm(rng, 2, 77, 272, 272, true, DType::kBF16));
  hosts.push_back(random_gemm(rng, 2, 77, 272, 272, true, DType::kF32));
  // SiLU(g) * u is a product of two GEMM outputs: with the default scales it reaches 6.4e5 here,
  // past fp16's 65504 (call 1 of session 23 saw the infinities). X scales of an eighth (exact:
  // powers of two) keep |h| near 1e4 in every case.
  for (HostGemm& h : hosts) {
    for (float& s : h.xs) s *= 0.125f;
  }
  // Whole-block stores (tiled 128x256 and 128x128, alone and paired: a pair's CTAs load the gate
  // and the up half), 32-column chunks (tiled 128x192: 96 output columns; tiled 64x64: one
  // chunk, one buffer), ping-pong 64- and 128-row tiles, alone and paired; and the choice.
  std::vector<Config> configs;
  for (const char* name :
       {"sm90_tiled_128x256x128_s3_c1x1_r8", "sm90_tiled_128x128x128_s5_c2x1_r8",
        "sm90_tiled_128x256x128_s3_c2x1_r1", "sm90_tiled_128x192x128_s4_c1x1_r0",
        "sm90_tiled_64x64x128_s8_c1x1_r3", "sm90_pingpong_64x128x128_s6_c1x1_r8",
        "sm90_pingpong_64x128x128_s6_c2x1_r8", "sm90_pingpong_128x128x128_s6_c1x1_r8",
        "sm90_pingpong_64x256x128_s5_c1x1_r64"}) {
    configs.push_back(Config::parse(name));
  }
  std::vector<std::pair<Config, ProblemShape>> work;
  for (size_t hi = 0; hi < hosts.size(); ++hi) {
    for (const Config& c : configs) {
      for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
        for (bool fast : {false, true}) {
          for (DType out : {DType::kBF16, DType::kF16}) {
            // Bias and fp16 on the first two configs and the preshuffled layout, fast mode.
            if ((hi > 0 || out == DType::kF16) &&
                (layout == WeightLayout::kPlain || !fast || (&c - configs.data()) > 1)) {
              continue;
            }
            ProblemShape p = shape_of(hosts[hi], layout, fast, out);
            p.epilogue_op = EpilogueOp::kSiluMul;
            if (detail::config_illegal_reason(c, p).empty()) work.emplace_back(c, p);
          }
        }
      }
    }
  }
  warm_instances(work);
  for (size_t hi = 0; hi < hosts.size(); ++hi) {
    HostGemm& h = hosts[hi];
    h.reference();
    DeviceGemm d(h);
    for (const auto& [c, p] : work) {
      if (p.has_bias != h.has_bias || p.bias_dtype != h.bias_dtype) continue;
      const std::string what = c.name() + " silu_mul " +
                               describe(p.batch, p.m, p.n, p.k, p.w_layout, p.fast_accum,
                                        p.out_dtype) +
                               (p.has_bias ? std::string(" bias ") + to_string(p.bias_dtype) : "");
      SCOPED_TRACE(what);
      const auto y = run_silu_mul(d, p.w_layout, p.out_dtype, p.fast_accum, &c);
      const CheckStats s = test::compare_silu_mul_to_reference(
          h.ref, h.abs_ref, h.b * h.m, h.n / 2, y.data(), p.out_dtype, gamma_for(h.k, p.fast_accum));
      EXPECT_EQ(s.nonfinite, 0) << what << " " << s;
      EXPECT_LE(s.max_ratio, 1.0) << what << " " << s;
    }
    // The choice (cost model or table), both layouts.
    for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
      const auto y = run_silu_mul(d, layout, DType::kBF16, true, nullptr);
      const CheckStats s = test::compare_silu_mul_to_reference(
          h.ref, h.abs_ref, h.b * h.m, h.n / 2, y.data(), DType::kBF16, gamma_for(h.k, true));
      EXPECT_EQ(s.nonfinite, 0) << s;
      EXPECT_LE(s.max_ratio, 1.0) << s;
    }
  }
  // A forced swap-AB config cannot pair gate and up columns: refused before any launch.
  HostGemm& h = hosts[0];
  DeviceGemm d(h);
  const Config swap = Config::parse("sm90_swap_64x16x128_s12_c1x1_r0");
  try {
    run_silu_mul(d, WeightLayout::kPreshuffled, DType::kBF16, true, &swap);
    ADD_FAILURE() << "a swap-AB config ran the SiLU·mul epilogue";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("swap-AB"), std::string::npos) << e.what();
  }
}

TEST(GemmGpu, EpilogueSiluWithinItsBoundOnEveryFloat) {
  F8GEMM_SKIP_WITHOUT_SM90();
  // silu_mul_sfu (kernels/silu_sfu.cuh) on all 2^32 fp32 inputs, in four launches, against fp64:
  // the bound that numerics::silu_mul_bound charges it with holds on every one, and the special
  // values are those of g / (1 + exp(-g)).
  detail::SiluSfuCheck worst;
  for (uint64_t first = 0; first < (uint64_t(1) << 32); first += uint64_t(1) << 30) {
    const detail::SiluSfuCheck c = detail::silu_sfu_check(first, uint64_t(1) << 30, 0);
    worst.max_ratio = std::max(worst.max_ratio, c.max_ratio);
    worst.max_rel = std::max(worst.max_rel, c.max_rel);
    worst.special_mismatches += c.special_mismatches;
  }
  std::cout << "[ silu_sfu ] every fp32 g: max |h - ref| / bound = " << worst.max_ratio
            << ", max relative error for |g| <= 16 = " << worst.max_rel << " (2^"
            << std::log2(worst.max_rel) << "), special-value mismatches "
            << worst.special_mismatches << "\n";
  EXPECT_LE(worst.max_ratio, 1.0);
  EXPECT_GT(worst.max_rel, 0.0);  // the check saw values
  EXPECT_EQ(worst.special_mismatches, 0);
}

TEST(GemmGpu, SiluMulEpilogueAtTheLlamaMlpShape) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(92);
  // The gated MLP's gate|up GEMM as FP8GatedMLP fuses it (hidden 4096, intermediate 14336),
  // with the chosen config of the preshuffled layout in both modes. 300 rows keep the host's
  // fp64 reference (35 GFLOP) short.
  HostGemm h = random_gemm(rng, 1, 300, 28672, 4096);
  h.reference();
  DeviceGemm d(h);
  for (bool fast : {true, false}) {
    const auto y = run_silu_mul(d, WeightLayout::kPreshuffled, DType::kBF16, fast, nullptr);
    const CheckStats s = test::compare_silu_mul_to_reference(
        h.ref, h.abs_ref, h.m, h.n / 2, y.data(), DType::kBF16, gamma_for(h.k, fast));
    EXPECT_EQ(s.nonfinite, 0) << s;
    EXPECT_LE(s.max_ratio, 1.0) << (fast ? "fast " : "precise ") << s;
  }
}

// ---- preshuffle / unshuffle on the GPU -------------------------------------------------------

TEST(GemmGpu, PreshuffleMatchesHostAndUnshuffleInverts) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(11);
  struct Case {
    int64_t b, n, k;
    bool two_d;
  };
  for (const Case& c : {Case{3, 136, 272, false}, Case{1, 8, 16, false}, Case{2, 1280, 1040, false},
                        Case{1, 264, 400, true}, Case{1, 8192, 1024, true}}) {
    SCOPED_TRACE(testing::Message() << c.b << "x" << c.n << "x" << c.k << (c.two_d ? " 2-D" : ""));
    const std::vector<uint8_t> w = test::random_e4m3(rng, size_t(c.b * c.n * c.k));
    const auto shape = preshuffled_shape(c.b, c.n, c.k);
    const size_t bytes = size_t(shape[0] * shape[1] * shape[2] * shape[3]);
    std::vector<uint8_t> expect(bytes);
    numerics::preshuffle_host(w.data(), c.b, c.n, c.k, expect.data());

    DeviceBuffer dw = DeviceBuffer::from(w), ds(bytes), back(w.size());
    test::poison(ds);  // the zero padding past K must be written, not left over
    const TensorView wv = c.two_d ? dw.view(DType::kE4M3, {c.n, c.k})
                                  : dw.view(DType::kE4M3, {c.b, c.n, c.k});
    const TensorView sv = c.two_d ? ds.view(DType::kU8, {shape[1], shape[2], shape[3]})
                                  : ds.view(DType::kU8, shape);
    preshuffle(wv, sv);
    F8GEMM_CHECK_CUDA(cudaDeviceSynchronize());
    EXPECT_TRUE(ds.to_host<uint8_t>() == expect);

    test::poison(back);
    const TensorView bv = c.two_d ? back.view(DType::kE4M3, {c.n, c.k})
                                  : back.view(DType::kE4M3, {c.b, c.n, c.k});
    unshuffle(sv, bv);
    F8GEMM_CHECK_CUDA(cudaDeviceSynchronize());
    EXPECT_TRUE(back.to_host<uint8_t>() == w);
  }
}

// ---- quantize_rows on the GPU ----------------------------------------------------------------

TEST(GemmGpu, QuantizeRowsMatchesHostBitForBit) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(3);
  struct Case {
    std::vector<int64_t> shape;
  };
  for (const Case& c : {Case{{37, 1000}}, Case{{2, 3, 520}}, Case{{4, 7}}, Case{{3, 8192}}}) {
    const int64_t cols = c.shape.back();
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < c.shape.size(); ++i) rows *= c.shape[i];
    const size_t count = size_t(rows * cols);
    std::vector<int64_t> scale_shape(c.shape.begin(), c.shape.end() - 1);
    // Row r is scaled by 2^(r % 9 - 4): amax spans 2^-4..2^4 times the base spread.
    std::vector<double> values(count);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (size_t i = 0; i < count; ++i) {
      const int64_t r = int64_t(i) / cols;
      values[i] = std::ldexp(normal(rng), int(r % 9) - 4);
    }
    // Row 1 is all zeros (the eps path); row 2 (when there is one) holds a NaN.
    if (rows > 1) std::fill(values.begin() + cols, values.begin() + 2 * cols, 0.0);
    if (rows > 2) values[size_t(2 * cols + cols / 2)] = std::numeric_limits<double>::quiet_NaN();

    for (DType in : {DType::kF32, DType::kBF16, DType::kF16}) {
      std::vector<float> f32(count);
      std::vector<uint16_t> half(count);
      for (size_t i = 0; i < count; ++i) {
        f32[i] = float(values[i]);
        half[i] = in == DType::kBF16 ? numerics::double_to_bf16(values[i])
                                     : numerics::double_to_f16(values[i]);
      }
      const void* host_in = in == DType::kF32 ? static_cast<const void*>(f32.data())
                                              : static_cast<const void*>(half.data());
      DeviceBuffer din = in == DType::kF32 ? DeviceBuffer::from(f32) : DeviceBuffer::from(half);
      // scale_ub 0 (none) and 0.5 (clamps the rows scaled by 2^0 and up).
      for (float ub : {0.0f, 0.5f}) {
        SCOPED_TRACE(testing::Message() << to_string(in) << " rows=" << rows << " cols=" << cols
                                        << " scale_ub=" << ub);
        std::vector<uint8_t> q_ref(count);
        std::vector<float> s_ref(static_cast<size_t>(rows));
        numerics::quantize_rows_host(host_in, in, rows, cols, 1e-12f, ub, q_ref.data(),
                                     s_ref.data());
        DeviceBuffer dq(count), ds(size_t(rows) * 4);
        test::poison(dq);
        test::poison(ds);
        QuantizeOptions o;
        o.scale_ub = ub;
        quantize_rows(din.view(in, c.shape), dq.view(DType::kE4M3, c.shape),
                      ds.view(DType::kF32, scale_shape), o);
        F8GEMM_CHECK_CUDA(cudaDeviceSynchronize());
        const auto q = dq.to_host<uint8_t>();
        const auto s = ds.to_host<float>();
        size_t bad_q = 0;
        for (size_t i = 0; i < count; ++i) bad_q += q[i] != q_ref[i];
        EXPECT_EQ(bad_q, 0u);
        EXPECT_EQ(0, std::memcmp(s.data(), s_ref.data(), s.size() * sizeof(float)));
      }
    }
  }
}

// ---- the single-GEMM form --------------------------------------------------------------------

TEST(GemmGpu, SingleGemmFlattensLeadingDimensions) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(23);
  const int64_t n = 264, k = 400;
  // X [2, 3, K] is M = 6 rows; the reference is the batched problem B = 1, M = 6.
  HostGemm h = random_gemm(rng, 1, 6, n, k, true, DType::kF32);
  DeviceGemm d(h);
  const TensorView x = d.x.view(DType::kE4M3, {2, 3, k});
  const TensorView bias = d.bias.view(DType::kF32, {n});
  const auto ps = preshuffled_shape(1, n, k);
  for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
    const TensorView w = layout == WeightLayout::kPlain
                             ? d.w.view(DType::kE4M3, {n, k})
                             : d.w_shuffled.view(DType::kE4M3, {ps[1], ps[2], ps[3]});
    for (bool fast : {false, true}) {
      GemmOptions o;
      o.bias = &bias;
      o.fast_accum = fast;
      // out [2, 3, N] with x_scale [2, 3], then out [6, N] with x_scale [6].
      for (int form = 0; form < 2; ++form) {
        const std::string what = describe(1, 6, n, k, layout, fast, DType::kBF16) +
                                 (form ? " out [6,N]" : " out [2,3,N]");
        SCOPED_TRACE(what);
        test::poison(d.out);
        const TensorView xs = form ? d.xs.view(DType::kF32, {6}) : d.xs.view(DType::kF32, {2, 3});
        const TensorView out =
            form ? d.out.view(DType::kBF16, {6, n}) : d.out.view(DType::kBF16, {2, 3, n});
        gemm(x, w, layout, xs, d.ws.view(DType::kF32, {n}), out, o);
        expect_accurate(h.check(d.result(nullptr), DType::kBF16, fast), h.k, DType::kBF16, h.out_count(), fast, what);
      }
    }
  }
}

}  // namespace
// ---- schedules against their twins: clusters and ping-pong change who computes a tile, not how

/// The deepest ring up to 8 stages that fits.
Config deepest(KernelPath path, int bm, int bn, int cluster_m) {
  Config c;
  c.path = path;
  c.bm = bm;
  c.bn = bn;
  c.cluster_m = cluster_m;
  for (c.stages = 8; c.stages > 2 && detail::config_smem_bytes(c) > detail::kMaxSmemBytes;) --c.stages;
  return c;
}

/// (variant, twin) pairs whose outputs must agree bit for bit: a 2x1 pair against one CTA of the
/// same tile, and ping-pong (64-row tiles, alone or paired) against a 64-row cooperative tile.
std::vector<std::pair<Config, Config>> schedule_twins(std::initializer_list<int> bns) {
  std::vector<std::pair<Config, Config>> twins;
  for (int bn : bns) {
    twins.emplace_back(deepest(KernelPath::kTiled, 128, bn, 2), deepest(KernelPath::kTiled, 128, bn, 1));
    twins.emplace_back(deepest(KernelPath::kPingPong, 64, bn, 1), deepest(KernelPath::kTiled, 64, bn, 1));
    twins.emplace_back(deepest(KernelPath::kPingPong, 64, bn, 2), deepest(KernelPath::kTiled, 64, bn, 1));
    // 128-row ping-pong tiles: each consumer computes both 64-row blocks that the cooperative
    // 128-row kernel gives to its two consumers, in the same wgmma order in fast mode. In
    // precise mode at 96 to 192 columns the cooperative kernel pipelines two half-width slices
    // per block (gemm_promote_pipelined) and the 128-row ping-pong does not: the pair then also
    // checks that two n = bn / 2 wgmmas give the bits of one n = bn wgmma.
    twins.emplace_back(deepest(KernelPath::kPingPong, 128, bn, 1), deepest(KernelPath::kTiled, 128, bn, 1));
    twins.emplace_back(deepest(KernelPath::kPingPong, 128, bn, 2), deepest(KernelPath::kTiled, 128, bn, 1));
  }
  return twins;
}

TEST(GemmGpu, ClusteredAndPingPongSchedulesMatchTheirTwinsBitForBit) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(2024);
  struct Case {
    int64_t b, m, n, k;
  };
  // Ragged edges: 300 rows are 3 X tiles of 128 (the last pair's second tile is empty) and 5 of
  // 64 (odd: one ping-pong consumer gets one tile fewer); N = 136 leaves a last W tile of one
  // 8-row slab (one CTA of a pair loads nothing); K = 272 ends in 16 bytes. 1,8320,1040,528 has
  // 455 (128 x 160) to 2210 (64 x 64) tiles (N ragged for every width here), 3.4 or more per
  // CTA of the 132, so the ping-pong consumers hand their turns over several times and the turns
  // wrap around the ring (with N = 256, as before, the 128 x 128 and 64 x 256 tiles were one per
  // CTA: no hand-over at all).
  for (const Case& c : {Case{3, 300, 136, 272}, Case{2, 77, 264, 400}, Case{1, 520, 512, 1040},
                        Case{1, 8320, 1040, 528}}) {
    HostGemm h = random_gemm(rng, c.b, c.m, c.n, c.k);
    DeviceGemm d(h);
    std::vector<std::pair<Config, ProblemShape>> work;
    std::vector<std::tuple<Config, Config, ProblemShape>> cases;
    for (const auto& [variant, twin] :
         schedule_twins({64, 96, 112, 128, 144, 160, 176, 192, 256})) {
      for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
        for (bool fast : {false, true}) {
          const ProblemShape p = shape_of(h, layout, fast, DType::kBF16);
          if (!detail::config_illegal_reason(variant, p).empty()) continue;
          work.emplace_back(variant, p);
          work.emplace_back(twin, p);
          cases.emplace_back(variant, twin, p);
        }
      }
    }
    warm_instances(work);
    for (const auto& [variant, twin, p] : cases) {
      const std::string what =
          variant.name() + " " + describe(p.batch, p.m, p.n, p.k, p.w_layout, p.fast_accum, p.out_dtype);
      SCOPED_TRACE(what);
      const auto y_variant = d.run(p.w_layout, DType::kBF16, p.fast_accum, &variant);
      const auto y_twin = d.run(p.w_layout, DType::kBF16, p.fast_accum, &twin);
      EXPECT_TRUE(y_variant == y_twin) << twin.name() << ": " << first_difference(y_variant, y_twin);
      expect_accurate(h.check(y_variant, DType::kBF16, p.fast_accum), h.k, DType::kBF16,
                      h.out_count(), p.fast_accum, what);
    }
  }
  // Bias (both dtypes) and fp16 output through every schedule.
  for (DType bias_dtype : {DType::kF32, DType::kBF16}) {
    HostGemm h = random_gemm(rng, 2, 300, 264, 400, true, bias_dtype);
    DeviceGemm d(h);
    for (const auto& [variant, twin] : schedule_twins({96, 128, 160, 256})) {
      for (DType out : {DType::kBF16, DType::kF16}) {
        for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
          for (bool fast : {false, true}) {
            if (!detail::config_illegal_reason(variant, shape_of(h, layout, fast, out)).empty()) continue;
            const std::string what = variant.name() + " " +
                                     describe(h.b, h.m, h.n, h.k, layout, fast, out) + " bias " +
                                     to_string(bias_dtype);
            SCOPED_TRACE(what);
            const auto y_variant = d.run(layout, out, fast, &variant);
            const auto y_twin = d.run(layout, out, fast, &twin);
            EXPECT_TRUE(y_variant == y_twin) << twin.name() << ": " << first_difference(y_variant, y_twin);
            expect_accurate(h.check(y_variant, out, fast), h.k, out, h.out_count(), fast, what);
          }
        }
      }
    }
  }
}

TEST(GemmGpu, WholeBlockStoresWithManyTilesPerCtaAndShortK) {
  F8GEMM_SKIP_WITHOUT_SM90();
  // Cooperative tiles with whole-block staging (StoreKind::kTmaBlock) when CTAs run several
  // tiles (2,2100,2120,144: 306 tiles of 128 x 256, 2244 of 64 x 64, on 132 SMs), ragged in M
  // and N, with K = 144 (two k-blocks, the second 16 bytes) and K = 128 (one k-block: where a
  // CTA has a next tile, its first k-block follows the stores at once; 1,1300,2056,128 has 187
  // to 693 tiles for the 128 x 128, 64-row and 128 x 64 tiles, 99 and 121 for 128 x 256 and
  // 128 x 192). The 64-row ping-pong twin stores in chunks and must give the same bits in fast
  // mode; every output is checked against the fp64 GPU reference, with bias and fp16 output on
  // the second shape. (Written for perf-log cards 66-67, which moved these stores under the next
  // tile's mainloop; both lost and were not kept.)
  std::mt19937_64 rng(6606);
  struct Case {
    int64_t b, m, n, k;
    bool bias;
    DType out;
  };
  for (const Case& c : {Case{2, 2100, 2120, 144, false, DType::kBF16},
                        Case{1, 1300, 2056, 128, true, DType::kF16}}) {
    HostGemm h = random_gemm(rng, c.b, c.m, c.n, c.k, c.bias, DType::kF32);
    DeviceGemm d(h);
    std::vector<std::pair<Config, ProblemShape>> work;
    struct Run {
      Config cfg;
      ProblemShape p;
      bool twin;  // also run the 64-row ping-pong twin (fast mode, 64-row tiles)
    };
    std::vector<Run> cases;
    for (int bn : {64, 128, 192, 256}) {
      const Config twin = deepest(KernelPath::kPingPong, 64, bn, 1);
      for (const Config& cfg : {deepest(KernelPath::kTiled, 64, bn, 1),
                                deepest(KernelPath::kTiled, 128, bn, 1),
                                deepest(KernelPath::kTiled, 128, bn, 2)}) {
        for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
          for (bool fast : {false, true}) {
            const ProblemShape p = shape_of(h, layout, fast, c.out);
            if (!detail::config_illegal_reason(cfg, p).empty()) continue;
            const bool with_twin =
                fast && cfg.bm == 64 && detail::config_illegal_reason(twin, p).empty();
            work.emplace_back(cfg, p);
            if (with_twin) work.emplace_back(twin, p);
            cases.push_back({cfg, p, with_twin});
          }
        }
      }
    }
    ASSERT_GE(cases.size(), 20u);
    warm_instances(work);
    const TensorView bias = c.bias ? d.bias_view() : TensorView{};
    for (const auto& [cfg, p, with_twin] : cases) {
      const std::string what = cfg.name() + " " +
                               describe(p.batch, p.m, p.n, p.k, p.w_layout, p.fast_accum, c.out) +
                               (c.bias ? " bias f32" : "");
      SCOPED_TRACE(what);
      const auto y = d.run(p.w_layout, c.out, p.fast_accum, &cfg);
      const detail::CheckResult r = detail::reference_check(
          d.x_view(), d.w_view(), d.xs_view(), d.ws_view(), c.bias ? &bias : nullptr,
          d.out_view(c.out), gamma_for(h.k, p.fast_accum), nullptr);
      expect_accurate(CheckStats{r.rel_rms, r.max_ratio, r.nonfinite}, h.k, c.out, h.out_count(),
                      p.fast_accum, what);
      if (with_twin) {
        const Config twin = deepest(KernelPath::kPingPong, 64, cfg.bn, 1);
        const auto y_twin = d.run(p.w_layout, c.out, p.fast_accum, &twin);
        EXPECT_TRUE(y == y_twin) << twin.name() << ": " << first_difference(y, y_twin);
      }
    }
  }
}

TEST(GemmGpu, SplitKAgainstTheReferenceAndBitwiseDeterministic) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(4242);
  struct Case {
    int64_t b, m, n, k;
  };
  auto config = [](KernelPath path, int bm, int bn, int split) {
    Config c;
    c.path = path;
    c.bm = bm;
    c.bn = bn;
    c.raster = 0;
    c.split_k = split;
    for (c.stages = 8; c.stages > 2 && detail::config_smem_bytes(c) > detail::kMaxSmemBytes;) {
      --c.stages;
    }
    return c;
  };
  // Ragged M, N and K, with K not a multiple of the split: K = 400 is 4 k-blocks (the last one
  // 16 bytes) split 3 ways as 1 + 1 + 2; K = 1040 is 9 k-blocks split 2, 4 and 8 ways; the
  // decode shape 1,16,4096,14336 has 112 k-blocks.
  const std::vector<Config> configs = {
      config(KernelPath::kSwapAB, 64, 8, 2),   config(KernelPath::kSwapAB, 64, 8, 3),
      config(KernelPath::kSwapAB, 128, 16, 4), config(KernelPath::kSwapAB, 64, 32, 8),
      config(KernelPath::kSwapAB, 128, 64, 2), config(KernelPath::kTiled, 128, 64, 3),
      config(KernelPath::kTiled, 64, 128, 2)};
  for (const Case& c : {Case{3, 7, 136, 400}, Case{2, 37, 264, 1040}, Case{1, 16, 4096, 14336}}) {
    HostGemm h = random_gemm(rng, c.b, c.m, c.n, c.k);
    DeviceGemm d(h);
    std::vector<std::pair<Config, ProblemShape>> work;
    for (const Config& cfg : configs) {
      for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
        for (bool fast : {false, true}) {
          const ProblemShape p = shape_of(h, layout, fast, DType::kBF16);
          if (detail::config_illegal_reason(cfg, p).empty()) work.emplace_back(cfg, p);
        }
      }
    }
    ASSERT_GE(work.size(), 8u);
    warm_instances(work);
    for (const auto& [cfg, p] : work) {
      const std::string what =
          cfg.name() + " " + describe(p.batch, p.m, p.n, p.k, p.w_layout, p.fast_accum, p.out_dtype);
      SCOPED_TRACE(what);
      const auto y = d.run(p.w_layout, DType::kBF16, p.fast_accum, &cfg);
      expect_accurate(h.check(y, DType::kBF16, p.fast_accum), h.k, DType::kBF16, h.out_count(),
                      p.fast_accum, what);
      // Ten runs, bit for bit: the partial sums are added in a fixed order.
      for (int run = 1; run < 10; ++run) {
        const auto again = d.run(p.w_layout, DType::kBF16, p.fast_accum, &cfg);
        ASSERT_TRUE(again == y) << "run " << run << ": " << first_difference(again, y);
      }
    }
  }
  // Bias (both dtypes) and fp16 output, both layouts, both modes.
  for (DType bias_dtype : {DType::kF32, DType::kBF16}) {
    HostGemm h = random_gemm(rng, 2, 37, 264, 1040, true, bias_dtype);
    DeviceGemm d(h);
    for (const Config& cfg : {configs[1], configs[5]}) {
      for (DType out : {DType::kBF16, DType::kF16}) {
        for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
          for (bool fast : {false, true}) {
            const std::string what = cfg.name() + " " +
                                     describe(h.b, h.m, h.n, h.k, layout, fast, out) + " bias " +
                                     to_string(bias_dtype);
            SCOPED_TRACE(what);
            const auto y = d.run(layout, out, fast, &cfg);
            expect_accurate(h.check(y, out, fast), h.k, out, h.out_count(), fast, what);
          }
        }
      }
    }
  }
}

}  // namespace f8gemm

namespace f8gemm {
namespace {

// GemmOptions::trace on every schedule: the instrumented kernel gives the ordinary kernel's
// bits, every CTA of the persistent grid (trace_ctas) writes its header, from its own SM where
// one fills an SM's shared memory, the headers count every tile (each consumer of a cooperative
// tile, each CTA of a split), and each record's clocks (the epilogue's inner two included) run
// in order, tile after tile. A buffer too small for the grid is refused before the launch.
TEST(GemmGpu, TraceRecordsEveryTileInOrderAndLeavesTheBitsAlone) {
  F8GEMM_SKIP_WITHOUT_SM90();
  int sms = 0;
  F8GEMM_CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::mt19937_64 rng(77);
  struct Case {
    const char* config;
    int64_t b, m, n, k;
    bool fast;
  };
  // 8448 rows are 66 X tiles of 128 and 132 of 64 (even: whole pairs); N = 1040 leaves a ragged
  // last W tile for every width; K = 528 ends in 16 bytes.
  // Every store kind's epilogue marks: whole blocks (tiled 128x256), 32-column chunks in
  // cooperative (tiled 128x160) and ping-pong tiles, padded rows (tiled 128x112), swap-AB.
  const Case cases[] = {
      {"sm90_tiled_128x256x128_s3_c1x1_r8", 1, 8448, 1040, 528, true},
      {"sm90_tiled_128x160x128_s4_c1x1_r8", 1, 8448, 1040, 528, true},
      {"sm90_tiled_128x112x128_s4_c1x1_r8", 1, 8448, 1040, 528, false},
      {"sm90_tiled_128x128x128_s5_c2x1_r8", 1, 8448, 1040, 528, false},
      {"sm90_pingpong_64x256x128_s5_c2x1_r8", 1, 8448, 1040, 528, true},
      {"sm90_pingpong_128x128x128_s6_c1x1_r8", 1, 8448, 1040, 528, true},
      {"sm90_swap_64x8x128_s12_c1x1_r0", 2, 5, 1040, 528, true},
      {"sm90_swap_64x8x128_s12_c1x1_r0_k2", 2, 5, 1040, 528, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.config);
    const Config config = Config::parse(c.config);
    HostGemm h = random_gemm(rng, c.b, c.m, c.n, c.k);
    DeviceGemm d(h);
    const bool swap = config.path == KernelPath::kSwapAB;
    const int64_t x_rows = swap ? config.bn : config.bm, w_rows = swap ? config.bm : config.bn;
    const int64_t tiles = c.b * ((c.m + x_rows - 1) / x_rows) * ((c.n + w_rows - 1) / w_rows);
    const bool pingpong = config.path == KernelPath::kPingPong;
    const int consumers = pingpong ? 2 : int(config.bm / 64);
    const int64_t counted = tiles * config.split_k * (pingpong ? 1 : consumers);
    const auto plain_bits = d.run(WeightLayout::kPreshuffled, DType::kBF16, c.fast, &config);
    const ProblemShape shape = shape_of(h, WeightLayout::kPreshuffled, c.fast, DType::kBF16);
    const int ctas = trace_ctas(shape, &config);
    EXPECT_GE(ctas, 1);
    EXPECT_LE(ctas, 2 * sms);
    // Two CTAs of a small swap-AB tile fit one SM (113-115 KB of shared memory each); the
    // others take more than half an SM's 227 KB.
    const bool one_per_sm = 2 * (detail::config_smem_bytes(config) + 1024) > 233472;
    for (int capacity : {256, 1}) {
      const int64_t words = trace_words(ctas, capacity);
      DeviceBuffer buf(size_t(words) * 8);
      F8GEMM_CHECK_CUDA(cudaMemset(buf.get(), 0, buf.bytes()));
      GemmTrace trace;
      trace.data = static_cast<unsigned long long*>(buf.get());
      trace.words = words;
      trace.tiles = capacity;
      const auto traced_bits =
          d.run(WeightLayout::kPreshuffled, DType::kBF16, c.fast, &config, nullptr, &trace);
      EXPECT_TRUE(traced_bits == plain_bits) << first_difference(traced_bits, plain_bits);
      std::vector<uint64_t> host(static_cast<size_t>(words), 0);
      buf.download(host.data(), buf.bytes());
      const test::TraceData data = test::parse_trace(host, capacity);
      EXPECT_EQ(data.ctas, ctas);
      EXPECT_EQ(data.consumers, consumers);
      EXPECT_EQ(data.tiles_run, counted) << tiles << " tiles";
      std::set<int> sm_ids;
      for (const test::TraceRecord& r : data.records) sm_ids.insert(r.sm);
      int64_t stored = 0;
      for (size_t i = 0; i < data.records.size(); ++i) {
        const test::TraceRecord& r = data.records[i];
        SCOPED_TRACE("CTA " + std::to_string(r.cta) + " consumer " + std::to_string(r.consumer) +
                     " tile " + std::to_string(r.tile));
        ASSERT_LT(r.tile, capacity);
        EXPECT_NE(r.start, 0u);
        EXPECT_LE(r.start, r.last_issue);
        EXPECT_LE(r.last_issue, r.mainloop_done);
        // A split's ranks other than 0 hand their sums over and store nothing.
        if (config.split_k == 1) EXPECT_NE(r.epilogue_done, 0u);
        if (r.epilogue_done != 0) {
          ++stored;
          // The epilogue's inner clocks (of the tile's first 64-row block) fall in between.
          EXPECT_LE(r.mainloop_done, r.epilogue_entered);
          EXPECT_LE(r.epilogue_entered, r.epilogue_staged);
          EXPECT_LE(r.epilogue_staged, r.epilogue_done);
        } else {
          EXPECT_EQ(r.epilogue_entered, 0u);
          EXPECT_EQ(r.epilogue_staged, 0u);
        }
        if (i + 1 < data.records.size() && data.records[i + 1].cta == r.cta &&
            data.records[i + 1].consumer == r.consumer) {
          EXPECT_LE(std::max(r.mainloop_done, r.epilogue_done), data.records[i + 1].start);
        }
      }
      EXPECT_GT(stored, 0);
      if (capacity >= 256) {
        EXPECT_EQ(int64_t(data.records.size()), counted);
        if (one_per_sm) EXPECT_EQ(int(sm_ids.size()), data.ctas) << "two CTAs on one SM";
      }
    }
    // Too small for the grid: refused before the launch, the poisoned output untouched.
    DeviceBuffer small(64);
    GemmTrace tiny;
    tiny.data = static_cast<unsigned long long*>(small.get());
    tiny.words = 8;
    tiny.tiles = 1;
    test::expect_error(
        [&] { d.launch(WeightLayout::kPreshuffled, DType::kBF16, c.fast, &config, nullptr, &tiny); },
        ErrorCode::kInvalidArgument, "trace.words is 8 but this call's");
    const auto untouched = d.result(nullptr);
    EXPECT_TRUE(std::all_of(untouched.begin(), untouched.end(),
                            [](uint16_t v) { return v == 0xFFFF; }));
  }
}

}  // namespace
}  // namespace f8gemm
