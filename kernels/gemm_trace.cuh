/// \brief Per-tile timestamps for GemmOptions::trace (events and buffer layout: gemm_params.cuh).
/// Only an instance whose source defines F8GEMM_TRACE records them; in every other instance each
/// mark compiles to nothing, so the kernel that serves calls is the same code with or without
/// this header.
#pragma once

#include "f8gemm_ptx.cuh"

namespace f8gemm {
namespace dev {

/// One consumer warpgroup's records in its CTA. Its first thread reads the SM's clock64() and
/// stores it: one 8-byte store per event and tile, a few cycles against a tile's thousands.
struct TileTrace {
#ifdef F8GEMM_TRACE
  u64* records = nullptr;  ///< this consumer's first record (null: not the first thread, or off)
  int capacity = 0;

  __device__ __forceinline__ TileTrace(const GemmParams& p, int consumer, int tid) {
    if (p.trace != nullptr && tid == 0) {
      records = cta_words(p) + kTraceHeaderWords + i64(consumer) * p.trace_tiles * kTraceEvents;
      capacity = p.trace_tiles;
    }
  }
  __device__ __forceinline__ void mark(int tile, TraceEvent event) const {
    if (records != nullptr && tile < capacity) records[tile * kTraceEvents + event] = clock64();
  }
  /// After the consumer's last tile: how many it ran and, by consumer 0, the CTA's header.
  __device__ __forceinline__ void finish(const GemmParams& p, int consumer, int consumers,
                                         int tiles) const {
    if (records == nullptr) return;
    u64* header = cta_words(p);
    header[2 + consumer] = u64(tiles);
    if (consumer == 0) {
      u32 sm;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
      header[1] = sm;
      header[0] = u64(consumers + 1);
    }
  }

 private:
  static __device__ __forceinline__ u64* cta_words(const GemmParams& p) {
    return p.trace + i64(blockIdx.x) * gemm_trace_cta_words(p.trace_tiles);
  }
#else
  __device__ __forceinline__ TileTrace(const GemmParams&, int, int) {}
  __device__ __forceinline__ void mark(int, TraceEvent) const {}
  __device__ __forceinline__ void finish(const GemmParams&, int, int, int) const {}
#endif
};

}  // namespace dev
}  // namespace f8gemm
