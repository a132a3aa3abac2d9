/// \brief Problem shapes for the CLI: "B,M,N,K" text, shapes files, and the one default list
/// that `bench` and `demo` run (the same list as bench/shapes.txt).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "f8gemm/f8gemm.hpp"

namespace f8gemm::cli {

struct Shape {
  int64_t b = 1, m = 1, n = 8, k = 16;
  /// "B,M,N,K", as shapes files, tables and logs write it.
  std::string label() const;
};

/// Decode (M = 1..128) and prefill (M up to 4096) at two weight shapes, batch 16: 1280 x 8192
/// (K-heavy, W = 160 MiB) and 8192 x 1024 (N-heavy, W = 128 MiB). bench/shapes.txt holds the
/// same 11 shapes for `bench --shapes` and bench/peers.py.
const std::vector<Shape>& default_shapes();

/// Parses "B,M,N,K" (blanks around a field allowed) into four non-negative integers; anything
/// else is a UsageError that names `where`.
Shape parse_shape(const std::string& text, const std::string& where);

/// Reads a shapes file: one "B,M,N,K" per line, '#' starts a comment, blank lines are skipped.
/// A directory, an unreadable file or a file without a shape is a UsageError.
std::vector<Shape> read_shapes_file(const std::string& path);

/// The problem of `shape` with the library's defaults for everything else (preshuffled W, bf16
/// output, no bias, fast accumulation).
ProblemShape problem_of(const Shape& shape);

}  // namespace f8gemm::cli
