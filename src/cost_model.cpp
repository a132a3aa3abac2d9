/// \brief The cost model: what a configuration is estimated to take on a problem (waves of the
/// clusters that fit at once, DRAM and L2 bytes, wgmma efficiency, split-K's reduction), from
/// H200 ceilings and constants fitted on the committed tunes and A/Bs (docs/perf-log.md, cards
/// 20, 82 and 84-87). config.cpp ranks the candidates by it.
#include "cost_model.hpp"

#include <algorithm>
#include <cstdint>

#include "config.hpp"

namespace f8gemm {
namespace detail {

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
// What one swap-AB CTA of 64 W rows streams per µs from L2 (tile_us): its ring's bytes in flight
// over this latency; other tiles keep kStreamLatencyUs. Session 32's tunes of 192-256-row problems
// measured unsplit CTAs at 1.4-1.8 µs (medians by grid size, both GPUs; perf log, card 88).
// Session 34's H100 A/B: at 1.6 for every tile, the swap-AB picks it moved (to fewer split ranks,
// or another X-tile width) ran 0.82-1.01x main's time, but the moves from swap-AB to tiled 64-row
// tiles 1.02-1.08x (docs/logs/2026-12-06-s34-callA-card88-ab-as-tune.csv). Session 35's: at 1.6
// for swap-AB tiles, its 64-row moves ran 0.74-1.01x fast and 0.82-1.00x precise, except
// 1,48,1536,2048 (64x16 -> 64x24: 0.95-1.01x fast, 1.02-1.08x precise), and its one move to a
// 128-row swap tile (precise 1,128,7168,14336: tiled 64x128 -> swap 128x128 k2) 1.09-1.12x
// (docs/logs/2026-12-06-s35-call1-card88b-ab-as-tune.csv), so only 64-row swap tiles take it.
constexpr double kL2StreamLatencyUs = 1.6;
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
  const double stream_latency_us =
      c.path == KernelPath::kSwapAB && c.bm == 64 ? kL2StreamLatencyUs : kStreamLatencyUs;
  const double l2_rate = std::min(kL2BytesPerUs / ctas, inflight / stream_latency_us);
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

}  // namespace detail
}  // namespace f8gemm
