/// \brief Config names (print/parse), legality, candidates for the bench shapes, tuned tables and
/// the decision order (F8GEMM_CONFIG, F8GEMM_TUNE_FILE, F8GEMM_NO_TUNED), and the grouped choice.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include "common/test_util.hpp"
#include "config.hpp"
#include "f8gemm/f8gemm.hpp"
#include "f8gemm/tuning.hpp"
#include "grouped.hpp"
#include "jit/embedded.hpp"
#include "tuned_tables.hpp"

namespace f8gemm {
namespace {

using detail::CandidateSet;
using detail::candidates;
using detail::config_illegal_reason;
using detail::config_smem_bytes;
using detail::decide;
using detail::estimate_us;
using detail::kMaxSmemBytes;
using detail::parse_table;
using detail::table_key;
using detail::tuned_config;
using detail::tuned_entry;
using test::ScopedEnv;

constexpr int kH200Sms = 132;

Config make(KernelPath path, int bm, int bn, int stages, int raster = 8, int cm = 1, int cn = 1) {
  Config c;
  c.path = path;
  c.bm = bm;
  c.bn = bn;
  c.stages = stages;
  c.raster = raster;
  c.cluster_m = cm;
  c.cluster_n = cn;
  return c;
}

ProblemShape problem(int64_t b, int64_t m, int64_t n, int64_t k, bool fast = true,
                     WeightLayout layout = WeightLayout::kPreshuffled) {
  ProblemShape p;
  p.batch = b;
  p.m = m;
  p.n = n;
  p.k = k;
  p.fast_accum = fast;
  p.w_layout = layout;
  return p;
}

/// The 11 bench shapes (B, M, N, K).
const std::vector<ProblemShape>& bench_shapes() {
  static const std::vector<ProblemShape> shapes = [] {
    std::vector<ProblemShape> s;
    for (int64_t m : {1, 32, 128, 512, 1024, 4096}) s.push_back(problem(16, m, 1280, 8192));
    for (int64_t m : {1, 128, 512, 1024, 4096}) s.push_back(problem(16, m, 8192, 1024));
    return s;
  }();
  return shapes;
}

// ---- the tuned-table fixture ---------------------------------------------------------------

// A user table for a GPU that does not exist, installed before the first test: the tables are
// read once per process, so F8GEMM_TUNE_FILE must be set before anything calls decide().
constexpr const char* kTestGpu = "f8gemm test gpu";
constexpr int kTestSms = 7;

ProblemShape tuned_problem() { return problem(16, 1, 1280, 8192); }
ProblemShape illegal_tuned_problem() { return problem(16, 1, 1280, 8192, /*fast=*/false); }
/// A decode GEMM called with PDL and prefetch_w; the table has an entry for it chained only.
ProblemShape chained_problem() {
  ProblemShape p = problem(1, 1, 4096, 4096);
  p.chained = true;
  return p;
}
const Config& chained_pick() {
  // Three stages: never a candidate (the candidates take the deepest ring that fits).
  static const Config c = make(KernelPath::kSwapAB, 64, 24, 3, 0);
  return c;
}
/// A gate|up GEMM whose SiLU·mul call has an entry of its own (`f8gemm tune --epilogue
/// silu_mul`); the same GEMM without the operation has another, unchained and chained.
ProblemShape silu_problem(bool chained = false) {
  ProblemShape p = problem(1, 256, 2048, 4096);
  p.epilogue_op = EpilogueOp::kSiluMul;
  p.chained = chained;
  return p;
}
const Config& silu_pick(bool chained = false) {
  // Never candidates (two stages, no rasterisation).
  static const Config unchained = make(KernelPath::kTiled, 128, 128, 2, 0);
  static const Config chained_c = make(KernelPath::kTiled, 128, 192, 2, 0);
  return chained ? chained_c : unchained;
}
/// Another gate|up GEMM whose SiLU·mul call has an unchained entry only.
ProblemShape silu_unchained_only_problem(bool chained = false) {
  ProblemShape p = silu_problem(chained);
  p.m = 128;
  return p;
}
const Config& silu_gemm_pick(bool chained) {
  // Both can run the operation (bn % 64 == 0), so only the order of the lookup keeps them out.
  static const Config unchained = make(KernelPath::kTiled, 128, 64, 2, 0);
  static const Config chained_c = make(KernelPath::kTiled, 64, 128, 2, 0);
  return chained ? chained_c : unchained;
}
/// Entries of one GEMM at rows that test the lookup of more rows (perf log, card 80), written out
/// of order: 193-256 rows are the fourth 64-row block; 202 rows hold an illegal config, 206 rows
/// two configs (the first wins), 232 rows a chained entry only and 230 an unchained one.
ProblemShape rows_problem(int64_t m, bool chained = false) {
  ProblemShape p = problem(1, m, 3072, 2048);
  p.chained = chained;
  return p;
}
struct RowsLine {
  int64_t m;
  bool chained;
  Config config;
};
const std::vector<RowsLine>& rows_lines() {
  // Two or three stages with no rasterisation: never candidates.
  static const std::vector<RowsLine> lines = {
      {200, false, make(KernelPath::kTiled, 128, 128, 2, 0)},
      {128, false, make(KernelPath::kTiled, 64, 64, 2, 0)},
      {196, false, make(KernelPath::kTiled, 64, 128, 2, 0)},
      {208, false, make(KernelPath::kTiled, 128, 192, 2, 0)},
      {48, false, make(KernelPath::kTiled, 128, 64, 3, 0)},
      {64, false, make(KernelPath::kTiled, 64, 96, 2, 0)},
      {202, false, make(KernelPath::kSwapAB, 64, 16, 4, 0, 2)},  // illegal: swap-AB in a pair
      {206, false, make(KernelPath::kTiled, 64, 192, 2, 0)},
      {206, false, make(KernelPath::kTiled, 128, 96, 2, 0)},
      {232, true, make(KernelPath::kTiled, 64, 256, 2, 0)},
      {230, false, make(KernelPath::kTiled, 128, 256, 2, 0)},
  };
  return lines;
}
/// The first line of these rows (chained or not).
const Config& rows_pick(int64_t m, bool chained = false) {
  for (const RowsLine& l : rows_lines()) {
    if (l.m == m && l.chained == chained) return l.config;
  }
  ADD_FAILURE() << "no line of " << m << " rows";
  return rows_lines().front().config;
}
const Config& tuned_pick() {
  // Two stages with no rasterisation: never a candidate (the candidates take the deepest ring
  // that fits, 8 stages for 128x64, and raster 8 for tiled), so a decision that returns it can
  // only have come from the table.
  static const Config c = make(KernelPath::kTiled, 128, 64, 2, 0);
  return c;
}

class TuneFileEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    dir_ = std::make_unique<test::TempDir>("f8gemm_config_test");
    const std::string path = dir_->path() + "/tune.tsv";
    std::ofstream f(path);
    f << "# a user table for tests\n\n"
      << table_key(kTestGpu, kTestSms, tuned_problem()) << "\t" << tuned_pick().name() << "\n"
      // A second entry for the same key: the first match wins.
      << table_key(kTestGpu, kTestSms, tuned_problem()) << "\t"
      << make(KernelPath::kTiled, 128, 128, 4).name() << "\n"
      // Illegal for precise accumulation (ping-pong with bn 256 > 192): skipped, the model
      // decides.
      << table_key(kTestGpu, kTestSms, illegal_tuned_problem()) << "\t"
      << make(KernelPath::kPingPong, 64, 256, 4).name() << "\n"
      << table_key(kTestGpu, kTestSms, chained_problem()) << "\t" << chained_pick().name() << "\n";
    for (bool chained : {false, true}) {
      ProblemShape gemm = silu_problem(chained);
      gemm.epilogue_op = EpilogueOp::kNone;
      f << table_key(kTestGpu, kTestSms, gemm) << "\t" << silu_gemm_pick(chained).name() << "\n";
    }
    for (bool chained : {false, true}) {
      f << table_key(kTestGpu, kTestSms, silu_problem(chained)) << "\t" << silu_pick(chained).name()
        << "\n";
      ProblemShape gemm = silu_unchained_only_problem(chained);
      gemm.epilogue_op = EpilogueOp::kNone;
      f << table_key(kTestGpu, kTestSms, gemm) << "\t" << silu_gemm_pick(chained).name() << "\n";
    }
    f << table_key(kTestGpu, kTestSms, silu_unchained_only_problem()) << "\t" << silu_pick().name()
      << "\n";
    for (const RowsLine& l : rows_lines()) {
      f << table_key(kTestGpu, kTestSms, rows_problem(l.m, l.chained)) << "\t" << l.config.name()
        << "\n";
    }
    f.close();
    env_ = std::make_unique<ScopedEnv>("F8GEMM_TUNE_FILE");
    env_->set(path);
  }
  void TearDown() override {
    env_.reset();
    dir_.reset();
  }

 private:
  std::unique_ptr<test::TempDir> dir_;
  std::unique_ptr<ScopedEnv> env_;
};

::testing::Environment* const g_tune_env =
    ::testing::AddGlobalTestEnvironment(new TuneFileEnvironment);

/// Clears F8GEMM_CONFIG / F8GEMM_NO_TUNED / F8GEMM_LOG for one test and restores them after.
class DecideTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.unset();
    no_tuned_.unset();
    log_.unset();
  }
  ScopedEnv config_{"F8GEMM_CONFIG"};
  ScopedEnv no_tuned_{"F8GEMM_NO_TUNED"};
  ScopedEnv log_{"F8GEMM_LOG"};
};


// ---- names ---------------------------------------------------------------------------------

TEST(ConfigName, KnownSpellings) {
  EXPECT_EQ(Config{}.name(), "sm90_tiled_128x128x128_s4_c1x1_r8");
  EXPECT_EQ(make(KernelPath::kSwapAB, 64, 16, 12, 0).name(), "sm90_swap_64x16x128_s12_c1x1_r0");
  EXPECT_EQ(make(KernelPath::kTiled, 64, 96, 6, 16, 2, 1).name(), "sm90_tiled_64x96x128_s6_c2x1_r16");
  Config split = make(KernelPath::kSwapAB, 64, 8, 11, 0);
  split.split_k = 4;
  EXPECT_EQ(split.name(), "sm90_swap_64x8x128_s11_c1x1_r0_k4");
  EXPECT_EQ(Config::parse("sm90_swap_64x8x128_s11_c1x1_r0_k4"), split);
  // split_k = 1 is spelled without the suffix, and "_k1" is not canonical.
  EXPECT_THROW(Config::parse("sm90_swap_64x8x128_s11_c1x1_r0_k1"), Error);
  EXPECT_THROW(Config::parse("sm90_swap_64x8x128_s11_c1x1_r0_k"), Error);
  EXPECT_THROW(Config::parse("sm90_swap_64x8x128_s11_c1x1_r0_k4x"), Error);
  // Dependents let in right after the grid-dependency wait: "_e", after any split.
  Config early = split;
  early.early_dependents = 1;
  EXPECT_EQ(early.name(), "sm90_swap_64x8x128_s11_c1x1_r0_k4_e");
  EXPECT_EQ(Config::parse("sm90_swap_64x8x128_s11_c1x1_r0_k4_e"), early);
  early.split_k = 1;
  EXPECT_EQ(early.name(), "sm90_swap_64x8x128_s11_c1x1_r0_e");
  EXPECT_EQ(Config::parse("sm90_swap_64x8x128_s11_c1x1_r0_e"), early);
  for (const char* bad :
       {"sm90_swap_64x8x128_s11_c1x1_r0_e_k4", "sm90_swap_64x8x128_s11_c1x1_r0_e1",
        "sm90_swap_64x8x128_s11_c1x1_r0_e_e", "sm90_swap_64x8x128_s11_c1x1_r0_k_e",
        "sm90_swap_64x8x128_s11_c1x1_r0_E"}) {
    EXPECT_THROW(Config::parse(bad), Error) << bad;
  }
}

TEST(ConfigName, PrintAndParseRoundTrip) {
  int count = 0;
  for (KernelPath path : {KernelPath::kTiled, KernelPath::kSwapAB}) {
    for (int bm : {64, 128}) {
      for (int bn = 8; bn <= 256; bn += 8) {
        for (int stages : {2, 3, 7, 12, 16}) {
          for (int raster : {0, 1, 8, 64}) {
            for (int cm : {1, 2}) {
              for (int variant : {0, 1, 2}) {  // plain, split in three, early dependents
                Config c = make(path, bm, bn, stages, raster, cm, 3 - cm);
                if (variant == 1) c.split_k = 3;
                if (variant == 2) c.early_dependents = 1;
                const std::string name = c.name();
                const Config back = Config::parse(name);
                EXPECT_EQ(back, c) << name;
                EXPECT_EQ(back.name(), name);
                ++count;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(count, 2 * 2 * 32 * 5 * 4 * 2 * 3);
}

TEST(ConfigName, EqualityLooksAtEveryField) {
  const Config base = make(KernelPath::kTiled, 128, 128, 4, 8);
  EXPECT_EQ(base, base);
  std::vector<Config> changed(10, base);
  changed[0].path = KernelPath::kSwapAB;
  changed[1].bm = 64;
  changed[2].bn = 136;
  changed[3].bk = 64;
  changed[4].stages = 5;
  changed[5].cluster_m = 2;
  changed[6].cluster_n = 2;
  changed[7].raster = 0;
  changed[8].split_k = 2;
  changed[9].early_dependents = 1;
  for (const Config& c : changed) {
    EXPECT_NE(c, base) << c.name();
    EXPECT_FALSE(c == base) << c.name();
  }
}

TEST(ConfigName, ParseRejectsBadNames) {
  const std::vector<std::string> bad = {
      "",
      "garbage",
      "sm90",
      "sm90_tiled_128x128x128_s4_c1x1",          // no raster
      "sm90_tiled_128x128x128_s4_c1x1_r8x",      // trailing character
      "sm90_tiled_128x128x128_s4_c1x1_r8 ",      // trailing space
      "sm90_tiled_128x128x128_s4_c1x1_r8\n",     // trailing newline
      "sm90_tiled_128x128x128_s4_c1x1_r8_swap",  // trailing suffix
      "sm90_tiled_0128x128x128_s4_c1x1_r8",      // leading zero: not canonical
      "sm90_tiled_+128x128x128_s4_c1x1_r8",      // sign: not canonical
      "sm90_tiled_128x128x128_s04_c1x1_r8",
      "sm90_tiled_ 128x128x128_s4_c1x1_r8",      // %d would skip the space: not canonical
      " sm90_tiled_128x128x128_s4_c1x1_r8",
      "sm90_diag_128x128x128_s4_c1x1_r8",        // wrong path
      "sm90_TILED_128x128x128_s4_c1x1_r8",
      "sm90_tiledswap_128x128x128_s4_c1x1_r8",
      "sm90_abcdefghijklmnopqrstuvwxyz_128x128x128_s4_c1x1_r8",
      "sm80_tiled_128x128x128_s4_c1x1_r8",
      "sm90_128x128x128_s4_c1x1_r8",             // the header's old form without a path
      "sm90_128x128x128_s4_c1x1_swap_r8",
      "sm90_tiled_128x128_s4_c1x1_r8",
      "sm90_tiled_128x128x128_c1x1_s4_r8",
  };
  for (const std::string& name : bad) {
    try {
      Config::parse(name);
      ADD_FAILURE() << "accepted '" << name << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      // The name as given, its control characters escaped (detail::quoted).
      EXPECT_NE(std::string(e.what()).find("config name " + detail::quoted(name)),
                std::string::npos)
          << e.what();
    }
  }
}

// Every one-character edit of canonical names (each character deleted, doubled, or replaced by
// one of a set that names use or abuse): parse either throws kInvalidArgument naming the input,
// or returns the config whose name is exactly the input. Nothing else: no crash, no config
// that prints differently, and the optional "_k<n>" and "_e" suffixes in no other order.
TEST(ConfigName, EveryOneCharacterEditParsesCanonicallyOrIsRefused) {
  const std::string alphabet = "0123456789_xsckreE-+ ";
  int accepted = 0, refused = 0;
  for (const char* seed :
       {"sm90_tiled_128x256x128_s3_c1x1_r8", "sm90_swap_64x8x128_s12_c1x1_r0_k4_e",
        "sm90_pingpong_64x128x128_s6_c2x1_r8_e", "sm90_swap_128x16x128_s4_c1x1_r0_k2"}) {
    const std::string base = seed;
    std::set<std::string> edits;
    for (size_t i = 0; i <= base.size(); ++i) {
      if (i < base.size()) {
        edits.insert(base.substr(0, i) + base.substr(i + 1));                 // deleted
        edits.insert(base.substr(0, i + 1) + base.substr(i));                 // doubled
      }
      for (char c : alphabet) {
        if (i < base.size()) edits.insert(base.substr(0, i) + c + base.substr(i + 1));  // replaced
        edits.insert(base.substr(0, i) + c + base.substr(i));                // inserted
      }
    }
    for (const std::string& name : edits) {
      try {
        const Config c = Config::parse(name);
        EXPECT_EQ(c.name(), name);
        ++accepted;
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << name;
        EXPECT_NE(std::string(e.what()).find("config name '" + name + "'"), std::string::npos)
            << e.what();
        ++refused;
      }
    }
  }
  // Many edits give another valid name (a digit changed), most give none.
  EXPECT_GT(accepted, 50);
  EXPECT_GT(refused, 1000);
}

TEST(ConfigName, NonCanonicalSuggestsTheCanonicalName) {
  try {
    Config::parse("sm90_tiled_0128x128x128_s4_c1x1_r8");
    ADD_FAILURE() << "accepted a leading zero";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'sm90_tiled_128x128x128_s4_c1x1_r8'"),
              std::string::npos)
        << e.what();
  }
}

// Issue 8, defect 8: sscanf's %d overflowed on these and suggested a nonsense canonical name.
TEST(ConfigName, NumbersPastIntAreOutOfRangeWithoutASuggestion) {
  const std::pair<const char*, const char*> cases[] = {
      {"sm90_tiled_128x128x128_s4_c1x1_r99999999999", "raster = 99999999999 is out of range"},
      {"sm90_tiled_4294967424x128x128_s4_c1x1_r8", "bm = 4294967424 is out of range"},
      {"sm90_swap_64x8x128_s2147483648_c1x1_r0", "stages = 2147483648 is out of range"},
  };
  for (const auto& [name, needle] : cases) {
    try {
      Config::parse(name);
      ADD_FAILURE() << "accepted '" << name << "'";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << what;
      EXPECT_NE(what.find(std::string("config name '") + name + "': " + needle), std::string::npos)
          << what;
      EXPECT_EQ(what.find("did you mean"), std::string::npos) << what;
    }
  }
  // The name is echoed through detail::quoted: a terminal escape or a right-to-left override
  // after the number (F8GEMM_CONFIG, --config) reaches the message escaped.
  const std::string hostile = "sm90_tiled_128x128x128_s4_c1x1_r99999999999\x1b[2J\xe2\x80\xae";
  try {
    Config::parse(hostile);
    ADD_FAILURE() << "accepted a hostile name";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("config name " + detail::quoted(hostile) + ": raster"),
              std::string::npos)
        << e.what();
    EXPECT_NE(e.message().find("r99999999999\\x1b[2J\\xe2\\x80\\xae'"), std::string::npos)
        << e.what();
  }
  // The largest int is a number (legality, not parsing, rejects it); a sign is not part of one.
  EXPECT_EQ(Config::parse("sm90_tiled_128x128x128_s4_c1x1_r2147483647").raster, 2147483647);
  EXPECT_THROW(Config::parse("sm90_tiled_128x-8x128_s4_c1x1_r8"), Error);
}

// ---- legality ------------------------------------------------------------------------------

TEST(ConfigLegality, SharedMemoryLimit) {
  const ProblemShape p = problem(1, 1024, 1024, 1024);
  EXPECT_EQ(kMaxSmemBytes, 227 * 1024);
  for (KernelPath path : {KernelPath::kTiled, KernelPath::kSwapAB}) {
    for (int bm : {64, 128}) {
      for (int bn : {8, 64, 128, 192, 256}) {
        int fitting = 0;
        for (int stages = 2; stages <= 16; ++stages) {
          const Config c = make(path, bm, bn, stages);
          const int bytes = config_smem_bytes(c);
          // At least the ring: stages x (bm + bn) rows of 128 bytes.
          EXPECT_GE(bytes, stages * (bm + bn) * 128) << c.name();
          EXPECT_GT(bytes, config_smem_bytes(make(path, bm, bn, stages - 1))) << c.name();
          const std::string why = config_illegal_reason(c, p);
          if (bytes <= kMaxSmemBytes) {
            EXPECT_EQ(why, "") << c.name();
            ++fitting;
          } else {
            EXPECT_NE(why.find("needs " + std::to_string(bytes) +
                               " bytes of shared memory, more than 232448"),
                      std::string::npos)
                << c.name() << ": " << why;
          }
        }
        // Every tile fits with 2 stages; 16 stages of 136 or more rows never fit
        // (16 x 136 x 128 = 278528 > 232448).
        EXPECT_GE(fitting, 1) << bm << "x" << bn;
        if (bm + bn >= 136) {
          EXPECT_LT(fitting, 15) << bm << "x" << bn;
        }
      }
    }
  }
}

TEST(ConfigLegality, EachRule) {
  const ProblemShape fast = problem(1, 256, 1024, 1024, true);
  const ProblemShape precise = problem(1, 256, 1024, 1024, false);
  auto reason = [](Config c, const ProblemShape& p) { return config_illegal_reason(c, p); };
  auto has = [](const std::string& why, const char* needle) {
    return why.find(needle) != std::string::npos;
  };
  Config c = make(KernelPath::kTiled, 128, 128, 4);
  EXPECT_EQ(reason(c, fast), "");
  EXPECT_EQ(reason(c, precise), "");
  for (int bn : {0, 4, 12, 100, 257, 264}) {
    Config t = c;
    t.bn = bn;
    EXPECT_TRUE(has(reason(t, fast), "bn must be a multiple of 8 in 8..256")) << bn;
  }
  for (int bm : {32, 96, 192, 256}) {
    Config t = c;
    t.bm = bm;
    EXPECT_TRUE(has(reason(t, fast), "bm must be 64 or 128")) << bm;
  }
  for (int bk : {64, 256}) {
    Config t = c;
    t.bk = bk;
    EXPECT_TRUE(has(reason(t, fast), "bk must be 128")) << bk;
  }
  for (int stages : {0, 1, 17}) {
    Config t = c;
    t.stages = stages;
    EXPECT_TRUE(has(reason(t, fast), "stages must be 2..16")) << stages;
  }
  for (auto [cm, cn] : std::vector<std::pair<int, int>>{{1, 2}, {2, 2}, {0, 1}, {3, 1}, {4, 1}}) {
    Config t = c;
    t.cluster_m = cm;
    t.cluster_n = cn;
    EXPECT_TRUE(has(reason(t, fast), "clusters are 1x1 or 2x1")) << cm << cn;
  }
  {
    Config pair = c;  // a tiled config: 2x1 is legal
    pair.cluster_m = 2;
    EXPECT_TRUE(reason(pair, fast).empty()) << reason(pair, fast);
    Config swap_pair = pair;
    swap_pair.path = KernelPath::kSwapAB;
    EXPECT_TRUE(has(reason(swap_pair, fast), "2x1 clusters are for the tiled path")) << swap_pair.name();
    Config odd_half = pair;
    odd_half.bn = 136;
    EXPECT_TRUE(has(reason(odd_half, fast), "bn % 16 == 0")) << odd_half.name();
  }
  for (int raster : {-1, 65}) {
    Config t = c;
    t.raster = raster;
    EXPECT_TRUE(has(reason(t, fast), "raster must be 0..64")) << raster;
  }
  // Precise mode keeps two accumulator sets: the total and a k-block sum. Up to 192 columns the
  // sum covers the block (96 + 96 registers); the tiled 256-column block promotes in two
  // 128-column slices (128 + 64 registers); ping-pong holds its turn and never slices.
  for (int bn : {192, 200, 256}) {
    const Config t = make(KernelPath::kTiled, 64, bn, 4);
    EXPECT_EQ(reason(t, fast), "") << bn;
    EXPECT_EQ(has(reason(t, precise), "bn must be <= 192"), bn == 200) << bn;
    EXPECT_EQ(reason(t, precise) == "", bn != 200) << bn;
    const Config pp = make(KernelPath::kPingPong, 64, bn, 4);
    EXPECT_EQ(reason(pp, fast), "") << bn;
    EXPECT_EQ(has(reason(pp, precise), "bn must be <= 192"), bn > 192) << bn;
  }
  // Split-K: 1..8 CTAs, 1x1 in M, cooperative, each CTA with at least one k-block.
  {
    Config split = make(KernelPath::kSwapAB, 64, 8, 8, 0);
    for (int s : {2, 3, 8}) {
      split.split_k = s;
      EXPECT_EQ(reason(split, fast), "") << s;
      EXPECT_EQ(reason(split, precise), "") << s;
    }
    for (int s : {0, 9, 16}) {
      split.split_k = s;
      EXPECT_TRUE(has(reason(split, fast), "split_k must be 1..8")) << s;
    }
    split.split_k = 2;
    Config pair = make(KernelPath::kTiled, 128, 128, 4);
    pair.cluster_m = 2;
    pair.split_k = 2;
    EXPECT_TRUE(has(reason(pair, fast), "split-K clusters are 1x1 in M")) << pair.name();
    Config wide = make(KernelPath::kTiled, 64, 256, 4);
    wide.split_k = 2;
    EXPECT_TRUE(has(reason(wide, fast), "bn must be <= 128")) << wide.name();
    wide.bn = 128;
    EXPECT_EQ(reason(wide, fast), "") << wide.name();
    Config pp = make(KernelPath::kPingPong, 64, 128, 4);
    pp.split_k = 2;
    EXPECT_TRUE(has(reason(pp, fast), "not ping-pong")) << pp.name();
    split.split_k = 3;
    EXPECT_TRUE(has(reason(split, problem(1, 1, 1024, 256, true)), "exceeds the 2 k-blocks"))
        << reason(split, problem(1, 1, 1024, 256, true));
    EXPECT_EQ(reason(split, problem(1, 1, 1024, 272, true)), "");  // 3 k-blocks
  }
  // The dependents' trigger is a switch, legal on every path.
  for (KernelPath path : {KernelPath::kTiled, KernelPath::kSwapAB, KernelPath::kPingPong}) {
    Config c = make(path, 64, 128, 4, path == KernelPath::kSwapAB ? 0 : 8);
    for (int e : {0, 1}) {
      c.early_dependents = e;
      EXPECT_EQ(reason(c, fast), "") << c.name();
    }
    for (int e : {-1, 2}) {
      c.early_dependents = e;
      const std::string want = "early_dependents must be 0 or 1, got " + std::to_string(e);
      EXPECT_TRUE(has(reason(c, fast), want.c_str())) << reason(c, fast);
    }
  }
  // A 128-row ping-pong tile keeps 128 x bn accumulators in one warpgroup: up to 160 columns in
  // fast mode (kGemmMaxAccumulators), 96 in precise mode (two sets).
  {
    Config pp = make(KernelPath::kPingPong, 128, 160, 5);
    EXPECT_EQ(reason(pp, fast), "") << pp.name();
    pp.bn = 168;
    EXPECT_TRUE(has(reason(pp, fast), "bn must be <= 160")) << reason(pp, fast);
    pp.bn = 112;
    EXPECT_TRUE(has(reason(pp, precise), "be <= 96")) << reason(pp, precise);
    pp.bn = 96;
    EXPECT_EQ(reason(pp, precise), "") << pp.name();
  }
  // The smallest tiles are legal on both paths.
  EXPECT_EQ(reason(make(KernelPath::kSwapAB, 64, 8, 12, 0), precise), "");
  EXPECT_EQ(reason(make(KernelPath::kTiled, 64, 8, 2, 0), precise), "");
}

// ---- candidates ----------------------------------------------------------------------------

// Precise mode's pipelined promotion (two half-width slices, one added while the other's wgmmas
// run) is for 64-row, non-swap blocks of 96 to 192 columns: the H200 measured it faster from 128
// columns up, level at 96, and slower at 64 (perf log, card 54). The register budget follows:
// half the block in the slice sums' two sets beside the total.
TEST(ConfigLegality, SiluMulEpilogueNeedsAWholeSumOfWholeOutputChunks) {
  ProblemShape p = problem(1, 2048, 28672, 4096, true);
  p.epilogue_op = EpilogueOp::kSiluMul;
  auto reason = [&](const char* name) { return config_illegal_reason(Config::parse(name), p); };
  for (const char* ok : {"sm90_tiled_128x256x128_s3_c1x1_r8", "sm90_tiled_64x64x128_s8_c1x1_r8",
                         "sm90_tiled_128x192x128_s4_c1x1_r8", "sm90_tiled_128x128x128_s5_c2x1_r8",
                         "sm90_pingpong_128x128x128_s6_c1x1_r8",
                         "sm90_pingpong_64x256x128_s5_c2x1_r8"}) {
    EXPECT_EQ(reason(ok), "") << ok;
  }
  EXPECT_NE(reason("sm90_swap_64x16x128_s12_c1x1_r0").find("not on the swap-AB path"),
            std::string::npos);
  EXPECT_NE(reason("sm90_tiled_64x64x128_s8_c1x1_r0_k2").find("no split of K"), std::string::npos);
  for (const char* odd : {"sm90_tiled_128x160x128_s4_c1x1_r8", "sm90_pingpong_128x96x128_s7_c1x1_r8",
                          "sm90_pingpong_64x176x128_s5_c1x1_r8"}) {
    EXPECT_NE(reason(odd).find("bn % 64 == 0"), std::string::npos) << odd;
  }
  // The same configs without the epilogue operation are legal.
  p.epilogue_op = EpilogueOp::kNone;
  EXPECT_EQ(reason("sm90_tiled_128x160x128_s4_c1x1_r8"), "");
  EXPECT_EQ(reason("sm90_swap_64x16x128_s12_c1x1_r0"), "");
}

TEST(ConfigLegality, PreciseSlicePipelineOnlyWhereItWasMeasuredToPay) {
  for (int bn : {96, 112, 128, 160, 176, 192}) {
    EXPECT_TRUE(dev::gemm_promote_pipelined(bn, false, 1, false)) << bn;
    EXPECT_EQ(dev::gemm_promote_cols(bn, false, 1, false), bn / 2) << bn;
  }
  EXPECT_FALSE(dev::gemm_promote_pipelined(64, false, 1, false));
  EXPECT_EQ(dev::gemm_promote_cols(64, false, 1, false), 64);
  EXPECT_FALSE(dev::gemm_promote_pipelined(80, false, 1, false));  // below the measured 96
  // Widths whose halves are not a multiple of 8 columns (no e4m3 wgmma width).
  for (int bn = 104; bn <= 184; bn += 16) {
    EXPECT_FALSE(dev::gemm_promote_pipelined(bn, false, 1, false)) << bn;
  }
  // The registers: the total (bn / 2) beside two slice sums (bn / 4 each) fit the budget that
  // the non-pipelined precise mode had at 192 columns (2 x 96).
  for (int bn : {96, 112, 128, 160, 176, 192}) {
    EXPECT_LE(bn / 2 + 2 * (dev::gemm_promote_cols(bn, false, 1, false) / 2), 192) << bn;
  }
  EXPECT_FALSE(dev::gemm_promote_pipelined(256, false, 1, false));
  EXPECT_EQ(dev::gemm_promote_cols(256, false, 1, false), 128);      // sliced, not pipelined
  EXPECT_FALSE(dev::gemm_promote_pipelined(128, false, 2, false));  // 128-row ping-pong tile
  EXPECT_FALSE(dev::gemm_promote_pipelined(128, false, 1, true));   // swap-AB
  EXPECT_FALSE(dev::gemm_promote_pipelined(128, true, 1, false));   // fast mode
  EXPECT_EQ(dev::gemm_promote_cols(192, true, 1, false), 192);
}

TEST(ConfigCandidates, BenchShapesHaveLegalSortedCandidates) {
  for (const ProblemShape& shape : bench_shapes()) {
    for (bool fast : {true, false}) {
      ProblemShape p = shape;
      p.fast_accum = fast;
      SCOPED_TRACE(table_key("H200", kH200Sms, p));
      const std::vector<Config> list = candidates(p, kH200Sms);
      ASSERT_FALSE(list.empty());
      std::set<std::string> names;
      bool any_swap = false;
      double previous = 0.0;
      for (const Config& c : list) {
        EXPECT_EQ(config_illegal_reason(c, p), "") << c.name();
        EXPECT_TRUE(names.insert(c.name()).second) << "duplicate " << c.name();
        const double us = estimate_us(c, p, kH200Sms);
        EXPECT_GT(us, 0.0) << c.name();
        EXPECT_GE(us, previous) << c.name() << " is out of order";
        previous = us;
        any_swap = any_swap || c.path == KernelPath::kSwapAB;
        if (!fast && c.path != KernelPath::kTiled) {
          EXPECT_LE(c.bn, 192) << c.name();
        }
      }
      // The swap path is offered exactly for M <= 256.
      EXPECT_EQ(any_swap, p.m <= 256);
    }
  }
}

/// A 2x1 cluster that would leave one of one or three X tiles empty: the model does not offer
/// it, the tune still times it (perf log, card 79).
bool pair_leaves_one_of_few_x_tiles_empty(const Config& c, const ProblemShape& p) {
  const int64_t x_tiles = (p.m + c.bm - 1) / c.bm;
  return c.cluster_m == 2 && (x_tiles == 1 || x_tiles == 3);
}

// The tune's list is the model's plus candidates that only a measured table entry picks:
// ping-pong widths of 112, 144 and 160 columns of a 128-row tile, 160 and 176 of a 64-row one
// (perf log, card 47), swap-AB rings deeper than 12 stages (card 53), and 2x1 clusters that
// leave one of one or three X tiles empty (card 79).
TEST(ConfigCandidates, TheTuneAddsOnlyItsOwnWidthsToTheModelsList) {
  auto tune_only = [](const Config& c, const ProblemShape& p) {
    return (c.path == KernelPath::kPingPong &&
            ((c.bm == 128 && (c.bn == 112 || c.bn == 144 || c.bn == 160)) ||
             (c.bm == 64 && (c.bn == 160 || c.bn == 176)))) ||
           (c.path == KernelPath::kSwapAB && c.stages > 12) ||  // rings deeper than the model's
           pair_leaves_one_of_few_x_tiles_empty(c, p);
  };
  std::vector<ProblemShape> shapes = bench_shapes();
  shapes.push_back(problem(1, 4096, 14336, 4096, true));
  shapes.push_back(problem(16, 512, 8192, 1024, true));
  bool any_extra = false;
  for (const ProblemShape& shape : shapes) {
    for (bool fast : {true, false}) {
      ProblemShape p = shape;
      p.fast_accum = fast;
      SCOPED_TRACE(table_key("H200", kH200Sms, p));
      const std::vector<Config> model = candidates(p, kH200Sms);
      const std::vector<Config> tune = candidates(p, kH200Sms, CandidateSet::kTune);
      std::set<std::string> in_model, in_tune;
      for (const Config& c : model) in_model.insert(c.name());
      for (const Config& c : tune) {
        EXPECT_EQ(config_illegal_reason(c, p), "") << c.name();
        in_tune.insert(c.name());
        if (in_model.count(c.name())) continue;
        any_extra = true;
        EXPECT_TRUE(tune_only(c, p)) << c.name() << " is in the tune's list only";
      }
      for (const std::string& name : in_model) EXPECT_EQ(in_tune.count(name), 1u) << name;
      // The model's list holds none of the tune's own candidates; the public API hands the tune's
      // list to `f8gemm tune` and the model's first pick to `model_config`.
      for (const Config& c : model) {
        EXPECT_FALSE(tune_only(c, p)) << c.name() << " is in the model's list";
      }
      EXPECT_EQ(candidate_configs(p, kH200Sms), tune);
      EXPECT_EQ(model_config(p, kH200Sms), model.front());
    }
  }
  EXPECT_TRUE(any_extra) << "the tune offers no candidate of its own on any shape";
}

// A chained problem's tune (PDL on) times each candidate twice, with the dependents let in after
// its last load and right after its grid-dependency wait (perf log, cards 81 and 96), the twin
// right after it; the model never offers the early trigger, and an unchained tune does not.
TEST(ConfigCandidates, AChainedTuneTimesEachCandidateWithBothTriggers) {
  for (const ProblemShape& shape : {problem(1, 1, 28672, 4096, true),
                                    problem(1, 16, 4096, 14336, true),
                                    problem(1, 2048, 4096, 14336, true)}) {
    ProblemShape chained = shape;
    chained.chained = true;
    SCOPED_TRACE(table_key("H200", kH200Sms, chained));
    for (const Config& c : candidates(chained, kH200Sms)) EXPECT_EQ(c.early_dependents, 0);
    for (const Config& c : candidates(shape, kH200Sms, CandidateSet::kTune)) {
      EXPECT_EQ(c.early_dependents, 0) << c.name();
    }
    const std::vector<Config> unchained = candidates(shape, kH200Sms, CandidateSet::kTune);
    const std::vector<Config> tune = candidates(chained, kH200Sms, CandidateSet::kTune);
    ASSERT_EQ(tune.size(), 2 * unchained.size());
    for (size_t i = 0; i < unchained.size(); ++i) {
      EXPECT_EQ(tune[2 * i], unchained[i]) << tune[2 * i].name();
      Config twin = unchained[i];
      twin.early_dependents = 1;
      EXPECT_EQ(tune[2 * i + 1], twin) << tune[2 * i + 1].name();
      EXPECT_EQ(tune[2 * i + 1].name(), unchained[i].name() + "_e");
    }
  }
}

// The Llama MLP block's SiLU·mul gate|up GEMM at 129-192 rows: three 64-row X tiles. The model
// picked the ping-pong 64x128 in 2x1 clusters there, which the H100 tune measured at 1.52-1.63x
// the fastest (docs/logs/2026-12-05-s25-call3-silu-tune.csv); without such pairs it picks a 1x1
// tile, and the block took 19-32% less time on the H200 at 144-192 rows (perf log, card 79).
// Pairs at two or more X tiles stay, five and seven included (unmeasured there: not in the rule).
TEST(ConfigCandidates, TheModelOffersNoPairThatLeavesOneOfOneOrThreeXTilesEmpty) {
  bool tune_has_pairs = false, model_keeps_pairs = false;
  for (int64_t m : {1, 16, 64, 65, 128, 129, 160, 192, 193, 256, 320, 384, 385, 512}) {
    for (bool silu : {false, true}) {
      ProblemShape p = problem(1, m, 28672, 4096, true);
      if (silu) p.epilogue_op = EpilogueOp::kSiluMul;
      SCOPED_TRACE(table_key("H200", kH200Sms, p));
      for (const Config& c : candidates(p, kH200Sms)) {
        EXPECT_FALSE(pair_leaves_one_of_few_x_tiles_empty(c, p)) << c.name();
        model_keeps_pairs = model_keeps_pairs || c.cluster_m == 2;
      }
      for (const Config& c : candidates(p, kH200Sms, CandidateSet::kTune)) {
        tune_has_pairs = tune_has_pairs || pair_leaves_one_of_few_x_tiles_empty(c, p);
      }
      if (silu && m > 128 && m <= 192) {
        EXPECT_EQ(candidates(p, kH200Sms).front().cluster_m, 1);
      }
      if (m == 320 || m == 129) {  // five 64-row X tiles; three 128-row X tiles at 320, two at 129
        bool kept_pair = false;
        for (const Config& c : candidates(p, kH200Sms)) {
          kept_pair = kept_pair || (c.cluster_m == 2 && c.bm == 64 && m == 320) ||
                            (c.cluster_m == 2 && c.bm == 128 && m == 129);
        }
        EXPECT_TRUE(kept_pair) << "the rule must keep pairs at two and at five X tiles";
      }
    }
  }
  EXPECT_TRUE(tune_has_pairs) << "the tune must still time those pairs";
  EXPECT_TRUE(model_keeps_pairs) << "the rule is narrow: pairs with two or more full X tiles stay";
}

TEST_F(DecideTest, DecodePicksTheSwapPath) {
  no_tuned_.set("1");
  for (const ProblemShape& shape : bench_shapes()) {
    for (bool fast : {true, false}) {
      ProblemShape p = shape;
      p.fast_accum = fast;
      const Config c = decide("NVIDIA H200", kH200Sms, p);
      SCOPED_TRACE(table_key("NVIDIA H200", kH200Sms, p) + " -> " + c.name());
      EXPECT_EQ(config_illegal_reason(c, p), "");
      EXPECT_EQ(c, candidates(p, kH200Sms).front());
      // One token per expert: a 64-row tiled tile would be 98% padding; swap puts W's rows on
      // the 64-row wgmma M side instead (measured on the H200, 16x1x1280x8192: swap 64x8
      // 43.7 us, tiled 128x160 51.9 us; docs/logs/2026-11-30-first-device-run.log).
      if (p.m == 1) {
        EXPECT_EQ(c.path, KernelPath::kSwapAB);
      }
      if (p.m > 256) {
        EXPECT_NE(c.path, KernelPath::kSwapAB);  // a tile path: cooperative or ping-pong
      }
    }
  }
}

// ---- tables --------------------------------------------------------------------------------

TEST(ConfigTable, KeyNamesGpuSmsVersionAndProblem) {
  ProblemShape p = problem(16, 1, 1280, 8192);
  const std::string key = table_key("NVIDIA H200", 132, p);
  EXPECT_EQ(key, std::string("NVIDIA H200|132|") + kVersion + "|16,1,1280,8192|preshuffled|bfloat16|fast");
  EXPECT_NE(key.find("NVIDIA H200"), std::string::npos);
  EXPECT_NE(key.find("|132|"), std::string::npos);
  EXPECT_NE(key.find(kVersion), std::string::npos);
  // Every field that changes the kernel changes the key.
  std::set<std::string> keys = {key, table_key("NVIDIA H100", 132, p), table_key("NVIDIA H200", 114, p)};
  ProblemShape q = p;
  q.w_layout = WeightLayout::kPlain;
  keys.insert(table_key("NVIDIA H200", 132, q));
  q = p;
  q.out_dtype = DType::kF16;
  keys.insert(table_key("NVIDIA H200", 132, q));
  q = p;
  q.fast_accum = false;
  keys.insert(table_key("NVIDIA H200", 132, q));
  for (int i = 0; i < 4; ++i) {
    q = p;
    (i == 0 ? q.batch : i == 1 ? q.m : i == 2 ? q.n : q.k) += 8;
    keys.insert(table_key("NVIDIA H200", 132, q));
  }
  q = p;
  q.epilogue_op = EpilogueOp::kSiluMul;
  keys.insert(table_key("NVIDIA H200", 132, q));
  EXPECT_EQ(keys.size(), 11u);
}

TEST(ConfigTable, KeysParseBackToTheirProblem) {
  for (int variant = 0; variant < 8; ++variant) {
    const bool chained = variant & 1;
    const EpilogueOp op = variant & 2 ? EpilogueOp::kSiluMul : EpilogueOp::kNone;
    const WeightLayout layout = variant & 4 ? WeightLayout::kPlain : WeightLayout::kPreshuffled;
    ProblemShape p = problem(16, 1, 1280, 8192, chained, layout);
    p.out_dtype = chained ? DType::kF16 : DType::kBF16;
    p.chained = chained;
    p.epilogue_op = op;
    const std::string key = table_key("NVIDIA H200", kH200Sms, p);
    detail::TableKeyParts parts;
    ASSERT_TRUE(detail::parse_table_key(key, parts)) << key;
    EXPECT_EQ(parts.gpu_name, "NVIDIA H200");
    EXPECT_EQ(parts.sm_count, kH200Sms);
    EXPECT_EQ(table_key(parts.gpu_name, parts.sm_count, parts.problem), key);
    EXPECT_EQ(parts.problem.chained, chained);
    EXPECT_EQ(parts.problem.w_layout, layout);
    EXPECT_EQ(parts.problem.out_dtype, p.out_dtype);
    EXPECT_EQ(parts.problem.fast_accum, chained);
    EXPECT_EQ(parts.problem.epilogue_op, op);
  }
  const std::string good = table_key("NVIDIA H200", kH200Sms, problem(1, 1, 4096, 4096));
  detail::TableKeyParts parts;
  EXPECT_TRUE(detail::parse_table_key(good, parts));
  for (const std::string& bad :
       {good + "|chain", good + "|chained|chained", good.substr(0, good.size() - 5),
        good + "|none", good + "|chained|silu_mul", good + "|silu_mul|silu_mul",
        good + "|silu_mul|chained|chained", good + "|silu_mul|", good + "|SiLU_mul",
        std::string("NVIDIA H200|132|0.0.9|1,1,4096,4096|plain|bfloat16|fast"),
        std::string("NVIDIA H200|132|") + "x|1,1,4096,4096|plain|bfloat16|fast",
        std::string("NVIDIA H200|13x|0.1.0|1,1,4096,4096|plain|bfloat16|fast"),
        std::string("NVIDIA H200|132|0.1.0|1,1,4096|plain|bfloat16|fast"),
        std::string("NVIDIA H200|132|0.1.0|1,1,04096,4096|plain|bfloat16|fast"),
        std::string("NVIDIA H200|132|0.1.0|1,1,4096,4096|shuffled|bfloat16|fast"),
        std::string("NVIDIA H200|132|0.1.0|1,1,4096,4096|plain|float32|fast"), std::string("")}) {
    EXPECT_FALSE(detail::parse_table_key(bad, parts)) << bad;
  }
}

TEST(ConfigTable, ParseGoodLinesAndComments) {
  std::vector<std::pair<std::string, Config>> entries;
  entries.emplace_back("already there", Config{});
  const std::string key1 = std::string("NVIDIA H200|132|") + kVersion +
                           "|1,128,4096,4096|preshuffled|bfloat16|fast";
  const std::string key2 = std::string("NVIDIA H100 80GB HBM3|132|") + kVersion +
                           "|1,16,4096,4096|plain|float16|precise";
  const std::string text =
      "# tuned on an H200\n"
      "\n" +
      key1 + "\tsm90_tiled_128x128x128_s4_c1x1_r8\n" +
      "#" + key1 + "\tnot even parsed\n" +
      key2 + "\tsm90_swap_64x16x128_s12_c1x1_r0";  // no final newline
  parse_table(text, "test.tsv", entries);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].first, "already there");  // appended, not replaced
  EXPECT_EQ(entries[1].first, key1);
  EXPECT_EQ(entries[1].second, make(KernelPath::kTiled, 128, 128, 4, 8));
  EXPECT_EQ(entries[2].first, key2);
  EXPECT_EQ(entries[2].second, make(KernelPath::kSwapAB, 64, 16, 12, 0));
}

// The shipped tables' chained entries (ProblemShape::chained, docs/perf-log.md card 51) are taken
// for their problem and run the same kernel path with the same split of K as the unchained
// choice, so that a call with PDL and prefetch_w adds its fp32 sums in the same order as the same
// call without them (the bits are checked on the GPU: PdlGpu.ChainedChoiceGivesTheUnchainedBits).
TEST(ConfigTable, ShippedChainedEntriesKeepTheUnchainedPathAndSplit) {
  ScopedEnv config("F8GEMM_CONFIG"), no_tuned("F8GEMM_NO_TUNED");
  config.unset();
  no_tuned.unset();
  int chained_entries = 0;
  for (int t = 0; t < jit::kNumEmbeddedTables; ++t) {
    std::vector<std::pair<std::string, Config>> entries;
    parse_table(jit::kEmbeddedTables[t].text, jit::kEmbeddedTables[t].name, entries);
    for (const auto& [key, entry] : entries) {
      const std::string suffix = "|chained";
      if (key.size() < suffix.size() || key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0) {
        continue;
      }
      SCOPED_TRACE(key);
      detail::TableKeyParts parts;
      ASSERT_TRUE(detail::parse_table_key(key, parts));
      ASSERT_TRUE(parts.problem.chained);
      EXPECT_EQ(decide(parts.gpu_name, parts.sm_count, parts.problem), entry)
          << "the entry is not what a chained call runs";
      // Its own rows, and from 65 rows the fewer rows of its 64-row block that it also serves
      // (card 80): there too the chained and the unchained call must keep one path and split.
      const int64_t top = parts.problem.m;
      const int64_t first = top > 64 ? (top - 1) / 64 * 64 + 1 : top;
      for (int64_t m = first; m <= top; ++m) {
        ProblemShape p = parts.problem;
        p.m = m;
        const Config chained_choice = decide(parts.gpu_name, parts.sm_count, p);
        p.chained = false;
        const Config unchained_choice = decide(parts.gpu_name, parts.sm_count, p);
        EXPECT_EQ(chained_choice.path, unchained_choice.path) << m << " " << unchained_choice.name();
        EXPECT_EQ(chained_choice.split_k, unchained_choice.split_k)
            << m << " " << unchained_choice.name();
      }
      ++chained_entries;
    }
  }
  EXPECT_GE(chained_entries, 1) << "no chained entry in the shipped tables";
}

// Every entry of the shipped tables can run its problem, and is what decide() returns for it
// (the first entry of a key wins). An entry that a kernel change makes illegal, such as a ring
// deeper than the new shared-memory layout fits (perf log, card 59: tiled 128x256 went from 4
// stages to 3), would otherwise be passed over in silence and the cost model would decide.
TEST(ConfigTable, EveryShippedEntryRunsItsProblemAndIsWhatDecideReturns) {
  ScopedEnv config("F8GEMM_CONFIG"), no_tuned("F8GEMM_NO_TUNED");
  config.unset();
  no_tuned.unset();
  int checked = 0;
  std::set<std::string> seen;
  for (int t = 0; t < jit::kNumEmbeddedTables; ++t) {
    std::vector<std::pair<std::string, Config>> entries;
    parse_table(jit::kEmbeddedTables[t].text, jit::kEmbeddedTables[t].name, entries);
    for (const auto& [key, entry] : entries) {
      SCOPED_TRACE(key + " -> " + entry.name());
      detail::TableKeyParts parts;
      ASSERT_TRUE(detail::parse_table_key(key, parts));
      EXPECT_EQ(detail::config_illegal_reason(entry, parts.problem), "");
      if (!seen.insert(key).second) continue;  // a later entry of the same key is never used
      EXPECT_EQ(decide(parts.gpu_name, parts.sm_count, parts.problem), entry);
      ++checked;
    }
  }
  EXPECT_GE(checked, 50) << "the shipped tables hold fewer entries than expected";
}

TEST(ConfigTable, LineWithoutTabNamesOriginAndLine) {
  std::vector<std::pair<std::string, Config>> entries;
  const std::string text = "# comment\n\nkey\tsm90_tiled_128x128x128_s4_c1x1_r8\nno tab here\n";
  try {
    parse_table(text, "tables/h200.tsv", entries);
    ADD_FAILURE() << "accepted a line without a tab";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("tables/h200.tsv:4"), std::string::npos) << e.what();
  }
}

TEST(ConfigTable, AKeyOfThisVersionThatDoesNotParseIsAnErrorAnotherVersionsIsPassedOver) {
  // "preshufled" was passed over silently, so the model decided where the user meant an entry.
  const std::string good = std::string("NVIDIA H200|132|") + kVersion +
                           "|1,128,4096,4096|preshuffled|bfloat16|fast";
  const std::string typo = std::string("NVIDIA H200|132|") + kVersion +
                           "|1,128,4096,4096|preshufled|bfloat16|fast";
  const std::string other_version = "NVIDIA H200|132|0.0.9|1,128,4096,4096|preshufled|bfloat16|fast";
  const std::string cfg = "\tsm90_tiled_128x128x128_s4_c1x1_r8\n";
  std::vector<std::pair<std::string, Config>> entries;
  // Another version's entry is passed over whole: its config name too, which a later version
  // may spell in a way this one cannot parse (a table of a newer library was refused outright).
  parse_table(good + cfg + other_version + "\tsm90_newkind_128x256x128_s3_c1x1_r8\n", "user.tsv",
              entries);
  ASSERT_EQ(entries.size(), 1u) << "another version's entry is passed over";
  EXPECT_EQ(entries[0].first, good);
  try {
    parse_table(good + cfg + typo + cfg, "user.tsv", entries);
    ADD_FAILURE() << "accepted a malformed key of this version";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("user.tsv:2: '" + typo + "' is not a table key"),
              std::string::npos) << e.what();
  }
}

// A key of this version whose GPU has no name or an SM count outside 1..kMaxSmCount could never
// match a call: it was loaded without a word.
TEST(ConfigTable, AKeyOfThisVersionWithoutAGpuNameOrWithImpossibleSmsIsAnError) {
  const std::string tail = std::string("|") + kVersion + "|16,1,1280,8192|preshuffled|bfloat16|fast";
  const std::string cfg = "\tsm90_tiled_128x256x128_s3_c1x1_r8\n";
  for (const std::string& head : {std::string("X|-1"), std::string("X|0"),
                                  std::string("X|1025"), std::string("X|999999"),
                                  std::string("|132")}) {
    std::vector<std::pair<std::string, Config>> entries;
    try {
      parse_table(head + tail + cfg, "user.tsv", entries);
      ADD_FAILURE() << "accepted " << head + tail;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("is not a table key"), std::string::npos) << e.what();
    }
  }
  std::vector<std::pair<std::string, Config>> entries;
  parse_table("X|1" + tail + cfg + "X|1024" + tail + cfg, "user.tsv", entries);
  EXPECT_EQ(entries.size(), 2u) << "1 and kMaxSmCount SMs are keys";
}

// A key that parses but whose sizes no call can have was taken and never matched; at M near
// 2^63 the lookup of the entry of more rows computed (M + 63) / 64 past int64 (undefined).
TEST(ConfigTable, AKeyOfThisVersionWithSizesNoCallCanHaveIsAnError) {
  const std::string head = std::string("NVIDIA H200|132|") + kVersion + "|";
  const std::string tail = "|preshuffled|bfloat16|fast\tsm90_tiled_128x128x128_s4_c1x1_r8\n";
  const std::pair<std::string, std::string> cases[] = {
      {"1,9223372036854775807,4096,4096", "M = 9223372036854775807"},
      {"-1,128,4096,4096", "B = -1"},
      {"1,128,4100,4096", "got 4100"},
      {"1,128,4096,0", "got 0"}};
  for (const auto& c : cases) {
    const std::string& sizes = c.first;
    const std::string& needle = c.second;
    SCOPED_TRACE(sizes);
    std::vector<std::pair<std::string, Config>> entries;
    F8GEMM_EXPECT_INVALID(parse_table("# comment\n" + head + sizes + tail, "user.tsv", entries),
                          "user.tsv:2: '" + head + sizes);
    F8GEMM_EXPECT_INVALID(parse_table(head + sizes + tail, "user.tsv", entries), needle);
    EXPECT_TRUE(entries.empty());
  }
}

TEST(ConfigTable, LinesEndingInCrLfParseAsTheirText) {
  // A table saved on Windows: the '\r' made the config name fail with an invisible character.
  std::vector<std::pair<std::string, Config>> entries;
  const std::string key = std::string("NVIDIA H200|132|") + kVersion +
                          "|1,128,4096,4096|preshuffled|bfloat16|fast";
  parse_table("# comment\r\n\r\n" + key + "\tsm90_tiled_128x128x128_s4_c1x1_r8\r\n", "win.tsv",
              entries);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].first, key);
  EXPECT_EQ(entries[0].second.name(), "sm90_tiled_128x128x128_s4_c1x1_r8");
}

// A first load that fails (an unreadable F8GEMM_TUNE_FILE) leaves nothing behind: every thread
// that asked gets the error, and a later call loads the tables. The tables were a function-local
// static initialised by a throwing lambda; under ThreadSanitizer (the CI sanitizer job) its
// aborted initialisation deadlocked the waiting threads. The child process (threadsafe death-test
// style re-runs this test alone) starts with the tables not yet loaded.
TEST(ConfigTable, AFailedFirstLoadFromManyThreadsThrowsInEachAndTheNextCallLoads) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        // A regression deadlocks here (under TSan): SIGALRM ends the child, and the test fails
        // instead of holding the CI job.
        alarm(60);
        const char* good = std::getenv("F8GEMM_TUNE_FILE");  // TuneFileEnvironment's
        if (good == nullptr) std::exit(3);
        const std::string good_path = good;
        unsetenv("F8GEMM_NO_TUNED");
        unsetenv("F8GEMM_CONFIG");
        setenv("F8GEMM_TUNE_FILE", "/nonexistent/f8gemm/tune.tsv", 1);
        std::atomic<int> refused{0};
        std::vector<std::thread> threads;
        for (int i = 0; i < 8; ++i) {
          threads.emplace_back([&] {
            try {
              decide(kTestGpu, kTestSms, tuned_problem());
            } catch (const Error& e) {
              if (e.code() == ErrorCode::kInvalidArgument &&
                  std::string(e.what()).find("cannot be read") != std::string::npos) {
                ++refused;
              }
            }
          });
        }
        for (std::thread& t : threads) t.join();
        setenv("F8GEMM_TUNE_FILE", good_path.c_str(), 1);
        const bool loaded = decide(kTestGpu, kTestSms, tuned_problem()) == tuned_pick();
        std::exit(refused == 8 && loaded ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(ConfigTable, AMalformedForcedConfigNamesTheVariable) {
  ScopedEnv config("F8GEMM_CONFIG");
  config.set("garbage");
  try {
    decide(kTestGpu, kTestSms, tuned_problem());
    ADD_FAILURE() << "accepted F8GEMM_CONFIG=garbage";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(std::string(e.what()).rfind("f8gemm: invalid argument: F8GEMM_CONFIG='garbage': ", 0),
              0u) << e.what();
  }
}

TEST(ConfigTable, BadConfigNameNamesOriginAndLine) {
  // A typo in a checked-in or user table must point at the file and line to fix.
  std::vector<std::pair<std::string, Config>> entries;
  const std::string key = std::string("NVIDIA H200|132|") + kVersion +
                          "|1,128,4096,4096|preshuffled|bfloat16|";
  const std::string text = key + "fast\tsm90_tiled_128x128x128_s4_c1x1_r8\n" + key +
                           "precise\tsm90_tiled_128x128\n";
  try {
    parse_table(text, "user.tsv", entries);
    ADD_FAILURE() << "accepted a bad config name";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("user.tsv:2"), std::string::npos) << e.what();
  }
}

TEST_F(DecideTest, UserTuneFileEntryIsUsed) {
  const ProblemShape p = tuned_problem();
  const auto tuned = tuned_config(kTestGpu, kTestSms, p);
  ASSERT_TRUE(tuned.has_value()) << "F8GEMM_TUNE_FILE was not read";
  EXPECT_EQ(*tuned, tuned_pick());  // the first of two entries for this key
  EXPECT_EQ(decide(kTestGpu, kTestSms, p), tuned_pick());
  EXPECT_NE(candidates(p, kTestSms).front(), tuned_pick()) << "the table must override the model";
  // Another SM count or GPU name is another key.
  EXPECT_FALSE(tuned_config(kTestGpu, kTestSms + 1, p).has_value());
  EXPECT_FALSE(tuned_config("NVIDIA H200", kTestSms, p).has_value());
  // "0" does not disable the tables.
  no_tuned_.set("0");
  EXPECT_EQ(decide(kTestGpu, kTestSms, p), tuned_pick());
}

TEST_F(DecideTest, ChainedCallsTakeTheirOwnEntryFirstThenTheUnchainedOnes) {
  // Its own key: the unchained key with "|chained" after it.
  ProblemShape unchained = chained_problem();
  unchained.chained = false;
  EXPECT_EQ(table_key(kTestGpu, kTestSms, chained_problem()),
            table_key(kTestGpu, kTestSms, unchained) + "|chained");
  EXPECT_EQ(decide(kTestGpu, kTestSms, chained_problem()), chained_pick());
  // The entry is for chained calls only: the same problem unchained gets the model's pick.
  EXPECT_FALSE(tuned_config(kTestGpu, kTestSms, unchained).has_value());
  EXPECT_EQ(decide(kTestGpu, kTestSms, unchained), candidates(unchained, kTestSms).front());
  // Chained without an entry of its own: the unchained entry.
  ProblemShape chained_tuned = tuned_problem();
  chained_tuned.chained = true;
  EXPECT_EQ(decide(kTestGpu, kTestSms, chained_tuned), tuned_pick());
  no_tuned_.set("1");
  EXPECT_EQ(decide(kTestGpu, kTestSms, chained_problem()),
            candidates(chained_problem(), kTestSms).front());
}

TEST_F(DecideTest, SiluMulCallsTakeTheSameGemmsEntryWhereItCanRunElseTheModelsBestLegalConfig) {
  // tuned_problem()'s entry (tiled 128x64) can run the SiLU·mul epilogue: the call takes it.
  ProblemShape p = tuned_problem();
  p.epilogue_op = EpilogueOp::kSiluMul;
  EXPECT_EQ(decide(kTestGpu, kTestSms, p), tuned_pick());
  // chained_problem()'s entry is a swap-AB tile, which cannot pair gate and up columns: the
  // SiLU·mul call of that problem takes the model's best config that can.
  ProblemShape chained = chained_problem();
  ASSERT_EQ(decide(kTestGpu, kTestSms, chained), chained_pick());
  chained.epilogue_op = EpilogueOp::kSiluMul;
  EXPECT_FALSE(tuned_config(kTestGpu, kTestSms, chained).has_value());
  const Config model = decide(kTestGpu, kTestSms, chained);
  EXPECT_EQ(model, candidates(chained, kTestSms).front());
  EXPECT_EQ(config_illegal_reason(model, chained), "");
  // The shipped table's gate|up entry of the Llama MLP block at M = 2048 runs it.
  ProblemShape mlp = problem(1, 2048, 28672, 4096);
  const auto entry = tuned_config("NVIDIA H200", 132, mlp);
  ASSERT_TRUE(entry.has_value());
  mlp.epilogue_op = EpilogueOp::kSiluMul;
  EXPECT_EQ(tuned_config("NVIDIA H200", 132, mlp), entry);
  EXPECT_EQ(decide("NVIDIA H200", 132, mlp), *entry);
}

TEST_F(DecideTest, SiluMulCallsTakeTheirOwnEntryFirstChainedThenUnchained) {
  // Its key: the GEMM's key with "|silu_mul" after the accumulation, before "|chained".
  ProblemShape gemm = silu_problem(true);
  gemm.epilogue_op = EpilogueOp::kNone;
  ProblemShape gemm_unchained = gemm;
  gemm_unchained.chained = false;
  EXPECT_EQ(table_key(kTestGpu, kTestSms, silu_problem()),
            table_key(kTestGpu, kTestSms, gemm_unchained) + "|silu_mul");
  EXPECT_EQ(table_key(kTestGpu, kTestSms, silu_problem(true)),
            table_key(kTestGpu, kTestSms, gemm_unchained) + "|silu_mul|chained");
  // The operation's own entries win over the GEMM's, the chained one for a chained call.
  EXPECT_EQ(decide(kTestGpu, kTestSms, silu_problem()), silu_pick());
  EXPECT_EQ(decide(kTestGpu, kTestSms, silu_problem(true)), silu_pick(true));
  // With no chained entry of its own, a chained call takes the operation's unchained entry
  // before the GEMM's chained one.
  EXPECT_EQ(decide(kTestGpu, kTestSms, silu_unchained_only_problem(true)), silu_pick());
  EXPECT_EQ(decide(kTestGpu, kTestSms, silu_unchained_only_problem()), silu_pick());
  // The GEMM without the operation keeps its own entries.
  EXPECT_EQ(decide(kTestGpu, kTestSms, gemm_unchained), silu_gemm_pick(false));
  EXPECT_EQ(decide(kTestGpu, kTestSms, gemm), silu_gemm_pick(true));
  // Another M has no entry at all, with or without the operation.
  ProblemShape other = silu_problem();
  other.m = 512;
  EXPECT_FALSE(tuned_config(kTestGpu, kTestSms, other).has_value());
  other.m = 256;
  other.fast_accum = false;  // the precise key has no entry either
  EXPECT_FALSE(tuned_config(kTestGpu, kTestSms, other).has_value());
}

TEST_F(DecideTest, AnEntryServesFewerRowsInTheSameNumberOf64RowBlocks) {
  auto entry_rows = [](int64_t m, bool chained = false) -> int64_t {
    const auto e = tuned_entry(kTestGpu, kTestSms, rows_problem(m, chained));
    if (!e) return 0;
    return e->m;
  };
  auto entry_config = [](int64_t m, bool chained = false) {
    return tuned_entry(kTestGpu, kTestSms, rows_problem(m, chained)).value().config;
  };
  // The fourth block (193-256 rows): the fewest rows above M, whatever the lines' order.
  EXPECT_EQ(entry_rows(193), 196);
  EXPECT_EQ(entry_config(193), rows_pick(196));
  EXPECT_EQ(entry_rows(196), 196);  // its own entry
  EXPECT_EQ(entry_rows(197), 200);
  EXPECT_EQ(entry_config(199), rows_pick(200));
  EXPECT_EQ(entry_rows(200), 200);
  // 202's config cannot run the problem: 201 and 202 go on to 206, whose first line wins.
  EXPECT_EQ(entry_rows(201), 206);
  EXPECT_EQ(entry_rows(202), 206);
  EXPECT_EQ(entry_config(205), rows_pick(206));
  EXPECT_EQ(entry_config(206), rows_pick(206));
  EXPECT_EQ(entry_rows(207), 208);
  EXPECT_EQ(entry_config(207), rows_pick(208));
  EXPECT_EQ(entry_rows(208), 208);
  EXPECT_EQ(entry_rows(209), 230);  // the unchained call: 230's entry (232's is chained)
  EXPECT_EQ(entry_rows(231), 0);    // nothing unchained above it in its block: the model
  EXPECT_EQ(entry_rows(256), 0);
  // Another block: 65-128 rows take 128's entry; 129-192 have none.
  EXPECT_EQ(entry_rows(65), 128);
  EXPECT_EQ(entry_config(127), rows_pick(128));
  EXPECT_EQ(entry_rows(129), 0);
  EXPECT_EQ(entry_rows(192), 0);
  // The first block (the decode rows) looks up its own rows only.
  EXPECT_EQ(entry_rows(64), 64);
  EXPECT_EQ(entry_rows(63), 0);
  EXPECT_EQ(entry_rows(48), 48);
  EXPECT_EQ(entry_rows(47), 0);
  EXPECT_EQ(entry_rows(1), 0);
  // Exact keys in the whole fallback order come first: a chained call at 230 rows takes the
  // unchained 230-row entry, not the chained one of 232 rows. Where no key has an entry of its
  // own rows, the order repeats with entries of more rows: chained first.
  EXPECT_EQ(entry_config(230, /*chained=*/true), rows_pick(230));
  EXPECT_EQ(entry_config(225, /*chained=*/true), rows_pick(232, true));
  EXPECT_EQ(entry_config(225), rows_pick(230));
  EXPECT_EQ(entry_config(201, /*chained=*/true), rows_pick(232, true));  // not the nearer 206
  // The rest of the key must match: another GPU, SM count, N, batch or accumulation has none.
  EXPECT_FALSE(tuned_entry("NVIDIA H200", kTestSms, rows_problem(201)).has_value());
  EXPECT_FALSE(tuned_entry(kTestGpu, kTestSms + 1, rows_problem(201)).has_value());
  ProblemShape other = rows_problem(201);
  other.n = 4096;
  EXPECT_FALSE(tuned_entry(kTestGpu, kTestSms, other).has_value());
  other = rows_problem(201);
  other.batch = 2;
  EXPECT_FALSE(tuned_entry(kTestGpu, kTestSms, other).has_value());
  other = rows_problem(201);
  other.fast_accum = false;
  EXPECT_FALSE(tuned_entry(kTestGpu, kTestSms, other).has_value());
  // decide() takes it, and tuned_config() is its config.
  EXPECT_EQ(decide(kTestGpu, kTestSms, rows_problem(207)), rows_pick(208));
  EXPECT_EQ(tuned_config(kTestGpu, kTestSms, rows_problem(199)), rows_pick(200));
}

TEST_F(DecideTest, NoTunedIgnoresTheTables) {
  const ProblemShape p = tuned_problem();
  no_tuned_.set("1");
  EXPECT_FALSE(tuned_config(kTestGpu, kTestSms, p).has_value());
  EXPECT_EQ(decide(kTestGpu, kTestSms, p), candidates(p, kTestSms).front());
}

TEST_F(DecideTest, IllegalTableEntryFallsBackToTheModel) {
  const ProblemShape p = illegal_tuned_problem();
  EXPECT_FALSE(tuned_config(kTestGpu, kTestSms, p).has_value());
  const Config c = decide(kTestGpu, kTestSms, p);
  EXPECT_EQ(c, candidates(p, kTestSms).front());
  EXPECT_EQ(config_illegal_reason(c, p), "");
}

TEST_F(DecideTest, ForcedConfigWinsOverTableAndModel) {
  const Config forced = make(KernelPath::kTiled, 64, 96, 6, 3);
  config_.set(forced.name());
  EXPECT_EQ(decide(kTestGpu, kTestSms, tuned_problem()), forced);
  for (const ProblemShape& p : bench_shapes()) EXPECT_EQ(decide("NVIDIA H200", kH200Sms, p), forced);
  // An empty value means "not set".
  config_.set("");
  EXPECT_EQ(decide(kTestGpu, kTestSms, tuned_problem()), tuned_pick());
}

TEST_F(DecideTest, ForcedIllegalConfigThrowsUnsupported) {
  const ProblemShape precise = problem(16, 128, 1280, 8192, false);
  config_.set(make(KernelPath::kPingPong, 64, 256, 4).name());
  EXPECT_NO_THROW(decide("NVIDIA H200", kH200Sms, problem(16, 128, 1280, 8192, true)));
  try {
    decide("NVIDIA H200", kH200Sms, precise);
    ADD_FAILURE() << "a bn=256 ping-pong config was accepted for precise accumulation";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
    EXPECT_EQ(e.message(),
              "F8GEMM_CONFIG='sm90_pingpong_64x256x128_s4_c1x1_r8': config "
              "sm90_pingpong_64x256x128_s4_c1x1_r8 cannot run B,M,N,K=16,128,1280,8192: " +
                  config_illegal_reason(make(KernelPath::kPingPong, 64, 256, 4), precise))
        << e.what();
    EXPECT_NE(std::string(e.what()).find("bn must be <= 192"), std::string::npos) << e.what();
  }
  // A config that no problem can run is a bad value of the variable itself (session 42: judged
  // when the variable is read, so check_environment reports it before any GPU is looked for).
  config_.set(make(KernelPath::kTiled, 128, 128, 8).name());  // 299,136 bytes of shared memory
  try {
    decide("NVIDIA H200", kH200Sms, precise);
    ADD_FAILURE() << "an 8-stage 128x128 config was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("bytes of shared memory"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(check_environment(false), Error);
  config_.set("sm90_tiled_not_a_config");
  try {
    decide("NVIDIA H200", kH200Sms, precise);
    ADD_FAILURE() << "a garbage F8GEMM_CONFIG was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
}

using test::grouped;

/// The grouped choice's config on the H200's 132 SMs, nothing forced.
Config choice(const GroupedProblem& p) { return detail::grouped_spec(p, 132, nullptr).config; }

// Card 38: stacked groups of 128 to 512 rows on average, N >= 1536, fast accumulation run the
// model's best 64-row ping-pong without a cluster (6-14% faster than the model's tiled 128x256
// on 7 of 8 measured cases at averages of 128 and 256). Card 93: at 2048 rows a group the
// model's tiled 128x256 is the faster one. Outside that envelope the model's pick stands, and
// none of these is a 64-row ping-pong alone.
bool is_pingpong_64(const Config& c) {
  return c.path == KernelPath::kPingPong && c.bm == 64 && c.cluster_m == 1 && c.split_k == 1;
}

TEST(GroupedChoice, LargeStackedGroupsTakeA64RowPingPong) {
  for (const GroupedProblem& p :
       {grouped(8, 2048, 4096, 14336), grouped(8, 2048, 28672, 4096), grouped(64, 8192, 4096, 7168),
        grouped(128, 16384, 1536, 2048), grouped(8, 1024, 4096, 4096) /* average 128: the edge */,
        grouped(8, 4096, 28672, 4096) /* average 512: the other edge */,
        grouped(8, 2048, 1536, 4096) /* N = 1536: the edge */}) {
    const Config c = choice(p);
    SCOPED_TRACE(std::to_string(p.groups) + "," + std::to_string(p.rows) + "," +
                 std::to_string(p.n) + " -> " + c.name());
    EXPECT_TRUE(is_pingpong_64(c));
  }
  // Decode sizes: swap-AB, token tiles of the design size.
  EXPECT_EQ(choice(grouped(64, 512, 4096, 7168)).path, KernelPath::kSwapAB);
  // Just outside the envelope: average 127, average 513 (4097 rows in 8 groups round up), N =
  // 1528, the padded form, precise mode, and 512 groups (whose tables would take ring stages
  // from the ping-pong).
  GroupedProblem padded = grouped(8, 2048, 4096, 14336);
  padded.padded = true;
  GroupedProblem precise = grouped(8, 2048, 4096, 14336);
  precise.fast_accum = false;
  for (const GroupedProblem& p : {grouped(8, 1016, 4096, 4096), grouped(8, 4097, 28672, 4096),
                                  grouped(8, 2048, 1528, 4096), padded, precise,
                                  grouped(512, 65536, 4096, 4096)}) {
    const Config c = choice(p);
    SCOPED_TRACE(std::to_string(p.groups) + "," + std::to_string(p.rows) + "," +
                 std::to_string(p.n) + (p.padded ? " padded" : "") +
                 (p.fast_accum ? "" : " precise") + " -> " + c.name());
    EXPECT_FALSE(is_pingpong_64(c));
  }
  // Card 93's case (groups of 2048 rows on average): the model's tiled 128x256 with the table's
  // band, the config measured 0.83-0.89x the ping-pong's time on an H100.
  EXPECT_EQ(choice(grouped(8, 16384, 28672, 4096)).name(), "sm90_tiled_128x256x128_s3_c1x1_r8");
}

// Card 44: the grouped 64-row ping-pong pick's raster band grows from the table's 8 X tiles while
// the band's rows of X stay within 16 MiB of L2, up to the kernel's 64 (64 at K <= 4096, 32 at
// K = 7168, 16 at K = 14336). A forced config keeps its band, a swap-AB pick takes the widest
// (a group's token tiles of one W tile side by side, card 110), and the other picks keep 8.
TEST(GroupedChoice, RasterBandKeepsAGroupsXBandInL2) {
  struct Case { GroupedProblem p; int raster; };
  for (const Case& c :
       {Case{grouped(8, 4096, 28672, 4096), 64}, Case{grouped(8, 2048, 28672, 4096), 64},
        Case{grouped(128, 16384, 1536, 2048), 64}, Case{grouped(64, 8192, 4096, 7168), 32},
        Case{grouped(8, 2048, 4096, 14336), 16}}) {
    const Config cfg = choice(c.p);
    SCOPED_TRACE(std::to_string(c.p.groups) + "," + std::to_string(c.p.rows) + "," +
                 std::to_string(c.p.n) + "," + std::to_string(c.p.k) + " -> " + cfg.name());
    ASSERT_TRUE(is_pingpong_64(cfg));
    EXPECT_EQ(cfg.raster, c.raster);
    EXPECT_LE(int64_t(cfg.raster) * cfg.bm * c.p.k, int64_t(16) << 20);
  }
  for (const GroupedProblem& p : {grouped(64, 512, 4096, 7168), grouped(8, 64, 28672, 4096),
                                  grouped(128, 1024, 1536, 2048)}) {
    const Config cfg = choice(p);
    SCOPED_TRACE(cfg.name());
    ASSERT_EQ(cfg.path, KernelPath::kSwapAB);
    EXPECT_EQ(cfg.raster, detail::kMaxRaster);
  }
  const Config forced_swap = Config::parse("sm90_swap_128x32x128_s10_c1x1_r0");
  EXPECT_EQ(detail::grouped_spec(grouped(64, 512, 4096, 7168), 132, &forced_swap).config.raster, 0);
  // Outside card 38's envelope the model's pick keeps the table's band (not measured wider).
  GroupedProblem padded = grouped(8, 16384, 28672, 4096);
  padded.padded = true;
  GroupedProblem precise = grouped(8, 16384, 28672, 4096);
  precise.fast_accum = false;
  // 512 groups: inside the envelope, but the ping-pong's ring does not fit beside the tables,
  // so the model's pick stands, with its band; so does 8,16384,28672,4096 (card 93).
  for (const GroupedProblem& p :
       {padded, precise, grouped(512, 65536, 4096, 4096), grouped(8, 16384, 28672, 4096)}) {
    const Config cfg = choice(p);
    SCOPED_TRACE(cfg.name());
    ASSERT_FALSE(is_pingpong_64(cfg));
    EXPECT_EQ(cfg.raster, 8);
  }
  const Config forced = Config::parse("sm90_pingpong_64x256x128_s5_c1x1_r8");
  EXPECT_EQ(detail::grouped_spec(grouped(8, 16384, 28672, 4096), 132, &forced).config.raster, 8);
}

// A forced config (GemmOptions::config or F8GEMM_CONFIG) runs a grouped GEMM as named or not at
// all: one that splits K is refused (the grouped kernel has no split-K reduction), and one whose
// ring does not fit beside the group tables is refused with the advice to force fewer stages,
// where the model's own pick gives up stages to the tables.
TEST(GroupedChoice, AForcedConfigRunsAsNamedOrIsRefused) {
  const Config split = Config::parse("sm90_swap_64x8x128_s12_c1x1_r0_k2");
  test::expect_error([&] { detail::grouped_spec(grouped(8, 64, 4096, 4096), 132, &split); },
                     ErrorCode::kUnsupported, "a grouped GEMM does not split K");
  const Config deep = Config::parse("sm90_pingpong_64x256x128_s5_c1x1_r8");
  const GroupedProblem many = grouped(512, 65536, 4096, 4096);
  test::expect_error([&] { detail::grouped_spec(many, 132, &deep); }, ErrorCode::kUnsupported,
                     "force fewer stages");
  EXPECT_EQ(detail::grouped_spec(grouped(8, 16384, 4096, 4096), 132, &deep).config, deep);
}

// A grouped refusal of a config that came from F8GEMM_CONFIG named only the config, where the
// dense call's names the variable too: both grouped refusals (cannot run; no room beside the
// tables) now begin as the dense one does, and a config passed in the options names no variable.
TEST(GroupedChoice, ARefusalOfF8GemmConfigNamesTheVariable) {
  ScopedEnv config("F8GEMM_CONFIG");
  config.set("sm90_swap_64x8x128_s12_c1x1_r0_k2");
  test::expect_error([&] { detail::grouped_spec(grouped(8, 64, 4096, 4096), 132, nullptr); },
                     ErrorCode::kUnsupported,
                     "F8GEMM_CONFIG='sm90_swap_64x8x128_s12_c1x1_r0_k2': config "
                     "sm90_swap_64x8x128_s12_c1x1_r0_k2 cannot run the grouped GEMM "
                     "G,rows,N,K=8,64,4096,4096: a grouped GEMM does not split K");
  config.set("sm90_pingpong_64x256x128_s5_c1x1_r8");
  test::expect_error([&] { detail::grouped_spec(grouped(512, 65536, 4096, 4096), 132, nullptr); },
                     ErrorCode::kUnsupported,
                     "F8GEMM_CONFIG='sm90_pingpong_64x256x128_s5_c1x1_r8': config "
                     "sm90_pingpong_64x256x128_s5_c1x1_r8 with the tables of 512 groups needs ");
  const Config split = Config::parse("sm90_swap_64x8x128_s12_c1x1_r0_k2");
  try {
    detail::grouped_spec(grouped(8, 64, 4096, 4096), 132, &split);
    ADD_FAILURE() << "a split-K config ran a grouped GEMM";
  } catch (const Error& e) {
    EXPECT_EQ(e.message().rfind("config sm90_swap_64x8x128_s12_c1x1_r0_k2 cannot run the grouped", 0),
              0u)
        << e.what();
  }
}

// The group tables hold a power of two of groups from 8 (a few instances serve every G), and the
// average group size that the choice sees is rounded up: 1017 rows in 8 groups are 128 a group,
// inside card 38's envelope.
TEST(GroupedChoice, TablesHoldAPowerOfTwoFrom8AndTheAverageRoundsUp) {
  for (const auto& [groups, cap] : {std::pair<int64_t, int>{1, 8}, {8, 8}, {9, 16}, {64, 64},
                                    {65, 128}}) {
    EXPECT_EQ(detail::grouped_spec(grouped(groups, 64 * groups, 4096, 4096), 132, nullptr)
                  .groups_cap,
              cap)
        << groups << " groups";
  }
  EXPECT_TRUE(is_pingpong_64(choice(grouped(8, 1017, 4096, 4096))));
}

}  // namespace
}  // namespace f8gemm
