/// \brief The persistent tile schedule: which output tiles a CTA computes, in which order.
///
/// Work is counted in cluster tiles: kClusterM X tiles that share one W tile (with 1x1 clusters
/// a cluster tile is a tile). A split-K cluster computes one tile, each CTA over its slice of K.
/// The grid is a whole number of clusters, and cluster c takes cluster tiles c, c + clusters,
/// ... over all batches (or groups), so all CTAs of a cluster always run the same tiles and the
/// same k-blocks in step, which their shared W loads and their reductions need. Inside a batch,
/// cluster tiles are rasterised in bands of X tiles along the W dimension, so that consecutive
/// clusters share W (or X) tiles in L2.
///
/// A grouped GEMM (mixture-of-experts) reads its group sizes on the device: every CTA first
/// builds, in shared memory, each group's first and end row and first cluster tile from
/// m_sizes (GroupTables), and tile t is then found by a binary search over the first tiles.
/// A negative size counts as 0 and the groups are clipped at the matrix's rows, so no size can
/// make the kernel read or write out of bounds. Empty groups own no tile.
#pragma once

#include "f8gemm_ptx.cuh"
#include "gemm_traits.cuh"

namespace f8gemm {
namespace dev {

struct Tile {
  int b;      // batch, or group: W's batch coordinate, and that of the W scales and bias
  int xb;     // X's and Y's batch coordinate (0 in a grouped GEMM: X and Y are one matrix each)
  int m0;     // first X row (within X's batch xb)
  int n0;     // first W row (SiLU·mul: first gate row, the up rows follow kOutN later)
  int m_end;  // the first row past this tile's batch or group: rows from here on are not stored
};

/// The grouped GEMM's per-group tables in shared memory (gemm_params.cuh, "groups").
template <class T>
struct GroupTables {
  int* first_tile;  // [G + 1]: cluster tiles of groups before g; [G] is the total
  int* first_row;   // [G]
  int* end_row;     // [G]

  __device__ __forceinline__ explicit GroupTables(u8* smem) {
    first_tile = reinterpret_cast<int*>(smem + T::kSmem.groups_offset);
    first_row = first_tile + T::kGroupsCap + 1;
    end_row = first_row + T::kGroupsCap;
  }

  static __device__ __forceinline__ int cluster_tiles_of(int rows) {
    const int tiles_x = (rows + T::kXRows - 1) / T::kXRows;
    return (tiles_x + T::kClusterM - 1) / T::kClusterM * T::kWTiles;
  }

  /// Exclusive prefix over the CTA's threads of one value each; `scratch` holds a slot per warp.
  static __device__ __forceinline__ i64 exclusive_scan(i64 v, i64* scratch) {
    // The warp index through a shuffle from lane 0: the compiler then knows it is the same in
    // every lane. From threadIdx.x / 32 directly, the loop below has a trip count it cannot
    // prove warp-uniform, and ptxas then keeps the whole kernel's ring positions and
    // descriptors in per-thread registers, copied to uniform ones before every wgmma: 120 R2UR
    // against 17 in the 64x256 ping-pong (perf log, card 43; card 35 for the dense kernel).
    const int lane = threadIdx.x % 32;
    const int warp = __shfl_sync(0xffffffffu, int(threadIdx.x / 32), 0);
    i64 x = v;
#pragma unroll
    for (int off = 1; off < 32; off *= 2) {
      const i64 y = __shfl_up_sync(0xffffffffu, x, off);
      if (lane >= off) x += y;
    }
    if (lane == 31) scratch[warp] = x;
    __syncthreads();
    i64 base = 0;
    for (int w = 0; w < warp; ++w) base += scratch[w];
    __syncthreads();  // scratch may be reused
    return base + x - v;
  }

  /// Fills the tables from p.m_sizes; every thread of the CTA calls it. `scratch` is shared
  /// memory nobody uses yet (kThreads / 32 slots).
  __device__ __forceinline__ void build(const GemmParams& p, i64* scratch) {
    const int groups = p.batch;
    const int per = (groups + T::kThreads - 1) / T::kThreads;
    const int g_begin = min(groups, int(threadIdx.x) * per), g_end = min(groups, g_begin + per);
    // Sizes clamped to [0, M] (M: total_M, or M_max when padded), kept in end_row for now.
    i64 rows = 0;
    for (int g = g_begin; g < g_end; ++g) {
      i64 size = p.sizes_i64 ? static_cast<const i64*>(p.m_sizes)[g]
                             : i64(static_cast<const int*>(p.m_sizes)[g]);
      size = size < 0 ? 0 : (size > p.m ? p.m : size);
      end_row[g] = int(size);
      rows += size;
    }
    i64 row = exclusive_scan(rows, scratch);
    i64 tiles = 0;
    for (int g = g_begin; g < g_end; ++g) {
      const i64 size = end_row[g];
      i64 first, end;
      if (p.padded) {
        first = i64(g) * p.m;
        end = first + size;
      } else {
        // Stacked: clipped at total_M.
        first = row < p.m ? row : p.m;
        end = row + size < p.m ? row + size : p.m;
        row += size;
      }
      first_row[g] = int(first);
      end_row[g] = int(end);
      tiles += cluster_tiles_of(int(end - first));
    }
    i64 tile = exclusive_scan(tiles, scratch);
    for (int g = g_begin; g < g_end; ++g) {
      first_tile[g] = int(tile);
      tile += cluster_tiles_of(end_row[g] - first_row[g]);
    }
    if (g_end == groups && g_begin < g_end) first_tile[groups] = int(tile);
    if (groups == 0 && threadIdx.x == 0) first_tile[0] = 0;
    // The scratch was written through the generic proxy; TMA (the async proxy) writes the same
    // bytes of the ring next, after the CTA's barrier.
    fence_proxy_async();
  }
};

template <class T>
struct TileScheduler {
  // Raster bands in cluster tiles: raster X tiles (at least one cluster tile).
  static constexpr int kBand = T::kRaster / T::kClusterM > 0 ? T::kRaster / T::kClusterM : 1;

  int m;          // rows of a batch (unused when grouped)
  int cluster_x;  // cluster tiles along X in one batch (unused when grouped)
  int total;      // cluster tiles in the launch
  int first, stride;
  int rank;       // this CTA's X tile within the cluster tile (0 unless kClusterM = 2)
  int k_rank;     // this CTA's slice of K (0 unless kSplitK > 1)
  int kb_begin, kb_count;  // the k-blocks of its slice
  int groups;
  GroupTables<T> tables;

  /// For a grouped GEMM, after GroupTables::build and a barrier.
  __device__ __forceinline__ TileScheduler(const GemmParams& p, u8* smem) : tables(smem) {
    m = p.m;
    groups = p.batch;
    const int tiles_x = (m + T::kXRows - 1) / T::kXRows;
    cluster_x = (tiles_x + T::kClusterM - 1) / T::kClusterM;
    total = T::kGrouped ? tables.first_tile[groups] : p.batch * cluster_x * T::kWTiles;
    first = blockIdx.x / T::kClusterSize;
    stride = gridDim.x / T::kClusterSize;
    rank = T::kClusterM == 1 ? 0 : int(blockIdx.x % T::kClusterM);
    // Split-K: slice r holds k-blocks [r * KB / S, (r + 1) * KB / S), at least one each.
    k_rank = T::kSplitK == 1 ? 0 : int(blockIdx.x % T::kSplitK);
    kb_begin = k_rank * T::kKBlocks / T::kSplitK;
    kb_count = (k_rank + 1) * T::kKBlocks / T::kSplitK - kb_begin;
  }

  /// Position r within a batch (or group) of cluster_x cluster tiles along X: (cx, tw).
  __device__ __forceinline__ void place(int r, int clusters_x, int& cx, int& tw) const {
    if (T::kRaster > 0) {
      const int band_span = kBand * T::kWTiles;
      const int first_x = (r / band_span) * kBand;
      const int band_x = min(clusters_x - first_x, kBand);
      const int in_band = r % band_span;
      cx = first_x + in_band % band_x;
      tw = in_band / band_x;
    } else {
      cx = r / T::kWTiles;
      tw = r % T::kWTiles;
    }
  }

  /// Cluster tile t, seen from this CTA. Rows past the batch's M or the group's end (the second
  /// X tile of a pair at the edge, or a tile's last rows) are loaded but never stored.
  __device__ __forceinline__ Tile tile(int t) const {
    Tile tile;
    int cx, tw;
    if (T::kGrouped) {
      // The last group whose first tile is <= t: it owns t (empty groups share their first
      // tile with the next group, and the search passes over them).
      int lo = 0, hi = groups - 1;
      while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (tables.first_tile[mid] <= t) lo = mid;
        else hi = mid - 1;
      }
      const int first = tables.first_row[lo], end = tables.end_row[lo];
      const int tiles_x = (end - first + T::kXRows - 1) / T::kXRows;
      place(t - tables.first_tile[lo], (tiles_x + T::kClusterM - 1) / T::kClusterM, cx, tw);
      tile.b = lo;
      tile.xb = 0;
      tile.m0 = first + (cx * T::kClusterM + rank) * T::kXRows;
      tile.m_end = end;
    } else {
      const int per_batch = cluster_x * T::kWTiles;
      tile.b = t / per_batch;
      place(t - tile.b * per_batch, cluster_x, cx, tw);
      tile.xb = tile.b;
      tile.m0 = (cx * T::kClusterM + rank) * T::kXRows;
      tile.m_end = m;
    }
    tile.n0 = tw * T::kTileStepN;
    return tile;
  }
};

}  // namespace dev
}  // namespace f8gemm
