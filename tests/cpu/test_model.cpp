/// \brief The cost model against measurements: tune runs on the H200 and the H100 (every legal
/// configuration of each problem, timed on the GPU) and A/Bs of two picks hold the fastest
/// configuration; the model's pick must be within 10% of it (regret <= 1.10), and within 3% on
/// average. The fitted run is the data the model was tuned on; the held-out run (real model
/// shapes, tests/data/heldout-shapes.txt) is the real test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "config.hpp"

namespace f8gemm {
namespace {

using ProblemKey = std::tuple<int64_t, int64_t, int64_t, int64_t, bool>;  // b, m, n, k, fast

struct Measured {
  Config config;
  double us = 0.0;
};

std::string data_path(const std::string& name) {
  return std::string(F8GEMM_SOURCE_DIR) + "/tests/data/" + name;
}

/// The tune runs the model was fitted on: the bm = 64 precise factor (tests/data), the precise
/// ping-pong factor and the per-CTA stream latency (session 4, docs/perf-log.md card 20), and the
/// other session-4 runs that chose table entries. No held-out shape may appear in any of them.
const char* const kFittedOn[] = {
    "tests/data/fitted-tune-4.csv",
    "docs/logs/2026-11-30-s4-tune-large.csv",
    "docs/logs/2026-11-30-s4-tune-large-rotated.csv",
    "docs/logs/2026-11-30-s4-tune-decode-rotated.csv",
    "docs/logs/2026-11-30-s4-tune-large-bench-operands-fast.csv",
    "docs/logs/2026-11-30-s4-tune-large-bench-operands-precise.csv",
};

/// The rows of a `f8gemm tune --log` CSV (b,m,n,k,accum,config,graph_us,model_us), by problem.
std::map<ProblemKey, std::vector<Measured>> read_tune_log(const std::string& path) {
  std::ifstream in(path);
  std::map<ProblemKey, std::vector<Measured>> runs;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::stringstream ss(line);
    std::string f[8];
    for (auto& field : f) std::getline(ss, field, ',');
    const ProblemKey key{std::stoll(f[0]), std::stoll(f[1]), std::stoll(f[2]), std::stoll(f[3]),
                         f[4] == "fast"};
    runs[key].push_back({Config::parse(f[5]), std::stod(f[6])});
  }
  return runs;
}

/// The runs of a committed tune or A/B log (`name` relative to the source tree), which must be
/// readable and hold `problems` problems (fatal failures: ASSERT_NO_FATAL_FAILURE at the call).
void read_committed_log(const std::string& name, size_t problems,
                        std::map<ProblemKey, std::vector<Measured>>* runs) {
  const std::string path = std::string(F8GEMM_SOURCE_DIR) + "/" + name;
  ASSERT_TRUE(std::ifstream(path).good()) << "cannot read " << path;
  *runs = read_tune_log(path);
  ASSERT_EQ(runs->size(), problems) << path;
}

/// B,M,N,K of a shapes file (`#` comments, blank lines).
std::set<std::tuple<int64_t, int64_t, int64_t, int64_t>> read_shapes(const std::string& path) {
  std::ifstream in(path);
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t>> shapes;
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    int64_t v[4];
    char c1, c2, c3;
    std::stringstream(line) >> v[0] >> c1 >> v[1] >> c2 >> v[2] >> c3 >> v[3];
    shapes.insert({v[0], v[1], v[2], v[3]});
  }
  return shapes;
}

/// Expects the model's pick within `worst_bound` (10%) of the fastest measured configuration of
/// every problem, and within `mean_bound` (3%) on average. The pick is the model's exact
/// configuration where the tune timed it, else the measured configuration of the model's
/// families that it estimates fastest.
void expect_small_regret(const std::map<ProblemKey, std::vector<Measured>>& runs,
                         const std::string& what, double mean_bound = 1.03,
                         double worst_bound = 1.10) {
  double sum = 0.0, worst = 0.0;
  for (const auto& [key, measured] : runs) {
    ProblemShape p;
    std::tie(p.batch, p.m, p.n, p.k, p.fast_accum) = key;
    // The model chooses among its own candidates' tile families only (path, tile, cluster,
    // split; older logs timed other stage counts): a tune log also times the widths it offers
    // the tune alone (detail::CandidateSet::kTune), which the model never picks.
    auto family = [](const Config& c) {
      return std::make_tuple(int(c.path), c.bm, c.bn, c.cluster_m, c.split_k);
    };
    std::set<std::tuple<int, int, int, int, int>> model_set;
    const std::vector<Config> model = detail::candidates(p, 132);
    for (const Config& c : model) model_set.insert(family(c));
    const Measured* best = &measured.front();
    const Measured* pick = nullptr;
    for (const Measured& r : measured) {
      if (r.us < best->us) best = &r;
      if (!model_set.count(family(r.config))) continue;
      if (!pick ||
          detail::estimate_us(r.config, p, 132) < detail::estimate_us(pick->config, p, 132)) {
        pick = &r;
      }
    }
    // The model's own pick, stages included, where the tune timed it (a tune also times
    // deeper rings of the same family, which the model never picks).
    const std::string front = model.front().name();
    for (const Measured& r : measured) {
      if (r.config.name() == front) pick = &r;
    }
    ASSERT_NE(pick, nullptr) << what << ": no measured config is one the model can pick";
    const double regret = pick->us / best->us;
    sum += regret;
    worst = std::max(worst, regret);
    EXPECT_LE(regret, worst_bound)
        << what << " " << p.batch << "," << p.m << "," << p.n << "," << p.k
        << (p.fast_accum ? " fast" : " precise") << ": the model picks " << pick->config.name()
        << " (" << pick->us << " us), the fastest is " << best->config.name() << " (" << best->us
        << " us)";
  }
  EXPECT_LE(sum / double(runs.size()), mean_bound)
      << what << ": mean regret over " << runs.size() << " problems (worst " << worst << ")";
}

TEST(CostModel, PicksNearTheFastestOnTheFittedRun) {
  // The run the bm = 64 precise factor was fitted on: it shows the fit, not that it generalises.
  const std::string path = data_path("fitted-tune-4.csv");
  ASSERT_TRUE(std::ifstream(path).good()) << "cannot read " << path;
  const auto runs = read_tune_log(path);
  ASSERT_EQ(runs.size(), 22u) << "11 shapes x 2 accumulation modes";
  expect_small_regret(runs, "fitted");
}

TEST(CostModel, HeldOutShapesAreRealAndNotFitted) {
  const auto shapes = read_shapes(data_path("heldout-shapes.txt"));
  EXPECT_GE(shapes.size(), 20u);
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t>> fitted;
  for (const char* name : kFittedOn) {
    const std::string path = std::string(F8GEMM_SOURCE_DIR) + "/" + name;
    ASSERT_TRUE(std::ifstream(path).good()) << "cannot read " << path;
    const auto runs = read_tune_log(path);
    EXPECT_FALSE(runs.empty()) << path;
    for (const auto& [key, measured] : runs) {
      fitted.insert({std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key)});
    }
  }
  for (const auto& s : shapes) {
    EXPECT_EQ(std::get<0>(s), 1) << "single GEMMs";
    EXPECT_EQ(std::get<3>(s) % 16, 0);
    EXPECT_EQ(fitted.count(s), 0u) << "a held-out shape was fitted on";
  }
}

// Issue 8, defect 7: the model against shapes it was not fitted on. The data is an H200 run of
// scripts/tune-heldout.sh (every candidate of every held-out shape, both modes), made with
// rotated inputs but before `tune` moved to the bench's operands and warm-up (perf log cards
// 19-20): compute-bound times there read a few percent fast. A change to the candidates or the
// model is held to it; a change to the kernels or to the timing method needs a new run.
TEST(CostModel, PicksNearTheFastestOnHeldOutShapes) {
  const std::string path = data_path("heldout-tune.csv");
  ASSERT_TRUE(std::ifstream(path).good())
      << "no held-out tune run: " << path << " is made on an H200 by scripts/tune-heldout.sh "
      << "(`f8gemm tune --shapes tests/data/heldout-shapes.txt --both --log <csv>` in two halves)";
  const auto runs = read_tune_log(path);
  // Every held-out shape was tuned, in both modes.
  const auto shapes = read_shapes(data_path("heldout-shapes.txt"));
  for (const auto& [b, m, n, k] : shapes) {
    for (bool fast : {true, false}) {
      EXPECT_EQ(runs.count({b, m, n, k, fast}), 1u)
          << b << "," << m << "," << n << "," << k << (fast ? " fast" : " precise")
          << " is missing from " << path;
    }
  }
  expect_small_regret(runs, "held out");
}

// Card 82: the first H100 tunes of issue 7's eight decode shapes, unchained and chained (PDL
// with prefetch_w), with the kernels of session 28. Before card 82 the model split 4096 x 4096
// in two and 1024 x 8192 in six, and its picks ran 1.09-1.13x the fastest on average (worst
// 1.21-1.36); the bounds here are the held-out ones.
TEST(CostModel, PicksNearTheFastestOnTheH100DecodeTunes) {
  for (const char* name : {"docs/logs/2026-12-06-s29-call2-tune-decode.csv",
                           "docs/logs/2026-12-06-s29-call2-tune-decode-chained.csv"}) {
    const std::string path = std::string(F8GEMM_SOURCE_DIR) + "/" + name;
    ASSERT_TRUE(std::ifstream(path).good()) << "cannot read " << path;
    const auto runs = read_tune_log(path);
    ASSERT_EQ(runs.size(), 8u) << path;
    expect_small_regret(runs, name);
  }
}

// Card 84: the large-shape tunes of session 18 on the H200 (fast and precise, the kernels since
// card 64). The model ranked the ping-pong 64x256 pair first at K = 1024 and the tiled 128x192
// first in precise mode: 1.009-1.030x the fastest on average per file (1.025 and 1.030 on the
// two with precise rows). With the operand-row term and the full-width precise rate its picks
// are 1.002-1.010x.
TEST(CostModel, PicksNearTheFastestOnTheLargeTunesSinceCard64) {
  for (const char* name : {"docs/logs/2026-12-02-s18-call3-tune-new-1.csv",
                           "docs/logs/2026-12-02-s18-call3-tune-new-2.csv",
                           "docs/logs/2026-12-02-s18-call2-tune-c64-1.csv",
                           "docs/logs/2026-12-02-s18-call2-tune-c64-2.csv"}) {
    const std::string path = std::string(F8GEMM_SOURCE_DIR) + "/" + name;
    ASSERT_TRUE(std::ifstream(path).good()) << "cannot read " << path;
    const auto runs = read_tune_log(path);
    ASSERT_GE(runs.size(), 4u) << path;
    expect_small_regret(runs, name, 1.015);
  }
}

// Card 85: a cost per operand row of 5 in fast mode. Session 31's A/Bs (H100, no tables) timed
// the old and the new pick of 28 fast problems whose pick moves (16 chosen first, 12 held out):
// on 23 the old pick was a ping-pong pair (2x1), which ran 1.00-1.31x the time of the tiled
// 128-row tile that 5 picks (1.12 on average); the other five are swap-AB moves, 0.93-1.14.
// The file holds both picks' times per problem (preshuffled), so the regret is the time of
// whichever of the two the model picks: 1.11 on average with 4 (13 problems over 1.10), 1.003
// with 5 (worst 1.07: 1,48,2048,7168, a swap-AB split that 5 moves and that lost).
TEST(CostModel, PicksNearTheFasterPickOfCard85sAbs) {
  const std::string path =
      std::string(F8GEMM_SOURCE_DIR) + "/docs/logs/2026-12-06-s31-card85-ab-as-tune.csv";
  ASSERT_TRUE(std::ifstream(path).good()) << "cannot read " << path;
  const auto runs = read_tune_log(path);
  ASSERT_EQ(runs.size(), 28u) << path;
  expect_small_regret(runs, path, 1.01);
}

// Card 82: a swap-AB W tile is streamed once for each of its X tiles. Where the model charged W
// once, it covered these rows in more X tiles than it had to (two of 16 rows for 32 at
// 1,32,1280,8192 and 1,32,2048,7168), and session 29's H100 A/B measured those picks 2-33% slower
// than the fewest X tiles (docs/logs/2026-12-06-s29-call3-h100-table-model.log). The test also
// held 1,256,1024,8192 to two X tiles of 128 until card 87: session 32's tunes of that problem
// measured four X tiles of 64 (swap 64x64, which card 87's model picks) fastest on the H100
// (10.55 µs against 12.46 for 64x128 k3) and within 3.2% of the fastest on the H200.
TEST(CostModel, SwapTilesCoverTheseRowsInTheFewestXTiles) {
  for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{32, 1280, 8192},
                                {32, 2048, 7168}}) {
    ProblemShape p;
    p.m = m;
    p.n = n;
    p.k = k;
    const Config c = detail::candidates(p, 132).front();
    const std::string label = std::to_string(m) + "," + std::to_string(n) + "," +
                              std::to_string(k) + ": " + c.name();
    EXPECT_EQ(c.path, KernelPath::kSwapAB) << label;
    // The fewest X tiles a swap tile (at most 128 columns) can cover M with.
    EXPECT_EQ((m + c.bn - 1) / c.bn, (m + 127) / 128) << label;
  }
}

// Card 87: the tunes of 64-256-row problems (session 31's four on an H100; session 32's fifteen
// of 192-256 rows on an H100 and an H200). Card 85's model picked split swap-AB tiles there at
// 1.31x, 1.32x and 1.24x the fastest on average (worst 1.48-1.99): it credited a split's larger
// grid with the streaming rate of unsplit CTAs, charged its partial sums at 50 GB/s, and counted
// 44 clusters of three CTAs (33 of four) where 39 (30) fit at once. Card 87's model is at 1.01,
// 1.15 and 1.11. Its worst, 1,224,2048,7168 (swap 64x96 unsplit, 1.56x the tiled 64x64 on the
// H100 and 1.74x on the H200), is the residual that the loose worst bound leaves room for.
TEST(CostModel, PicksNearTheFastestOnTheSwapTunesOf64To256Rows) {
  for (const char* name : {"docs/logs/2026-12-06-s31-call8-swap-tune-h100.csv",
                           "docs/logs/2026-12-06-s32-call1-card86-tune-h100.csv",
                           "docs/logs/2026-12-06-s32-call2-card86-tune-h200.csv"}) {
    const std::string path = std::string(F8GEMM_SOURCE_DIR) + "/" + name;
    ASSERT_TRUE(std::ifstream(path).good()) << "cannot read " << path;
    const auto runs = read_tune_log(path);
    ASSERT_GE(runs.size(), 4u) << path;
    expect_small_regret(runs, name, 1.16, 1.80);
  }
}

// Card 87's A/Bs (session 32, no tables): the old and the new pick of 24 held-out problems whose
// pick moved (16 fast, 8 precise), both picks' mean times per problem (preshuffled). Call 3 (an
// H100) timed a first form of card 87 (a split's streamed bytes at 0.75, its peers at 0.25 µs),
// call 4 (an H200) the merged one (0.6 and 0.5 µs), whose picks differ from the first form's on 8
// of the 24 (on three it picks what card 85's model did: one time per problem in that file).
// Card 85's model is at 1.155 and 1.116 on average (worst 1.62 and 1.85), card 87's at 1.010
// in both. Its worst: 1.09 in call 3's file (1,48,4096,14336 fast, back on main's k2, where the
// first form's unsplit pick was 8% faster on the H100) and 1.11 in call 4's (1,96,1024,8192
// precise, swap 64x48 k3 -> k2, lost in both calls). Five of call 3's 24 are scored on the timed
// config of the pick's family that the model rates best: the merged picks were not timed there.
TEST(CostModel, PicksNearTheFasterPickOfCard87sAbs) {
  for (const char* name : {"docs/logs/2026-12-06-s32-call3-card87-ab-as-tune.csv",
                           "docs/logs/2026-12-06-s32-call4-card87-ab-as-tune-h200.csv"}) {
    std::map<ProblemKey, std::vector<Measured>> runs;
    ASSERT_NO_FATAL_FAILURE(read_committed_log(name, 24, &runs));
    expect_small_regret(runs, name, 1.02, 1.15);
  }
}

// Card 88: session 34's A/B of its first form (the per-CTA stream latency from L2 at 1.6 µs for
// every tile) on the 16 problems whose fast pick it moved, on an H100 without tables, preshuffled,
// the mean of two rounds each. Main and the first form each picked the faster config on 8 of 16.
// The second form (the 1.6 µs for swap-AB tiles only) takes the faster pick on 15, and on the
// 16th (1,48,1536,2048) one 1.0% slower: this is the data the form was chosen on, not a held-out
// test.
TEST(CostModel, PicksNearTheFasterPickOfCard88sAb) {
  const char* name = "docs/logs/2026-12-06-s34-callA-card88-ab-as-tune.csv";
  std::map<ProblemKey, std::vector<Measured>> runs;
  ASSERT_NO_FATAL_FAILURE(read_committed_log(name, 16, &runs));
  expect_small_regret(runs, name, 1.01, 1.03);
}

// Card 88, its merged form: session 35's A/B of the second form against main (an H100 without
// tables, preshuffled; fast the mean of two rounds, precise one) on the 16 problems of
// docs/experiments/card-88b-shapes.txt in both modes; 27 of the 32 moved. The second form's
// largest loss was a precise move to a 128-row swap-AB tile (1,128,7168,14336, 1.09x), and the
// merged form (the 1.6 µs for 64-row swap tiles alone) was chosen on this same data, so this is
// not a held-out test. Its pick must be one of the timed configs (a move to an untimed one would
// otherwise score no regret); of the 27 moved problems it takes the faster on 25 and is at most
// 2.3% slower on the other two (1,48,1536,2048, which it keeps at a loss). Main takes the faster
// on 3 of the 27; its worst regret is 1.30.
TEST(CostModel, PicksNearTheFasterPickOfCard88bsAb) {
  const char* name = "docs/logs/2026-12-06-s35-call1-card88b-ab-as-tune.csv";
  std::map<ProblemKey, std::vector<Measured>> runs;
  ASSERT_NO_FATAL_FAILURE(read_committed_log(name, 32, &runs));
  for (const auto& [key, measured] : runs) {
    ProblemShape p;
    std::tie(p.batch, p.m, p.n, p.k, p.fast_accum) = key;
    const std::string pick = detail::candidates(p, 132).front().name();
    bool timed = false;
    for (const Measured& r : measured) timed = timed || r.config.name() == pick;
    EXPECT_TRUE(timed) << p.batch << "," << p.m << "," << p.n << "," << p.k
                       << (p.fast_accum ? " fast" : " precise") << ": the model picks " << pick
                       << ", which the A/B did not time";
  }
  expect_small_regret(runs, name, 1.01, 1.03);
}

// Card 87: a persistent grid holds only the clusters that fit at once (39 of three CTAs on 132
// SMs at one CTA per SM, 79 at two; docs/logs/2026-12-06-s32-call2-cluster-capacity-h200.log);
// the launcher sizes its grid with the same query, so one more split-K tile than that runs as a
// second wave.
TEST(CostModel, ClustersPastTheOnesThatFitAtOnceRunAsASecondWave) {
  ProblemShape p;
  p.m = 1;
  p.k = 65536;  // long slices: the tile's time, not the fixed cost, dominates
  // 130 KB of shared memory: one CTA per SM.
  const Config one = Config::parse("sm90_swap_64x16x128_s12_c1x1_r0_k3");
  ASSERT_GT(2 * (detail::config_smem_bytes(one) + 1024), 233472);
  p.n = 64 * 39;  // 39 tiles: 39 clusters of three, 117 CTAs
  const double fits = detail::estimate_us(one, p, 132);
  p.n = 64 * 40;  // 40 clusters: 120 CTAs, fewer than 132 SMs, but one cluster too many
  const double past = detail::estimate_us(one, p, 132);
  // One more cluster's tile runs after the first wave. Counting 44 clusters of three at once,
  // card 85's model had 40 clusters cost 40 / 39 of 39's.
  EXPECT_GT(past, 1.15 * fits) << "39 clusters " << fits << " us, 40 clusters " << past << " us";
  // 115 KB: two CTAs per SM, 79 clusters of three at once, so 40 run in one wave.
  const Config two = Config::parse("sm90_swap_64x8x128_s12_c1x1_r0_k3");
  ASSERT_LE(2 * (detail::config_smem_bytes(two) + 1024), 233472);
  p.n = 64 * 39;
  const double two_fits = detail::estimate_us(two, p, 132);
  p.n = 64 * 40;
  EXPECT_LT(detail::estimate_us(two, p, 132), 1.05 * two_fits);
}

// The model answers for every SM count the public API accepts (1..1024), clusters and splits
// included: no count leaves it without a whole cluster to run.
TEST(CostModel, EstimatesForEverySmCount) {
  ProblemShape p;
  p.m = 64;
  p.n = 4096;
  p.k = 8192;
  for (const char* name :
       {"sm90_swap_64x8x128_s12_c1x1_r0_k3", "sm90_swap_64x64x128_s12_c1x1_r0_k8",
        "sm90_tiled_128x256x128_s3_c2x1_r8", "sm90_tiled_64x64x128_s8_c1x1_r8"}) {
    const Config c = Config::parse(name);
    for (int sms = 1; sms <= 1024; ++sms) {
      const double us = detail::estimate_us(c, p, sms);
      ASSERT_TRUE(std::isfinite(us) && us > 0.0) << name << " on " << sms << " SMs: " << us;
    }
  }
}

}  // namespace
}  // namespace f8gemm
