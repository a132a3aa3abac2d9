/// \brief The consumer's mainloop: one tile's k-blocks through wgmma m64nBNk32 e4m3.
///
/// For each k-block (128 bytes of K) a consumer warpgroup offsets the ring's shared-memory
/// descriptor (built once) to the slot's tiles and issues four wgmmas per 64-row block of its A
/// side (kBlocks: one, or two for a 128-row ping-pong tile), whose descriptors advance by 32
/// bytes (+2 in the address field).
/// - Fast mode keeps one k-block in flight (wait_group 1) and frees the previous slot; the
///   accumulators chain through all of K inside the tensor core.
/// - Precise mode restarts the tensor-core sum at every k-block (scale-d = 0 on the first k32
///   step), waits for it and adds it into a second fp32 register set: the tensor core's ~14-bit
///   additions then see only 128 products at a time. A block wider than 192 columns does this
///   in two column slices (gemm_promote_cols), one after the other, so that the k-block sum of
///   only one slice is live beside the total: 128 + 64 registers at bn = 256. A 64-row block of
///   96 to 192 columns pipelines its two slices instead (gemm_promote_pipelined): each has an
///   accumulator set, and one slice's sum is added while the other's wgmmas run.
#pragma once

#include "gemm_producer.cuh"

namespace f8gemm {
namespace dev {

template <class T>
struct Mainloop {
  /// Accumulates the consumer's 64 x kBN block (A-side rows a_block * 64 onwards) over `kblocks`
  /// k-blocks into acc (fast mode) or total (precise mode, which the caller zeroes).
  /// `after_first_issue` runs once, right after the first k-block's wgmmas are issued, so that
  /// its latency hides under tensor-core work. `after_last_issue` runs once, right after the last
  /// k-block's wgmmas are issued, while they are still in flight: a ping-pong consumer hands its
  /// turn over there, so that the other consumer's wgmmas queue behind these (perf log, card 46).
  template <class AfterFirstIssue, class AfterLastIssue>
  static __device__ __forceinline__ void run(const u8* ring, u64* full, u64* empty, RingPos& pos,
                                             float* acc, float* total, int kblocks,
                                             int a_block, int tid,
                                             AfterFirstIssue&& after_first_issue,
                                             AfterLastIssue&& after_last_issue) {
    int prev_stage = 0;
    // The ring's descriptor, built once: a slot's (and a 64-row block's, a k32 step's) differs
    // only in the start address, in 16-byte units (the ring ends below 256 KB: no carry out).
    const u64 ring_desc = make_smem_desc_sw128(ring);
    for (int kb = 0; kb < kblocks; ++kb) {
      mbar_wait(&full[pos.stage], pos.phase);
      const u64 x_desc = ring_desc + u64(pos.stage * (T::kStageBytes / 16));
      const u64 w_desc = x_desc + u64(T::kXTileBytes / 16);
      const u64 a_side = (T::kSwap ? w_desc : x_desc) + u64(a_block * 64 * 128 / 16);
      const u64 b_tile = T::kSwap ? x_desc : w_desc;
      if (T::kFastAccum) {
        issue(acc, a_side, b_tile, kb > 0);
        if (kb == 0) after_first_issue();
        if (kb == kblocks - 1) after_last_issue();
        // One k-block of wgmma stays in flight: wait for the previous one and free its slot.
        wgmma_wait<1>();
        fence_all<T::kAccAll>(acc);
        if (kb > 0) Producer<T>::release(empty, prev_stage, tid);
      } else if constexpr (T::kPromotePipelined) {
        // Two half-width slices, each in its own accumulator set, issued back to back; slice 0's
        // sum is added while slice 1's wgmmas run (wait_group 1), then slice 1's. The pipeline
        // does not cross k-blocks: ptxas serialises every wgmma when a wait retires a group
        // issued in an earlier loop iteration (C7514, perf log card 54).
        issue(acc, a_side, b_tile, false);
        if (kb == 0) after_first_issue();
        issue(acc + T::kSliceAcc, a_side, b_tile + u64(T::kPromoteCols * 128 / 16), false);
        if (kb == kblocks - 1) after_last_issue();
        wgmma_wait<1>();
        promote(acc, total);
        wgmma_wait<0>();
        Producer<T>::release(empty, pos.stage, tid);
        promote(acc + T::kSliceAcc, total + T::kSliceAcc);
      } else {
#pragma unroll
        for (int slice = 0; slice < T::kSlices; ++slice) {
          // The slice's columns are rows slice * kPromoteCols onwards of the B tile.
          issue(acc, a_side, b_tile + u64(slice * T::kPromoteCols * 128 / 16), false);
          if (kb == 0 && slice == 0) after_first_issue();
          if (kb == kblocks - 1 && slice == T::kSlices - 1) after_last_issue();
          wgmma_wait<0>();
          fence_all<T::kSliceAcc>(acc);
          if (slice == T::kSlices - 1) Producer<T>::release(empty, pos.stage, tid);
          float* into = total + slice * T::kSliceAcc;
#pragma unroll
          for (int i = 0; i < T::kSliceAcc; ++i) into[i] += acc[i];
        }
      }
      prev_stage = pos.stage;
      pos.template advance<T::kStages>();
    }
    if (T::kFastAccum) {
      wgmma_wait<0>();
      fence_all<T::kAccAll>(acc);
      Producer<T>::release(empty, prev_stage, tid);
    }
  }

 private:
  template <int kCount>
  static __device__ __forceinline__ void fence_all(float* acc) {
#pragma unroll
    for (int i = 0; i < kCount; ++i) fence_operand(acc[i]);
  }

  /// Adds one finished slice's k-block sum into its part of the total.
  static __device__ __forceinline__ void promote(float* sum, float* into) {
    fence_all<T::kSliceAcc>(sum);
#pragma unroll
    for (int i = 0; i < T::kSliceAcc; ++i) into[i] += sum[i];
  }

  /// One k-block's wgmmas over kPromoteCols columns of B (all of them in fast mode), for each
  /// 64-row block of the A side, committed as one group. `chain` continues the accumulators (fast
  /// mode after the first k-block); otherwise the first k32 step starts them from zero.
  static __device__ __forceinline__ void issue(float* acc, u64 a_side, u64 b_desc, bool chain) {
    fence_all<T::kSliceAcc>(acc);
    wgmma_fence();
#pragma unroll
    for (int blk = 0; blk < T::kBlocks; ++blk) {
      const u64 a_desc = a_side + u64(blk * 64 * 128 / 16);
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        Wgmma<T::kPromoteCols>::mma(acc + blk * T::kPromoteCols / 2, a_desc + 2 * kk,
                                    b_desc + 2 * kk, u32(chain || kk > 0));
      }
    }
    wgmma_commit();
  }
};

}  // namespace dev
}  // namespace f8gemm
