/// \brief The trace buffer's reader (trace_summary.hpp).
#include "trace_summary.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <utility>

#include "f8gemm/f8gemm.hpp"
#include "../kernels/gemm_params.cuh"

namespace f8gemm::test {

namespace {

constexpr int kHeaderWords = dev::kTraceHeaderWords;
constexpr int kEvents = dev::kTraceEvents;

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / double(v.size());
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

/// The mainloop's three clocks were recorded, in order.
bool has_mainloop(const TraceRecord& r) {
  return r.start != 0 && r.last_issue >= r.start && r.mainloop_done >= r.last_issue;
}
/// And its stores (not a split-K rank that hands its sums over).
bool has_epilogue(const TraceRecord& r) {
  return has_mainloop(r) && r.epilogue_done >= r.mainloop_done;
}
/// And the epilogue's two inner clocks, in order.
bool has_epilogue_parts(const TraceRecord& r) {
  return has_epilogue(r) && r.epilogue_entered >= r.mainloop_done &&
         r.epilogue_staged >= r.epilogue_entered && r.epilogue_done >= r.epilogue_staged;
}
/// The last clock of a record: its stores, or its mainloop where it stored nothing.
uint64_t end_of(const TraceRecord& r) { return has_epilogue(r) ? r.epilogue_done : r.mainloop_done; }

}  // namespace

TraceData parse_trace(const std::vector<uint64_t>& words, int tiles) {
  if (tiles < 1) {
    throw Error(ErrorCode::kInvalidArgument, "trace: tiles must be >= 1, got " + std::to_string(tiles));
  }
  const int64_t per_cta = dev::gemm_trace_cta_words(tiles);
  if (words.empty() || int64_t(words.size()) % per_cta != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "trace: " + std::to_string(words.size()) + " words are not a whole number of CTAs of " +
                    std::to_string(per_cta) + " (tiles " + std::to_string(tiles) + ")");
  }
  TraceData d;
  const int64_t ctas = int64_t(words.size()) / per_cta;
  for (int64_t c = 0; c < ctas; ++c) {
    const uint64_t* w = words.data() + c * per_cta;
    if (w[0] == 0) continue;  // no CTA c ran
    if (w[0] != 2 && w[0] != 3) {
      throw Error(ErrorCode::kInvalidArgument, "trace: CTA " + std::to_string(c) +
                                                   "'s header says " + std::to_string(w[0]) +
                                                   " (consumers + 1 must be 2 or 3)");
    }
    const int consumers = int(w[0]) - 1;
    for (int k = 0; k < consumers; ++k) {
      // A count no kernel reaches: 2^40 tiles (the buffer was not zeroed, or not a trace).
      if (w[2 + k] >= (uint64_t(1) << 40)) {
        throw Error(ErrorCode::kInvalidArgument, "trace: CTA " + std::to_string(c) +
                                                     "'s header counts " + std::to_string(w[2 + k]) +
                                                     " tiles for consumer " + std::to_string(k));
      }
    }
    ++d.ctas;
    d.consumers = std::max(d.consumers, consumers);
    for (int k = 0; k < consumers; ++k) {
      const int64_t ran = int64_t(w[2 + k]);
      d.tiles_run += ran;
      const uint64_t* rec = w + kHeaderWords + int64_t(k) * tiles * kEvents;
      for (int64_t t = 0; t < std::min<int64_t>(ran, tiles); ++t) {
        TraceRecord r;
        r.cta = int(c);
        r.sm = int(w[1]);
        r.consumer = k;
        r.tile = int(t);
        r.start = rec[t * kEvents + dev::kTraceTileStart];
        r.last_issue = rec[t * kEvents + dev::kTraceLastIssue];
        r.mainloop_done = rec[t * kEvents + dev::kTraceMainloopDone];
        r.epilogue_entered = rec[t * kEvents + dev::kTraceEpilogueEntered];
        r.epilogue_staged = rec[t * kEvents + dev::kTraceEpilogueStaged];
        r.epilogue_done = rec[t * kEvents + dev::kTraceEpilogueDone];
        d.records.push_back(r);
      }
    }
  }
  return d;
}

TraceSummary summarize_trace(const TraceData& d) {
  TraceSummary s;
  s.ctas = d.ctas;
  s.consumers = d.consumers;
  s.tiles_run = d.tiles_run;
  s.tiles_recorded = int64_t(d.records.size());
  std::vector<double> phase[2][4];
  std::vector<double> part[2][3];  // the epilogue's parts: enter | stage | issue the stores
  std::vector<double> spans, shares;
  size_t i = 0;
  while (i < d.records.size()) {
    // One CTA's records: [i, j).
    size_t j = i;
    while (j < d.records.size() && d.records[j].cta == d.records[i].cta) ++j;
    uint64_t first = UINT64_MAX, last = 0;
    std::vector<std::pair<uint64_t, uint64_t>> busy;  // [start, mainloop_done] of every tile
    for (size_t r = i; r < j; ++r) {
      const TraceRecord& t = d.records[r];
      if (!has_mainloop(t)) continue;
      first = std::min(first, t.start);
      last = std::max(last, end_of(t));
      busy.emplace_back(t.start, t.mainloop_done);
      const int k = std::min(t.consumer, 1);
      phase[k][0].push_back(double(t.last_issue - t.start));
      phase[k][1].push_back(double(t.mainloop_done - t.last_issue));
      if (has_epilogue(t)) phase[k][2].push_back(double(t.epilogue_done - t.mainloop_done));
      if (has_epilogue_parts(t)) {
        part[k][0].push_back(double(t.epilogue_entered - t.mainloop_done));
        part[k][1].push_back(double(t.epilogue_staged - t.epilogue_entered));
        part[k][2].push_back(double(t.epilogue_done - t.epilogue_staged));
      }
      if (r + 1 < j && d.records[r + 1].consumer == t.consumer && has_mainloop(d.records[r + 1]) &&
          d.records[r + 1].start >= end_of(t)) {
        phase[k][3].push_back(double(d.records[r + 1].start - end_of(t)));
      }
    }
    if (!busy.empty() && last > first) {
      std::sort(busy.begin(), busy.end());
      uint64_t covered = 0, lo = busy[0].first, hi = busy[0].second;
      for (const auto& b : busy) {
        if (b.first > hi) {
          covered += hi - lo;
          lo = b.first;
        }
        hi = std::max(hi, b.second);
      }
      covered += hi - lo;
      spans.push_back(double(last - first));
      shares.push_back(double(covered) / double(last - first));
    }
    i = j;
  }
  // The mean and the median of one phase's cycles.
  auto stats = [](const std::vector<double>& v, double& mean_out, double& median_out) {
    mean_out = mean(v);
    median_out = median(v);
  };
  for (int k = 0; k < 2; ++k) {
    PhaseStats& p = s.slot[k];
    p.tiles = int64_t(phase[k][0].size());
    stats(phase[k][0], p.issue_mean, p.issue_median);
    stats(phase[k][1], p.drain_mean, p.drain_median);
    stats(phase[k][2], p.epilogue_mean, p.epilogue_median);
    stats(phase[k][3], p.gap_mean, p.gap_median);
    p.parts = int64_t(part[k][0].size());
    stats(part[k][0], p.enter_mean, p.enter_median);
    stats(part[k][1], p.stage_mean, p.stage_median);
    stats(part[k][2], p.issue_stores_mean, p.issue_stores_median);
  }
  s.span_mean = mean(spans);
  s.mainloop_share = mean(shares);
  return s;
}

std::string format_trace_summary(const TraceSummary& s) {
  std::ostringstream os;
  char line[512];
  std::snprintf(line, sizeof line,
                "trace: %d CTAs, %d consumer warpgroup(s) each, %lld tiles run, %lld recorded\n",
                s.ctas, s.consumers, (long long)s.tiles_run, (long long)s.tiles_recorded);
  os << line;
  os << "  clock cycles per tile, mean / median: start -> last issue | -> sum in registers | "
        "-> stores issued | -> next tile\n";
  for (int k = 0; k < std::max(1, s.consumers) && k < 2; ++k) {
    const PhaseStats& p = s.slot[k];
    std::snprintf(line, sizeof line,
                  "  consumer %d (%lld tiles): %.0f / %.0f | %.0f / %.0f | %.0f / %.0f | %.0f / %.0f\n",
                  k, (long long)p.tiles, p.issue_mean, p.issue_median, p.drain_mean,
                  p.drain_median, p.epilogue_mean, p.epilogue_median, p.gap_mean, p.gap_median);
    os << line;
  }
  os << "  the epilogue's parts, mean / median: -> past its first barrier | -> outputs staged | "
        "-> stores issued\n"
        "  (of the consumer's first 64-row block of the tile: a 128-row ping-pong tile's last "
        "part holds its second block; with 32-column chunks the first warp issues each chunk's "
        "store as it stages it, so the last part is the wait for the other warps; with whole "
        "64-column boxes each warp stores one, and the last part is the first warp's)\n";
  for (int k = 0; k < std::max(1, s.consumers) && k < 2; ++k) {
    const PhaseStats& p = s.slot[k];
    std::snprintf(line, sizeof line,
                  "  consumer %d (%lld tiles): %.0f / %.0f | %.0f / %.0f | %.0f / %.0f\n", k,
                  (long long)p.parts, p.enter_mean, p.enter_median, p.stage_mean, p.stage_median,
                  p.issue_stores_mean, p.issue_stores_median);
    os << line;
  }
  std::snprintf(line, sizeof line,
                "  per CTA: %.0f cycles from the first start to the last stores; some consumer's "
                "mainloop in flight %.1f%% of them\n",
                s.span_mean, 100.0 * s.mainloop_share);
  os << line;
  return os.str();
}

void write_trace_csv(const std::string& path, const std::vector<TraceRecord>& records) {
  std::ofstream f(path);
  if (!f) throw Error(ErrorCode::kIo, "trace: cannot write " + path);
  f << "cta,sm,consumer,tile,start,last_issue,mainloop_done,epilogue_entered,epilogue_staged,"
       "epilogue_done\n";
  size_t i = 0;
  while (i < records.size()) {
    size_t j = i;
    uint64_t base = UINT64_MAX;
    while (j < records.size() && records[j].cta == records[i].cta) {
      if (records[j].start != 0) base = std::min(base, records[j].start);
      ++j;
    }
    for (size_t r = i; r < j; ++r) {
      const TraceRecord& t = records[r];
      // Unrecorded events stay empty; clocks are relative to the CTA's first start.
      auto rel = [&](uint64_t v) {
        return v == 0 ? std::string() : std::to_string(int64_t(v - base));
      };
      f << t.cta << ',' << t.sm << ',' << t.consumer << ',' << t.tile << ',' << rel(t.start) << ','
        << rel(t.last_issue) << ',' << rel(t.mainloop_done) << ',' << rel(t.epilogue_entered)
        << ',' << rel(t.epilogue_staged) << ',' << rel(t.epilogue_done) << '\n';
    }
    i = j;
  }
  // Flushed and closed here, so that a write the buffer still held (a full disk) is seen too.
  f.close();
  if (!f) throw Error(ErrorCode::kIo, "trace: writing " + path + " failed");
}

}  // namespace f8gemm::test
