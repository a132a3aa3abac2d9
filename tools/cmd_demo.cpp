/// \brief `f8gemm demo`: the default shapes in both accumulation modes, verified and timed on
/// the GPU; without a GPU, their instances compiled for sm_90a and the CPU path on a small shape.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "bench_util.hpp"
#include "cli_args.hpp"
#include "f8gemm/check.hpp"
#include "f8gemm/tuning.hpp"
#include "fixture.hpp"
#include "hang_guard.hpp"
#include "reference.hpp"
#include "shapes.hpp"

namespace f8gemm::cli {

namespace {

/// The demo without a GPU: compile the demo's instances for sm_90a and run the CPU path.
int demo_cpu(const std::string& reason) {
  std::printf("No usable GPU here (%s).\n", reason.c_str());
  std::printf("Compiling the demo's kernel instances for sm_90a (H200, %d SMs assumed):\n",
              kAssumedGpuSmCount);
  const TargetGpu gpu = target_gpu();
  for (const Shape& s : default_shapes()) {
    for (bool fast : {true, false}) {
      ProblemShape p = problem_of(s);
      p.fast_accum = fast;
      const auto t0 = std::chrono::steady_clock::now();
      const InstanceReport r = describe(decide_config(gpu, p), p);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::printf("  %-10s %-66s regs=%3d spills=%d %s %.0f ms\n", s.label().c_str(),
                  r.label.c_str(), r.registers, r.spill_bytes,
                  r.source == InstanceSource::kCompiled    ? "(compiled)"
                  : r.source == InstanceSource::kDiskCache ? "(disk cache)"
                                                           : "(in memory)",
                  ms);
      if (r.spill_bytes != 0) {
        std::printf("  error: the instance spills registers\n");
        return 1;
      }
    }
  }
  // The CPU path on a small shape: quantise, preshuffle and back, fp64 reference.
  const int64_t b = 2, m = 8, n = 64, k = 256;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> xf(size_t(b * m * k)), wf(size_t(b * n * k));
  for (auto& v : xf) v = normal(rng);
  for (auto& v : wf) v = 0.02f * normal(rng);
  std::vector<uint8_t> xq(xf.size()), wq(wf.size()), w_back(wf.size());
  std::vector<float> xs(size_t(b * m)), ws(size_t(b * n));
  quantize_rows(make_view(xf.data(), DType::kF32, {b, m, k}), make_view(xq.data(), DType::kE4M3, {b, m, k}),
                make_view(xs.data(), DType::kF32, {b, m}));
  quantize_rows(make_view(wf.data(), DType::kF32, {b, n, k}), make_view(wq.data(), DType::kE4M3, {b, n, k}),
                make_view(ws.data(), DType::kF32, {b, n}));
  const auto shape = preshuffled_shape(b, n, k);
  std::vector<uint8_t> shuffled(size_t(shape[0] * shape[1] * shape[2] * shape[3]));
  preshuffle(make_view(wq.data(), DType::kE4M3, {b, n, k}), make_view(shuffled.data(), DType::kE4M3, shape));
  unshuffle(make_view(shuffled.data(), DType::kE4M3, shape), make_view(w_back.data(), DType::kE4M3, {b, n, k}));
  const bool round_trip = w_back == wq;
  std::vector<double> ref(size_t(b * m * n));
  numerics::reference_gemm(b, m, n, k, xq.data(), wq.data(), xs.data(), ws.data(), nullptr,
                           DType::kF32, ref.data());
  // The FP8 product against the unquantised fp64 product: the quantisation error alone.
  double err2 = 0, ref2 = 0;
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double exact = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          exact += double(xf[size_t((bi * m + i) * k + kk)]) * wf[size_t((bi * n + j) * k + kk)];
        }
        const double e = ref[size_t((bi * m + i) * n + j)] - exact;
        err2 += e * e;
        ref2 += exact * exact;
      }
  std::printf("CPU path, B,M,N,K = %lld,%lld,%lld,%lld: preshuffle round trip %s; FP8 product vs "
              "unquantised fp64: relative RMS %.2e (quantisation error)\n",
              (long long)b, (long long)m, (long long)n, (long long)k, round_trip ? "exact" : "FAILED",
              std::sqrt(err2 / ref2));
  return round_trip ? 0 : 1;
}

}  // namespace

int cmd_demo(const Args& args) {
  Options opt(args, {"--iters"}, {}, "demo");
  const int iters = int(opt.integer("--iters", 50, 1, 100000));
  std::string reason;
  if (!have_gpu(reason)) return demo_cpu(reason);
  cudaStream_t stream;
  F8GEMM_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::printf("f8gemm demo: X quantised per row, W per output channel and preshuffled, bf16 out.\n");
  std::printf("Error: relative RMS against the fp64 GPU reference (all elements) and the CPU fp64\n"
              "reference (16 rows of batch 0); bound: |err| <= u|ref| + gamma*sum|x*w| per element.\n\n");
  std::printf("%-18s %-34s %9s %8s %7s %9s %9s %-34s %9s %8s %9s %9s %s\n", "B,M,N,K", "fast: config",
              "us", "TFLOP/s", "TB/s", "rel err", "cpu err", "precise: config", "us", "TFLOP/s",
              "rel err", "cpu err", "");
  bool all_ok = true;
  for (const Shape& shape : default_shapes()) {
    Fixture fx(fixture_spec(shape));
    std::printf("%-18s", shape.label().c_str());
    bool row_ok = true;
    for (bool fast : {true, false}) {
      fx.poison(stream);
      fx.run(false, fast, nullptr, stream);
      const auto gpu = fx.verify(fast, stream);
      const auto cpu = fx.verify_cpu_sample(fast, 16);
      const test::HangLabel label("demo " + shape.label() + (fast ? " fast" : " precise"));
      auto fn = [&](cudaStream_t st) { fx.run(false, fast, nullptr, st); };
      run_for_ms(fn, 100, stream);
      const double us = time_graph_us(fn, iters, stream);
      const bool ok = fx.passes(gpu, fast) && fx.passes(cpu, fast);
      row_ok = row_ok && ok;
      const Config c = choose_config(fx.problem(false, fast));
      std::printf(" %-34s %9.2f %8.1f %7.2f %9.2e %9.2e", c.name().c_str(), us,
                  fx.flops() / us * 1e-6, fx.bytes() / us * 1e-6, gpu.rel_rms, cpu.rel_rms);
      std::fflush(stdout);
    }
    std::printf(" %s\n", row_ok ? "ok" : "FAIL");
    all_ok = all_ok && row_ok;
  }
  F8GEMM_CHECK_CUDA(cudaStreamDestroy(stream));
  std::printf("\n%s\n", all_ok ? "All shapes within the accuracy bounds." : "SOME SHAPES FAILED.");
  return all_ok ? 0 : 1;
}

}  // namespace f8gemm::cli
