/// \brief `f8gemm info` and `f8gemm precompile`.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "cli_args.hpp"
#include "codegen.hpp"
#include "config.hpp"
#include "f8gemm/f8gemm.hpp"

namespace f8gemm::cli {

int cmd_info(const Args& args) {
  Options opt(args, {}, {}, "info");
  const DeviceInfo info = device_info();
  std::printf("f8gemm %s\n", kVersion);
  std::printf("NVRTC %d.%d, CUDA runtime %d, driver %d\n", info.nvrtc_major, info.nvrtc_minor,
              info.runtime_version, info.driver_version);
  if (info.cache_problem.empty()) {
    std::printf("cache: %s\n", info.cache_dir.c_str());
  } else {
    std::printf("cache: %s (unusable: %s; every process compiles its kernels again)\n",
                info.cache_dir.c_str(), info.cache_problem.c_str());
  }
  if (!info.has_device) {
    std::printf("GPU: none (%s); kernels still compile for sm_90a\n", info.reason.c_str());
    return 0;
  }
  std::printf("GPU %d: %s, %d SMs, compute capability %d.%d%s%s\n", info.device, info.name.c_str(),
              info.sm_count, info.cc_major, info.cc_minor, info.reason.empty() ? "" : ": ",
              info.reason.c_str());
  return 0;
}

/// Reads "B,M,N,K" lines ('#' comments, blank lines skipped); a file without one is an error.
std::vector<std::vector<int64_t>> read_shapes_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw UsageError("shapes file '" + path + "' is a directory; give a file of B,M,N,K lines");
  }
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read shapes file '" + path + "': " + std::strerror(errno));
  std::vector<std::vector<int64_t>> shapes;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    line = line.substr(0, line.find('#'));
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    line.erase(0, line.find_first_not_of(" \t"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    shapes.push_back(parse_shape(line, path + ":" + std::to_string(n)));
  }
  if (in.bad()) throw UsageError("cannot read shapes file '" + path + "': read error");
  if (shapes.empty()) {
    throw UsageError("shapes file '" + path + "' holds no shapes (expected lines B,M,N,K)");
  }
  return shapes;
}

int cmd_precompile(const Args& args) {
  Options opt(args, {"--shape", "--shapes", "--out"}, {"--plain", "--precise"}, "precompile");
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& s : opt.all("--shape")) shapes.push_back(parse_shape(s, "--shape"));
  if (opt.has("--shapes")) {
    for (auto& s : read_shapes_file(opt.str("--shapes", ""))) shapes.push_back(s);
  }
  if (shapes.empty()) throw UsageError("precompile: give --shape B,M,N,K or --shapes FILE");
  const std::string out = opt.str("--out", "bf16");
  if (out != "bf16" && out != "fp16") throw UsageError("precompile: --out must be bf16 or fp16");
  std::vector<ProblemShape> problems;
  for (const auto& s : shapes) {
    ProblemShape p;
    p.batch = s[0];
    p.m = s[1];
    p.n = s[2];
    p.k = s[3];
    p.w_layout = opt.flag("--plain") ? WeightLayout::kPlain : WeightLayout::kPreshuffled;
    p.out_dtype = out == "fp16" ? DType::kF16 : DType::kBF16;
    p.fast_accum = !opt.flag("--precise");
    problems.push_back(p);
  }
  precompile(problems);
  // Report what was built: the decision repeats the one precompile made (cheap, no compile).
  const DeviceInfo info = device_info();
  const bool gpu = info.has_device && info.reason.empty();
  for (const auto& p : problems) {
    const Config c = gpu ? choose_config(p) : detail::decide("NVIDIA H200", 132, p);
    auto inst = detail::gemm_instance(detail::make_spec(c, p));
    int regs = 0, spills = inst->spill_bytes();
    for (const auto& r : inst->resources()) regs = std::max(regs, r.registers);
    std::printf("%lld,%lld,%lld,%lld  %s  regs=%d spills=%d  %s\n", (long long)p.batch,
                (long long)p.m, (long long)p.n, (long long)p.k,
                detail::make_spec(c, p).label().c_str(), regs, spills, inst->key().c_str());
  }
  std::printf("cache: %s\n", jit::cache_dir().c_str());
  return 0;
}

}  // namespace f8gemm::cli
