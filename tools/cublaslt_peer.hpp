/// \brief cuBLASLt FP8 GEMMs used as the vendor peer and the PEAK ceiling in `f8gemm bench`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

namespace f8gemm::cli {

/// A cuBLASLt handle, a 32 MiB workspace (kCublasLtWorkspaceBytes; graph capture needs a
/// caller-owned workspace) and one cached plan (descriptors plus the heuristic's algorithm) per
/// problem.
///
/// Both entry points return "" on success, or "unsupported: <reason>" (no commas) when cuBLASLt
/// has no algorithm for the problem or answers CUBLAS_STATUS_NOT_SUPPORTED. Any other failure
/// throws f8gemm::Error(kCuda).
class CublasLtPeer {
 public:
  CublasLtPeer();
  ~CublasLtPeer();
  CublasLtPeer(const CublasLtPeer&) = delete;
  CublasLtPeer& operator=(const CublasLtPeer&) = delete;

  /// Y[b] = bf16(xs[b] (x) ws[b] * X[b] W[b]^T) for b < B, one cublasLtMatmul per batch:
  /// cuBLASLt found no algorithm for a strided batch with outer-vector scales when this was
  /// written (tried on the H200 on 2026-11-30; not in a committed log), and it refuses M = 1. x: [B,M,K] e4m3, w: [B,N,K] e4m3, xs: [B,M], ws: [B,N], y: [B,M,N] bf16.
  std::string rowwise(int64_t batch, int64_t m, int64_t n, int64_t k, const void* x, const void* w,
                      const float* xs, const float* ws, void* y, bool fast_accum,
                      cudaStream_t stream);

  /// Y = bf16(x_scale * w_scale * X W^T) with one scalar scale per tensor (device pointers to one
  /// float each): the fastest FP8 path cuBLASLt has, used for the PEAK ceiling at 8192^3.
  std::string tensorwise(int64_t m, int64_t n, int64_t k, const void* x, const void* w,
                         const float* x_scale_scalar_dev, const float* w_scale_scalar_dev, void* y,
                         bool fast_accum, cudaStream_t stream);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace f8gemm::cli
