/// \brief The consumer's mainloop: one tile's k-blocks through wgmma m64nBNk32 e4m3.
///
/// For each k-block (128 bytes of K) a consumer warpgroup builds two shared-memory descriptors
/// and issues four wgmmas whose descriptors advance by 32 bytes (+2 in the address field).
/// - Fast mode keeps one k-block in flight (wait_group 1) and frees the previous slot; the
///   accumulators chain through all of K inside the tensor core.
/// - Precise mode restarts the tensor-core sum at every k-block (scale-d = 0 on the first k32
///   step) and adds it into a second fp32 register set: the tensor core's ~14-bit additions then
///   see only 128 products at a time. With kBN <= 128 two partial-sum sets alternate, so one
///   k-block's wgmmas run while the previous one is added; wider tiles wait for each k-block.
///   Either way the partial sums are added in k-block order: the same bits.
#pragma once

#include "gemm_producer.cuh"

namespace f8gemm {
namespace dev {

template <class T>
struct Mainloop {
  /// Precise mode with a second partial-sum register set (kBN <= 128: 3 x 64 accumulators fit
  /// in a consumer's 232 registers): k-block kb's wgmmas run while kb - 1's partial sum is
  /// added into `total`, so the tensor core does not wait for each promotion.
  static constexpr bool kPipelinedPrecise = !T::kFastAccum && T::kAcc <= 64;
  /// Accumulator registers the caller provides: acc, acc2 (pipelined precise) and total.
  static constexpr int kAcc2 = kPipelinedPrecise ? T::kAcc : 1;
  static constexpr int kTotal = T::kFastAccum ? 1 : T::kAcc;

  /// Waits for slot `pos` and issues one k-block's four wgmmas into `d`, then commits.
  static __device__ __forceinline__ void issue(const u8* ring, u64* full, const RingPos& pos,
                                               float* d, int kb, int consumer) {
    mbar_wait(&full[pos.stage], pos.phase);
    const u8* x_tile = ring + pos.stage * T::kStageBytes;
    const u8* w_tile = x_tile + T::kXTileBytes;
    const u8* a_tile = (T::kSwap ? w_tile : x_tile) + consumer * 64 * 128;
    const u8* b_tile = T::kSwap ? x_tile : w_tile;
    const u64 a_desc = make_smem_desc_sw128(a_tile);
    const u64 b_desc = make_smem_desc_sw128(b_tile);
#pragma unroll
    for (int i = 0; i < T::kAcc; ++i) fence_operand(d[i]);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const u32 accumulate = T::kFastAccum ? u32(kb > 0 || kk > 0) : u32(kk > 0);
      Wgmma<T::kBN>::mma(d, a_desc + 2 * kk, b_desc + 2 * kk, accumulate);
    }
    wgmma_commit();
  }

  static __device__ __forceinline__ void fence_all(float* d) {
#pragma unroll
    for (int i = 0; i < T::kAcc; ++i) fence_operand(d[i]);
  }

  static __device__ __forceinline__ void add_into(float* total, const float* d) {
#pragma unroll
    for (int i = 0; i < T::kAcc; ++i) total[i] += d[i];
  }

  /// Accumulates the tile into acc (fast mode) or total (precise mode, which the caller
  /// zeroes). `after_first_issue` runs once, right after the first k-block's wgmmas are issued,
  /// so that its latency hides under tensor-core work.
  template <class AfterFirstIssue>
  static __device__ __forceinline__ void run(const u8* ring, u64* full, u64* empty, RingPos& pos,
                                             float* acc, float* acc2, float* total, int consumer,
                                             int lane, AfterFirstIssue&& after_first_issue) {
    if (kPipelinedPrecise) {
      int prev_stage = 0;
      // One step: issue kb into `cur`, then retire kb - 1 (held in `prev`). Unrolled by two so
      // that the register sets are named at compile time.
      auto step = [&](int kb, float* cur, float* prev) {
        issue(ring, full, pos, cur, kb, consumer);
        if (kb == 0) after_first_issue();
        if (kb > 0) {
          wgmma_wait<1>();
          fence_all(prev);
          if (lane == 0) Producer<T>::release(empty, prev_stage);
          add_into(total, prev);
        }
        prev_stage = pos.stage;
        pos.template advance<T::kStages>();
      };
      for (int kb = 0; kb < T::kKBlocks; kb += 2) {
        step(kb, acc, acc2);
        if (kb + 1 < T::kKBlocks) step(kb + 1, acc2, acc);
      }
      wgmma_wait<0>();
      float* last = T::kKBlocks % 2 == 1 ? acc : acc2;
      fence_all(last);
      if (lane == 0) Producer<T>::release(empty, prev_stage);
      add_into(total, last);
      return;
    }
    int prev_stage = 0;
    for (int kb = 0; kb < T::kKBlocks; ++kb) {
      issue(ring, full, pos, acc, kb, consumer);
      if (kb == 0) after_first_issue();
      if (T::kFastAccum) {
        // One k-block of wgmma stays in flight: wait for the previous one and free its slot.
        wgmma_wait<1>();
        fence_all(acc);
        if (kb > 0 && lane == 0) Producer<T>::release(empty, prev_stage);
      } else {
        wgmma_wait<0>();
        fence_all(acc);
        if (lane == 0) Producer<T>::release(empty, pos.stage);
        add_into(total, acc);
      }
      prev_stage = pos.stage;
      pos.template advance<T::kStages>();
    }
    if (T::kFastAccum) {
      wgmma_wait<0>();
      fence_all(acc);
      if (lane == 0) Producer<T>::release(empty, prev_stage);
    }
  }
};

}  // namespace dev
}  // namespace f8gemm
