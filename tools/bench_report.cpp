/// \brief `f8gemm bench`'s results: floors, comparisons, the table (see bench_report.hpp).
#include "bench_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace f8gemm::cli {

namespace {

double bf16_to_double(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

std::string cell(const Result& r, double floor_us) {
  if (r.status.rfind("unsupported", 0) == 0) return "unsup";
  if (r.status != "ok" || !r.graph_us) return "error";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1f (%.2f)", *r.graph_us, *r.graph_us / floor_us);
  return buf;
}

}  // namespace

std::string fmt(std::optional<double> v, const char* format) {
  if (!v) return "";
  if (std::isnan(*v)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, *v);
  return buf;
}

ShapeCost shape_cost(const Shape& s, double bw_tbps, double peak_tflops) {
  ShapeCost c;
  double b = s.b, m = s.m, n = s.n, k = s.k;
  c.bytes = b * m * k + b * n * k + 2.0 * b * m * n + 4.0 * b * m + 4.0 * b * n;
  c.flops = 2.0 * b * m * n * k;
  c.floor_us = std::max(c.bytes / (bw_tbps * 1e12), c.flops / (peak_tflops * 1e12)) * 1e6;
  return c;
}

void write_result(CsvWriter& csv, const Shape& s, const ShapeCost& c, const Result& r) {
  std::optional<double> host_ratio, graph_ratio, tflops, tbps;
  if (r.host_us) host_ratio = *r.host_us / c.floor_us;
  if (r.graph_us) {
    graph_ratio = *r.graph_us / c.floor_us;
    tflops = c.flops / (*r.graph_us * 1e-6) / 1e12;
    tbps = c.bytes / (*r.graph_us * 1e-6) / 1e12;
  }
  // Rows that did not run carry no numbers at all, the floor included.
  std::optional<double> floor_us;
  if (r.status == "ok") floor_us = c.floor_us;
  csv.write({r.impl, std::to_string(s.b), std::to_string(s.m), std::to_string(s.n),
             std::to_string(s.k), r.status, fmt(r.host_us, "%.2f"), fmt(r.graph_us, "%.2f"),
             fmt(floor_us, "%.2f"), fmt(host_ratio, "%.3f"), fmt(graph_ratio, "%.3f"),
             fmt(tflops, "%.1f"), fmt(tbps, "%.3f"), fmt(r.rel_err, "%.3e")});
}

double rel_err(const Result& a, const Result& ref) {
  double num = 0, den = 0;
  auto acc = [&](const std::vector<uint16_t>& x, const std::vector<uint16_t>& y) {
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      double d = bf16_to_double(x[i]) - bf16_to_double(y[i]);
      double r = bf16_to_double(y[i]);
      num += d * d;
      den += r * r;
    }
  };
  acc(a.first, ref.first);
  acc(a.last, ref.last);
  return den > 0 ? std::sqrt(num / den) : (num > 0 ? INFINITY : 0.0);
}

size_t count_nonfinite(const Result& r) {
  size_t n = 0;
  for (const auto* v : {&r.first, &r.last}) {
    for (uint16_t x : *v) n += std::isfinite(bf16_to_double(x)) ? 0 : 1;
  }
  return n;
}

size_t count_different(const Result& a, const Result& b) {
  if (a.first.size() != b.first.size() || a.last.size() != b.last.size()) {
    return std::max(a.first.size() + a.last.size(), b.first.size() + b.last.size());
  }
  size_t n = 0;
  for (size_t i = 0; i < a.first.size(); ++i) n += a.first[i] != b.first[i];
  for (size_t i = 0; i < a.last.size(); ++i) n += a.last[i] != b.last[i];
  return n;
}

void print_table(const std::vector<ShapeSummary>& rows, double bw, double peak,
                 bool peak_measured) {
  std::printf("\nceilings: copy %.2f TB/s, FP8 peak %.0f TFLOP/s%s\n", bw, peak,
              peak_measured ? "" : " (assumed, --no-peak)");
  std::printf("graph-replay us per call (x floor)\n");
  std::printf("%-18s %10s  %-16s %-16s %-16s %10s\n", "B,M,N,K", "floor_us", "ours_preshuffled",
              "ours_plain", "cublaslt", "peer/floor");
  for (const ShapeSummary& row : rows) {
    const Result& peer = row.results[2];
    std::string best = peer.graph_us ? fmt(*peer.graph_us / row.floor_us, "%.2f") : "unsup";
    std::printf("%-18s %10.2f  %-16s %-16s %-16s %10s\n", row.shape.label().c_str(), row.floor_us,
                cell(row.results[0], row.floor_us).c_str(),
                cell(row.results[1], row.floor_us).c_str(), cell(peer, row.floor_us).c_str(),
                best.c_str());
  }
}

}  // namespace f8gemm::cli
