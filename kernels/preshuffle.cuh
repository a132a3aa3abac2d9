/// \brief The preshuffle and its exact inverse on the GPU (f8gemm_preshuffle, f8gemm_unshuffle):
/// W [B,N,K] to and from the [B][ceil(K/128)][N/8][1024] layout of README "Preshuffled weights",
/// the same mapping as the host's numerics::preshuffle_host.
#pragma once

#include "dev_types.cuh"

namespace f8gemm {
namespace dev {

/// Where 16-byte chunk c of the preshuffled [B][KB][N/8][1024] lives in the plain [B,N,K] tensor:
/// chunk q of row r in a slab holds source chunk q ^ r (the 128-byte swizzle). Returns false for
/// chunks past K, which are zero padding.
__device__ __forceinline__ bool plain_offset(i64 c, i64 n, i64 k, i64 kb_count, i64& offset) {
  const int within = int(c % 64);
  const int r = within / 8, q = within % 8;
  const i64 slab = c / 64;
  const i64 nb = slab % (n / 8);
  const i64 kb = (slab / (n / 8)) % kb_count;
  const i64 b = slab / ((n / 8) * kb_count);
  const i64 col = kb * 128 + (q ^ r) * 16;
  offset = (b * n + nb * 8 + r) * k + col;
  return col < k;
}

/// One thread per 16-byte chunk of the preshuffled output (grid-stride).
extern "C" __global__ void f8gemm_preshuffle(const u8* __restrict__ plain, u8* __restrict__ shuffled,
                                             i64 batch, i64 n, i64 k) {
  const i64 kb_count = (k + 127) / 128;
  const i64 chunks = batch * kb_count * (n / 8) * 64;
  for (i64 c = blockIdx.x * i64(blockDim.x) + threadIdx.x; c < chunks;
       c += i64(gridDim.x) * blockDim.x) {
    i64 offset;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (plain_offset(c, n, k, kb_count, offset)) v = *reinterpret_cast<const uint4*>(plain + offset);
    reinterpret_cast<uint4*>(shuffled)[c] = v;
  }
}

/// The exact inverse: padding chunks are dropped.
extern "C" __global__ void f8gemm_unshuffle(const u8* __restrict__ shuffled, u8* __restrict__ plain,
                                            i64 batch, i64 n, i64 k) {
  const i64 kb_count = (k + 127) / 128;
  const i64 chunks = batch * kb_count * (n / 8) * 64;
  for (i64 c = blockIdx.x * i64(blockDim.x) + threadIdx.x; c < chunks;
       c += i64(gridDim.x) * blockDim.x) {
    i64 offset;
    if (plain_offset(c, n, k, kb_count, offset)) {
      *reinterpret_cast<uint4*>(plain + offset) = reinterpret_cast<const uint4*>(shuffled)[c];
    }
  }
}

}  // namespace dev
}  // namespace f8gemm
