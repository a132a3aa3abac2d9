/// \brief Reads a GemmOptions::trace buffer (f8gemm_testing: `f8gemm run --trace` and the GPU
/// tests): the records per CTA and consumer, where each tile's clock cycles went, and a CSV of
/// every record.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace f8gemm::test {

/// One tile of one consumer warpgroup: the SM clock at each TraceEvent (0: not recorded), in
/// time order: epilogue_entered and epilogue_staged fall between the sum in registers and the
/// stores issued (those two are of the tile's first 64-row block).
struct TraceRecord {
  int cta = 0, sm = 0, consumer = 0, tile = 0;
  uint64_t start = 0, last_issue = 0, mainloop_done = 0;
  uint64_t epilogue_entered = 0, epilogue_staged = 0, epilogue_done = 0;
};

/// What a trace buffer holds: the CTAs that ran, the tiles their headers count, and the records.
struct TraceData {
  int ctas = 0;               ///< CTAs that wrote a header
  int consumers = 0;          ///< consumer warpgroups per CTA
  int64_t tiles_run = 0;      ///< tiles counted by the headers, every consumer of every CTA
  std::vector<TraceRecord> records;  ///< CTA by CTA, consumer by consumer, in tile order
};

/// Reads a buffer of trace_words(ctas, tiles) words for some ctas. An f8gemm::Error
/// (kInvalidArgument) names a size or a header that does not fit `tiles`.
TraceData parse_trace(const std::vector<uint64_t>& words, int tiles);

/// Means and medians (clock cycles) of one consumer slot's phases over its tiles.
struct PhaseStats {
  int64_t tiles = 0;  ///< records whose mainloop clocks were recorded (epilogue: those with stores)
  double issue_mean = 0, issue_median = 0;        ///< start -> last k-block issued
  double drain_mean = 0, drain_median = 0;        ///< last issue -> sum in registers
  double epilogue_mean = 0, epilogue_median = 0;  ///< sum in registers -> stores issued
  /// The epilogue in three parts, over the tiles that recorded all of its clocks (`parts`):
  /// sum in registers -> past the first barrier (a split's reduction, the wait for the staging
  /// buffer, the other warps) | -> outputs staged (scales, conversion, staging writes, barrier)
  /// | -> stores issued.
  int64_t parts = 0;
  double enter_mean = 0, enter_median = 0;
  double stage_mean = 0, stage_median = 0;
  double issue_stores_mean = 0, issue_stores_median = 0;
  double gap_mean = 0, gap_median = 0;  ///< stores issued -> the consumer's next tile begins
};

struct TraceSummary {
  int ctas = 0, consumers = 0;
  int64_t tiles_run = 0;       ///< as in TraceData
  int64_t tiles_recorded = 0;  ///< records kept (at most `tiles` per consumer and CTA)
  PhaseStats slot[2];          ///< consumer 0 and consumer 1
  double span_mean = 0;  ///< per CTA: first recorded start -> its last recorded clock
  /// Per CTA, the share of its span during which at least one consumer was between a tile's
  /// start and its sum in registers (wgmmas issued or in flight), averaged over CTAs: an upper
  /// bound on the tensor cores' busy share.
  double mainloop_share = 0;
};

TraceSummary summarize_trace(const TraceData& data);

/// The summary in a few readable lines.
std::string format_trace_summary(const TraceSummary& s);

/// Every record as a CSV row (cta,sm,consumer,tile,start,last_issue,mainloop_done,
/// epilogue_entered,epilogue_staged,epilogue_done), the clocks relative to the CTA's first
/// recorded start; an f8gemm::Error (kIo) if the file cannot be written.
void write_trace_csv(const std::string& path, const std::vector<TraceRecord>& records);

}  // namespace f8gemm::test
