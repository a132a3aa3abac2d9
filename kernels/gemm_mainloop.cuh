/// \brief The consumer's mainloop: one tile's k-blocks through wgmma m64nBNk32 e4m3.
///
/// For each k-block (128 bytes of K) a consumer warpgroup builds the shared-memory descriptors
/// and issues four wgmmas per 64-row block of its A side (kBlocks: one, or two for a 128-row
/// ping-pong tile), whose descriptors advance by 32 bytes (+2 in the address field).
/// - Fast mode keeps one k-block in flight (wait_group 1) and frees the previous slot; the
///   accumulators chain through all of K inside the tensor core.
/// - Precise mode restarts the tensor-core sum at every k-block (scale-d = 0 on the first k32
///   step), waits for it and adds it into a second fp32 register set: the tensor core's ~14-bit
///   additions then see only 128 products at a time.
#pragma once

#include "gemm_producer.cuh"

namespace f8gemm {
namespace dev {

template <class T>
struct Mainloop {
  /// Accumulates the consumer's 64 x kBN block (A-side rows a_block * 64 onwards) over `kblocks`
  /// k-blocks into acc (fast mode) or total (precise mode, which the caller zeroes).
  /// `after_first_issue` runs once, right after the first k-block's wgmmas are issued, so that
  /// its latency hides under tensor-core work.
  template <class AfterFirstIssue>
  static __device__ __forceinline__ void run(const u8* ring, u64* full, u64* empty, RingPos& pos,
                                             float* acc, float* total, int kblocks,
                                             int a_block, int lane,
                                             AfterFirstIssue&& after_first_issue) {
    int prev_stage = 0;
    for (int kb = 0; kb < kblocks; ++kb) {
      mbar_wait(&full[pos.stage], pos.phase);
      const u8* x_tile = ring + pos.stage * T::kStageBytes;
      const u8* w_tile = x_tile + T::kXTileBytes;
      const u8* b_tile = T::kSwap ? x_tile : w_tile;
      const u64 b_desc = make_smem_desc_sw128(b_tile);
#pragma unroll
      for (int i = 0; i < T::kAccAll; ++i) fence_operand(acc[i]);
      wgmma_fence();
#pragma unroll
      for (int blk = 0; blk < T::kBlocks; ++blk) {
        const u8* a_tile = (T::kSwap ? w_tile : x_tile) + (a_block + blk) * 64 * 128;
        const u64 a_desc = make_smem_desc_sw128(a_tile);
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
          const u32 accumulate = T::kFastAccum ? u32(kb > 0 || kk > 0) : u32(kk > 0);
          Wgmma<T::kBN>::mma(acc + blk * T::kAcc, a_desc + 2 * kk, b_desc + 2 * kk, accumulate);
        }
      }
      wgmma_commit();
      if (kb == 0) after_first_issue();
      if (T::kFastAccum) {
        // One k-block of wgmma stays in flight: wait for the previous one and free its slot.
        wgmma_wait<1>();
#pragma unroll
        for (int i = 0; i < T::kAccAll; ++i) fence_operand(acc[i]);
        if (kb > 0 && lane == 0) Producer<T>::release(empty, prev_stage);
      } else {
        wgmma_wait<0>();
#pragma unroll
        for (int i = 0; i < T::kAccAll; ++i) fence_operand(acc[i]);
        if (lane == 0) Producer<T>::release(empty, pos.stage);
#pragma unroll
        for (int i = 0; i < T::kAccAll; ++i) total[i] += acc[i];
      }
      prev_stage = pos.stage;
      pos.template advance<T::kStages>();
    }
    if (T::kFastAccum) {
      wgmma_wait<0>();
#pragma unroll
      for (int i = 0; i < T::kAccAll; ++i) fence_operand(acc[i]);
      if (lane == 0) Producer<T>::release(empty, prev_stage);
    }
  }
};

}  // namespace dev
}  // namespace f8gemm
