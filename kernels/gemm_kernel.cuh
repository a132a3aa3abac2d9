/// \brief The persistent, warp-specialised FP8 rowwise-scaled GEMM for sm_90a, composed of its
/// pieces: the tile scheduler, the producer (load pipeline), the mainloop (wgmma) and the
/// epilogue (scales, conversion, stores).
///
/// Warpgroup 0 produces (one thread issues every copy); warpgroups 1..kConsumers compute, each
/// owning 64 rows of the tile's A side. With kClusterM = 2, two CTAs on neighbouring X tiles
/// share each W tile: each loads half of it and multicasts it into both. With kSplitK > 1 the CTAs
/// of a cluster split one tile's K and rank 0 reduces and stores (gemm_split_k.cuh).
/// The instance source (src/codegen.cpp) defines the Spec type and `Wgmma<bn>` and includes this.
#pragma once

#include "gemm_epilogue.cuh"
#include "gemm_mainloop.cuh"
#include "gemm_producer.cuh"
#include "gemm_split_k.cuh"
#include "gemm_tile_scheduler.cuh"
#include "gemm_trace.cuh"

namespace f8gemm {
namespace dev {

template <class Spec>
struct GemmKernel {
  using T = GemmTraits<Spec>;
  static constexpr int kThreads = T::kThreads;
  static constexpr int kSmemBytes = T::kSmemBytes;

  static __device__ __forceinline__ void run(const GemmParams& p) {
    // The 128-byte swizzle follows address bits 7-9: every tile must start 1024-byte aligned.
    extern __shared__ __align__(1024) u8 smem[];
    u8* ring = smem;
    u8* regions = smem + T::kSmem.regions_offset;
    u64* full = reinterpret_cast<u64*>(smem + T::kSmem.barriers_offset);
    u64* empty = full + T::kStages;

    // Read through a shuffle from lane 0, the warpgroup index is known to be the same in every
    // lane of a warp, so the branches on it below stay warp-uniform for the compiler: the ring
    // positions and shared-memory descriptors derived from it live in uniform registers, not in
    // each thread's registers copied into uniform ones before every wgmma (CUTLASS does the
    // same; perf log, card 35).
    const int warpgroup = __shfl_sync(0xffffffffu, int(threadIdx.x / 128), 0);
    const int tid_in_wg = threadIdx.x % 128;
    if (threadIdx.x == 0) {
      if (smem_addr(smem) % 1024 != 0) __trap();
      Producer<T>::init_barriers(full, empty);
      SplitK<T>::init_barriers(smem);
      tma_prefetch_map(&p.x_map);
      if (T::kPlainW) tma_prefetch_map(&p.w_map);
      // W, when the caller vouches that the previous kernel does not write it (prefetch_w).
      if constexpr (!T::kGrouped) Producer<T>::prefetch_w(p, TileScheduler<T>(p, smem), ring, full);
    }
    // Launched to overlap the previous kernel, everything above ran during its tail; from here
    // on this kernel reads and writes memory that kernel may touch (f8gemm_ptx.cuh), W aside
    // when prefetch_w is set.
    grid_dependency_wait();
    // Config::early_dependents: the dependents may be scheduled from here on (perf log, cards 81
    // and 96), instead of once every load is issued (below).
    if (T::kEarlyDependents && threadIdx.x == 0) allow_dependent_launch();
    // A grouped GEMM's tables, from the sizes on the device (the ring is free for scratch).
    if (T::kGrouped) GroupTables<T>(smem).build(p, reinterpret_cast<i64*>(ring));
    // A cluster's copies and arrivals reach the other CTAs' barriers: all must be initialised.
    if (T::kClusterSize > 1) cluster_sync();
    else __syncthreads();

    const TileScheduler<T> sched(p, smem);
    if (warpgroup == 0) {
      if (T::kConsumers == 2) regs_decrease<40>();
      // The first warp produces, all its lanes together (no lane waits in another branch, which
      // would take issue slots from the one that issues the copies: card 10).
      if (__shfl_sync(0xffffffffu, tid_in_wg / 32, 0) == 0) {
        Producer<T>::run(p, sched, ring, full, empty);
        // The dependent kernel (programmatic launch) may be scheduled once every CTA has issued
        // its last load, not at the start: its launch and prologue then overlap this kernel's
        // last k-blocks and epilogue (perf log, card 23: 2% faster than a trigger in the
        // prologue on the Llama MLP block at M = 16).
        // The lane that issued the copies (elect.sync's choice) may be any: the warp meets first.
        __syncwarp();
        if (!T::kEarlyDependents && tid_in_wg == 0) allow_dependent_launch();
      }
    } else {
      if (T::kConsumers == 2) regs_increase<232>();
      typename SplitK<T>::State split = SplitK<T>::state(smem, warpgroup - 1, sched.k_rank);
      consume(p, sched, ring, regions + (warpgroup - 1) * T::kSmem.region_bytes, full, empty,
              split, warpgroup - 1, tid_in_wg);
    }
    // No CTA of a cluster leaves while another may still arrive on its barriers or read its
    // shared memory.
    if (T::kClusterSize > 1) cluster_sync();
  }

  /// One tile: scales, mainloop (over this CTA's k-blocks), the split-K reduction, epilogue,
  /// for the consumer's block at A-side rows a_block * 64. `after_last_issue` runs right after
  /// the last k-block's wgmmas are issued, while they are still in flight (a ping-pong consumer
  /// hands its turn over there: perf log, card 46). `prepare_next` runs once, right after the
  /// first k-block's wgmmas are issued: a cooperative consumer places its next tile there, so
  /// that the scheduler's integer divisions run under tensor-core work instead of between this
  /// tile's epilogue and the next mainloop (perf log, card 64). `trace` records the tile as number
  /// `record` of this consumer (in an instrumented instance only).
  template <class AfterLastIssue, class PrepareNext>
  static __device__ __forceinline__ void compute_tile(const GemmParams& p, const Tile& tile,
                                                      int kblocks, const u8* ring, u8* region,
                                                      u64* full, u64* empty, RingPos& pos,
                                                      typename SplitK<T>::State& split,
                                                      float* acc, float* total, int consumer,
                                                      int a_block, int tid, const TileTrace& trace,
                                                      int record,
                                                      AfterLastIssue&& after_last_issue,
                                                      PrepareNext&& prepare_next) {
    trace.mark(record, kTraceTileStart);
    if (!T::kFastAccum) {
#pragma unroll
      for (int i = 0; i < T::kAccAll; ++i) total[i] = 0.0f;
    }
    const typename Epilogue<T>::Scales scales = Epilogue<T>::load_scales(p, tile, a_block, tid);
    Mainloop<T>::run(ring, full, empty, pos, acc, total, kblocks, a_block, tid,
                     [&] {
                       Epilogue<T>::stage_scales(scales, region, tid);
                       prepare_next();
                     },
                     [&] {
                       trace.mark(record, kTraceLastIssue);
                       after_last_issue();
                     });
    trace.mark(record, kTraceMainloopDone);
    float* sum = T::kFastAccum ? acc : total;
    if (!SplitK<T>::reduce(sum, split, tid)) return;
    Epilogue<T>::store(p, tile, sum, region, consumer, a_block, tid,
                       [&](TraceEvent event) { trace.mark(record, event); });
    // A 128-row ping-pong tile: its second 64-row block, through the same staging region. The
    // first block's store has passed its last barrier, so every thread is done reading the
    // staged scales and they may be replaced by the second block's (the next store's first
    // barrier publishes them).
#pragma unroll
    for (int blk = 1; blk < T::kBlocks; ++blk) {
      Epilogue<T>::stage_scales(Epilogue<T>::load_scales(p, tile, a_block + blk, tid), region, tid);
      Epilogue<T>::store(p, tile, sum + blk * T::kAcc, region, consumer, a_block + blk, tid,
                         [](TraceEvent) {});
    }
    trace.mark(record, kTraceEpilogueDone);
  }

  /// Tile t of the schedule, or an unused placeholder past its end (no table is read for it).
  static __device__ __forceinline__ Tile next_tile(const TileScheduler<T>& sched, int t) {
    return t < sched.total ? sched.tile(t) : Tile{};
  }

  static __device__ __forceinline__ void consume(const GemmParams& p, const TileScheduler<T>& sched,
                                                 const u8* ring, u8* region, u64* full, u64* empty,
                                                 typename SplitK<T>::State& split, int consumer,
                                                 int tid) {
    float acc[T::kAccSets * T::kSliceAcc];
    float total[T::kFastAccum ? 1 : T::kAccAll];
    const TileTrace trace(p, consumer, tid);
    int records = 0;  // tiles this consumer ran
    if (!T::kPingPong) {
      // Cooperative: both consumers run every tile, each on its 64 rows of the A side. The next
      // tile is placed under the current one's first k-block (compute_tile's prepare_next): in
      // the gap between a tile's stores and the next mainloop the tensor cores are idle.
      // Swap-AB tiles of 128 rows of W (two consumers) place each tile at the top of its
      // iteration instead, as before card 64: placed early, 1,1,28672,4096 (swap 128x8, 224
      // tiles on 132 SMs) ran 5-6% slower unchained, and the two other shapes of the table on
      // 128-row swap tiles level; the 64-row swap tiles keep the early placement, under which
      // 1,1,4096,4096 (swap 64x8) runs 19-20% faster (perf log, card 68; not understood).
      constexpr bool kPlaceEarly = !(T::kSwap && T::kConsumers == 2);
      RingPos pos;
      Tile tile = kPlaceEarly ? next_tile(sched, sched.first) : Tile{};
      for (int t = sched.first; t < sched.total; t += sched.stride, ++records) {
        if (!kPlaceEarly) tile = sched.tile(t);
        Tile next = tile;  // replaced by prepare_next when placed early
        compute_tile(p, tile, sched.kb_count, ring, region, full, empty, pos, split, acc, total,
                     consumer, consumer, tid, trace, records, [] {}, [&] {
                       if (kPlaceEarly) next = next_tile(sched, t + sched.stride);
                     });
        tile = next;
      }
    } else {
      // Ping-pong: consumer c runs this CTA's tiles c, c + 2, ... Their mainloops take turns
      // (named barriers 3 and 4: a consumer starts its mainloop once the other has issued its
      // own last k-block), so one consumer's epilogue runs while the other's wgmmas keep the tensor
      // cores busy. Each turn is handed over only when the other consumer has a tile to take.
      // Here the tile is computed at the turn, not under the first k-block as in the cooperative
      // loop: ptxas schedules its divisions before the turn's barrier, so the consumer that waits
      // for its turn hides them in that wait, and placing them early let the other consumer's
      // next mainloop overlap more of this one's epilogue, which cost the 64x256 pair 1.9% more
      // cycles per CTA (perf log, card 64).
      int j = 0;  // this CTA's tile count
      for (int t = sched.first; t < sched.total; t += sched.stride, ++j) {
        if (j % 2 != consumer) continue;
        if (j >= 1 + (consumer == 0 ? 1 : 0)) named_barrier_sync(3 + consumer, 256);
        RingPos pos = RingPos::at<T::kStages>(j * T::kKBlocks);
        const bool other_has_next = t + sched.stride < sched.total;
        compute_tile(
            p, sched.tile(t), T::kKBlocks, ring, region, full, empty, pos, split, acc, total,
            consumer, 0, tid, trace, records++,
            [&] {
              if (other_has_next) named_barrier_arrive(3 + (1 - consumer), 256);
            },
            [] {});
      }
    }
    trace.finish(p, consumer, T::kConsumers, records);
    bulk_wait_all();
  }
};

}  // namespace dev
}  // namespace f8gemm
