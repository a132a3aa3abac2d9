/// \brief `f8gemm run` (one problem, timed, optionally verified) and `f8gemm demo` (the 11
/// batched shapes in both accumulation modes; the CPU path on a machine without a GPU).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "bench_util.hpp"
#include "check.hpp"
#include "cli_args.hpp"
#include "codegen.hpp"
#include "config.hpp"
#include "fixture.hpp"
#include "numerics.hpp"

namespace f8gemm::cli {

namespace {

constexpr int64_t kDemoShapes[][4] = {
    {16, 1, 1280, 8192},   {16, 32, 1280, 8192},  {16, 128, 1280, 8192}, {16, 512, 1280, 8192},
    {16, 1024, 1280, 8192}, {16, 4096, 1280, 8192}, {16, 1, 8192, 1024},   {16, 128, 8192, 1024},
    {16, 512, 8192, 1024}, {16, 1024, 8192, 1024}, {16, 4096, 8192, 1024}};

/// The acceptance bounds on the relative RMS error (README "Accuracy").
constexpr double kRmsBoundPrecise = 1.8e-3;
constexpr double kRmsBoundFast = 3.0e-3;

bool passes(const detail::CheckResult& r, bool fast) {
  return r.nonfinite == 0 && r.max_ratio <= 1.0 && r.rel_rms <= (fast ? kRmsBoundFast : kRmsBoundPrecise);
}

bool have_gpu(std::string& reason) {
  const DeviceInfo info = device_info();
  reason = info.reason;
  return info.has_device && info.reason.empty();
}

/// The demo without a GPU: compile the demo's instances for sm_90a and run the CPU path.
int demo_cpu(const std::string& reason) {
  std::printf("No usable GPU here (%s).\n", reason.c_str());
  std::printf("Compiling the demo's kernel instances for sm_90a (H200, 132 SMs assumed):\n");
  for (const auto& s : kDemoShapes) {
    for (bool fast : {true, false}) {
      FixtureSpec spec;
      spec.batch = s[0];
      spec.m = s[1];
      spec.n = s[2];
      spec.k = s[3];
      ProblemShape p;
      p.batch = spec.batch;
      p.m = spec.m;
      p.n = spec.n;
      p.k = spec.k;
      p.fast_accum = fast;
      const Config c = detail::decide("NVIDIA H200", 132, p);
      const auto spec_i = detail::make_spec(c, p);
      const auto t0 = std::chrono::steady_clock::now();
      const int64_t compiles_before = jit::stats().compiles;
      auto inst = detail::gemm_instance(spec_i);
      const bool compiled = jit::stats().compiles > compiles_before;
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      int regs = 0;
      for (const auto& r : inst->resources()) regs = std::max(regs, r.registers);
      std::printf("  %-10s %-66s regs=%3d spills=%d %s %.0f ms\n",
                  (std::to_string(s[0]) + "," + std::to_string(s[1]) + "," + std::to_string(s[2]) +
                   "," + std::to_string(s[3])).c_str(),
                  spec_i.label().c_str(), regs, inst->spill_bytes(),
                  compiled ? "(compiled)" : inst->from_disk() ? "(disk cache)" : "(in memory)", ms);
      if (inst->spill_bytes() != 0) {
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

int cmd_run(const Args& args) {
  Options opt(args, {"--b", "--m", "--n", "--k", "--out", "--bias-dtype", "--config", "--iters", "--seed"},
              {"--bias", "--precise", "--plain", "--verify", "--once"}, "run");
  FixtureSpec s;
  s.batch = opt.integer("--b", 1, 0, INT32_MAX);
  s.m = opt.integer("--m", -1, 0, INT32_MAX);
  s.n = opt.integer("--n", -1, 1, INT32_MAX);
  s.k = opt.integer("--k", -1, 1, INT32_MAX);
  if (s.m < 0 || s.n < 0 || s.k < 0) throw UsageError("run: --m, --n and --k are required");
  const std::string out = opt.str("--out", "bf16");
  if (out != "bf16" && out != "fp16") throw UsageError("run: --out must be bf16 or fp16, got '" + out + "'");
  s.out_dtype = out == "fp16" ? DType::kF16 : DType::kBF16;
  s.bias = opt.flag("--bias") || opt.has("--bias-dtype");
  const std::string bias_dtype = opt.str("--bias-dtype", "f32");
  if (bias_dtype != "f32" && bias_dtype != "bf16") throw UsageError("run: --bias-dtype must be f32 or bf16");
  s.bias_dtype = bias_dtype == "bf16" ? DType::kBF16 : DType::kF32;
  s.seed = uint64_t(opt.integer("--seed", 1, 0, INT64_MAX));
  const int iters = int(opt.integer("--iters", 100, 1, 100000));
  const bool fast = !opt.flag("--precise"), plain = opt.flag("--plain");
  Config forced;
  if (opt.has("--config")) forced = Config::parse(opt.str("--config", ""));
  const Config* config = opt.has("--config") ? &forced : nullptr;
  // Reject what the kernels cannot take before looking for a GPU or allocating gigabytes.
  const ProblemShape shape = problem_of(s, plain, fast);
  validate_problem(shape);
  if (config) {
    const std::string why = detail::config_illegal_reason(*config, shape);
    if (!why.empty()) {
      throw Error(ErrorCode::kUnsupported, "config " + config->name() + " cannot run B,M,N,K=" +
                                               std::to_string(s.batch) + "," + std::to_string(s.m) +
                                               "," + std::to_string(s.n) + "," +
                                               std::to_string(s.k) + ": " + why);
    }
  }

  std::string reason;
  if (!have_gpu(reason)) throw Error(ErrorCode::kNoDevice, "run needs an sm_90 GPU: " + reason);
  Fixture fx(s);
  cudaStream_t stream;
  F8GEMM_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  fx.poison(stream);
  fx.run(plain, fast, config, stream);
  const uint64_t hash = fx.output_hash(stream);
  if (opt.flag("--once")) {
    // One call and its check, no timing: what a sanitizer or a determinism check needs.
    std::printf("output hash (FNV-1a 64 of the first call's output): %016llx\n",
                (unsigned long long)hash);
    int rc = 0;
    if (opt.flag("--verify")) {
      const auto r = fx.verify(fast, stream);
      rc = passes(r, fast) ? 0 : 1;
      std::printf("verify (fp64 GPU reference): rel RMS %.3e, max |err|/bound %.3f: %s\n", r.rel_rms,
                  r.max_ratio, rc == 0 ? "PASS" : "FAIL");
    }
    F8GEMM_CHECK_CUDA(cudaStreamDestroy(stream));
    return rc;
  }
  const ProblemShape p = fx.problem(plain, fast);
  const Config chosen = config ? *config : choose_config(p);
  auto fn = [&](cudaStream_t st) { fx.run(plain, fast, config, st); };
  run_for_ms(fn, 300, stream);
  const double host_us = time_host_us(fn, iters, 10, stream);
  const double graph_us = time_graph_us(fn, iters, stream);
  // Host cost of one API call: the wall time of issuing 200 calls without waiting for them,
  // divided by 200; the median of 7 such batches (the GPU drains between batches, so a slow
  // kernel does not back the launch queue up into the measurement).
  std::vector<double> batches;
  for (int rep = 0; rep < 7; ++rep) {
    F8GEMM_CHECK_CUDA(cudaStreamSynchronize(stream));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; ++i) fn(stream);
    batches.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 200);
  }
  F8GEMM_CHECK_CUDA(cudaStreamSynchronize(stream));
  std::sort(batches.begin(), batches.end());
  const double api_us = batches[batches.size() / 2];
  std::printf("B,M,N,K=%lld,%lld,%lld,%lld %s %s %s config=%s\n", (long long)s.batch, (long long)s.m,
              (long long)s.n, (long long)s.k, plain ? "plain" : "preshuffled", fast ? "fast" : "precise",
              out.c_str(), chosen.name().c_str());
  std::printf("host %.2f us/call, kernel (graph) %.2f us, %.1f TFLOP/s, %.2f TB/s, API host cost %.2f us/call (median of 7 x 200 calls, min %.2f)\n",
              host_us, graph_us, fx.flops() / graph_us * 1e-6, fx.bytes() / graph_us * 1e-6, api_us, batches.front());
  std::printf("output hash (FNV-1a 64 of the first call's output): %016llx\n", (unsigned long long)hash);
  int rc = 0;
  if (opt.flag("--verify")) {
    fx.poison(stream);
    fx.run(plain, fast, config, stream);
    const auto r = fx.verify(fast, stream);
    const bool ok = passes(r, fast);
    std::printf("verify (fp64 GPU reference): rel RMS %.3e, max |err|/bound %.3f, non-finite %lld: %s\n",
                r.rel_rms, r.max_ratio, (long long)r.nonfinite, ok ? "PASS" : "FAIL");
    rc = ok ? 0 : 1;
  }
  F8GEMM_CHECK_CUDA(cudaStreamDestroy(stream));
  return rc;
}

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
  for (const auto& sh : kDemoShapes) {
    FixtureSpec s;
    s.batch = sh[0];
    s.m = sh[1];
    s.n = sh[2];
    s.k = sh[3];
    Fixture fx(s);
    char shape[32];
    std::snprintf(shape, sizeof(shape), "%lld,%lld,%lld,%lld", (long long)s.batch, (long long)s.m,
                  (long long)s.n, (long long)s.k);
    std::printf("%-18s", shape);
    bool row_ok = true;
    for (bool fast : {true, false}) {
      fx.poison(stream);
      fx.run(false, fast, nullptr, stream);
      const auto gpu = fx.verify(fast, stream);
      const auto cpu = fx.verify_cpu_sample(fast, 16);
      auto fn = [&](cudaStream_t st) { fx.run(false, fast, nullptr, st); };
      run_for_ms(fn, 100, stream);
      const double us = time_graph_us(fn, iters, stream);
      const bool ok = passes(gpu, fast) && passes(cpu, fast);
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
