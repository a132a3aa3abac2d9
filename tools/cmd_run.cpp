/// \brief `f8gemm run`: one problem on the GPU, timed from the host and as a CUDA graph, with the
/// API's host cost per call; optionally verified against the fp64 GPU reference.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "bench_util.hpp"
#include "cli_args.hpp"
#include "f8gemm/check.hpp"
#include "f8gemm/tuning.hpp"
#include "fixture.hpp"
#include "hang_guard.hpp"
#include "output_path.hpp"
#include "trace_summary.hpp"

namespace f8gemm::cli {

namespace {

/// `run --trace`: one call of the instrumented instance (GemmOptions::trace), after `warm` (the
/// clocks warmed by the ordinary kernel: a tile's cycles depend on the clock under the power
/// limit). Prints the summary, writes every record to `csv`, and checks that the recorded call
/// gave the ordinary call's bits (`expected_hash`).
template <class Warm>
void trace_one_call(const Fixture& fx, bool plain, bool fast, const Config* config,
                    cudaStream_t stream, int tiles, const std::string& csv,
                    uint64_t expected_hash, const std::string& label, Warm&& warm) {
  const int64_t words = trace_words(trace_ctas(fx.problem(plain, fast), config), tiles);
  // Up to about 1 GiB at --trace-tiles 16384: refused in one line where it does not fit beside
  // the fixture, rather than failing in cudaMalloc.
  require_fits(Footprint{{{"trace", times(words, int64_t(sizeof(uint64_t)))}}},
               "run --trace: --trace-tiles " + std::to_string(tiles), free_device_bytes());
  DeviceBuffer buf(size_t(words) * sizeof(uint64_t));
  GemmTrace trace;
  trace.data = buf.as<unsigned long long>();
  trace.words = words;
  trace.tiles = tiles;
  const test::HangLabel hang_label(label);
  fx.run(plain, fast, config, stream, &trace);  // compiles the instrumented instance
  warm();
  F8GEMM_CHECK_CUDA(cudaMemsetAsync(buf.get(), 0, buf.bytes(), stream));
  fx.poison(stream);
  fx.run(plain, fast, config, stream, &trace);
  test::sync_stream_or_exit(stream);
  const uint64_t traced_hash = fx.output_hash(stream);
  std::vector<uint64_t> host(static_cast<size_t>(words), 0);
  buf.download(host.data(), buf.bytes());
  const test::TraceData data = test::parse_trace(host, tiles);
  std::printf("%s", test::format_trace_summary(test::summarize_trace(data)).c_str());
  test::write_trace_csv(csv, data.records);
  std::printf("trace: %zu records in %s; output hash of the recorded call %016llx (%s)\n",
              data.records.size(), csv.c_str(), (unsigned long long)traced_hash,
              traced_hash == expected_hash ? "the same bits" : "DIFFERENT BITS");
  if (traced_hash != expected_hash) {
    throw Error(ErrorCode::kInternal,
                "run --trace: the instrumented kernel's output differs from the ordinary kernel's");
  }
}

}  // namespace

int cmd_run(const Args& args) {
  Options opt(args, {"--b", "--m", "--n", "--k", "--out", "--bias-dtype", "--config", "--iters", "--seed",
                     "--trace", "--trace-tiles"},
              {"--bias", "--precise", "--plain", "--verify", "--once"}, "run");
  FixtureSpec s;
  s.b = opt.integer("--b", 1, 0, INT32_MAX);
  s.m = opt.integer("--m", -1, 0, INT32_MAX);
  s.n = opt.integer("--n", -1, 1, INT32_MAX);
  s.k = opt.integer("--k", -1, 1, INT32_MAX);
  if (s.m < 0 || s.n < 0 || s.k < 0) throw UsageError("run: --m, --n and --k are required");
  const std::string out = opt.str("--out", "bf16");
  if (out != "bf16" && out != "fp16") {
    throw UsageError("run: --out must be bf16 or fp16, got " + detail::quoted(out));
  }
  s.out_dtype = out == "fp16" ? DType::kF16 : DType::kBF16;
  s.bias = opt.flag("--bias") || opt.has("--bias-dtype");
  const std::string bias_dtype = opt.str("--bias-dtype", "f32");
  if (bias_dtype != "f32" && bias_dtype != "bf16") {
    throw UsageError("run: --bias-dtype must be f32 or bf16, got " + detail::quoted(bias_dtype));
  }
  s.bias_dtype = bias_dtype == "bf16" ? DType::kBF16 : DType::kF32;
  s.seed = uint64_t(opt.integer("--seed", 1, 0, INT64_MAX));
  const int iters = int(opt.integer("--iters", 100, 1, 100000));
  const std::string trace_csv = opt.str("--trace", "");
  if (opt.has("--trace") && trace_csv.empty()) throw UsageError("run: --trace needs a file name");
  // The CSV is written after the timing and the traced call: learn that it cannot be before them.
  if (const std::string why = trace_csv.empty() ? "" : unwritable_reason(trace_csv);
      !why.empty()) {
    throw UsageError("run: cannot write --trace " + detail::quoted(trace_csv) + ": " + why);
  }
  if (opt.has("--trace-tiles") && !opt.has("--trace")) {
    throw UsageError("run: --trace-tiles needs --trace");
  }
  // 16384 records per consumer: 1 GiB of buffer at 132 CTAs, for tiles of tens of cycles.
  const int trace_tiles = int(opt.integer("--trace-tiles", 1024, 1, 16384));
  const bool fast = !opt.flag("--precise"), plain = opt.flag("--plain");
  Config forced;
  if (opt.has("--config")) forced = Config::parse(opt.str("--config", ""));
  const Config* config = opt.has("--config") ? &forced : nullptr;
  // Reject what the kernels cannot take before looking for a GPU or allocating gigabytes.
  const ProblemShape shape = problem_of(s, plain, fast);
  validate_problem(shape);
  // An empty problem launches nothing and decides no config (as a library call).
  if (config && !is_empty_problem(shape)) {
    const std::string why = config_unfit_reason(*config, shape);
    if (!why.empty()) {
      throw Error(ErrorCode::kUnsupported, config_unfit_message(*config, shape, why));
    }
  } else if (!config) {
    check_forced_config(shape);  // F8GEMM_CONFIG, as the call would judge it
  }
  // An empty problem launches nothing: a timing of it would capture an empty graph.
  if (is_empty_problem(shape) && !opt.flag("--once")) {
    throw UsageError(std::string("run: ") + (s.b == 0 ? "--b" : "--m") +
                     " 0 is an empty problem, with nothing to time; --once runs it");
  }
  const Footprint footprint = fixture_footprint(shape);
  const std::string sizes = "run: --b,--m,--n,--k " + s.label();
  require_fits(footprint, sizes, std::nullopt);
  // The fp64 reference's grid has limits of its own: refused here, not after the run.
  if (const std::string why = detail::reference_check_unfit(s.b, s.m, s.n);
      opt.flag("--verify") && !why.empty()) {
    throw UsageError("run --verify: " + why + " (run it without --verify)");
  }

  std::string reason;
  if (!have_gpu(reason)) throw Error(ErrorCode::kNoDevice, "run needs an sm_90 GPU: " + reason);
  require_fits(footprint, sizes, free_device_bytes());
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
    if (!trace_csv.empty()) {
      trace_one_call(fx, plain, fast, config, stream, trace_tiles, trace_csv, hash,
                     "run --once --trace " + s.label(), [] {});
    }
    int rc = 0;
    if (opt.flag("--verify")) {
      const auto r = fx.verify(fast, stream);
      rc = fx.passes(r, fast) ? 0 : 1;
      std::printf("verify (fp64 GPU reference): rel RMS %.3e, max |err|/bound %.3f: %s\n", r.rel_rms,
                  r.max_ratio, rc == 0 ? "PASS" : "FAIL");
    }
    F8GEMM_CHECK_CUDA(cudaStreamDestroy(stream));
    return rc;
  }
  const ProblemShape p = fx.problem(plain, fast);
  const Config chosen = config ? *config : choose_config(p);
  const test::HangLabel label("run " + s.label() + " " + chosen.name());
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
  std::printf("B,M,N,K=%lld,%lld,%lld,%lld %s %s %s config=%s\n", (long long)s.b, (long long)s.m,
              (long long)s.n, (long long)s.k, plain ? "plain" : "preshuffled", fast ? "fast" : "precise",
              out.c_str(), chosen.name().c_str());
  std::printf("host %.2f us/call, kernel (graph) %.2f us, %.1f TFLOP/s, %.2f TB/s, API host cost %.2f us/call (median of 7 x 200 calls, min %.2f)\n",
              host_us, graph_us, fx.flops() / graph_us * 1e-6, fx.bytes() / graph_us * 1e-6, api_us, batches.front());
  std::printf("output hash (FNV-1a 64 of the first call's output): %016llx\n", (unsigned long long)hash);
  int rc = 0;
  if (!trace_csv.empty()) {
    trace_one_call(fx, plain, fast, config, stream, trace_tiles, trace_csv, hash,
                   "run --trace " + s.label() + " " + chosen.name(),
                   [&] { run_for_ms(fn, 200, stream); });
  }
  if (opt.flag("--verify")) {
    fx.poison(stream);
    fx.run(plain, fast, config, stream);
    const auto r = fx.verify(fast, stream);
    const bool ok = fx.passes(r, fast);
    std::printf("verify (fp64 GPU reference): rel RMS %.3e, max |err|/bound %.3f, non-finite %lld: %s\n",
                r.rel_rms, r.max_ratio, (long long)r.nonfinite, ok ? "PASS" : "FAIL");
    rc = ok ? 0 : 1;
  }
  F8GEMM_CHECK_CUDA(cudaStreamDestroy(stream));
  return rc;
}

}  // namespace f8gemm::cli
