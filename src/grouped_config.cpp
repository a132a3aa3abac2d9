/// \brief The grouped GEMM's configuration choice: a forced config, or the cost model's pick for
/// a design group size (the sizes are on the device; a 64-row ping-pong where card 38 measured it
/// faster), with room for the group tables.
#include <algorithm>
#include <vector>

#include "check.hpp"
#include "config.hpp"
#include "grouped.hpp"

namespace f8gemm::detail {

namespace {

/// Room for G groups in the kernel's tables: a power of two from 8, so that a few instances
/// serve every G.
int groups_capacity(int64_t groups) {
  int cap = 8;
  while (cap < groups) cap *= 2;
  return cap;
}

/// Rows per group on average (at least 1), rounded up: the host's only view of the sizes.
int64_t average_rows(const GroupedProblem& s) {
  return std::max<int64_t>(1, (s.rows + s.groups - 1) / s.groups);
}

/// The problem the cost model scores for a grouped call: G batches of a design group size (the
/// padded form: M_max rows). The sizes are on the device. With few tokens per group (decode) the
/// GEMM streams W, and routing skew puts several times the average in the busiest groups: each
/// extra token tile of a group reads its W once more, while a wider tile costs only tensor-core
/// work that the memory stream hides. So small averages are scored at 4x (at most 64 rows); the
/// first grouped bench (docs/logs/2026-11-30-s3-grouped-peers.log) read W up to 4 times with
/// the tile of the average 8 tokens.
ProblemShape model_problem(const GroupedProblem& s) {
  ProblemShape p;
  p.batch = s.groups;
  const int64_t average = average_rows(s);
  const int64_t design = average < 64 ? std::min<int64_t>(64, 4 * average) : average;
  p.m = s.padded ? s.rows : std::min(s.rows, design);
  p.n = s.n;
  p.k = s.k;
  p.w_layout = s.w_layout;
  p.out_dtype = s.out_dtype;
  p.has_bias = s.has_bias;
  p.bias_dtype = s.bias_dtype;
  p.fast_accum = s.fast_accum;
  return p;
}

/// A 64-row ping-pong without a cluster: card 38's choice.
bool is_pingpong_64(const Config& c) {
  return c.path == KernelPath::kPingPong && c.bm == 64 && c.cluster_m == 1 && c.split_k == 1;
}

/// Where card 38 measured it faster than the model's pick: stacked groups of 128 to 512 rows on
/// average, N >= 1536, fast accumulation. There the choice is the model's best 64-row ping-pong
/// without a cluster. Routed sizes are arbitrary, so a group's last token tile is on average
/// half empty. A 64-row tile wastes half of what a 128-row tile wastes there, and ping-pong runs
/// one tile's epilogue under the other's wgmmas; the cost model, which scores the exact average,
/// sees neither. Measured (docs/perf-log.md, card 38), each config forced on 8,2048,4096,14336,
/// 8,2048,28672,4096, 64,8192,4096,7168 and 128,16384,1536,2048 (averages of 128 and 256) with
/// Zipf and uniform routing: the 64x256 ping-pong was 6-14% faster than the model's tiled 128x256
/// on 7 of the 8 cases, and 2% slower on 64,8192,4096,7168 Zipf. Where a group averages 2048 rows
/// (8,16384,28672,4096, which that card did not measure) the tail that the 64-row tile saves is
/// small, and the model's tiled 128x256 ran 0.83x (Zipf) and 0.89x (uniform) the ping-pong's time
/// on an H100 (card 93), so the envelope ends at 512 rows. Card 93 then forced both at 512-1536
/// rows a group (session 39, an H100): at 512 the ping-pong ran 1.064x faster on all four cases;
/// at 768-1536 the tiled 128x256 ran 0.983x the ping-pong's time by geometric mean (0.909-1.048
/// by case). Four more passes of the down GEMM (N = 4096, K = 14336) at 768-2048 rows found it
/// level up to 1536 rows (0.968-1.017) and the tiled tile ahead at 2048 (0.941), so the edge does
/// not depend on N or K. 257-511 rows are unmeasured, and the H200 has run neither the moved
/// case nor the range.
/// Outside the envelope (averages below 128, where the model picks swap-AB, or above 512; small
/// N; the padded form; precise mode; and group tables so large that the ring would lose stages)
/// the model's pick stands.
constexpr int64_t kPingPongMinRows = 128;
constexpr int64_t kPingPongMaxRows = 512;
bool prefers_pingpong_64(const GroupedProblem& s) {
  const int64_t average = average_rows(s);
  return !s.padded && s.fast_accum && average >= kPingPongMinRows &&
         average <= kPingPongMaxRows && s.n >= 1536;
}

/// L2 bytes that one raster band of X rows may take (a quarter of the H200's 60 MB L2).
constexpr int64_t kBandBytes = int64_t(16) << 20;

/// The raster band, in X tiles, for the 64-row ping-pong pick: as many tiles as keep the band's
/// rows of X within kBandBytes, a power of two from the table's 8 up to the kernel's 64. Inside a
/// group the kernel sweeps every W tile of the group across one band of X tiles before the next
/// band, so the group's W streams from DRAM once per band. At 8,16384,28672,4096 (groups of
/// 2048 rows on average, 32 X tiles of 64 rows, W of 117 MB per group), bands of 8 read W four
/// times per group; bands of 64 read it once (the largest groups of a skewed routing, twice),
/// 6.4-7.5% faster over three interleaved rounds on an H200 (docs/perf-log.md, card 44). That
/// problem now takes the model's tiled pick (card 93); at the 128-256-row cases that keep the
/// ping-pong, card 44 measured 0.967-1.030 (no gain beyond the rounds' spread, and no loss).
/// Applied only to the pick it was measured with, at K = 2048-14336. The dense kernel's tuned
/// bands of 8 stay: there wider bands cut the DRAM reads as much but gained nothing, and lost up
/// to 8% where W already fits in the L2 (card 44).
int grouped_raster(const Config& c, int64_t k) {
  int raster = c.raster;
  if (raster <= 0) return raster;  // no bands
  while (raster < kMaxRaster && 2 * raster * c.bm * k <= kBandBytes) raster *= 2;
  return raster;
}

}  // namespace

/// The instance for a grouped call: a forced config (options, then F8GEMM_CONFIG) or the
/// model's best that does not split K (its best 64-row ping-pong where prefers_pingpong_64()
/// holds and that ping-pong keeps its ring beside the group tables), with the ring shortened
/// where the group tables need the shared memory.
InstanceSpec grouped_spec(const GroupedProblem& s, int sm_count, const Config* forced) {
  const ProblemShape p = model_problem(s);
  const int cap = groups_capacity(s.groups);
  const auto with_tables = [&](const Config& c) {
    InstanceSpec spec = make_spec(c, p);
    spec.groups_cap = cap;
    return spec;
  };
  Config config;
  bool from_env = false;
  if (forced) {
    config = *forced;
  } else if (const std::optional<Config> env = env_forced_config()) {
    config = *env;
    forced = &config;
    from_env = true;
  }
  // A refusal of a forced config names F8GEMM_CONFIG where the config came from there, as the
  // dense call's does (env_forced_config_for). Built only for a refusal.
  const auto refused = [&] {
    return concat(from_env ? env_config_label(config.name()) : std::string(), "config ", config.name());
  };
  if (forced) {
    std::string why = config_illegal_reason(config, p);
    if (why.empty() && config.split_k != 1) why = "a grouped GEMM does not split K";
    F8GEMM_REQUIRE(why.empty(), kUnsupported, refused(), " cannot run the grouped GEMM G,rows,N,K=",
                   s.groups, ",", s.rows, ",", s.n, ",", s.k, ": ", why);
  } else {
    const std::vector<Config> list = candidates(p, sm_count);
    const bool prefer_pingpong = prefers_pingpong_64(s);
    auto pick = list.end();
    if (prefer_pingpong) {
      pick = std::find_if(list.begin(), list.end(), is_pingpong_64);
      // Only with its full ring beside the tables, as measured.
      if (pick != list.end() && instance_smem_bytes(with_tables(*pick)) > kMaxSmemBytes) {
        pick = list.end();
      }
    }
    if (pick == list.end()) {
      pick = std::find_if(list.begin(), list.end(), [](const Config& c) { return c.split_k == 1; });
    }
    F8GEMM_REQUIRE(pick != list.end(), kInternal,
                   "no legal configuration for the grouped GEMM G,rows,N,K=", s.groups, ",",
                   s.rows, ",", s.n, ",", s.k);
    config = *pick;
    // Wider bands where they were measured: the 64-row ping-pong of card 38's envelope. The
    // model's other picks keep the table's bands.
    if (prefer_pingpong && is_pingpong_64(config)) {
      config.raster = grouped_raster(config, s.k);
    }
    // Swap-AB picks: the widest band, so that a group's token tiles of one W tile are
    // consecutive in the tile order and run side by side in one wave, where all but the first
    // read the W tile from the L2. With no band a group's second token tile came after all of
    // the group's W tiles, often in the next wave, and read its W rows from DRAM again: bands of
    // 64 took 2.2% off 64,512,4096,7168 Zipf and 2.0% off 128,1024,1536,2048 Zipf on an H100,
    // within 0.2% elsewhere (perf log, card 110). Groups of one token tile keep their order; in
    // larger ones W streams from DRAM at most once a band of 64 token tiles instead of up to once
    // a token tile, so every swap pick takes it (measured on the 128x32 pick).
    if (config.path == KernelPath::kSwapAB) config.raster = kMaxRaster;
    const std::string why = config_illegal_reason(config, p);
    F8GEMM_REQUIRE(why.empty(), kInternal, "the grouped choice ", config.name(), " for G,rows,N,K=",
                   s.groups, ",", s.rows, ",", s.n, ",", s.k, " is illegal: ", why);
  }
  InstanceSpec spec = with_tables(config);
  // The model's pick gives ring stages to the group tables where they need the room; a forced
  // config runs as named or not at all.
  while (!forced && instance_smem_bytes(spec) > kMaxSmemBytes && spec.config.stages > 2) {
    --spec.config.stages;
  }
  F8GEMM_REQUIRE(instance_smem_bytes(spec) <= kMaxSmemBytes, kUnsupported, refused(),
                 " with the tables of ", cap, " groups needs ",
                 instance_smem_bytes(spec), " bytes of shared memory, more than ", kMaxSmemBytes,
                 forced ? ": force fewer stages" : "");
  return spec;
}

}  // namespace f8gemm::detail
