/// \brief Config names, legality, the cost model and the decision order (the tables:
/// tuned_tables.cpp).
#include "config.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "check.hpp"
#include "codegen.hpp"
#include "env.hpp"
#include "tuned_tables.hpp"

namespace f8gemm {

std::string Config::name() const {
  std::ostringstream os;
  os << "sm90_"
     << (path == KernelPath::kSwapAB ? "swap" : path == KernelPath::kPingPong ? "pingpong" : "tiled")
     << "_" << bm << "x" << bn
     << "x" << bk << "_s" << stages << "_c" << cluster_m << "x" << cluster_n << "_r" << raster;
  if (split_k != 1) os << "_k" << split_k;
  return os.str();
}

namespace {
/// Reads a config name left to right. Numbers are runs of digits parsed with from_chars, so a
/// value past int is reported as such instead of overflowing (sscanf's %d has undefined
/// behaviour there).
class NameReader {
 public:
  explicit NameReader(const std::string& name) : name_(name) {}
  bool literal(const char* text) {
    const size_t n = std::strlen(text);
    if (name_.compare(pos_, n, text) != 0) return false;
    pos_ += n;
    return true;
  }
  bool number(int* value, const char* field) {
    const char* begin = name_.data() + pos_;
    const char* end = begin;
    while (end < name_.data() + name_.size() && *end >= '0' && *end <= '9') ++end;
    if (end == begin) return false;
    const auto r = std::from_chars(begin, end, *value);
    F8GEMM_REQUIRE(r.ec == std::errc(), kInvalidArgument, "config name '", name_, "': ", field,
                   " = ", std::string(begin, end), " is out of range");
    pos_ += size_t(end - begin);
    return true;
  }
  bool at_end() const { return pos_ == name_.size(); }

 private:
  const std::string& name_;
  size_t pos_ = 0;
};
}  // namespace

Config Config::parse(const std::string& name) {
  Config c;
  NameReader r(name);
  bool ok = r.literal("sm90_");
  const bool swap = ok && r.literal("swap_");
  const bool pingpong = ok && !swap && r.literal("pingpong_");
  ok = ok && (swap || pingpong || r.literal("tiled_")) && r.number(&c.bm, "bm") && r.literal("x") &&
       r.number(&c.bn, "bn") && r.literal("x") && r.number(&c.bk, "bk") && r.literal("_s") &&
       r.number(&c.stages, "stages") && r.literal("_c") && r.number(&c.cluster_m, "cluster_m") &&
       r.literal("x") && r.number(&c.cluster_n, "cluster_n") && r.literal("_r") &&
       r.number(&c.raster, "raster") && (r.at_end() || (r.literal("_k") && r.number(&c.split_k, "split_k") && r.at_end()));
  F8GEMM_REQUIRE(ok, kInvalidArgument, "config name '", name,
                 "' does not match sm90_<tiled|pingpong|swap>_<bm>x<bn>x<bk>_s<stages>_c<m>x<n>_r<raster>[_k<split>]");
  c.path = swap ? KernelPath::kSwapAB : pingpong ? KernelPath::kPingPong : KernelPath::kTiled;
  // Parse is exact: the name must be the canonical one (no leading zeros).
  F8GEMM_REQUIRE(c.name() == name, kInvalidArgument, "config name '", name,
                 "' is not canonical; did you mean '", c.name(), "'?");
  return c;
}

bool Config::operator==(const Config& o) const {
  return detail::config_fields(*this) == detail::config_fields(o);
}

namespace detail {

ConfigFields config_fields(const Config& c) {
  // A field added to Config and not listed here breaks this size check first.
  static_assert(sizeof(Config) == 9 * sizeof(int), "config_fields() lists every Config field");
  return {int(c.path) + 1, c.bm, c.bn, c.bk, c.stages, c.cluster_m, c.cluster_n, c.raster,
          c.split_k};
}

namespace {
// H200 ceilings measured during setup on 2026-11-30 (not logged): copy 4.25 TB/s, FP8 1.46 PFLOP/s;
// docs/logs/2026-11-30-bench-large.log measured 4.248 TB/s and 1297 TFLOP/s.
constexpr double kDramBytesPerUs = 4.25e6;
constexpr double kPeakFlopsPerUs = 1.46e9;
// L2 -> SM bandwidth, shared by the CTAs (an estimate, about 2.5x DRAM on Hopper).
constexpr double kL2BytesPerUs = 10.0e6;
// What one CTA's ring streams per µs, from DRAM or L2, is its bytes in flight over this latency.
// 1.7 µs is what the swap-AB decode configs of the rotated-input tune reach (63 GB/s per CTA with
// 110 KB in flight, docs/logs/2026-11-30-s4-tune-decode-rotated.csv). The earlier 0.5 µs for L2
// reads (and 1 µs for DRAM), fitted on runs whose weights stayed in L2, ranked thin unsplit grids
// up to 1.35x too fast (docs/perf-log.md card 20).
constexpr double kStreamLatencyUs = 1.7;
// Launch and pipeline ramp.
constexpr double kFixedUs = 2.5;
// What each further rank of a split-K cluster costs beyond its partial tile's bytes. Without it
// the model split 4096 x 4096 decode GEMMs in two and 1024 x 8192 in six, where the tunes of
// both GPUs measured the unsplit tile 6-36% faster and a split in four 9-17% faster (perf log,
// card 82: 0.15-0.35 µs all scored the same). Card 87 fitted it with the two split terms below:
// at 0.5 µs 1,32,4096,7168 fast goes from swap 64x32 k2 to the same tile unsplit, which card 87's
// A/Bs measured 13% faster on both GPUs (0.863 and 0.867 of k2's time).
constexpr double kSplitPeerUs = 0.5;
// The tensor rate's loss per operand row written into shared memory per product (a row's
// 128-byte k-block for each bm x bn product block), fitted on the tunes since card 64: 4-6
// score the same on the large shapes and on the MLP block's down GEMM, 7 moves that down GEMM
// at 144-192 rows to a slower tile, and 4 is what card 84's A/Bs measured. Fast mode takes 5
// (perf log, card 85): it moves mostly ping-pong pairs (2x1) to tiled 128-row tiles, which the
// A/Bs without tables measured faster on most of the moved problems; in precise mode 5 moved
// picks to 64-row tiles and swap-AB splits, 4 of 8 measured 1.04-1.19x slower, so 4 stays there.
constexpr double kOperandRowCostFast = 5.0;
constexpr double kOperandRowCostPrecise = 4.0;

// A split-K tile's partial sums move through distributed shared memory at this rate (bytes per
// µs). 50 GB/s split the 64-128-row problems of session 31's H100 tune at 1.16-1.48x the time of
// the fastest: at 1,64,2048,2048 a split in two cost 1.7-1.8 µs more than the same tile unsplit
// (perf log, card 86).
constexpr double kSplitBytesPerUs = 20.0e3;
// The share of all the bytes that a split-K tile's CTAs stream which the DRAM term counts, where
// that exceeds the problem's unique bytes. In session 32's tunes of 192-256-row problems (both
// GPUs), split CTAs streamed their bytes at about half the per-CTA rate of unsplit CTAs of the
// same grid sizes: a split did not get the rate that the model's per-CTA stream gave it (perf
// log, card 87; why is not measured). 0.6 fits those tunes with the rest: 0.5 misses them; 0.75
// picks swap 128x64 k3 at 1,64,4096,14336 precise, 1.13x the held-out tune's fastest (card 87's
// H100 A/B: 1.14x the old pick); 0.9 moves the decode tunes' picks. The decode tunes score as
// before: there a split's streamed bytes are about its unique bytes (one X tile of a few rows).
constexpr double kSplitStreamedFromDram = 0.6;
// How many CTAs run at once in clusters of c CTAs (cudaOccupancyMaxActiveClusters on an H200, 132
// SMs; docs/logs/2026-12-06-s32-call2-cluster-capacity-h200.log), with one CTA per SM (a config of
// more than half an SM's shared memory) and with two. A cluster needs free SMs of one GPC, so
// sizes that do not divide the GPCs' SM counts leave SMs idle: 39 clusters of 3 and 30 of 4 fit
// at one CTA per SM, not 44 and 33. The launcher sizes its persistent grid with the same query
// (src/launch.cpp), so a problem with more clusters runs its last ones as a second wave. The H100
// (also 132 SMs) was not probed; other SM counts scale the table.
constexpr int kClusterCtasOn132[2][9] = {{0, 132, 132, 117, 120, 110, 102, 105, 120},
                                         {0, 264, 264, 237, 248, 235, 234, 224, 240}};
// An SM's shared memory (228 KiB) and what the driver reserves per CTA: a config that needs at most
// half of it less that runs two CTAs per SM (only swap 64x8 splits among the candidates, at 30-44
// registers, so registers do not bind).
constexpr int kSmemPerSm = 233472;
constexpr int kSmemReservedPerCta = 1024;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// CTAs that run at once in clusters of `cluster` CTAs that need `smem_bytes` each (a cluster is
/// at most 8: a portable cluster). At least one cluster, whatever the SM count.
int64_t cluster_ctas(int64_t cluster, int sm_count, int smem_bytes) {
  if (cluster <= 1 || cluster > 8) return std::max<int64_t>(cluster, sm_count / cluster * cluster);
  const int per_sm = 2 * (smem_bytes + kSmemReservedPerCta) <= kSmemPerSm ? 2 : 1;
  const int64_t ctas =
      int64_t(sm_count) * kClusterCtasOn132[per_sm - 1][cluster] / 132 / cluster * cluster;
  return std::max<int64_t>(cluster, ctas);
}
}  // namespace

int config_smem_bytes(const Config& c, int groups_cap, EpilogueOp op) {
  // The kernel's own layout function (kernels/gemm_params.cuh): one definition for both sides.
  return dev::gemm_smem_layout(c.bm, c.bn, c.stages, c.path == KernelPath::kSwapAB,
                               c.path == KernelPath::kPingPong, c.split_k, groups_cap,
                               op == EpilogueOp::kSiluMul)
      .total_bytes;
}

std::string config_illegal_reason(const Config& c, const ProblemShape& p) {
  std::ostringstream why;
  if (c.path != KernelPath::kTiled && c.path != KernelPath::kSwapAB &&
      c.path != KernelPath::kPingPong)
    why << "path must be tiled, swap or pingpong (KernelPath 0..2), got " << int(c.path);
  else if (c.bk != 128) why << "bk must be 128 (one 128-byte swizzle row)";
  else if (c.bm != 64 && c.bm != 128) why << "bm must be 64 or 128 (64 rows per consumer warpgroup)";
  else if (c.bn < 8 || c.bn > 256 || c.bn % 8 != 0) why << "bn must be a multiple of 8 in 8..256";
  else if (c.stages < 2 || c.stages > 16) why << "stages must be 2..16";
  else if (c.cluster_n != 1 || (c.cluster_m != 1 && c.cluster_m != 2))
    why << "clusters are 1x1 or 2x1 (two CTAs along M sharing each W tile)";
  else if (c.cluster_m == 2 && c.path == KernelPath::kSwapAB)
    why << "2x1 clusters are for the tiled path (swap-AB tiles share no W tile)";
  else if (c.path == KernelPath::kPingPong && c.bm == 128 && c.bn > dev::kGemmMaxAccumulators)
    why << "a 128-row ping-pong tile keeps bn fp32 accumulators per thread: bn must be <= "
        << dev::kGemmMaxAccumulators;
  else if (c.path == KernelPath::kPingPong && c.bm == 128 && !p.fast_accum && c.bn > 96)
    why << "a 128-row ping-pong tile in precise mode keeps two sets of bn accumulators: bn must "
           "be <= 96";
  else if (c.cluster_m == 2 && c.bn % 16 != 0)
    why << "2x1 clusters split the W tile into two halves of whole 8-row slabs: bn % 16 == 0";
  else if (c.raster < 0 || c.raster > 64) why << "raster must be 0..64";
  else if (c.split_k < 1 || c.split_k > 8)
    why << "split_k must be 1..8 (a split-K cluster is at most 8 CTAs)";
  else if (c.split_k > 1 && (c.cluster_m != 1 || c.path == KernelPath::kPingPong))
    why << "split-K clusters are 1x1 in M and cooperative (not ping-pong)";
  else if (c.split_k > 1 && c.bn > 128)
    why << "split-K's rank 0 holds a peer's partial sums beside its own: bn must be <= 128";
  else if (c.split_k > (p.k + 127) / 128)
    why << "split_k = " << c.split_k << " exceeds the " << (p.k + 127) / 128
        << " k-blocks of K = " << p.k << " (each CTA needs at least one)";
  else if (config_smem_bytes(c) > kMaxSmemBytes)
    why << "needs " << config_smem_bytes(c) << " bytes of shared memory, more than " << kMaxSmemBytes;
  else if (!p.fast_accum && c.bn > 192 && (c.path != KernelPath::kTiled || c.bn != 256))
    why << "precise accumulation keeps a second accumulator set: bn must be <= 192, or 256 on the "
           "tiled path (promoted in two 128-column slices that the other consumer overlaps)";
  else if (p.epilogue_op == EpilogueOp::kSiluMul && c.path == KernelPath::kSwapAB)
    why << "the SiLU·mul epilogue pairs gate and up columns of a tile's W side: not on the "
           "swap-AB path";
  else if (p.epilogue_op == EpilogueOp::kSiluMul && c.split_k > 1)
    why << "the SiLU·mul epilogue needs the whole sum of a tile: no split of K";
  else if (p.epilogue_op == EpilogueOp::kSiluMul && c.bn % 64 != 0)
    why << "the SiLU·mul epilogue stores whole 32-column output chunks of bn / 2 columns: "
           "bn % 64 == 0";
  return why.str();
}

double estimate_us(const Config& c, const ProblemShape& p, int sm_count) {
  const bool swap = c.path == KernelPath::kSwapAB;
  const int64_t x_rows = swap ? c.bn : c.bm, w_rows = swap ? c.bm : c.bn;
  // A pair computes two X tiles, the second one empty at an odd edge.
  const int64_t x_tiles = ceil_div(ceil_div(p.m, x_rows), c.cluster_m) * c.cluster_m;
  const int64_t tiles = p.batch * x_tiles * ceil_div(p.n, w_rows);
  if (tiles == 0) return 0.0;
  // Split-K: each tile is split_k units of work, each over a slice of K.
  const int64_t cluster = int64_t(c.cluster_m) * c.split_k;
  const int64_t units = tiles * c.split_k;
  const int64_t ctas =
      std::min<int64_t>(units, cluster_ctas(cluster, sm_count, config_smem_bytes(c)));
  const int64_t tiles_per_cta = ceil_div(units, ctas);
  const int64_t k_slice = ceil_div(ceil_div(p.k, 128), c.split_k) * 128;
  const double inflight = double(c.stages) * (x_rows + w_rows) * c.bk;
  // DRAM: every byte once, at the lower of the copy rate and what the CTAs keep in flight. A
  // swap-AB W tile is streamed once for each of its X tiles: the H100's A/B of card 82 measured
  // 1,32,1280,8192 33% slower on swap 64x16 (two X tiles) than on 64x32 (one), where a single
  // read of W had them level.
  const double w_reads = swap ? double(x_tiles) : 1.0;
  const double unique =
      double(p.batch) * (p.m * p.k + w_reads * p.n * p.k + 2 * p.m * p.n + 4 * (p.m + p.n));
  const double dram_rate = std::min(kDramBytesPerUs, ctas * inflight / kStreamLatencyUs);
  const double streamed = double(units) * double(x_rows + w_rows) * double(k_slice);
  const double dram_bytes =
      c.split_k > 1 ? std::max(unique, kSplitStreamedFromDram * streamed) : unique;
  const double dram_us = dram_bytes / dram_rate;
  // One tile: wgmma time (small N issues less work per instruction) or its L2 traffic.
  // Precise mode waits for every k-block's wgmmas before promoting them. With one consumer
  // warpgroup (bm = 64) nothing fills that wait: the 2026-11-30 tune run measured bm = 64
  // precise configs 14% above this model against 0-4% for the others
  // (docs/logs/2026-11-30-tune-4.csv; tests/cpu/test_model.cpp holds the model to that data).
  // Ping-pong in precise mode holds its turn through every k-block's wait, so the other consumer
  // cannot fill it either: the 2026-11-30 large-shape tune measured its configs 7-24% above this
  // model without the factor, the cooperative ones 6% below (docs/logs/2026-11-30-s4-tune-large.csv).
  // Since card 54 pipelined the promotion in half-width slices at 96 <= bn <= 192
  // (docs/logs/2026-12-01-s15-tune-compare.log), the pipelined 64-row ping-pong tiles run
  // 1.6-5.5% faster and the cooperative ones 0-2.4%: the ping-pong factor below would move from
  // 0.85 to about 0.90, which still ranks them behind the cooperative tiles that won every
  // precise tune. These two factors stay until a tune with more shapes can refit them
  // (tests/cpu/test_model.cpp holds them to the older data).
  // The tiled 256-column precise tile promotes in two 128-column slices, but the other
  // consumer's wgmmas fill each slice's wait, so since card 84 it is rated at its full width:
  // rated at 128 columns it ranked behind the tiled 128x192, which session 18's H200 precise
  // tunes measured up to 7% slower than it (4-7% on 7 of 12 problems).
  double wgmma_eff = double(c.bn) / (c.bn + 24.0) * (p.fast_accum ? 1.0 : 0.9);
  if (!p.fast_accum && c.bm == 64 && c.path != KernelPath::kPingPong) wgmma_eff *= 0.9;
  if (!p.fast_accum && c.path == KernelPath::kPingPong) wgmma_eff *= 0.85;
  // Operand traffic under the power limit: each k-block writes a tile's x_rows + w_rows rows
  // into shared memory (and wgmma reads them) for bm x bn x 128 products, and the clock under
  // the power cap falls with that traffic (the reading of perf-log cards 45, 59 and 64). The
  // tiled 128x256 (384 rows per 128 x 256 products) beat the ping-pong 64x256 pair (320 rows
  // per 64 x 256) on 30 of the 32 large problems tuned since card 64 on both GPUs, the other
  // two within 0.3%; without this term the model ranked the pair first by its finer wave
  // quantisation (perf log, card 84).
  const double row_cost = p.fast_accum ? kOperandRowCostFast : kOperandRowCostPrecise;
  wgmma_eff /= 1.0 + row_cost * double(x_rows + w_rows) / double(c.bm * c.bn);
  const double tile_flops = 2.0 * c.bm * c.bn * k_slice;
  const double mma_us = tile_flops / (kPeakFlopsPerUs / sm_count * wgmma_eff);
  const double l2_rate = std::min(kL2BytesPerUs / ctas, inflight / kStreamLatencyUs);
  // A pair of CTAs reads each W tile from L2 once and multicasts it into both.
  const double l2_rows = double(x_rows) + double(w_rows) / c.cluster_m;
  const double tile_us = std::max(mma_us, l2_rows * k_slice / l2_rate);
  // Split-K: rank 0 reads split_k - 1 fp32 partial tiles through distributed shared memory
  // (kSplitBytesPerUs) after a cluster handshake (0.5 µs assumed), and waits for its peers one
  // by one (kSplitPeerUs each).
  const double reduce_us =
      c.split_k > 1
          ? 0.5 + (c.split_k - 1) * (kSplitPeerUs + 4.0 * c.bm * c.bn / kSplitBytesPerUs)
          : 0.0;
  // The wgmma work on padded rows costs power and issue slots even when memory is the limit:
  // a tenth of it breaks the ties that bandwidth-bound shapes (decode) would otherwise leave.
  return kFixedUs + std::max(dram_us, tiles_per_cta * tile_us) + 0.1 * tiles_per_cta * mma_us +
         tiles_per_cta * reduce_us;
}

std::vector<Config> candidates(const ProblemShape& p, int sm_count, CandidateSet set) {
  const bool tune = set == CandidateSet::kTune;
  std::vector<std::pair<double, Config>> scored;
  auto add = [&](KernelPath path, int bm, int bn, int max_stages, int raster, int cluster_m = 1,
                 int split_k = 1) {
    Config c;
    c.path = path;
    c.bm = bm;
    c.bn = bn;
    c.raster = raster;
    c.cluster_m = cluster_m;
    c.split_k = split_k;
    // The deepest ring that fits: more stages keep more bytes in flight (decode is latency-bound).
    for (c.stages = max_stages; c.stages >= 2; --c.stages) {
      if (config_smem_bytes(c) <= kMaxSmemBytes) break;
    }
    if (!config_illegal_reason(c, p).empty()) return;
    // The model credits a 2x1 cluster with reading each W tile once for two X tiles. Where the
    // pair leaves one of one or three X tiles empty, its partner computes nothing with that read,
    // and 1x1 tiles get part of the sharing from their placement (perf log, card 78: at three X
    // tiles two of every three TPC pairs share a W tile). In the H100's tunes at 32-192 rows every
    // such pair ran 1.01-1.64x its 1x1 twin (card 79; three 128-row X tiles, 257-384 rows, were
    // not measured). The tune still times them.
    const int64_t x_tiles = ceil_div(p.m, bm);
    if (!tune && cluster_m == 2 && x_tiles <= 3 && x_tiles % 2 == 1) return;
    for (const auto& s : scored) {
      if (s.second == c) return;  // a deeper ring asked for that does not fit: already listed
    }
    scored.emplace_back(estimate_us(c, p, sm_count), c);
  };
  for (int bm : {64, 128}) {
    for (int bn : {64, 96, 128, 160, 192, 256}) add(KernelPath::kTiled, bm, bn, 8, 8);
    // 2x1 clusters after their 1x1 twins: on a tie the simpler launch wins, and the tune's
    // measurements decide (docs/perf-log.md, card 10).
    if (bm == 128) {
      for (int bn : {128, 192, 256}) add(KernelPath::kTiled, bm, bn, 8, 8, 2);
    } else {
      // Ping-pong: two 64-row tiles in flight per CTA, the epilogue of one under the other's
      // wgmmas; with and without a pair sharing W (multicast halves the 64-row tiles' W reads).
      for (int bn : {128, 192, 256}) {
        add(KernelPath::kPingPong, 64, bn, 8, 8);
        add(KernelPath::kPingPong, 64, bn, 8, 8, 2);
      }
      // Tune only: 160 and 176 columns, 90 and 82 tiles across N = 14336, whose last wave
      // fills more of the SMs than 128's or 256's (perf log, card 47).
      if (tune) {
        for (int bn : {160, 176}) {
          add(KernelPath::kPingPong, 64, bn, 8, 8);
          add(KernelPath::kPingPong, 64, bn, 8, 8, 2);
        }
      }
    }
    if (bm == 128) {
      // Ping-pong with 128-row tiles (FBGEMM's choice at K <= 4096): each consumer owns a
      // 128 x bn tile, 20% fewer operand bytes per product than 64 x 256. The tune also tries
      // 112, 144 and 160 columns, whose tile counts fit the SMs' waves differently (perf log,
      // card 47: 160 in the shipped table).
      for (int bn : {96, 112, 128, 144, 160}) {
        if (!tune && bn != 96 && bn != 128) continue;
        add(KernelPath::kPingPong, 128, bn, 8, 8);
        add(KernelPath::kPingPong, 128, bn, 8, 8, 2);
      }
    }
    if (p.m <= 256) {
      for (int bn : {8, 16, 24, 32, 48, 64, 96, 128}) {
        const int64_t tiles = p.batch * ceil_div(p.m, bn) * ceil_div(p.n, bm);
        // Tune only: rings of up to 16 stages beside the model's 12 (more W in flight, and
        // with prefetch_w more of it loaded before the wait; perf log, card 53: 1-5% on four
        // chained decode shapes).
        for (int max_stages : {12, 16}) {
          if (max_stages == 16 && !tune) continue;
          add(KernelPath::kSwapAB, bm, bn, max_stages, 0);
          // Thin grids (decode with few W tiles): split K over a cluster so that more SMs
          // stream W, as long as the split tiles still fit in one wave.
          for (int split : {2, 3, 4, 6, 8}) {
            if (tiles * split <= sm_count) add(KernelPath::kSwapAB, bm, bn, max_stages, 0, 1, split);
          }
        }
      }
    }
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return a.second.bm * a.second.bn > b.second.bm * b.second.bn;  // ties: the larger tile
  });
  std::vector<Config> out;
  for (auto& s : scored) out.push_back(s.second);
  return out;
}

Config model_pick(const ProblemShape& p, int sm_count) {
  const std::vector<Config> list = candidates(p, sm_count);
  F8GEMM_REQUIRE(!list.empty(), kInternal, "no legal configuration for B,M,N,K=", p.batch, ",",
                 p.m, ",", p.n, ",", p.k);
  return list.front();
}

std::optional<Config> env_forced_config() {
  const std::string name = get_env<std::string>("F8GEMM_CONFIG");
  if (name.empty()) return std::nullopt;
  try {
    return Config::parse(name);
  } catch (const Error& e) {
    throw Error(e.code(), concat("F8GEMM_CONFIG='", name, "': ", e.message()));
  }
}

Config decide(const std::string& gpu_name, int sm_count, const ProblemShape& p) {
  const char* source = "model";
  int64_t entry_rows = p.m;
  Config chosen;
  if (const std::optional<Config> forced = env_forced_config()) {
    chosen = *forced;
    const std::string why = config_illegal_reason(chosen, p);
    F8GEMM_REQUIRE(why.empty(), kUnsupported, "F8GEMM_CONFIG=", chosen.name(),
                   " cannot run B,M,N,K=", p.batch, ",", p.m, ",", p.n, ",", p.k, ": ", why);
    source = "F8GEMM_CONFIG";
  } else if (auto tuned = tuned_entry(gpu_name, sm_count, p)) {
    chosen = tuned->config;
    source = tuned->m == p.m ? "table" : "table, the entry of more rows";
    entry_rows = tuned->m;
  } else {
    chosen = model_pick(p, sm_count);
  }
  if (get_env<bool>("F8GEMM_LOG")) {
    // The key names the epilogue's operation and a chained call.
    const std::string rows = entry_rows == p.m ? "" : concat(" M = ", entry_rows);
    std::fprintf(stderr, "f8gemm: %s -> %s (%s%s, model %.1f us)\n",
                 table_key(gpu_name, sm_count, p).c_str(), chosen.name().c_str(), source,
                 rows.c_str(), estimate_us(chosen, p, sm_count));
  }
  return chosen;
}

}  // namespace detail
}  // namespace f8gemm
