/// \brief Concurrent first calls on an sm_90 GPU: eight threads, released together, each make the
/// first gemm() call of a problem that no other test in this binary uses, so that the plan cache,
/// the configuration choice and the JIT compile are all built under contention (the CPU TSan job
/// never reaches a built plan). Every output must equal a serial call's bits and pass the fp64
/// reference check. Skips without an sm_90 GPU.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/test_util.hpp"
#include "f8gemm/f8gemm.hpp"
#include "jit/cache.hpp"
#include "reference.hpp"

namespace f8gemm {
namespace {

using test::DeviceBuffer;

constexpr int kThreads = 8;

/// Releases its threads together: arrive_and_wait() returns once all `count` have arrived. A
/// spin, not a condition variable, so that the threads leave within microseconds of each other
/// (std::barrier is C++20; the tests build as C++17).
class StartLine {
 public:
  explicit StartLine(int count) : waiting_(count) {}
  void arrive_and_wait() {
    waiting_.fetch_sub(1);
    while (waiting_.load() > 0) std::this_thread::yield();
  }

 private:
  std::atomic<int> waiting_;
};

/// One single GEMM (B = 1): random operands on the host and the GPU, W also preshuffled, and
/// the fp64 reference.
struct Problem {
  int64_t m = 0, n = 0, k = 0;
  std::vector<uint8_t> x, w;
  std::vector<float> xs, ws;
  std::vector<double> ref, abs_ref;
  DeviceBuffer dx, dw, dw_shuffled, dxs, dws;

  Problem(std::mt19937_64& rng, int64_t m_, int64_t n_, int64_t k_) : m(m_), n(n_), k(k_) {
    x = test::random_e4m3(rng, size_t(m * k));
    w = test::random_e4m3(rng, size_t(n * k));
    xs = test::random_scales(rng, size_t(m));
    ws = test::random_scales(rng, size_t(n));
    dx = DeviceBuffer::from(x);
    dw = DeviceBuffer::from(w);
    dxs = DeviceBuffer::from(xs);
    dws = DeviceBuffer::from(ws);
    const std::vector<int64_t> shape = shuffled_shape();
    dw_shuffled = DeviceBuffer(size_t(shape[0] * shape[1] * shape[2]));
    preshuffle(dw.view(DType::kE4M3, {n, k}), dw_shuffled.view(DType::kE4M3, shape));
    F8GEMM_CHECK_CUDA(cudaDeviceSynchronize());
    ref.resize(size_t(m * n));
    abs_ref.resize(size_t(m * n));
    numerics::reference_gemm(1, m, n, k, x.data(), w.data(), xs.data(), ws.data(), nullptr,
                             DType::kF32, ref.data(), abs_ref.data());
  }

  /// The preshuffled form of the rank-2 W is rank 3: preshuffled_shape() without its batch.
  std::vector<int64_t> shuffled_shape() const {
    const std::vector<int64_t> s = preshuffled_shape(1, n, k);
    return {s[1], s[2], s[3]};
  }
  TensorView w_view(WeightLayout layout) const {
    return layout == WeightLayout::kPlain ? dw.view(DType::kE4M3, {n, k})
                                          : dw_shuffled.view(DType::kE4M3, shuffled_shape());
  }
  /// What call() asks for (without F8GEMM_PDL: then is_ready() of it says false, as before).
  ProblemShape shape(WeightLayout layout) const {
    ProblemShape s;
    s.m = m;
    s.n = n;
    s.k = k;
    s.w_layout = layout;
    return s;
  }

  /// Enqueues one gemm() (bf16 out, fast accumulation, the library's own choice of config).
  void call(WeightLayout layout, const DeviceBuffer& out, cudaStream_t stream) const {
    GemmOptions o;
    o.stream = stream;
    gemm(dx.view(DType::kE4M3, {m, k}), w_view(layout), layout, dxs.view(DType::kF32, {m}),
         dws.view(DType::kF32, {n}), out.view(DType::kBF16, {m, n}), o);
  }

  /// Both bounds of README "Accuracy" against the fp64 reference.
  void expect_accurate(const std::vector<uint16_t>& y, const std::string& what) const {
    const test::CheckStats s = test::compare_to_reference(
        ref, abs_ref, y.data(), DType::kBF16, numerics::accumulation_gamma(k, true));
    EXPECT_EQ(s.nonfinite, 0) << what << " " << s;
    EXPECT_LE(s.max_ratio, 1.0) << what << " " << s;
    if (m * n >= numerics::kMinCountForRms) {
      EXPECT_LE(s.rel_rms, numerics::rel_rms_bound(k, true, DType::kBF16)) << what << " " << s;
    }
  }
};

std::string label(const Problem& p) {
  return "M,N,K=" + std::to_string(p.m) + "," + std::to_string(p.n) + "," + std::to_string(p.k);
}

/// A poisoned output with a guard tail (test_util.hpp's output_bits checks it).
DeviceBuffer poisoned_output(const Problem& p, cudaStream_t stream) {
  DeviceBuffer out(size_t(p.m * p.n) * 2 + test::kGuardBytes);
  test::poison(out, stream);
  return out;
}

/// Thread t makes the first call of problems[t] on its own stream into its own poisoned output;
/// all kThreads are released together. Returns each output's bits; a call that threw fails the
/// test with its message.
std::vector<std::vector<uint16_t>> first_calls_together(const std::vector<const Problem*>& problems,
                                                        WeightLayout layout) {
  std::vector<cudaStream_t> streams(problems.size());
  std::vector<DeviceBuffer> outs;
  for (size_t t = 0; t < problems.size(); ++t) {
    F8GEMM_CHECK_CUDA(cudaStreamCreateWithFlags(&streams[t], cudaStreamNonBlocking));
    outs.push_back(poisoned_output(*problems[t], streams[t]));
  }
  StartLine start(int(problems.size()));
  std::vector<std::string> errors(problems.size());
  std::vector<std::thread> threads;
  for (size_t t = 0; t < problems.size(); ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      try {
        problems[t]->call(layout, outs[t], streams[t]);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  std::vector<std::vector<uint16_t>> bits;
  for (size_t t = 0; t < problems.size(); ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t << ", " << label(*problems[t]);
    bits.push_back(test::output_bits(outs[t], size_t(problems[t]->m * problems[t]->n), streams[t]));
    F8GEMM_CHECK_CUDA(cudaStreamDestroy(streams[t]));
  }
  return bits;
}

/// The same call made alone, after the concurrent ones (the plan is built by then).
std::vector<uint16_t> serial_call(const Problem& p, WeightLayout layout) {
  const DeviceBuffer out = poisoned_output(p, nullptr);
  p.call(layout, out, nullptr);
  return test::output_bits(out, size_t(p.m * p.n), nullptr);
}

/// A fresh F8GEMM_CACHE_DIR for one test, set before its threads start and restored after they
/// end (README: set switches before threads): the instance is compiled under contention, never
/// read from a disk cache that an earlier run of this binary left in $HOME. The library reads
/// the variable at each use, so setting it here takes effect.
class FreshCache {
 public:
  FreshCache() : dir_("f8gemm_concurrent_gpu"), env_("F8GEMM_CACHE_DIR") { env_.set(dir_.path()); }

 private:
  test::TempDir dir_;
  test::ScopedEnv env_;
};

// One problem: M = 24 rows, K = 656 and N = 472, which no other test in this binary uses, so that
// the plan and the instance are new; the cost model splits its swap-AB tile in K across a
// cluster here (sm90_swap_64x8x128_s12_c1x1_r0_k3 on the H200's 132 SMs), so the cluster
// occupancy query runs under contention too.
TEST(GemmGpuConcurrent, FirstCallsOfOneNewProblemFromEightThreads) {
  F8GEMM_SKIP_WITHOUT_SM90();
  const test::HangLabel hang(test::current_test_name());
  const FreshCache cache;
  std::mt19937_64 rng(8080);
  const Problem p(rng, 24, 472, 656);
  const WeightLayout layout = WeightLayout::kPreshuffled;
  ASSERT_FALSE(is_ready(p.shape(layout))) << "an earlier call built " << label(p) << "'s plan";
  const jit::Stats before = jit::stats();

  const std::vector<const Problem*> same(kThreads, &p);
  const std::vector<std::vector<uint16_t>> outs = first_calls_together(same, layout);
  const jit::Stats after = jit::stats();
  std::cout << "[ concurrent ] " << label(p) << " " << choose_config(p.shape(layout)).name()
            << ": " << after.compiles - before.compiles << " compile(s), "
            << after.memory_hits - before.memory_hits << " waits on it\n";
  // The memory cache's promise (jit/cache.hpp): concurrent callers of one key wait for one build.
  EXPECT_EQ(after.compiles - before.compiles, 1);
  EXPECT_EQ(after.disk_hits - before.disk_hits, 0);

  const std::vector<uint16_t> serial = serial_call(p, layout);
  p.expect_accurate(serial, "serial " + label(p));
  for (size_t t = 0; t < outs.size(); ++t) {
    EXPECT_EQ(outs[t], serial) << "thread " << t;
    p.expect_accurate(outs[t], "thread " + std::to_string(t) + " " + label(p));
  }
}

// Eight problems that share one configuration and so one instance (N = 344, K = 592, the same
// in all; M differs): eight plans are built at once while one compile serves them all. Plain W,
// so that the tensor maps of W are encoded under contention too. The cost model gives every M
// in [257, 1024] here the same tile (sm90_tiled_64x64x128_s8_c1x1_r8 on the H200); the test
// groups the candidates by the configuration chosen on this GPU rather than assume it.
TEST(GemmGpuConcurrent, FirstCallsOfEightNewProblemsSharingAConfig) {
  F8GEMM_SKIP_WITHOUT_SM90();
  const test::HangLabel hang(test::current_test_name());
  const FreshCache cache;
  constexpr int64_t kN = 344, kK = 592;
  const WeightLayout layout = WeightLayout::kPlain;
  std::map<std::string, std::vector<int64_t>> by_config;
  for (int64_t m : {264, 300, 333, 384, 416, 480, 520, 600, 648, 713, 777, 800, 880, 960, 1000,
                    1024}) {
    ProblemShape s;
    s.m = m;
    s.n = kN;
    s.k = kK;
    s.w_layout = layout;
    by_config[choose_config(s).name()].push_back(m);  // the choice only: nothing is built
  }
  auto largest = by_config.begin();
  for (auto it = by_config.begin(); it != by_config.end(); ++it) {
    if (it->second.size() > largest->second.size()) largest = it;
  }
  ASSERT_GE(largest->second.size(), size_t(kThreads))
      << "fewer than " << kThreads << " of the candidate M share a configuration; the most, "
      << largest->second.size() << ", share " << largest->first;

  std::mt19937_64 rng(9090);
  std::vector<Problem> problems;
  problems.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) problems.emplace_back(rng, largest->second[t], kN, kK);
  std::vector<const Problem*> ptrs;
  for (const Problem& p : problems) {
    ASSERT_FALSE(is_ready(p.shape(layout))) << "an earlier call built " << label(p) << "'s plan";
    ptrs.push_back(&p);
  }
  const jit::Stats before = jit::stats();
  const std::vector<std::vector<uint16_t>> outs = first_calls_together(ptrs, layout);
  const jit::Stats after = jit::stats();
  std::cout << "[ concurrent ] " << kThreads << " problems of " << largest->first << ": "
            << after.compiles - before.compiles << " compile(s), "
            << after.memory_hits - before.memory_hits << " waits on it\n";
  EXPECT_EQ(after.compiles - before.compiles, 1);
  EXPECT_EQ(after.disk_hits - before.disk_hits, 0);

  for (size_t t = 0; t < problems.size(); ++t) {
    const Problem& p = problems[t];
    const std::vector<uint16_t> serial = serial_call(p, layout);
    p.expect_accurate(serial, "serial " + label(p));
    EXPECT_EQ(outs[t], serial) << "thread " << t << " " << label(p);
    p.expect_accurate(outs[t], "thread " + std::to_string(t) + " " + label(p));
  }
}

}  // namespace
}  // namespace f8gemm
