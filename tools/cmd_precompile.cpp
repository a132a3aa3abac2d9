/// \brief `f8gemm precompile`: builds the kernel instances of the given shapes ahead of serving
/// (for the current sm_90 GPU, or the assumed H200 without one) and reports each.
#include <cstdio>

#include "cli_args.hpp"
#include "f8gemm/f8gemm.hpp"
#include "f8gemm/tuning.hpp"
#include "shapes.hpp"

namespace f8gemm::cli {

int cmd_precompile(const Args& args) {
  Options opt(args, {"--shape", "--shapes", "--out"}, {"--plain", "--precise"}, "precompile");
  std::vector<Shape> shapes;
  for (const auto& s : opt.all("--shape")) shapes.push_back(parse_shape(s, "--shape"));
  if (opt.has("--shapes")) {
    for (const Shape& s : read_shapes_file(opt.str("--shapes", ""))) shapes.push_back(s);
  }
  if (shapes.empty()) throw UsageError("precompile: give --shape B,M,N,K or --shapes FILE");
  const std::string out = opt.str("--out", "bf16");
  if (out != "bf16" && out != "fp16") throw UsageError("precompile: --out must be bf16 or fp16");
  std::vector<ProblemShape> problems;
  for (const Shape& s : shapes) {
    ProblemShape p = problem_of(s);
    p.w_layout = opt.flag("--plain") ? WeightLayout::kPlain : WeightLayout::kPreshuffled;
    p.out_dtype = out == "fp16" ? DType::kF16 : DType::kBF16;
    p.fast_accum = !opt.flag("--precise");
    problems.push_back(p);
  }
  precompile(problems);
  // Report what was built: the decision repeats the one precompile made (cheap, no compile).
  const TargetGpu gpu = target_gpu();
  for (const ProblemShape& p : problems) {
    const InstanceReport r = describe(decide_config(gpu, p), p);
    std::printf("%lld,%lld,%lld,%lld  %s  regs=%d spills=%d  %s\n", (long long)p.batch,
                (long long)p.m, (long long)p.n, (long long)p.k, r.label.c_str(), r.registers,
                r.spill_bytes, r.cache_key.c_str());
  }
  std::printf("cache: %s\n", device_info().cache_dir.c_str());
  return 0;
}

}  // namespace f8gemm::cli
