/// \brief `f8gemm tune`: times every legal candidate configuration of each shape on this GPU and
/// writes the fastest as a table (tables/*.tsv format) that overrides the cost model.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include "bench_util.hpp"
#include "cli_args.hpp"
#include "f8gemm/check.hpp"
#include "f8gemm/tuning.hpp"
#include "fixture.hpp"
#include "hang_guard.hpp"
#include "output_path.hpp"
#include "reference.hpp"
#include "shapes.hpp"

namespace f8gemm::cli {

namespace {

/// Writes the table of the winners so far (the whole file, each time a shape is done), so that a
/// failure later in a long run keeps what was measured.
void write_table(const std::string& path, const std::vector<std::string>& lines) {
  std::ofstream out(path);
  if (!out) throw Error(ErrorCode::kIo, "cannot write " + path + ": " + std::strerror(errno));
  out << "# f8gemm tuned configurations: written by `f8gemm tune`; key<TAB>config\n";
  for (const auto& l : lines) out << l << "\n";
  if (!out.flush()) throw Error(ErrorCode::kIo, "cannot write " + path + ": " + std::strerror(errno));
}

}  // namespace

int cmd_tune(const Args& args) {
  Options opt(args, {"--shapes", "--out", "--iters", "--log", "--epilogue"},
              {"--plain", "--precise", "--both", "--prefetch-w"}, "tune");
  if (opt.flag("--both") && opt.flag("--precise")) {
    throw UsageError("tune: --both times fast and precise mode; give it or --precise, not both");
  }
  if (!opt.has("--shapes")) throw UsageError("tune: --shapes FILE is required");
  const auto shapes = read_shapes_file(opt.str("--shapes", ""));
  const std::string out_path = opt.str("--out", "tune.tsv");
  const std::string log_path = opt.str("--log", "");
  // An empty name would pass the check below (a path without a parent is in ".") and fail at
  // the table's first write, after a shape's timings; an empty --log would mean no log.
  if (out_path.empty()) throw UsageError("tune: --out needs a file name");
  if (opt.has("--log") && log_path.empty()) throw UsageError("tune: --log needs a file name");
  // Each file is written whole or appended to on its own: on one file, the table (rewritten
  // after every shape) and the log's rows would interleave, and the shapes would be replaced.
  const std::string shapes_path = opt.str("--shapes", "");
  if (!log_path.empty() && same_file(out_path, log_path)) {
    throw UsageError("tune: --out and --log name the same file: " + detail::quoted(out_path));
  }
  if (same_file(out_path, shapes_path)) {
    throw UsageError("tune: --out names the --shapes file: " + detail::quoted(out_path));
  }
  if (!log_path.empty() && same_file(log_path, shapes_path)) {
    throw UsageError("tune: --log names the --shapes file: " + detail::quoted(log_path));
  }
  // A run takes minutes per shape: learn that a file cannot be written before it, not after.
  const std::string why = unwritable_reason(out_path);
  if (!why.empty()) throw UsageError("tune: cannot write --out " + detail::quoted(out_path) + ": " + why);
  const std::string log_why = log_path.empty() ? "" : unwritable_reason(log_path);
  if (!log_why.empty()) throw UsageError("tune: cannot write --log " + detail::quoted(log_path) + ": " + log_why);
  const int iters = int(opt.integer("--iters", 40, 1, 10000));
  std::vector<bool> modes;
  if (opt.flag("--both")) modes = {true, false};
  else modes = {!opt.flag("--precise")};
  const bool plain = opt.flag("--plain");
  // The epilogue's operation: its own table entries (keys with "|silu_mul"), timed on the
  // merged [gate; up] weight of each shape's N rows.
  const std::string epilogue_name = opt.str("--epilogue", "none");
  EpilogueOp epilogue = EpilogueOp::kNone;
  if (epilogue_name == to_string(EpilogueOp::kSiluMul)) epilogue = EpilogueOp::kSiluMul;
  else if (epilogue_name != to_string(EpilogueOp::kNone)) {
    throw UsageError("tune: --epilogue must be none or silu_mul, got " + detail::quoted(epilogue_name));
  }

  // What the library would refuse at a shape's first call, an empty problem (nothing to time)
  // and buffers past 2^63 bytes, said before the GPU is looked for; then buffers beyond its
  // free memory. All before any shape is timed and before the log is opened (each message
  // names the sizes). One fixture must fit; the rotation's further copies may not (below).
  std::vector<Footprint> footprints;
  for (const Shape& shape : shapes) {
    FixtureSpec spec = fixture_spec(shape);
    spec.epilogue = epilogue;
    for (bool fast : modes) validate_problem(problem_of(spec, plain, fast));
    const ProblemShape p = problem_of(spec, plain, modes[0]);
    if (is_empty_problem(p)) {
      throw UsageError("tune: shape " + shape.label() + " is an empty problem (B or M is 0), " +
                       "with nothing to time");
    }
    footprints.push_back(fixture_footprint(p));
    require_fits(footprints.back(), "tune: B,M,N,K " + shape.label(), std::nullopt);
    // Each shape's winner is checked against the fp64 GPU reference (SiLU·mul: CPU samples),
    // whose grid has limits of its own: refused here, not after the shape's timings.
    if (const std::string why = detail::reference_check_unfit(shape.b, shape.m, shape.n);
        epilogue == EpilogueOp::kNone && !why.empty()) {
      throw UsageError("tune: B,M,N,K " + shape.label() + ": " + why);
    }
  }
  const TargetGpu gpu = current_gpu();
  const int64_t free_bytes = free_device_bytes();
  for (size_t i = 0; i < shapes.size(); ++i) {
    require_fits(footprints[i], "tune: B,M,N,K " + shapes[i].label(), free_bytes);
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> log_file(nullptr, std::fclose);
  if (!log_path.empty()) {
    log_file.reset(std::fopen(log_path.c_str(), "w"));
    if (!log_file) {
      throw UsageError("tune: cannot write --log " + detail::quoted(log_path) + ": " + std::strerror(errno));
    }
  }
  std::FILE* log = log_file.get();
  // A write that fails (a full disk, /dev/full) ends the tune: a log with rows missing would be
  // read as the whole record. Checked at each shape's flush and at the close.
  auto flush_log = [&] {
    if (!log) return;
    // errno is the flush's own only when the flush fails; an earlier fprintf's failure shows
    // only in the stream's error flag, its errno long overwritten.
    const int flushed = std::fflush(log);
    const int err = errno;
    if (flushed != 0 || std::ferror(log)) {
      throw Error(ErrorCode::kIo, "tune: writing --log " + log_path + " failed: " +
                                      (flushed != 0 ? std::strerror(err) : "a write failed"));
    }
  };
  if (log) std::fprintf(log, "b,m,n,k,accum,config,graph_us,model_us\n");

  std::vector<std::string> lines;
  cudaStream_t stream;
  F8GEMM_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (const Shape& shape : shapes) {
    // Consecutive calls read different copies of the inputs (the bench's L2 rotation), so that a
    // shape whose operands fit in L2 is timed as a server runs it, with the weights coming from
    // DRAM: timed on one L2-resident copy, decode shapes favoured split-K by up to 1.2x over what
    // the bench measures. The copies are identical fixtures (the same seeded inputs).
    // The operands are the bench's distribution (FixtureSpec::normal) and each config is timed
    // after the bench's warm-up: tune and bench measure the same thing.
    FixtureSpec spec = fixture_spec(shape);
    spec.normal = true;
    spec.prefetch_w = opt.flag("--prefetch-w");
    spec.epilogue = epilogue;
    std::vector<std::unique_ptr<Fixture>> copies;
    copies.push_back(std::make_unique<Fixture>(spec));
    const int sets = rotation_sets(size_t(copies[0]->input_bytes()), l2_cache_bytes());
    try {
      while (int(copies.size()) < sets) copies.push_back(std::make_unique<Fixture>(spec));
    } catch (const Error& e) {
      // Fewer copies only weaken the rotation; the GPU's memory is what it is.
      (void)cudaGetLastError();
      std::printf("%s: %zu of %d input copies fit in memory (%s); rotating over those\n",
                  shape.label().c_str(), copies.size(), sets, e.what());
    }
    const Fixture& fx = *copies[0];
    for (bool fast : modes) {
      const ProblemShape p = fx.problem(plain, fast);
      if (spec.prefetch_w && !p.chained) {
        std::printf("tune: --prefetch-w acts only with PDL on (F8GEMM_PDL=1): timing %s as an "
                    "unchained call\n", shape.label().c_str());
      }
      const auto list = candidate_configs(p, gpu.sm_count);
      // Compile every candidate first, on all cores; a failure is reported when it is timed.
      build_all(list, p);
      double best_us = 1e30;
      Config best;
      for (const Config& c : list) {
        // A candidate that never finishes (a deadlock) ends the tune naming it (hang_guard.hpp).
        const test::HangLabel label("tune " + shape.label() + (fast ? " fast " : " precise ") +
                                    c.name());
        size_t call = 0;
        auto fn = [&](cudaStream_t st) { copies[call++ % copies.size()]->run(plain, fast, &c, st); };
        fn(stream);
        test::sync_stream_or_exit(stream);
        run_for_ms(fn, kImplWarmMs, stream);
        const double us = time_graph_us(fn, iters, stream, calls_per_graph(sets));
        if (log) {
          std::fprintf(log, "%lld,%lld,%lld,%lld,%s,%s,%.2f,%.2f\n", (long long)p.batch,
                       (long long)p.m, (long long)p.n, (long long)p.k, fast ? "fast" : "precise",
                       c.name().c_str(), us, model_estimate_us(c, p, gpu.sm_count));
        }
        if (us < best_us) {
          best_us = us;
          best = c;
        }
      }
      // The winner must also be right: poison, run, check against the fp64 reference.
      fx.poison(stream);
      fx.run(plain, fast, &best, stream);
      // Both bounds of README "Accuracy": every element, and the relative RMS error (a SiLU·mul
      // output: every element of sampled rows, Fixture::verify).
      const auto check = fx.verify(fast, stream);
      const bool ok = fx.passes(check, fast);
      std::printf("%lld,%lld,%lld,%lld %-7s best %-36s %9.2f us (model's pick %s)%s\n",
                  (long long)p.batch, (long long)p.m, (long long)p.n, (long long)p.k,
                  fast ? "fast" : "precise", best.name().c_str(), best_us,
                  model_config(p, gpu.sm_count).name().c_str(),
                  ok ? "" : "  FAILED VERIFY, not written");
      if (!ok && epilogue == EpilogueOp::kSiluMul) {
        std::printf("  sampled rows: max |err|/bound %.3f; non-finite outputs %lld\n",
                    check.max_ratio, (long long)check.nonfinite);
      } else if (!ok) {
        std::printf("  rel RMS %.3e (bound %.3e), max |err|/bound %.3f, non-finite %lld\n",
                    check.rel_rms, numerics::rel_rms_bound(p.k, fast, p.out_dtype),
                    check.max_ratio, (long long)check.nonfinite);
      }
      std::fflush(stdout);
      flush_log();
      if (ok) lines.push_back(tuning_table_key(gpu, p) + "\t" + best.name());
      write_table(out_path, lines);
    }
  }
  F8GEMM_CHECK_CUDA(cudaStreamDestroy(stream));
  // The table was written after the last shape (a shapes file is never empty).
  flush_log();
  if (log && std::fclose(log_file.release()) != 0) {
    throw Error(ErrorCode::kIo, "tune: closing --log " + log_path + " failed: " +
                                    std::strerror(errno));
  }
  std::printf("wrote %zu entries to %s\n", lines.size(), out_path.c_str());
  return 0;
}

}  // namespace f8gemm::cli
