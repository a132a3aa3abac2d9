/// \brief The persistent tile schedule: which output tiles a CTA computes, in which order.
///
/// Work is counted in cluster tiles: kClusterM X tiles that share one W tile (with 1x1 clusters
/// a cluster tile is a tile). A split-K cluster computes one tile, each CTA over its slice of K. The grid is a whole number of clusters, and cluster c takes
/// cluster tiles c, c + clusters, ... over all batches, so both CTAs of a pair always run the
/// same tiles and the same k-blocks in step, which their shared W loads need. Inside a batch,
/// cluster tiles are rasterised in groups of X tiles along the W dimension, so that consecutive
/// clusters share W (or X) tiles in L2.
#pragma once

#include "gemm_traits.cuh"

namespace f8gemm {
namespace dev {

struct Tile {
  int b, m0, n0;  // batch, first X row, first W row
};

template <class T>
struct TileScheduler {
  // Raster groups in cluster tiles: raster X tiles (at least one cluster tile).
  static constexpr int kGroup = T::kRaster / T::kClusterM > 0 ? T::kRaster / T::kClusterM : 1;

  int cluster_x;  // cluster tiles along X in one batch
  int total;      // cluster tiles in the launch
  int first, stride;
  int rank;       // this CTA's X tile within the cluster tile (0 unless kClusterM = 2)
  int k_rank;     // this CTA's slice of K (0 unless kSplitK > 1)
  int kb_begin, kb_count;  // the k-blocks of its slice

  __device__ __forceinline__ TileScheduler(int m, int batch) {
    const int tiles_x = (m + T::kXRows - 1) / T::kXRows;
    cluster_x = (tiles_x + T::kClusterM - 1) / T::kClusterM;
    total = batch * cluster_x * T::kWTiles;
    first = blockIdx.x / T::kClusterSize;
    stride = gridDim.x / T::kClusterSize;
    rank = T::kClusterM == 1 ? 0 : int(blockIdx.x % T::kClusterM);
    // Split-K: slice r holds k-blocks [r * KB / S, (r + 1) * KB / S), at least one each.
    k_rank = T::kSplitK == 1 ? 0 : int(blockIdx.x % T::kSplitK);
    kb_begin = k_rank * T::kKBlocks / T::kSplitK;
    kb_count = (k_rank + 1) * T::kKBlocks / T::kSplitK - kb_begin;
  }

  /// Cluster tile t, seen from this CTA. Rows past M (the second X tile of a pair at M's edge)
  /// are loaded as zeros and never stored.
  __device__ __forceinline__ Tile tile(int t) const {
    const int per_batch = cluster_x * T::kWTiles;
    Tile tile;
    tile.b = t / per_batch;
    const int r = t - tile.b * per_batch;
    int cx, tw;
    if (T::kRaster > 0) {
      const int group_span = kGroup * T::kWTiles;
      const int first_x = (r / group_span) * kGroup;
      const int group_x = min(cluster_x - first_x, kGroup);
      const int in_group = r % group_span;
      cx = first_x + in_group % group_x;
      tw = in_group / group_x;
    } else {
      cx = r / T::kWTiles;
      tw = r % T::kWTiles;
    }
    tile.m0 = (cx * T::kClusterM + rank) * T::kXRows;
    tile.n0 = tw * T::kWRows;
    return tile;
  }
};

}  // namespace dev
}  // namespace f8gemm
