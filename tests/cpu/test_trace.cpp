/// \brief GemmOptions::trace without a GPU: the buffer's layout, its reader and summary
/// (testing/trace_summary.hpp) on hand-built buffers, and the option's argument checks.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/test_util.hpp"
#include "f8gemm/f8gemm.hpp"
#include "trace_summary.hpp"

namespace f8gemm {
namespace {

using test::expect_error;

constexpr int kTiles = 4;  // records per consumer and CTA in the hand-built buffers
constexpr int kEvents = 6;  // clocks per record
constexpr int64_t kCtaWords = 4 + 2 * kTiles * kEvents;

/// A buffer of `ctas` CTAs, all empty (no CTA ran).
std::vector<uint64_t> empty_buffer(int ctas) { return std::vector<uint64_t>(ctas * kCtaWords, 0); }

void set_header(std::vector<uint64_t>& w, int cta, int consumers, int sm, uint64_t ran0,
                uint64_t ran1) {
  uint64_t* h = w.data() + cta * kCtaWords;
  h[0] = uint64_t(consumers + 1);
  h[1] = uint64_t(sm);
  h[2] = ran0;
  h[3] = ran1;
}

/// A record's clocks in time order; `entered` and `staged` (the epilogue's inner moments) go in
/// the record's last two words, after `stored`.
void set_record(std::vector<uint64_t>& w, int cta, int consumer, int tile, uint64_t start,
                uint64_t last_issue, uint64_t done, uint64_t stored, uint64_t entered = 0,
                uint64_t staged = 0) {
  uint64_t* r = w.data() + cta * kCtaWords + 4 + (consumer * kTiles + tile) * kEvents;
  r[0] = start;
  r[1] = last_issue;
  r[2] = done;
  r[3] = stored;
  r[4] = entered;
  r[5] = staged;
}

TEST(Trace, TheBufferHoldsAHeaderAndTwoConsumerSlotsPerCta) {
  EXPECT_EQ(trace_words(1, kTiles), kCtaWords);
  EXPECT_EQ(trace_words(132, 1024), 132 * (4 + 2 * 1024 * 6));
  EXPECT_EQ(trace_words(0, 1), 0);
  expect_error([] { trace_words(-1, 1); }, ErrorCode::kInvalidArgument, "ctas must be >= 0");
  expect_error([] { trace_words(1, 0); }, ErrorCode::kInvalidArgument, "tiles in [1, 1048576]");
}

// The tile bound is inclusive: a buffer sized for kTraceMaxTiles (2^20) records per consumer is
// one that GemmOptions::trace admits (validate.cpp), so trace_words() must size it too.
TEST(Trace, TraceWordsAcceptsTheMostTilesAndRefusesOneMore) {
  constexpr int kMaxTiles = 1 << 20;
  EXPECT_EQ(trace_words(1, kMaxTiles), 4 + 2 * int64_t(kMaxTiles) * kEvents);
  expect_error([] { trace_words(1, kMaxTiles + 1); }, ErrorCode::kInvalidArgument,
               "tiles in [1, 1048576], got 1 and 1048577");
}

TEST(Trace, TraceCtasNeedsAGpuAndIsZeroForAnEmptyProblem) {
  ProblemShape p;
  p.batch = 1;
  p.m = 0;
  p.n = 128;
  p.k = 256;
  EXPECT_EQ(trace_ctas(p), 0);
  p.m = 64;
  if (!test::have_sm90()) expect_error([&] { trace_ctas(p); }, ErrorCode::kNoDevice, "");
  p.k = 100;  // not a multiple of 16: refused before any device access
  expect_error([&] { trace_ctas(p); }, ErrorCode::kInvalidArgument, "");
}

// A cooperative CTA (two consumers on the same two tiles), a CTA that did not run, and a
// one-consumer CTA that ran more tiles than were recorded. Every expected figure is worked out
// from the clocks below.
TEST(Trace, ReadsAndSummarisesAHandBuiltBuffer) {
  std::vector<uint64_t> w = empty_buffer(3);
  // CTA 0 (SM 7): tile 0 of consumer 0 at 1000 -> 1800 -> 1900 -> 2300, tile 1 at 2310 ->
  // 3110 -> 3210 -> 3610; consumer 1 runs 100 cycles behind with a 500-cycle epilogue.
  set_header(w, 0, 2, 7, 2, 2);
  set_record(w, 0, 0, 0, 1000, 1800, 1900, 2300);
  set_record(w, 0, 0, 1, 2310, 3110, 3210, 3610);
  set_record(w, 0, 1, 0, 1100, 1900, 2000, 2500);
  set_record(w, 0, 1, 1, 2510, 3310, 3410, 3910);
  // CTA 2 (SM 9): one consumer, 6 tiles run, 4 recorded, each 100 | 10 | 40 | 50.
  set_header(w, 2, 1, 9, 6, 0);
  for (int t = 0; t < kTiles; ++t) {
    const uint64_t s = 5000 + 200 * uint64_t(t);
    set_record(w, 2, 0, t, s, s + 100, s + 110, s + 150);
  }
  const test::TraceData d = test::parse_trace(w, kTiles);
  EXPECT_EQ(d.ctas, 2);
  EXPECT_EQ(d.consumers, 2);
  EXPECT_EQ(d.tiles_run, 2 + 2 + 6);
  ASSERT_EQ(d.records.size(), 4u + 4u);
  EXPECT_EQ(d.records[0].sm, 7);
  EXPECT_EQ(d.records[2].consumer, 1);
  EXPECT_EQ(d.records[3].epilogue_done, 3910u);
  EXPECT_EQ(d.records[4].cta, 2);
  EXPECT_EQ(d.records[7].tile, 3);

  const test::TraceSummary s = test::summarize_trace(d);
  EXPECT_EQ(s.tiles_recorded, 8);
  // Consumer slot 0: CTA 0's two tiles (800, 100, 400; gap 10) and CTA 2's four (100, 10, 40;
  // gaps 50).
  EXPECT_EQ(s.slot[0].tiles, 6);
  EXPECT_DOUBLE_EQ(s.slot[0].issue_mean, (800.0 * 2 + 100.0 * 4) / 6);
  EXPECT_DOUBLE_EQ(s.slot[0].issue_median, 100.0);
  EXPECT_DOUBLE_EQ(s.slot[0].drain_mean, (100.0 * 2 + 10.0 * 4) / 6);
  EXPECT_DOUBLE_EQ(s.slot[0].epilogue_mean, (400.0 * 2 + 40.0 * 4) / 6);
  EXPECT_DOUBLE_EQ(s.slot[0].gap_mean, (10.0 + 50.0 * 3) / 4);
  EXPECT_DOUBLE_EQ(s.slot[0].gap_median, 50.0);
  EXPECT_EQ(s.slot[1].tiles, 2);
  EXPECT_DOUBLE_EQ(s.slot[1].epilogue_mean, 500.0);
  EXPECT_DOUBLE_EQ(s.slot[1].gap_mean, 10.0);
  // Spans: CTA 0 1000 -> 3910 (2910), CTA 2 5000 -> 5750 (750). Mainloops in flight: CTA 0
  // [1000, 2000] and [2310, 3410] (2100 of 2910); CTA 2 4 x 110 (440 of 750).
  EXPECT_DOUBLE_EQ(s.span_mean, (2910.0 + 750.0) / 2);
  EXPECT_DOUBLE_EQ(s.mainloop_share, (2100.0 / 2910.0 + 440.0 / 750.0) / 2);
  const std::string text = test::format_trace_summary(s);
  EXPECT_NE(text.find("2 CTAs, 2 consumer warpgroup(s) each, 10 tiles run, 8 recorded"),
            std::string::npos)
      << text;
}

// A split-K rank that hands its sums over stores nothing: its tiles count in the mainloop's
// phases, the spans and the gaps (from the sum in registers), not in the epilogue's.
TEST(Trace, TilesWithoutStoresCountInTheMainloopOnly) {
  std::vector<uint64_t> w = empty_buffer(1);
  set_header(w, 0, 1, 0, 3, 0);
  set_record(w, 0, 0, 0, 100, 200, 300, 0);
  set_record(w, 0, 0, 1, 400, 500, 600, 700);
  set_record(w, 0, 0, 2, 0, 0, 0, 0);  // counted by the header, its clocks lost: skipped
  const test::TraceData d = test::parse_trace(w, kTiles);
  ASSERT_EQ(d.records.size(), 3u);
  const test::TraceSummary s = test::summarize_trace(d);
  EXPECT_EQ(s.slot[0].tiles, 2);
  EXPECT_DOUBLE_EQ(s.slot[0].issue_mean, 100.0);
  EXPECT_DOUBLE_EQ(s.slot[0].epilogue_mean, 100.0);
  EXPECT_DOUBLE_EQ(s.slot[0].gap_mean, 100.0);  // 300 -> 400
  EXPECT_DOUBLE_EQ(s.span_mean, 600.0);         // 100 -> 700
  EXPECT_DOUBLE_EQ(s.mainloop_share, 400.0 / 600.0);
}

// The epilogue's three parts come from the tiles that recorded both inner clocks in order;
// a tile without them (or with them out of order) still counts in the whole epilogue.
TEST(Trace, SplitsTheEpilogueAtItsFirstBarrierAndAtTheStagedOutputs) {
  std::vector<uint64_t> w = empty_buffer(1);
  set_header(w, 0, 2, 4, 3, 1);
  // Consumer 0: 1000 -> 1800 -> 1900, entered 2000, staged 2600, stored 2650; then 3000 ->
  // 3800 -> 3900, entered 3940, staged 4500, stored 4540; then a tile without inner clocks.
  set_record(w, 0, 0, 0, 1000, 1800, 1900, 2650, 2000, 2600);
  set_record(w, 0, 0, 1, 3000, 3800, 3900, 4540, 3940, 4500);
  set_record(w, 0, 0, 2, 5000, 5800, 5900, 6400);
  // Consumer 1: staged before entered, so its parts are not counted.
  set_record(w, 0, 1, 0, 1100, 1900, 2000, 2700, 2500, 2400);
  const test::TraceData d = test::parse_trace(w, kTiles);
  ASSERT_EQ(d.records.size(), 4u);
  EXPECT_EQ(d.records[0].epilogue_entered, 2000u);
  EXPECT_EQ(d.records[0].epilogue_staged, 2600u);
  EXPECT_EQ(d.records[0].epilogue_done, 2650u);
  const test::TraceSummary s = test::summarize_trace(d);
  EXPECT_EQ(s.slot[0].tiles, 3);
  EXPECT_DOUBLE_EQ(s.slot[0].epilogue_mean, (750.0 + 640.0 + 500.0) / 3);
  EXPECT_EQ(s.slot[0].parts, 2);
  EXPECT_DOUBLE_EQ(s.slot[0].enter_mean, (100.0 + 40.0) / 2);
  EXPECT_DOUBLE_EQ(s.slot[0].stage_mean, (600.0 + 560.0) / 2);
  EXPECT_DOUBLE_EQ(s.slot[0].stage_median, 580.0);
  EXPECT_DOUBLE_EQ(s.slot[0].issue_stores_mean, (50.0 + 40.0) / 2);
  EXPECT_EQ(s.slot[1].tiles, 1);
  EXPECT_EQ(s.slot[1].parts, 0);
  EXPECT_DOUBLE_EQ(s.slot[1].epilogue_mean, 700.0);
  const std::string text = test::format_trace_summary(s);
  EXPECT_NE(text.find("consumer 0 (2 tiles): 70 / 70 | 580 / 580 | 45 / 45"), std::string::npos)
      << text;
}

TEST(Trace, BuffersThatDoNotFitTheirTilesAreRejected) {
  expect_error([] { test::parse_trace(std::vector<uint64_t>(kCtaWords + 1, 0), kTiles); },
               ErrorCode::kInvalidArgument, "not a whole number of CTAs");
  expect_error([] { test::parse_trace({}, kTiles); }, ErrorCode::kInvalidArgument,
               "not a whole number of CTAs");
  expect_error([] { test::parse_trace(std::vector<uint64_t>(kCtaWords, 0), 0); },
               ErrorCode::kInvalidArgument, "tiles must be >= 1");
  std::vector<uint64_t> w = empty_buffer(2);
  w[kCtaWords] = 4;  // CTA 1 says 3 consumers
  expect_error([&] { test::parse_trace(w, kTiles); }, ErrorCode::kInvalidArgument,
               "CTA 1's header says 4");
  w[kCtaWords] = (uint64_t(1) << 32) + 2;  // 2 in its low 32 bits: still not a header
  expect_error([&] { test::parse_trace(w, kTiles); }, ErrorCode::kInvalidArgument,
               "CTA 1's header says 4294967298");
  w[kCtaWords] = 2;
  w[kCtaWords + 2] = uint64_t(1) << 40;  // a tile count no kernel reaches
  expect_error([&] { test::parse_trace(w, kTiles); }, ErrorCode::kInvalidArgument,
               "counts 1099511627776 tiles for consumer 0");
}

// A header of 1 (consumers + 1 with no consumer) is no kernel's: the buffer is not a trace.
TEST(Trace, AHeaderOfNoConsumersIsRejected) {
  std::vector<uint64_t> w = empty_buffer(2);
  set_header(w, 0, 1, 0, 1, 0);
  set_record(w, 0, 0, 0, 100, 200, 300, 400);
  w[kCtaWords] = 1;  // CTA 1
  expect_error([&] { test::parse_trace(w, kTiles); }, ErrorCode::kInvalidArgument,
               "CTA 1's header says 1 (consumers + 1 must be 2 or 3)");
}

// A tile that starts on the clock its predecessor stored is a gap of 0 cycles, counted in the
// gap's mean and median like any other.
TEST(Trace, BackToBackTilesCountAGapOfZero) {
  std::vector<uint64_t> w = empty_buffer(1);
  set_header(w, 0, 1, 0, 3, 0);
  set_record(w, 0, 0, 0, 100, 200, 300, 400);
  set_record(w, 0, 0, 1, 400, 500, 600, 700);  // gap 0
  set_record(w, 0, 0, 2, 800, 900, 1000, 1100);  // gap 100
  const test::TraceSummary s = test::summarize_trace(test::parse_trace(w, kTiles));
  EXPECT_DOUBLE_EQ(s.slot[0].gap_mean, 50.0);
  EXPECT_DOUBLE_EQ(s.slot[0].gap_median, 50.0);
}

/// The CSV that write_trace_csv writes for `records`, read back.
std::string csv_text(const test::TempDir& dir, const std::vector<test::TraceRecord>& records) {
  const std::string path = dir.path() + "/t.csv";
  test::write_trace_csv(path, records);
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(Trace, TheCsvListsEveryRecordRelativeToItsCtasFirstStart) {
  std::vector<uint64_t> w = empty_buffer(2);
  set_header(w, 1, 1, 3, 2, 0);
  set_record(w, 1, 0, 0, 5000, 5100, 5200, 0);
  set_record(w, 1, 0, 1, 5300, 5400, 5500, 5600, 5530, 5580);
  const test::TraceData d = test::parse_trace(w, kTiles);
  test::TempDir dir("f8gemm_trace_csv");
  EXPECT_EQ(csv_text(dir, d.records),
            "cta,sm,consumer,tile,start,last_issue,mainloop_done,epilogue_entered,"
            "epilogue_staged,epilogue_done\n"
            "1,3,0,0,0,100,200,,,\n"
            "1,3,0,1,300,400,500,530,580,600\n");
  expect_error([&] { test::write_trace_csv(dir.path() + "/no/such/dir/t.csv", d.records); },
               ErrorCode::kIo, "cannot write");
  // A device that takes no bytes (a full disk): the few rows sit in the stream's buffer until
  // the close, whose failure is reported too (it was lost in the destructor before).
  if (std::filesystem::exists("/dev/full")) {
    expect_error([&] { test::write_trace_csv("/dev/full", d.records); }, ErrorCode::kIo,
                 "writing /dev/full failed");
  }
}

// The CTA's first start is the earliest of all its consumers' tiles, not its first record's:
// consumer 1 may start before consumer 0.
TEST(Trace, TheCsvClocksCountFromTheEarliestStartOfAnyConsumer) {
  std::vector<uint64_t> w = empty_buffer(1);
  set_header(w, 0, 2, 5, 1, 1);
  set_record(w, 0, 0, 0, 1100, 1200, 1300, 1400);
  set_record(w, 0, 1, 0, 1000, 1150, 1250, 1350);
  const test::TraceData d = test::parse_trace(w, kTiles);
  test::TempDir dir("f8gemm_trace_csv");
  EXPECT_EQ(csv_text(dir, d.records),
            "cta,sm,consumer,tile,start,last_issue,mainloop_done,epilogue_entered,"
            "epilogue_staged,epilogue_done\n"
            "0,5,0,0,100,200,300,,,400\n"
            "0,5,1,0,0,150,250,,,350\n");
}

}  // namespace
}  // namespace f8gemm
