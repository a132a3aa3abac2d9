/// \brief The persistent, warp-specialised FP8 rowwise-scaled GEMM for sm_90a, composed of its
/// pieces: the tile scheduler, the producer (load pipeline), the mainloop (wgmma) and the
/// epilogue (scales, conversion, stores).
///
/// Warpgroup 0 produces (one thread issues every copy); warpgroups 1..kConsumers compute, each
/// owning 64 rows of the tile's A side. With kClusterM = 2, two CTAs on neighbouring X tiles
/// share each W tile: each loads half of it and multicasts it into both.
/// The instance source (src/codegen.cpp) defines the Spec type and `Wgmma<bn>` and includes this.
#pragma once

#include "gemm_epilogue.cuh"
#include "gemm_mainloop.cuh"
#include "gemm_producer.cuh"
#include "gemm_tile_scheduler.cuh"

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

    const int warpgroup = threadIdx.x / 128;
    const int tid_in_wg = threadIdx.x % 128;
    if (threadIdx.x == 0) {
      if (smem_addr(smem) % 1024 != 0) __trap();
      Producer<T>::init_barriers(full, empty);
    }
    // A pair's copies and arrivals reach the other CTA's barriers: both must be initialised.
    if (T::kClusterM > 1) cluster_sync();
    else __syncthreads();

    const TileScheduler<T> sched(p.m, p.batch);
    if (warpgroup == 0) {
      if (T::kConsumers == 2) regs_decrease<40>();
      if (tid_in_wg == 0) Producer<T>::run(p, sched, ring, full, empty);
      // The producer warp's other lanes wait for lane 0 here, parked, instead of waiting in the
      // cluster barrier below: a warp runs one branch at a time, and lanes polling there would
      // take issue slots from the lane that issues every copy.
      __syncwarp();
    } else {
      if (T::kConsumers == 2) regs_increase<232>();
      consume(p, sched, ring, regions + (warpgroup - 1) * T::kSmem.region_bytes, full, empty,
              warpgroup - 1, tid_in_wg);
    }
    // No CTA of a pair leaves while the other may still arrive on its barriers.
    if (T::kClusterM > 1) cluster_sync();
  }

  static __device__ __forceinline__ void consume(const GemmParams& p, const TileScheduler<T>& sched,
                                                 const u8* ring, u8* region, u64* full, u64* empty,
                                                 int consumer, int tid) {
    float acc[T::kAcc];
    float total[T::kFastAccum ? 1 : T::kAcc];
    RingPos pos;
    for (int t = sched.first; t < sched.total; t += sched.stride) {
      const Tile tile = sched.tile(t);
      if (!T::kFastAccum) {
#pragma unroll
        for (int i = 0; i < T::kAcc; ++i) total[i] = 0.0f;
      }
      const typename Epilogue<T>::Scales scales = Epilogue<T>::load_scales(p, tile, consumer, tid);
      Mainloop<T>::run(ring, full, empty, pos, acc, total, consumer, tid % 32,
                       [&] { Epilogue<T>::stage_scales(scales, region, tid); });
      Epilogue<T>::store(p, tile, T::kFastAccum ? acc : total, region, consumer, tid);
    }
    bulk_wait_all();
  }
};

}  // namespace dev
}  // namespace f8gemm
