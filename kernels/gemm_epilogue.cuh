/// \brief The epilogue: scales (and bias) in fp32, round-to-nearest-even conversion into a
/// shared-memory staging buffer, then TMA or bulk stores that drain while the next tile's wgmmas
/// run.
///
/// Accumulator i of consumer thread tid sits at A-row (tid/32)*16 + (tid%32)/4 + 8*((i/2)%2) and
/// B-row (i/4)*8 + (tid%4)*2 + i%2 of the consumer's 64 x kBN block. Output rows are tokens: the
/// A side without swap, the B side with swap.
///
/// Staging (StoreKind, gemm_params.cuh):
/// - kTmaBlock (tiled, bn % 64 == 0): the consumer's whole 64 x bn block at once, in bn / 64 boxes
///   of 64 x 64 in the 128-byte swizzle (unit u of row r at u ^ (r % 8)), written with
///   stmatrix.x4, then one tensor store per box. The stores read the boxes while the next tile's
///   mainloop runs; the next epilogue waits for those reads before its first barrier.
/// - kTmaCols32 (ping-pong, and tiled with bn % 64 == 32): 64x32 chunks in the 64-byte swizzle
///   (16-byte unit u of row r at u ^ ((r / 2) % 4): the 8 rows of an 8x8 matrix hit 8 distinct
///   16-byte bank groups), two buffers. Each warp writes its 16 rows of a chunk with two
///   stmatrix.x4 (16 columns each), and its lane 0 stores them, a 32 x 16 box: four tensor
///   stores a chunk, no barrier of the warpgroup between chunks (two a block). While one chunk's
///   stores read their buffer the next chunk is written.
/// - kTmaSwap: one [kBN tokens][64 columns] block in the 128-byte swizzle, one tensor store.
/// - kRows: rows padded by 16 bytes (conflict-free writes), one bulk copy per row.
/// The tensor map clips rows past M and columns past N. With SiLU·mul (T::kSiluMul) a block's
/// B-side columns are kBN / 2 gate columns, then the matching up columns: the thread that holds
/// gate unit u holds up unit u + kBN / 16 too, and it stages SiLU(gate) * up (silu_mul_sfu: two
/// MUFU operations a value, within its bound in silu_sfu.cuh) as output unit u: the staging and
/// the stores then see a block of kOutBN = kBN / 2 columns.
/// In a grouped GEMM, a block whose group
/// ends inside it (with kTmaCols32: a warp's 16 rows) is copied out by the threads with 16-byte
/// stores of the group's rows only (the rows after them belong to the next group, or to none).
#pragma once

#include "f8gemm_ptx.cuh"
#include "gemm_tile_scheduler.cuh"
#include "silu_sfu.cuh"

namespace f8gemm {
namespace dev {

template <class T>
struct Epilogue {
  static constexpr int kBN = T::kBN;
  static constexpr int kOutBN = T::kOutBN;  // output columns of a block (kBN / 2 with SiLU·mul)
  static constexpr bool kSwap = T::kSwap;
  // One consumer stores its own 64 x kOutBN block per tile: not a ping-pong tile (whose second
  // block would overwrite boxes that the first block's stores may still read).
  static_assert(T::kStore != StoreKind::kTmaBlock ||
                    (!T::kPingPong && T::kBlocks == 1 && !kSwap && kOutBN % 64 == 0),
                "whole-block staging is for cooperative tiles of whole 64-column boxes");
  static_assert(!T::kSiluMul || T::kStore == StoreKind::kTmaBlock ||
                    T::kStore == StoreKind::kTmaCols32,
                "SiLU·mul blocks are staged whole or in 32-column chunks");
  static constexpr int kChunks = kOutBN / 32;  // kTmaCols32 only
  static constexpr int kBufs = gemm_staging_buffers(kOutBN);
  static constexpr int kChunkBytes = 64 * 64;
  static constexpr int kRowStride = kOutBN * 2 + 16;  // kRows only

  /// One thread's share of the tile's scales: A-side row tid (< 64) and B-side rows tid and
  /// tid + 128 (< kBN). The A side is X (non-swap) or W (swap); bias follows W's side.
  struct Scales {
    float a = 0.0f, a_bias = 0.0f, b[2] = {0.0f, 0.0f}, b_bias[2] = {0.0f, 0.0f};
  };

  static __device__ __forceinline__ float bias_at(const GemmParams& p, int b, i64 n) {
    if (T::kBias == BiasKind::kF32) return static_cast<const float*>(p.bias)[b * T::kN + n];
    if (T::kBias == BiasKind::kBF16) {
      return bf16_to_float(static_cast<const u16*>(p.bias)[b * T::kN + n]);
    }
    return 0.0f;
  }

  /// SiLU·mul: the W row of B-side index idx (< kBN), or -1 past the rows W has. Index
  /// idx < kBN / 2 is gate row n0 + idx, and idx + kBN / 2 the up row kOutN later.
  static __device__ __forceinline__ i64 silu_mul_w_row(const Tile& tile, int idx) {
    const i64 col = tile.n0 + idx % (kBN / 2);
    return col < T::kOutN ? col + (idx / (kBN / 2)) * T::kOutN : -1;
  }

  /// Loads this thread's scales into registers before the mainloop; rows past M or N get 0.
  /// The consumer's block starts at A-side row a_block * 64 of the tile.
  static __device__ __forceinline__ Scales load_scales(const GemmParams& p, const Tile& tile,
                                                       int a_block, int tid) {
    Scales s;
    const float* xs = p.x_scale + i64(tile.xb) * p.m;
    const float* ws = p.w_scale + i64(tile.b) * T::kN;
    if (tid < 64) {
      const int row = (kSwap ? tile.n0 : tile.m0) + a_block * 64 + tid;
      if (!kSwap && row < tile.m_end) s.a = xs[row];
      if (kSwap && row < T::kN) {
        s.a = ws[row];
        s.a_bias = bias_at(p, tile.b, row);
      }
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int idx = tid + i * 128;
      const int row = (kSwap ? tile.m0 : tile.n0) + idx;
      if (idx < kBN) {
        if (kSwap && row < tile.m_end) s.b[i] = xs[row];
        if constexpr (T::kSiluMul) {
          const i64 w_row = silu_mul_w_row(tile, idx);
          if (w_row >= 0) {
            s.b[i] = ws[w_row];
            s.b_bias[i] = bias_at(p, tile.b, w_row);
          }
        } else if (!kSwap && row < T::kN) {
          s.b[i] = ws[row];
          s.b_bias[i] = bias_at(p, tile.b, row);
        }
      }
    }
    return s;
  }

  /// The tile's scales in this consumer's region, after the staging buffer: A side [64], its
  /// bias [64], B side [kBN], its bias [kBN].
  static __device__ __forceinline__ float* scale_area(u8* region) {
    return reinterpret_cast<float*>(region + T::kSmem.staging_bytes);
  }

  /// Writes this thread's scales into shared memory, right after the first k-block's wgmmas are
  /// issued. Safe: every thread of the consumer passed the previous epilogue's last barrier,
  /// after its last read; the epilogue's first barrier makes them visible.
  static __device__ __forceinline__ void stage_scales(const Scales& scales, u8* region, int tid) {
    float* sa = scale_area(region);
    if (tid < 64) {
      sa[tid] = scales.a;
      sa[64 + tid] = scales.a_bias;
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      if (tid + i * 128 < kBN) {
        sa[128 + tid + i * 128] = scales.b[i];
        sa[128 + kBN + tid + i * 128] = scales.b_bias[i];
      }
    }
  }

  /// This thread's B-side scales for every 8-column unit of the block (columns unit * 8 +
  /// (lane % 4) * 2 and + 1), read from shared memory all at once: one wait for kBN / 8 loads
  /// instead of one per chunk behind the mainloop's shared-memory traffic (perf log, card 60).
  struct ScalesB {
    float2 v[kBN / 8];
  };
  static __device__ __forceinline__ ScalesB load_scales_b(const float* sb, int b_col0) {
    ScalesB r;
#pragma unroll
    for (int u = 0; u < kBN / 8; ++u) r.v[u] = *reinterpret_cast<const float2*>(sb + u * 8 + b_col0);
    return r;
  }

  /// Byte offset of output element (row, col) in the kTmaSwap block, a kTmaBlock box or the
  /// kRows buffer.
  static __device__ __forceinline__ int staged_offset(int row, int col) {
    if (T::kStore == StoreKind::kRows) return row * kRowStride + col * 2;
    const int byte = col * 2;
    return row * 128 + (((byte / 16) ^ (row % 8)) * 16) + byte % 16;
  }

  /// kTmaBlock: one 64 x 64 box, and the byte offset of 8-column unit `unit` of block row `row`
  /// (box unit / 8, in the 128-byte swizzle of staged_offset).
  static constexpr int kBoxBytes = 64 * 128;
  static __device__ __forceinline__ int block_offset(int row, int unit) {
    return (unit / 8) * kBoxBytes + staged_offset(row, (unit % 8) * 8);
  }

  /// The staged bias of columns col, col + 1 of the B side; none is read or added without a
  /// bias (an added +0.0 would also turn a -0.0 product into +0.0).
  static constexpr bool kHasBias = T::kBias != BiasKind::kNone;
  static __device__ __forceinline__ float2 bias_pair(const float* sb_bias, int col) {
    return kHasBias ? *reinterpret_cast<const float2*>(sb_bias + col) : make_float2(0.0f, 0.0f);
  }
  static __device__ __forceinline__ float plus_bias(float y, float bias) {
    return kHasBias ? y + bias : y;
  }

  static __device__ __forceinline__ u32 pack2(float y0, float y1) {
    return T::kOutF16 ? pack_f16x2(y0, y1) : pack_bf16x2(y0, y1);
  }
  static __device__ __forceinline__ u16 to_out(float y) {
    return T::kOutF16 ? to_f16(y) : to_bf16(y);
  }

  /// The two values of 8-column unit `unit` of the block (B-side columns unit * 8 + b_col0 and
  /// + 1) in row half `half` (A-row a_row0 + 8 * half): (acc * xs) * ws + bias, the same order
  /// as the swap path.
  static __device__ __forceinline__ float2 scaled_pair(const float* acc, int unit, int half,
                                                       const float (&s_a)[2],
                                                       const ScalesB& scales_b,
                                                       const float* sb_bias, int b_col0) {
    const float2 s_b = scales_b.v[unit];
    const float2 bias_b = bias_pair(sb_bias, unit * 8 + b_col0);
    const int i = unit * 4 + half * 2;
    return make_float2(plus_bias(acc[i] * s_a[half] * s_b.x, bias_b.x),
                       plus_bias(acc[i + 1] * s_a[half] * s_b.y, bias_b.y));
  }

  /// The two packed outputs of output unit `unit` (columns unit * 8 + b_col0 and + 1 of the
  /// block's kOutBN) in row half `half`: the scaled values, or with SiLU·mul SiLU(gate) * up
  /// from gate unit `unit` and up unit unit + kBN / 16, rounded once into the output type.
  static __device__ __forceinline__ u32 out_pair(const float* acc, int unit, int half,
                                                 const float (&s_a)[2], const ScalesB& scales_b,
                                                 const float* sb_bias, int b_col0) {
    const float2 v = scaled_pair(acc, unit, half, s_a, scales_b, sb_bias, b_col0);
    if constexpr (T::kSiluMul) {
      const float2 up = scaled_pair(acc, unit + kBN / 16, half, s_a, scales_b, sb_bias, b_col0);
      return pack2(silu_mul_sfu(v.x, up.x), silu_mul_sfu(v.y, up.y));
    }
    return pack2(v.x, v.y);
  }

  /// Grouped GEMM: 16 staged bytes (8 outputs) to row `row`, columns col..col + 7 of Y (one
  /// matrix), if the row is the group's and the columns exist (N % 8 == 0: all 8 or none).
  static __device__ __forceinline__ void copy_unit(const GemmParams& p, const u8* staged, int row,
                                                   int m_end, i64 col) {
    if (row < m_end && col < T::kOutN) {
      *reinterpret_cast<uint4*>(static_cast<u16*>(p.out) + i64(row) * T::kOutN + col) =
          *reinterpret_cast<const uint4*>(staged);
    }
  }

  /// `consumer` names the warpgroup (its named barrier), `a_block` its rows in the tile.
  /// `mark(event)` records the epilogue's inner moments, kTraceEpilogueEntered and
  /// kTraceEpilogueStaged, in an instrumented instance (gemm_trace.cuh); elsewhere it is empty.
  template <class Mark>
  static __device__ __forceinline__ void store(const GemmParams& p, const Tile& tile,
                                               const float* acc, u8* region, int consumer,
                                               int a_block, int tid, Mark&& mark) {
    const int warp = tid / 32, lane = tid % 32;
    const int a_row0 = warp * 16 + lane / 4;
    const int b_col0 = (lane % 4) * 2;
    const float* sa = scale_area(region);
    const float* sa_bias = sa + 64;
    const float* sb = sa + 128;
    const float* sb_bias = sb + kBN;
    const i64 first_col = kSwap ? tile.n0 + a_block * 64 : tile.n0;
    const int first_row = kSwap ? tile.m0 : tile.m0 + a_block * 64;

    if constexpr (T::kStore == StoreKind::kTmaBlock) {
      // The whole block at once: box c holds columns 64c..64c+63 of the 64 rows, 128 bytes a
      // row, unit u of row r at unit u ^ (r % 8). The previous tile's stores read the boxes
      // while this tile's mainloop ran (a tile earlier), so the wait below rarely waits; then
      // every thread writes all its values, and lane 0 of warp c stores box c. Two barriers a
      // tile. A tensor store takes about 100 cycles to issue, and the warpgroup's next wgmma
      // waits for its slowest warp: one thread issuing all four boxes of a 256-column block
      // held the next mainloop back by 340-460 cycles (perf log, cards 89 and 91).
      static_assert(kOutBN / 64 <= 4, "one box per warp of the warpgroup");
      const bool stores_box = lane == 0 && warp < kOutBN / 64;
      if (stores_box) bulk_wait_read<0>();  // async groups are per thread: the box's own store
      named_barrier(1 + consumer, 128);
      mark(kTraceEpilogueEntered);
      const float s_a[2] = {sa[a_row0], sa[a_row0 + 8]};
      const ScalesB scales_b = load_scales_b(sb, b_col0);
      const int lm = lane / 8;
      const int row = warp * 16 + (lm % 2) * 8 + lane % 8;  // the row this lane addresses
#pragma unroll
      for (int q = 0; q < kOutBN / 16; ++q) {
        // Unit pair q: matrix m holds rows 8 * (m % 2) of the warp's 16 and unit 2q + m / 2.
        u32 packed[4];
#pragma unroll
        for (int m = 0; m < 4; ++m) {
          packed[m] = out_pair(acc, 2 * q + m / 2, m % 2, s_a, scales_b, sb_bias, b_col0);
        }
        const int unit = 2 * q + lm / 2;  // of the block's kOutBN / 8
        stmatrix_x4(region + block_offset(row, unit), packed[0], packed[1], packed[2], packed[3]);
      }
      fence_proxy_async();
      named_barrier(1 + consumer, 128);
      mark(kTraceEpilogueStaged);
      if (T::kGrouped && first_row + 64 > tile.m_end) {
        // 64 rows of kOutBN / 8 units. These reads come before this thread's next barrier (the
        // next tile's first), after which the boxes are rewritten.
#pragma unroll 4
        for (int idx = tid; idx < 64 * (kOutBN / 8); idx += 128) {
          const int r = idx / (kOutBN / 8), unit = idx % (kOutBN / 8);
          copy_unit(p, region + block_offset(r, unit), first_row + r, tile.m_end,
                    first_col + unit * 8);
        }
        return;
      }
      if (stores_box && first_row < tile.m_end) {
        if (first_col + warp * 64 < T::kOutN) {
          tma_store_3d(&p.out_map, region + warp * kBoxBytes, int(first_col) + warp * 64,
                       first_row, tile.xb);
        }
        bulk_commit();
      }
      return;
    }

    if constexpr (T::kStore == StoreKind::kTmaCols32) {
      // Each warp stores its own 16 rows of a chunk (a 32-column x 16-row box, issued by its
      // lane 0), so the warps never wait for one another inside the epilogue: a chunk costs a
      // proxy fence and a __syncwarp() where it cost a barrier of the warpgroup (perf log, card
      // 61: a quarter of the ping-pong epilogue's stall samples sat at those barriers). Async
      // groups are per thread, so lane 0 alone knows when its stores have read their buffer:
      // chunk c + 1 goes where chunk c - 1 was, once at most one store (chunk c's) is pending.
      // With one buffer (kOutBN == 32) there is one chunk. The first barrier publishes the staged
      // scales; the last keeps them (and the bias) until every thread has read them.
      static_assert(T::kStore != StoreKind::kTmaCols32 || kBufs == 2 || kChunks <= 1,
                    "chunk c + 1 reuses chunk c - 1's buffer");
      if (lane == 0) bulk_wait_read<0>();  // the previous block's stores have read both buffers
      named_barrier(1 + consumer, 128);
      mark(kTraceEpilogueEntered);
      const float s_a[2] = {sa[a_row0], sa[a_row0 + 8]};
      const ScalesB scales_b = load_scales_b(sb, b_col0);
      const int warp_row = first_row + warp * 16;
      // A grouped block whose group ends inside this warp's rows: copied out by its lanes.
      const bool copy_rows = T::kGrouped && warp_row + 16 > tile.m_end;
      // Chunk c's outputs for this thread's two stmatrix.x4 (matrix m of pair `pair`: rows
      // 8 * (m % 2) of the warp's 16, 8-column unit jj = 2 * pair + m / 2 of the chunk).
      auto compute = [&](int c, u32 (&packed)[2][4]) {
#pragma unroll
        for (int pair = 0; pair < 2; ++pair) {
#pragma unroll
          for (int m = 0; m < 4; ++m) {
            packed[pair][m] =
                out_pair(acc, c * 4 + 2 * pair + m / 2, m % 2, s_a, scales_b, sb_bias, b_col0);
          }
        }
      };
      // Software-pipelined by one chunk: chunk c + 1's values are computed between chunk c's
      // proxy fence and its store.
      u32 packed[2][4];
      compute(0, packed);
      // Not needed for order (the barrier above already puts lane 0's wait before every lane's
      // writes below); kept because the instances were measured with it (perf log, card 61).
      __syncwarp();
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        u8* buf = region + (c % kBufs) * kChunkBytes;
        u8* slice = buf + warp * 16 * 64;  // the warp's 16 rows: a box of its own
        const int lm = lane / 8;
        const int row = (lm % 2) * 8 + lane % 8;  // of the warp's 16; the swizzle repeats every 8
#pragma unroll
        for (int pair = 0; pair < 2; ++pair) {
          const int jj = 2 * pair + lm / 2;
          stmatrix_x4(slice + row * 64 + ((jj ^ ((row >> 1) & 3)) << 4), packed[pair][0],
                      packed[pair][1], packed[pair][2], packed[pair][3]);
        }
        fence_proxy_async();
        __syncwarp();
        if (c + 1 < kChunks) compute(c + 1, packed);
        if (copy_rows) {
          // 16 rows of 4 16-byte units; unit u of row r sits at unit u ^ ((r / 2) % 4). These
          // reads come before the warp's next __syncwarp(), after which the buffer may be
          // rewritten (chunk c + 2).
#pragma unroll
          for (int idx = lane; idx < 16 * 4; idx += 32) {
            const int r = idx / 4, u = idx % 4;
            copy_unit(p, slice + r * 64 + ((u ^ ((r >> 1) & 3)) << 4), warp_row + r, tile.m_end,
                      first_col + c * 32 + u * 8);
          }
        }
        if (lane == 0) {
          if (!copy_rows && warp_row < tile.m_end && first_col + c * 32 < T::kOutN) {
            tma_store_3d(&p.out_map, slice, int(first_col) + c * 32, warp_row, tile.xb);
          }
          bulk_commit();
          // Chunk c - 1's store has read the buffer that chunk c + 1 writes.
          if (c + 1 < kChunks) bulk_wait_read<1>();
        }
        __syncwarp();
      }
      mark(kTraceEpilogueStaged);
      named_barrier(1 + consumer, 128);
      return;
    }

    // kTmaSwap and kRows: one buffer. The previous tile's stores must have finished reading it,
    // and every thread's staged scales must be visible.
    bulk_wait_read<0>();
    named_barrier(1 + consumer, 128);
    mark(kTraceEpilogueEntered);
    const float s_a[2] = {sa[a_row0], sa[a_row0 + 8]};
    const float bias_a[2] = {kHasBias ? sa_bias[a_row0] : 0.0f,
                             kHasBias ? sa_bias[a_row0 + 8] : 0.0f};
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j) {
      const int b_col = j * 8 + b_col0;
      const float2 s_b = *reinterpret_cast<const float2*>(sb + b_col);
      const float2 bias_b = bias_pair(sb_bias, b_col);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int a_row = a_row0 + half * 8;
        const float v0 = acc[j * 4 + half * 2], v1 = acc[j * 4 + half * 2 + 1];
        if (!kSwap) {
          const float y0 = plus_bias(v0 * s_a[half] * s_b.x, bias_b.x);
          const float y1 = plus_bias(v1 * s_a[half] * s_b.y, bias_b.y);
          *reinterpret_cast<u32*>(region + staged_offset(a_row, b_col)) = pack2(y0, y1);
        } else {
          const float y0 = plus_bias(v0 * s_b.x * s_a[half], bias_a[half]);
          const float y1 = plus_bias(v1 * s_b.y * s_a[half], bias_a[half]);
          *reinterpret_cast<u16*>(region + staged_offset(b_col, a_row)) = to_out(y0);
          *reinterpret_cast<u16*>(region + staged_offset(b_col + 1, a_row)) = to_out(y1);
        }
      }
    }
    fence_proxy_async();
    named_barrier(1 + consumer, 128);
    mark(kTraceEpilogueStaged);
    if constexpr (T::kStore == StoreKind::kTmaSwap) {
      if (T::kGrouped && first_row + kBN > tile.m_end) {
        // kBN token rows of 8 16-byte units; unit u of row r sits at unit u ^ (r % 8).
        for (int idx = tid; idx < kBN * 8; idx += 128) {
          const int r = idx / 8, u = idx % 8;
          copy_unit(p, region + r * 128 + ((u ^ (r % 8)) << 4), first_row + r, tile.m_end,
                    first_col + u * 8);
        }
        return;
      }
      if (tid == 0 && first_row < tile.m_end && first_col < T::kN) {
        tma_store_3d(&p.out_map, region, int(first_col), first_row, tile.xb);
        bulk_commit();
      }
      return;
    }
    // kRows: one bulk copy per output row (rows are contiguous in global memory).
    const int cols = int(min(i64(kBN), T::kN - first_col));
    if (cols > 0) {
      for (int r = tid; r < 64; r += 128) {
        const int m = tile.m0 + a_block * 64 + r;
        if (m < tile.m_end) {
          u16* dst = static_cast<u16*>(p.out) + (i64(tile.xb) * p.m + m) * T::kN + first_col;
          bulk_store(dst, region + r * kRowStride, u32(cols) * 2u);
        }
      }
      bulk_commit();
    }
  }
};

}  // namespace dev
}  // namespace f8gemm
