/// \brief The one definition that the host compiler and NVRTC share: the instance spec, the
/// kernel's parameter block and the shared-memory layout. Plain C++17, no CUDA keywords, no
/// toolkit includes: the host includes it from src/, NVRTC from the embedded sources.
#pragma once

#include "dev_types.cuh"

namespace f8gemm {
namespace dev {

enum class BiasKind : int { kNone = 0, kF32 = 1, kBF16 = 2 };

/// Everything that specialises one kernel instance. The host fills it from a Config and a
/// problem; the generated instance source spells it out as a constexpr value.
struct GemmSpec {
  i64 n;            ///< N: rows of W (a compile-time constant of the instance)
  i64 k;            ///< K: the reduction length
  int bm;           ///< rows on the wgmma A side per tile (64 per consumer warpgroup)
  int bn;           ///< rows on the wgmma B side per tile (the wgmma N)
  int stages;       ///< shared-memory ring depth
  int cluster_m;    ///< CTAs per cluster along the X side; they share (multicast) each W tile
  int raster;       ///< rasterisation group width in X tiles (0: none)
  int split_k;      ///< CTAs per cluster along K (1: none); rank 0 sums their partial tiles
  int groups_cap;   ///< grouped GEMM: room for this many groups' tables (0: not grouped)
  bool swap;        ///< swap-AB: W rows on the A side, tokens on the B side (small M)
  bool pingpong;    ///< two consumers own alternate 64-row tiles (else they split one tile)
  bool plain_w;     ///< W is plain [B,N,K] (3-D TMA) rather than preshuffled (bulk copies)
  bool out_f16;     ///< fp16 output rather than bf16
  bool fast_accum;  ///< accumulate along all of K in the tensor core
  BiasKind bias;
  /// The SiLU·mul epilogue (EpilogueOp::kSiluMul): W is [gate; up], 2I = n rows, and each tile
  /// pairs gate rows [n0, n0 + bn/2) with up rows [I + n0, I + n0 + bn/2), so that the epilogue
  /// holds both factors of each of its bn/2 outputs: Y [M, I] = SiLU(gate) * up.
  bool silu_mul;
  /// Under programmatic dependent launch, the dependents may be scheduled right after the
  /// grid-dependency wait (Config::early_dependents), not once each CTA has issued its last load.
  bool early_dependents;
};

/// Kernel parameters, passed by value as a __grid_constant__ (the tensor maps must be).
struct GemmParams {
  TensorMap x_map;       ///< X as {K, M, B}, box {128, X rows per tile, 1}, 128B swizzle
  TensorMap w_map;       ///< plain W as {K, N, B}, box {128, W rows per CTA}; unused if preshuffled
  TensorMap out_map;     ///< Y as {N, M, B} 2-byte elements, box gemm_out_box(), swizzled
  const u8* w_shuffled;  ///< preshuffled W [B][KB][N/8][1024] (unused for plain W)
  const float* x_scale;  ///< [B, M]
  const float* w_scale;  ///< [B, N]
  const void* bias;      ///< [B, N] or null
  void* out;             ///< [B, M, N]
  int batch;             ///< B, or the number of groups G of a grouped GEMM
  int m;                 ///< M, or a grouped GEMM's rows: total_M (stacked) or M_max (padded)
  /// Grouped GEMM only (the maps then hold X and Y as one [rows, K] / [rows, N] matrix, and
  /// W's batch coordinate is the group).
  const void* m_sizes;   ///< [G] int32 or int64 on the device: rows per group
  int sizes_i64;         ///< m_sizes is int64
  int padded;            ///< group g's rows start at g * M_max (else after the previous group's)
  /// W is final before this kernel starts (GemmOptions::prefetch_w): the first tile's first
  /// ring slots of W are loaded before the grid-dependency wait (Producer::prefetch_w).
  int prefetch_w;
  /// GemmOptions::trace: per-tile timestamps, written only by an instance built with
  /// F8GEMM_TRACE (gemm_trace.cuh); null otherwise. Layout: gemm_trace_words().
  u64* trace;
  int trace_tiles;  ///< tiles recorded per consumer and CTA (later ones are counted, not kept)
};

/// The moments of a tile that an instrumented kernel records, each as the SM's clock64() read by
/// the consumer warpgroup's first thread (GemmOptions::trace).
/// In time order a tile's events are 0, 1, 2, 4, 5, 3: the epilogue's two inner moments were
/// added after the first four, whose indices stay. Those two are of the tile's first 64-row
/// block (a 128-row ping-pong tile stores a second block before kTraceEpilogueDone).
enum TraceEvent : int {
  kTraceTileStart = 0,        ///< the consumer begins the tile (after a ping-pong turn's wait)
  kTraceLastIssue = 1,        ///< the tile's last k-block of wgmmas has been issued
  kTraceMainloopDone = 2,     ///< its wgmmas have retired: the sum is in registers
  kTraceEpilogueDone = 3,     ///< its stores have been issued (they may still drain)
  /// Past the epilogue's first barrier: any split-K reduction is done, the previous tile's
  /// stores have read the staging buffer, and every thread of the warpgroup has arrived.
  kTraceEpilogueEntered = 4,
  /// The block's outputs are staged in shared memory: past the barrier after the staging
  /// writes, or with 32-column chunks (StoreKind::kTmaCols32, no such barrier) once the first
  /// warp has staged its rows of every chunk and issued their stores.
  kTraceEpilogueStaged = 5,
  kTraceEvents = 6,
};

/// The trace buffer, in 64-bit words: per CTA (blockIdx.x), a header of kTraceHeaderWords
/// (consumers + 1, or 0 where no CTA ran; the SM's id; tiles run by consumer 0; by consumer 1),
/// then for each of two consumer slots trace_tiles records of kTraceEvents clocks.
constexpr int kTraceHeaderWords = 4;
/// The most records per consumer and CTA that a trace may ask for (two slots of 2^20 records of
/// kTraceEvents clocks: 96 MiB per CTA).
constexpr int kTraceMaxTiles = 1 << 20;
constexpr i64 gemm_trace_cta_words(int tiles) {
  return kTraceHeaderWords + 2 * i64(tiles) * kTraceEvents;
}
constexpr i64 gemm_trace_words(int ctas, int tiles) { return ctas * gemm_trace_cta_words(tiles); }

/// How the epilogue moves a consumer's output block from shared to global memory.
enum class StoreKind : int {
  kTmaCols32 = 0,  ///< ping-pong, or tiled with bn % 64 == 32; bn % 32 == 0: 64x32 chunks,
                   ///< 64-byte swizzle, two buffers (one at bn 32), a 32 x 16 box per warp
  kTmaSwap = 1,    ///< swap-AB: one [bn tokens][64 columns] block, 128-byte swizzle
  kRows = 2,       ///< otherwise: padded rows, one bulk copy per row
  kTmaBlock = 3,   ///< cooperative (tiled), bn % 64 == 0: the whole 64 x bn block staged at
                   ///< once in 64-column boxes (128-byte swizzle), stored while the next tile's
                   ///< mainloop runs
};

/// Output columns of one consumer block: bn, or bn / 2 with the SiLU·mul epilogue (a gate and
/// an up column make one output).
constexpr int gemm_out_cols(int bn, bool silu_mul) { return silu_mul ? bn / 2 : bn; }

/// The store kind of a consumer block of `out_cols` output columns (gemm_out_cols).
constexpr StoreKind gemm_store_kind(int out_cols, bool swap, bool pingpong) {
  return swap                              ? StoreKind::kTmaSwap
         : !pingpong && out_cols % 64 == 0 ? StoreKind::kTmaBlock
         : out_cols % 32 == 0              ? StoreKind::kTmaCols32
                                           : StoreKind::kRows;
}

/// The output tensor map's box (columns, rows) and swizzle span in bytes for a store kind.
struct OutBox {
  int cols, rows, swizzle_bytes;
};
constexpr OutBox gemm_out_box(int out_cols, bool swap, bool pingpong) {
  const StoreKind kind = gemm_store_kind(out_cols, swap, pingpong);
  return kind == StoreKind::kTmaSwap     ? OutBox{64, out_cols, 128}
         : kind == StoreKind::kTmaBlock  ? OutBox{64, 64, 128}
         : kind == StoreKind::kTmaCols32 ? OutBox{32, 16, 64}
                                         : OutBox{0, 0, 0};
}

/// Byte layout of dynamic shared memory, from the start (1024-byte aligned):
///   ring:     stages x [X tile | W tile], each tile 1024-byte aligned (128-byte swizzle atoms);
///   regions:  one per consumer warpgroup (bm / 64 of them, or 2 in ping-pong): output staging,
///             then the tile's scales and bias
///             (A side [64] + its bias [64], B side [bn] + its bias [bn]), 1024-byte aligned;
///   partials: split-K only: one fp32 64 x bn block per consumer, the CTA's partial sum that
///             rank 0 of the cluster reads;
///   barriers: full[stages], empty[stages], then with split-K reduce_full[consumers] and
///             reduce_empty[consumers];
///   groups:   grouped GEMM only: first tile [cap + 1], first row [cap], end row [cap] (int).
struct GemmSmemLayout {
  int x_tile_bytes, w_tile_bytes, stage_bytes;
  int staging_bytes;  ///< output staging of one consumer
  int region_bytes;   ///< staging + scales of one consumer, 1024-byte aligned
  int regions_offset, partials_offset, partial_bytes, barriers_offset, groups_offset, total_bytes;
};

/// Bytes of the grouped GEMM's per-group tables for `cap` groups.
constexpr int gemm_group_table_bytes(int cap) { return cap > 0 ? 4 * (3 * cap + 1) : 0; }

/// Staging: kTmaCols32 double-buffers 64x32 chunks (2 x 4 KB) so the next chunk is written while
/// the last one's store reads; this small footprint is what gives the 64x256 ping-pong pair its
/// 5 ring stages. kTmaBlock holds the whole 64 x bn block (32 KB at bn = 256), so that its stores
/// drain under the next tile's mainloop; a tiled 128x256 then has 3 stages (perf log, card 59).
/// All in output columns (gemm_out_cols).
constexpr int gemm_staging_buffers(int out_cols) { return out_cols >= 64 ? 2 : 1; }
constexpr int gemm_staging_bytes(int out_cols, bool swap, bool pingpong) {
  const StoreKind kind = gemm_store_kind(out_cols, swap, pingpong);
  return kind == StoreKind::kTmaSwap     ? out_cols * 128
         : kind == StoreKind::kTmaBlock  ? 64 * out_cols * 2
         : kind == StoreKind::kTmaCols32 ? gemm_staging_buffers(out_cols) * 64 * 64
                                         : 64 * (out_cols * 2 + 16);
}

/// Precise mode adds each k-block's tensor-core sum into an fp32 total, so a consumer keeps the
/// total beside the sums it computes. A 64-row block of X (tiled, or a 64-row ping-pong tile) of
/// 96 to 192 columns that halve into whole wgmma widths is promoted in two half-width slices
/// with an accumulator set each (bn / 2 + 2 x bn / 4 registers): one slice's wgmmas run while
/// the other slice's sum is added (wait_group 1), so the promotion leaves the tensor cores'
/// path even when no other consumer fills the wait. Measured (perf log, card 54; geometric
/// means over six shapes): 64-row ping-pong tiles 1.6-5.5% faster (up to 9.8% on one shape),
/// lone 64-row tiles 2.3-3.6%, cooperative 128x128 2.4%, 128x160 and 128x192 level, 96 columns
/// level; at 64 columns the 32-column slices lost (tiled 64x64 10% slower, 128x64 2.5%), so 64
/// columns keep one promotion per k-block.
constexpr bool gemm_promote_pipelined(int bn, bool fast_accum, int blocks, bool swap) {
  return !fast_accum && !swap && blocks == 1 && bn >= 96 && bn <= 192 && bn % 16 == 0;
}

/// The columns whose k-block sum is promoted at once. Pipelined: half the block. Otherwise up
/// to 192 columns the whole block (its sum and the total, 2 x 96 registers); a wider block in
/// slices of half its columns, one after the other, so that only one slice's sum (bn / 4
/// registers) is live beside the total. Fast mode never slices.
constexpr int gemm_promote_cols(int bn, bool fast_accum, int blocks, bool swap) {
  return fast_accum ? bn
         : (bn > 192 || gemm_promote_pipelined(bn, fast_accum, blocks, swap)) ? bn / 2
                                                                              : bn;
}

/// The most fp32 accumulators one consumer thread keeps in fast mode: a 128-row ping-pong tile
/// holds 128 x bn of them in one warpgroup, bn per thread. ptxas fits 160 beside the addresses
/// and the epilogue without a spill in the 232 registers a consumer gets; 176 spills (perf log,
/// card 47).
constexpr int kGemmMaxAccumulators = 160;

/// Consumer warpgroups: each owns 64 rows of the tile's A side, or (ping-pong) every other tile.
constexpr int gemm_consumers(int bm, bool pingpong) { return pingpong ? 2 : bm / 64; }

/// 64-row A-side blocks that one consumer computes per tile: one (cooperative: the consumers
/// split the tile), or the whole tile (ping-pong: a consumer owns it, one m64 wgmma per block).
constexpr int gemm_blocks(int bm, bool pingpong) { return pingpong ? bm / 64 : 1; }

/// Whether an instance loads W before its grid-dependency wait when GemmParams::prefetch_w is set
/// (Producer::prefetched_slots, GemmOptions::prefetch_w). Not a grouped GEMM (its tiles come
/// from sizes that the previous kernel may write) nor a 2x1 pair (the multicast reaches the
/// other CTA's barriers, which only the cluster barrier after the wait shows initialised). Not
/// plain W nor K split more than two ways either: in a chain of decode GEMMs (perf log, card 50)
/// every loss came from a split configuration (plain 1,1,4096,4096 split in two 1.20x the time
/// without, 1,1,1024,8192 split four ways 1.28x), while preshuffled W unsplit or split in two
/// ran 0.86-1.00x. Plain W unsplit gained in calls 2-3 (0.88-0.98x) but is left out until the
/// policy with it is measured.
constexpr bool gemm_prefetches_w(const GemmSpec& s) {
  return s.groups_cap == 0 && s.cluster_m == 1 && !s.plain_w && s.split_k <= 2;
}

/// With silu_mul the staging holds bn / 2 output columns (never more bytes than without: the
/// host sizes rings and checks legality without it, and allocates this layout's total).
constexpr GemmSmemLayout gemm_smem_layout(int bm, int bn, int stages, bool swap, bool pingpong,
                                          int split_k, int groups_cap = 0, bool silu_mul = false) {
  GemmSmemLayout l{};
  const int x_rows = swap ? bn : bm, w_rows = swap ? bm : bn;
  l.x_tile_bytes = x_rows * 128;
  l.w_tile_bytes = w_rows * 128;
  l.stage_bytes = l.x_tile_bytes + l.w_tile_bytes;
  l.staging_bytes = gemm_staging_bytes(gemm_out_cols(bn, silu_mul), swap, pingpong);
  l.region_bytes = (l.staging_bytes + 2 * (64 + bn) * 4 + 1023) / 1024 * 1024;
  l.regions_offset = stages * l.stage_bytes;
  l.partials_offset = l.regions_offset + gemm_consumers(bm, pingpong) * l.region_bytes;
  l.partial_bytes = split_k > 1 ? 64 * bn * 4 : 0;
  l.barriers_offset = l.partials_offset + gemm_consumers(bm, pingpong) * l.partial_bytes;
  l.groups_offset = l.barriers_offset + 2 * stages * 8 + (split_k > 1 ? 4 * 8 : 0);
  l.total_bytes = l.groups_offset + gemm_group_table_bytes(groups_cap);
  return l;
}

}  // namespace dev
}  // namespace f8gemm
