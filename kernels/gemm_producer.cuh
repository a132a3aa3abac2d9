/// \brief The load pipeline: one warp fills a shared-memory ring of kStages slots, each an X
/// tile then a W tile of one 128-byte k-block, guarded by two mbarriers per slot. The whole warp
/// runs the loop and waits on the empty barriers; one elected lane arms the full barrier and
/// issues the copies. The positions and addresses stay warp-uniform, in uniform registers (not
/// in a grouped GEMM, whose tiles come from tables in shared memory).
///
/// - full[s]: armed with the slot's byte count (arrive.expect_tx); the copies complete it.
/// - empty[s]: one thread of every consumer warpgroup that reads the slot arrives once its
///   wgmmas have read it. In a pair each CTA writes half of the W tile into both CTAs' slots, so
///   a slot is free only when the consumers of both CTAs have released it: each reading
///   warpgroup arrives on the slot's empty barrier in every CTA of the cluster (thread r on CTA
///   r's).
/// The producer starts one phase ahead (a fresh barrier has completed parity 1), so the first
/// kStages slots fill at once. Slot and phase advance in the same order on both sides across
/// tiles: the ring never drains between tiles.
#pragma once

#include "f8gemm_ptx.cuh"
#include "gemm_tile_scheduler.cuh"

namespace f8gemm {
namespace dev {

/// A position in the ring: slot index and the parity of its current phase.
struct RingPos {
  int stage = 0;
  u32 phase = 0;
  /// The position of the ring's k-block number `n` (counted from the launch's start).
  template <int kStages>
  static __device__ __forceinline__ RingPos at(int n) {
    RingPos pos;
    pos.stage = n % kStages;
    pos.phase = u32(n / kStages) & 1u;
    return pos;
  }
  template <int kStages>
  __device__ __forceinline__ void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1;
    }
  }
};

template <class T>
struct Producer {
  /// One arrival per reading consumer warpgroup and CTA of the cluster (see release()).
  static constexpr int kEmptyArrivals = T::kSlotReaders * T::kClusterM;
  static constexpr u16 kClusterMask = u16((1u << T::kClusterM) - 1);

  static __device__ __forceinline__ void init_barriers(u64* full, u64* empty) {
    for (int s = 0; s < T::kStages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], kEmptyArrivals);
    }
    fence_barrier_init();
  }

  /// Whether this instance loads W before the grid-dependency wait when asked to (the host's
  /// tests read the same definition).
  static constexpr bool kPrefetchW = gemm_prefetches_w(T::kSpec);

  /// Ring slots whose W is loaded before the grid-dependency wait: the first tile's first
  /// k-blocks, as many as the ring holds.
  static __device__ __forceinline__ int prefetched_slots(const GemmParams& p,
                                                         const TileScheduler<T>& sched) {
    if (!kPrefetchW || !p.prefetch_w || sched.first >= sched.total) return 0;
    return min(T::kStages, sched.kb_count);
  }

  /// Before the grid-dependency wait, by the thread that initialised the barriers: arms the
  /// prefetched slots for their X and W bytes and issues their W copies, so that the weight
  /// stream starts during the previous kernel's tail. run() then issues only their X copies.
  /// The copies land in this CTA's shared memory, not in L2, where the previous kernel's own
  /// stream would evict them (perf log, cards 23 and 50).
  static __device__ __forceinline__ void prefetch_w(const GemmParams& p,
                                                    const TileScheduler<T>& sched, u8* ring,
                                                    u64* full) {
    const int slots = prefetched_slots(p, sched);
    if (slots == 0) return;
    fence_proxy_async();  // the barriers' initialisation, seen by the copies' completions
    const Tile tile = sched.tile(sched.first);
    const int w_rows = tile_w_rows(tile);
    for (int s = 0; s < slots; ++s) {
      mbar_arrive_expect_tx(&full[s], u32(T::kXTileBytes) + tile_w_bytes(w_rows));
      load_w(p, tile, sched.kb_begin + s, w_rows, sched.rank,
             ring + s * T::kStageBytes + T::kXTileBytes, &full[s]);
    }
  }

  /// Called by every lane of one converged warp.
  static __device__ __forceinline__ void run(const GemmParams& p, const TileScheduler<T>& sched,
                                             u8* ring, u64* full, u64* empty) {
    const bool issuer = elect_one_lane();
    // The first tile's first `prefetched` slots are armed and hold their W (prefetch_w).
    const int prefetched = prefetched_slots(p, sched);
    int loaded = 0;  // k-blocks of this CTA so far
    RingPos pos;
    for (int t = sched.first; t < sched.total; t += sched.stride) {
      const Tile tile = sched.tile(t);
      const int w_rows = tile_w_rows(tile);
      const u32 w_bytes = tile_w_bytes(w_rows);
      for (int kb = sched.kb_begin; kb < sched.kb_begin + sched.kb_count; ++kb, ++loaded) {
        mbar_wait(&empty[pos.stage], pos.phase ^ 1);
        u8* x_tile = ring + pos.stage * T::kStageBytes;
        u8* w_tile = x_tile + T::kXTileBytes;
        u64* bar = &full[pos.stage];
        if (issuer) {
          const bool with_w = loaded >= prefetched;
          if (with_w) mbar_arrive_expect_tx(bar, u32(T::kXTileBytes) + w_bytes);
          tma_load_3d(x_tile, &p.x_map, bar, kb * 128, tile.m0, tile.xb);
          if (with_w) load_w(p, tile, kb, w_rows, sched.rank, w_tile, bar);
        }
        pos.template advance<T::kStages>();
      }
    }
  }

  /// Rows of W that exist in a tile: the preshuffled buffer ends at N (no padding rows). With
  /// SiLU·mul both halves have the rows of the gate half (up ends at N as gate ends at kOutN).
  static __device__ __forceinline__ int tile_w_rows(const Tile& tile) {
    if constexpr (T::kSiluMul) return 2 * int(min(i64(T::kWRows / 2), T::kOutN - tile.n0));
    return int(min(i64(T::kWRows), T::kN - tile.n0));
  }
  /// The bytes of one W k-block of a tile that arrive in this CTA's slot. TMA counts whole boxes
  /// (zero-filled rows and columns included).
  static __device__ __forceinline__ u32 tile_w_bytes(int w_rows) {
    return T::kPlainW ? u32(T::kWTileBytes) : u32(w_rows) * 128u;
  }

  /// This CTA's share of one W k-block: all of it alone, half of it (multicast to both CTAs)
  /// in a pair.
  static __device__ __forceinline__ void load_w(const GemmParams& p, const Tile& tile, int kb,
                                                int w_rows, int rank, u8* w_tile, u64* bar) {
    if constexpr (T::kSiluMul) {
      load_w_halves(p, tile, kb, w_rows / 2, rank, w_tile, bar);
      return;
    }
    if (T::kPlainW) {
      if (T::kClusterM == 1) {
        tma_load_3d(w_tile, &p.w_map, bar, kb * 128, tile.n0, tile.b);
      } else {
        tma_load_3d_multicast(w_tile + rank * kPlainHalf * 128, &p.w_map, bar, kb * 128,
                              tile.n0 + rank * kPlainHalf, tile.b, kClusterMask);
      }
      return;
    }
    const ShuffledShare share = shuffled_share(p, tile, kb, w_rows, rank);
    if (T::kClusterM == 1) {
      bulk_load(w_tile, share.src, share.bytes, bar);
    } else if (share.bytes > 0) {
      bulk_load_multicast(w_tile + share.offset, share.src, share.bytes, bar, kClusterMask);
    }
  }

  /// SiLU·mul: half h of the W tile (h = 0 gate, 1 up) holds kWRows / 2 rows from W row
  /// n0 + h * kOutN. Alone a CTA loads both halves; in a pair rank h loads half h and multicasts
  /// it. Plain W: a box of kWRows / 2 rows each (gate rows past kOutN are up rows, computed and
  /// never stored; up rows past N are zero-filled). Preshuffled: the half's `rows` existing rows.
  static __device__ __forceinline__ void load_w_halves(const GemmParams& p, const Tile& tile,
                                                       int kb, int rows, int rank, u8* w_tile,
                                                       u64* bar) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (T::kClusterM == 2 && h != rank) continue;
      u8* dst = w_tile + h * (T::kWRows / 2) * 128;
      const int row = tile.n0 + h * int(T::kOutN);  // N < 2^28 (validate.hpp kMaxN)
      if (T::kPlainW) {
        if (T::kClusterM == 1) {
          tma_load_3d(dst, &p.w_map, bar, kb * 128, row, tile.b);
        } else {
          tma_load_3d_multicast(dst, &p.w_map, bar, kb * 128, row, tile.b, kClusterMask);
        }
      } else {
        const u8* src = shuffled_rows(p, tile.b, kb, row);
        if (T::kClusterM == 1) {
          bulk_load(dst, src, u32(rows) * 128u, bar);
        } else {
          bulk_load_multicast(dst, src, u32(rows) * 128u, bar, kClusterMask);
        }
      }
    }
  }

  /// Preshuffled W: the first byte of k-block kb's slab that holds W row `row` (a multiple of 8)
  /// of batch b.
  static __device__ __forceinline__ const u8* shuffled_rows(const GemmParams& p, int b, int kb,
                                                            int row) {
    return p.w_shuffled + ((i64(b) * T::kKBlocks + kb) * (T::kN / 8) + row / 8) * 1024;
  }

  /// Plain W in a pair: the map's box is half a tile (rows past N are zero-filled and counted).
  static constexpr int kPlainHalf = T::kClusterM == 1 ? 0 : T::kWRows / 2;

  /// Preshuffled W: the bytes of k-block kb of the tile that this CTA loads, from `src`, to
  /// byte `offset` of the W tile. Alone: all w_rows * 128 (the buffer ends at N: no padding
  /// rows). In a pair, whole 1 KB slabs: rank 0 takes the first ceil(slabs / 2), rank 1 the rest
  /// (maybe none).
  struct ShuffledShare {
    const u8* src;
    u32 offset, bytes;
  };
  static __device__ __forceinline__ ShuffledShare shuffled_share(const GemmParams& p,
                                                                 const Tile& tile, int kb,
                                                                 int w_rows, int rank) {
    const u8* base = shuffled_rows(p, tile.b, kb, tile.n0);
    if (T::kClusterM == 1) return {base, 0u, u32(w_rows) * 128u};
    const int slabs = w_rows / 8, first_half = (slabs + 1) / 2;
    const int begin = rank == 0 ? 0 : first_half;
    const int count = rank == 0 ? first_half : slabs - first_half;
    return {base + begin * 1024, u32(begin) * 1024u, u32(count) * 1024u};
  }

  /// Called by every thread of a consumer warpgroup once its wgmmas no longer read slot
  /// `stage` (after its wait_group: a wgmma is the whole warpgroup's, so one warp's wait covers
  /// all four). Thread r < kClusterM of the warpgroup arrives on the slot's empty barrier in CTA
  /// r of the cluster, so the arrivals to different CTAs leave from different lanes at once.
  static __device__ __forceinline__ void release(u64* empty, int stage, int tid) {
    if (T::kClusterM == 1) {
      if (tid == 0) mbar_arrive(&empty[stage]);
    } else if (tid < T::kClusterM) {
      mbar_arrive_cluster(&empty[stage], u32(tid));
    }
  }
};

}  // namespace dev
}  // namespace f8gemm
