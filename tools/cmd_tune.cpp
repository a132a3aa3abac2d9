/// \brief `f8gemm tune`: times every legal candidate configuration of each shape on this GPU and
/// writes the fastest as a table (tables/*.tsv format) that overrides the cost model.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <thread>

#include "bench_util.hpp"
#include "check.hpp"
#include "cli_args.hpp"
#include "codegen.hpp"
#include "config.hpp"
#include "device.hpp"
#include "fixture.hpp"

namespace f8gemm::cli {

std::vector<std::vector<int64_t>> read_shapes_file(const std::string& path);

int cmd_tune(const Args& args) {
  Options opt(args, {"--shapes", "--out", "--iters", "--log"}, {"--plain", "--precise", "--both"},
              "tune");
  if (!opt.has("--shapes")) throw UsageError("tune: --shapes FILE is required");
  const auto shapes = read_shapes_file(opt.str("--shapes", ""));
  const std::string out_path = opt.str("--out", "tune.tsv");
  const int iters = int(opt.integer("--iters", 40, 1, 10000));
  std::vector<bool> modes;
  if (opt.flag("--both")) modes = {true, false};
  else modes = {!opt.flag("--precise")};
  const bool plain = opt.flag("--plain");

  int device = 0;
  F8GEMM_CHECK_CUDA(cudaGetDevice(&device));
  const auto& props = detail::require_sm90(device);
  std::FILE* log = opt.has("--log") ? std::fopen(opt.str("--log", "").c_str(), "w") : nullptr;
  if (log) std::fprintf(log, "b,m,n,k,accum,config,graph_us,model_us\n");

  std::vector<std::string> lines;
  cudaStream_t stream;
  F8GEMM_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (const auto& sh : shapes) {
    FixtureSpec spec;
    spec.batch = sh[0];
    spec.m = sh[1];
    spec.n = sh[2];
    spec.k = sh[3];
    Fixture fx(spec);
    for (bool fast : modes) {
      const ProblemShape p = fx.problem(plain, fast);
      const auto list = detail::candidates(p, props.sm_count);
      // Compile every candidate first, on all cores (the JIT is thread-safe).
      std::atomic<size_t> next{0};
      std::vector<std::thread> pool;
      for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t) {
        pool.emplace_back([&] {
          for (size_t i; (i = next++) < list.size();) {
            try {
              detail::gemm_instance(detail::make_spec(list[i], p));
            } catch (const Error&) {
              // Reported when the same candidate is timed below.
            }
          }
        });
      }
      for (auto& t : pool) t.join();
      double best_us = 1e30;
      Config best;
      for (const Config& c : list) {
        auto fn = [&](cudaStream_t st) { fx.run(plain, fast, &c, st); };
        fn(stream);
        F8GEMM_CHECK_CUDA(cudaStreamSynchronize(stream));
        run_for_ms(fn, 20, stream);
        const double us = time_graph_us(fn, iters, stream);
        if (log) {
          std::fprintf(log, "%lld,%lld,%lld,%lld,%s,%s,%.2f,%.2f\n", (long long)p.batch,
                       (long long)p.m, (long long)p.n, (long long)p.k, fast ? "fast" : "precise",
                       c.name().c_str(), us, detail::estimate_us(c, p, props.sm_count));
        }
        if (us < best_us) {
          best_us = us;
          best = c;
        }
      }
      // The winner must also be right: poison, run, check against the fp64 reference.
      fx.poison(stream);
      fx.run(plain, fast, &best, stream);
      const auto check = fx.verify(fast, stream);
      const bool ok = check.nonfinite == 0 && check.max_ratio <= 1.0;
      std::printf("%lld,%lld,%lld,%lld %-7s best %-36s %9.2f us (model's pick %s)%s\n",
                  (long long)p.batch, (long long)p.m, (long long)p.n, (long long)p.k,
                  fast ? "fast" : "precise", best.name().c_str(), best_us,
                  list.front().name().c_str(), ok ? "" : "  FAILED VERIFY, not written");
      std::fflush(stdout);
      if (ok) lines.push_back(detail::table_key(props.name, props.sm_count, p) + "\t" + best.name());
    }
  }
  F8GEMM_CHECK_CUDA(cudaStreamDestroy(stream));
  if (log) std::fclose(log);
  std::ofstream out(out_path);
  if (!out) throw Error(ErrorCode::kIo, "cannot write " + out_path);
  out << "# f8gemm tuned configurations: written by `f8gemm tune`; key<TAB>config\n";
  for (const auto& l : lines) out << l << "\n";
  std::printf("wrote %zu entries to %s\n", lines.size(), out_path.c_str());
  return 0;
}

}  // namespace f8gemm::cli
