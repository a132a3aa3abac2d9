/// \brief `f8gemm bench`'s results: one implementation's measurement of one shape, the floor
/// it is compared with, the comparisons between implementations, the CSV file and the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "f8gemm/check.hpp"
#include "shapes.hpp"

namespace f8gemm::cli {

struct Result {
  std::string impl;
  std::string status = "ok";
  std::optional<double> host_us, graph_us, rel_err;
  std::vector<uint16_t> first, last;  // Y[0] and Y[B-1] as bf16 bits, when the call ran
};

/// Bytes and flops of one call, and its floor max(bytes / BW, flops / PEAK) in microseconds.
struct ShapeCost {
  double bytes = 0, flops = 0, floor_us = 0;
};

ShapeCost shape_cost(const Shape& s, double bw_tbps, double peak_tflops);

/// One shape's floor and its results in the order ours preshuffled, ours plain, the peer.
struct ShapeSummary {
  Shape shape;
  double floor_us = 0;
  std::vector<Result> results;
};

/// The CSV file, one flushed row at a time, so a run cut short keeps what it measured.
class CsvWriter {
 public:
  explicit CsvWriter(const std::string& path) : path_(path), out_(path) {
    if (!out_) throw Error(ErrorCode::kIo, "bench: cannot write '" + path + "'");
    write({"impl", "b", "m", "n", "k", "status", "host_us", "graph_us", "floor_us", "host_ratio",
           "graph_ratio", "tflops", "tbps", "rel_err_vs_ours"});
  }
  void write(const std::vector<std::string>& fields) {
    F8GEMM_REQUIRE(fields.size() == kColumns, kInternal, "bench: a CSV row has ", fields.size(),
                   " fields, not ", kColumns);
    for (size_t i = 0; i < fields.size(); ++i) {
      std::string f = fields[i];
      // Fields never carry the separator: statuses quote cuBLASLt and f8gemm messages.
      std::replace(f.begin(), f.end(), ',', ';');
      std::replace(f.begin(), f.end(), '\n', ' ');
      out_ << (i ? "," : "") << f;
    }
    out_ << '\n';
    out_.flush();
    if (!out_) throw Error(ErrorCode::kIo, "bench: write to '" + path_ + "' failed");
  }

 private:
  static constexpr size_t kColumns = 14;
  std::string path_;
  std::ofstream out_;
};

/// printf of `v` with `format`; "" when absent, "nan" for NaN.
std::string fmt(std::optional<double> v, const char* format);

/// One CSV row of `r` at shape `s`; rows that did not run carry no numbers, the floor included.
void write_result(CsvWriter& csv, const Shape& s, const ShapeCost& c, const Result& r);

/// ||a - ref|| / ||ref|| over both sampled batches; NaN (an unwritten 0xFFFF) propagates.
double rel_err(const Result& a, const Result& ref);
/// Sampled outputs that are NaN or inf.
size_t count_nonfinite(const Result& r);
/// Sampled outputs that differ bit for bit (all of them when the samples differ in size).
size_t count_different(const Result& a, const Result& b);

/// The closing table: graph-replay microseconds per call and the ratio to the floor per shape.
void print_table(const std::vector<ShapeSummary>& rows, double bw, double peak, bool peak_measured);

}  // namespace f8gemm::cli
