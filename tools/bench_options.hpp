/// \brief `f8gemm bench`'s options: what they hold, their usage line and their parser.
#pragma once

#include <string>

#include "bench_util.hpp"
#include "commands.hpp"

namespace f8gemm::cli {

inline constexpr const char* kBenchUsage =
    "usage: f8gemm bench [--shapes FILE] [--csv FILE] [--iters N] [--no-peak] [--precise] "
    "[--prefetch-w] [--rotate-l2 F]";

struct BenchOptions {
  std::string shapes_file;
  std::string csv = "bench.csv";
  int iters = 100;
  bool peak = true;
  bool precise = false;
  bool prefetch_w = false;  // GemmOptions::prefetch_w (the operands are written before the run)
  double rotate_l2 = kDefaultL2Span;  // input sets span this many L2s (rotation_sets)
};

/// The options of `f8gemm bench` (`--name value` or `--name=value`); a repeated option takes its
/// last value. Every unknown, malformed or out-of-range one is a UsageError (exit 2, one line).
BenchOptions parse_bench_options(const Args& args);

}  // namespace f8gemm::cli
