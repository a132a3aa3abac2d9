/// \brief `f8gemm precompile`: builds the kernel instances of the given shapes ahead of serving
/// (for the current sm_90 GPU, the assumed H200 without one, or the GPU that --gpu names) on all
/// host cores, and reports each. With --candidates it builds every candidate that `f8gemm tune`
/// would time instead, so that a tune on a GPU machine finds its kernels in the disk cache
/// (F8GEMM_CACHE_DIR) rather than compiling.
#include <cstdio>
#include <string>
#include <vector>

#include "cli_args.hpp"
#include "f8gemm/f8gemm.hpp"
#include "f8gemm/tuning.hpp"
#include "shapes.hpp"

namespace f8gemm::cli {

namespace {

/// `precompile --candidates`: every candidate of each problem, built on all cores and reported
/// one line each, then the count. A candidate that NVRTC rejects fails the same way when `tune`
/// times it: it is named and the command goes on, to exit 1 at the end. Any other error (a cache
/// that cannot be written, ...) ends the command.
int build_candidates(const std::vector<Shape>& shapes, const std::vector<ProblemShape>& problems,
                     const TargetGpu& gpu, const std::string& cache_dir) {
  // The same size checks as a call (and as precompile()), before the first compile.
  for (const ProblemShape& p : problems) validate_problem(p);
  int not_built = 0;
  for (size_t i = 0; i < problems.size(); ++i) {
    const ProblemShape& p = problems[i];
    const std::string label = shapes[i].label();
    const std::vector<Config> list = candidate_configs(p, gpu.sm_count);
    build_all(list, p);
    int built = 0, unfit = 0;
    for (const Config& c : list) {
      try {
        const InstanceReport r = describe(c, p);
        std::printf("%s  %s  regs=%d spills=%d%s\n", label.c_str(), r.label.c_str(), r.registers,
                    r.spill_bytes, r.wgmma_serialized ? "  WGMMA SERIALIZED" : "");
        ++built;
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kCompile) throw;
        std::printf("%s  %s  not built: %s\n", label.c_str(), c.name().c_str(), e.what());
        ++unfit;
      }
    }
    std::printf("%s: %d candidates built, %d not\n", label.c_str(), built, unfit);
    not_built += unfit;
  }
  std::printf("cache: %s\n", cache_dir.c_str());
  return not_built == 0 ? 0 : 1;
}

}  // namespace

int cmd_precompile(const Args& args) {
  Options opt(args, {"--shape", "--shapes", "--out", "--gpu"},
              {"--plain", "--precise", "--candidates", "--chained"}, "precompile");
  std::vector<Shape> shapes;
  for (const auto& s : opt.all("--shape")) shapes.push_back(parse_shape(s, "--shape"));
  if (opt.has("--shapes")) {
    for (const Shape& s : read_shapes_file(opt.str("--shapes", ""))) shapes.push_back(s);
  }
  if (shapes.empty()) throw UsageError("precompile: give --shape B,M,N,K or --shapes FILE");
  const std::string out = opt.str("--out", "bf16");
  if (out != "bf16" && out != "fp16") {
    throw UsageError("precompile: --out must be bf16 or fp16, got " + detail::quoted(out));
  }
  std::vector<ProblemShape> problems;
  for (const Shape& s : shapes) {
    ProblemShape p = problem_of(s);
    p.w_layout = opt.flag("--plain") ? WeightLayout::kPlain : WeightLayout::kPreshuffled;
    p.out_dtype = out == "fp16" ? DType::kF16 : DType::kBF16;
    p.fast_accum = !opt.flag("--precise");
    p.chained = opt.flag("--chained");  // as called with PDL and prefetch_w (ProblemShape)
    problems.push_back(p);
  }
  // --gpu h100|h200: choose as that GPU's table and the model do, here or on any machine.
  const bool named = opt.has("--gpu");
  const TargetGpu gpu = named ? named_gpu(opt.str("--gpu", "")) : target_gpu();
  // Keeping the cubins is precompile's purpose: a cache that cannot take them is an error here,
  // before any compile, where a call that compiles only warns (it still runs).
  const DeviceInfo info = device_info();
  if (!info.cache_problem.empty()) {
    throw UsageError("precompile: the JIT disk cache " + detail::quoted(info.cache_dir) +
                     " cannot be used (" + info.cache_problem +
                     "), so nothing would be kept; set F8GEMM_CACHE_DIR to a writable directory");
  }
  if (opt.flag("--candidates")) return build_candidates(shapes, problems, gpu, info.cache_dir);
  // Every decision first, one after another (a problem the decision refuses stops the command
  // before any compile), then their instances on all host cores.
  std::vector<std::pair<Config, ProblemShape>> picks;
  for (const ProblemShape& p : problems) picks.emplace_back(decide_config(gpu, p), p);
  build_all(picks);
  // Then what precompile() adds: the utility kernels, and on this process's sm_90 GPU every
  // instance loaded (found in the memory cache). For a named GPU only the utility kernels: the
  // problems' picks for this GPU may differ, and were not asked for.
  precompile(named ? std::vector<ProblemShape>{} : problems);
  // Report what was built (a compile that failed above fails here, with its error).
  for (const auto& [config, p] : picks) {
    const InstanceReport r = describe(config, p);
    std::printf("%lld,%lld,%lld,%lld  %s  regs=%d spills=%d  %s%s\n", (long long)p.batch,
                (long long)p.m, (long long)p.n, (long long)p.k, r.label.c_str(), r.registers,
                r.spill_bytes, r.cache_key.c_str(), r.wgmma_serialized ? "  WGMMA SERIALIZED" : "");
  }
  std::printf("cache: %s\n", info.cache_dir.c_str());
  return 0;
}

}  // namespace f8gemm::cli
