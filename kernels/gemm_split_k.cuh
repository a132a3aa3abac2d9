/// \brief Split-K inside a cluster: the kSplitK CTAs of a cluster compute one tile over
/// consecutive slices of K, and rank 0 adds the others' partial sums through distributed shared
/// memory before its epilogue stores the tile. One launch, no workspace, and a fixed order of
/// addition (rank 0's own sum, then ranks 1, 2, ...), so the result is bitwise deterministic.
///
/// Per consumer warpgroup and tile:
/// - rank r > 0 waits until rank 0 has read its previous partial (reduce_empty), writes its
///   fp32 accumulators into its own partial block, and arrives on rank 0's reduce_full
///   (release at cluster scope);
/// - rank 0 waits on reduce_full (acquire at cluster scope), reads each peer's block with
///   ld.shared::cluster, adds, and arrives on every peer's reduce_empty.
/// Every thread arrives for its own accesses (128 arrivals per peer and warpgroup), so each
/// write is ordered before the read of it by its own thread's release and the reader's acquire.
/// One arrival after a named barrier is also ordered under the PTX memory model (the barrier
/// makes the other threads' writes causally precede the release), but compute-sanitizer's
/// racecheck does not follow that chain and reports every element as a hazard.
/// Partial layout: float4 q of thread tid at byte (q * 128 + tid) * 16: conflict-free 16-byte
/// accesses on both sides.
#pragma once

#include "f8gemm_ptx.cuh"
#include "gemm_traits.cuh"

namespace f8gemm {
namespace dev {

template <class T>
struct SplitK {
  static constexpr int kVec = T::kAcc / 4;  // float4s per thread
  static_assert(T::kAcc % 4 == 0, "accumulators move as float4s");
  static_assert(T::kSplitK == 1 || T::kBlocks == 1, "split-K reduces one 64-row block per consumer");

  /// One consumer's view: its partial block, its two barriers, and the phase of the next tile.
  struct State {
    u8* partial = nullptr;
    u64* reduce_full = nullptr;
    u64* reduce_empty = nullptr;
    int k_rank = 0;
    u32 phase = 0;
  };

  static __device__ __forceinline__ u64* barriers(u8* smem) {
    return reinterpret_cast<u64*>(smem + T::kSmem.barriers_offset) + 2 * T::kStages;
  }

  /// By one thread, before the cluster's first barrier.
  static __device__ __forceinline__ void init_barriers(u8* smem) {
    if (T::kSplitK == 1) return;
    u64* bars = barriers(smem);
    for (int c = 0; c < T::kConsumers; ++c) {
      mbar_init(&bars[c], (T::kSplitK - 1) * 128);  // reduce_full: every thread of each peer
      mbar_init(&bars[T::kConsumers + c], 128);      // reduce_empty: every thread of rank 0
    }
    fence_barrier_init();
  }

  static __device__ __forceinline__ State state(u8* smem, int consumer, int k_rank) {
    State s;
    if (T::kSplitK == 1) return s;
    u64* bars = barriers(smem);
    s.partial = smem + T::kSmem.partials_offset + consumer * T::kSmem.partial_bytes;
    s.reduce_full = &bars[consumer];
    s.reduce_empty = &bars[T::kConsumers + consumer];
    s.k_rank = k_rank;
    return s;
  }

  /// Combines the cluster's partial sums of the tile into rank 0's `acc`. Returns true on the
  /// CTA that stores the tile (rank 0).
  static __device__ __forceinline__ bool reduce(float* acc, State& s, int tid) {
    if (T::kSplitK == 1) return true;
    float4* mine = reinterpret_cast<float4*>(s.partial) + tid;
    if (s.k_rank != 0) {
      // Rank 0 has read this block's previous contents (a fresh barrier passes parity 1).
      mbar_wait_cluster(s.reduce_empty, s.phase ^ 1);
#pragma unroll
      for (int q = 0; q < kVec; ++q) {
        mine[q * 128] = make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]);
      }
      mbar_arrive_release_cluster(s.reduce_full, 0);
      s.phase ^= 1;
      return false;
    }
    mbar_wait_cluster(s.reduce_full, s.phase);
#pragma unroll
    for (int r = 1; r < T::kSplitK; ++r) {
      float4 v[kVec];
#pragma unroll
      for (int q = 0; q < kVec; ++q) v[q] = ld_shared_cluster_f32x4(mine + q * 128, u32(r));
#pragma unroll
      for (int q = 0; q < kVec; ++q) {
        acc[4 * q] += v[q].x;
        acc[4 * q + 1] += v[q].y;
        acc[4 * q + 2] += v[q].z;
        acc[4 * q + 3] += v[q].w;
      }
    }
    // This thread has read its part of the peers' blocks: they may overwrite it.
#pragma unroll
    for (int r = 1; r < T::kSplitK; ++r) mbar_arrive_release_cluster(s.reduce_empty, u32(r));
    s.phase ^= 1;
    return true;
  }
};

}  // namespace dev
}  // namespace f8gemm
