/// \brief Device utilities: the preshuffle and its inverse, per-row FP8 quantisation, and the
/// fp64 reference GEMM that checks large shapes on the GPU.
#pragma once

#include "f8gemm_ptx.cuh"

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

/// One block per row. The formula matches numerics::quantize_rows_host bit for bit:
/// inv = 448 / max(amax, eps), q = e4m3_rn_sat(x * inv), scale = max(amax, eps) / 448.
template <int kInType>  // 0: fp32, 1: bf16, 2: fp16
__device__ __forceinline__ float load_in(const void* in, i64 i) {
  if (kInType == 0) return static_cast<const float*>(in)[i];
  if (kInType == 1) return bf16_to_float(static_cast<const u16*>(in)[i]);
  return f16_to_float(static_cast<const u16*>(in)[i]);
}

template <int kInType>
__device__ __forceinline__ void quantize_row(const void* in, u8* q, float* scale, i64 cols,
                                             float eps, float scale_ub) {
  __shared__ float partial[32];
  const i64 row = blockIdx.x;
  const i64 base = row * cols;
  float amax = 0.0f;
  for (i64 c = threadIdx.x; c < cols; c += blockDim.x) {
    amax = fmaxf(amax, fabsf(load_in<kInType>(in, base + c)));
  }
  for (int off = 16; off > 0; off /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = amax;
  __syncthreads();
  amax = 0.0f;
  for (int w = 0; w < int(blockDim.x / 32); ++w) amax = fmaxf(amax, partial[w]);
  if (scale_ub > 0.0f) amax = fminf(amax, scale_ub);
  const float clamped = fmaxf(amax, eps);
  const float inv = 448.0f / clamped;
  if (threadIdx.x == 0) scale[row] = clamped / 448.0f;
  for (i64 c = threadIdx.x; c < cols; c += blockDim.x) {
    q[base + c] = u8(pack_e4m3x2(load_in<kInType>(in, base + c) * inv, 0.0f) & 0xff);
  }
}

extern "C" __global__ void f8gemm_quantize_f32(const void* in, u8* q, float* scale, i64 cols,
                                               float eps, float scale_ub) {
  quantize_row<0>(in, q, scale, cols, eps, scale_ub);
}
extern "C" __global__ void f8gemm_quantize_bf16(const void* in, u8* q, float* scale, i64 cols,
                                                float eps, float scale_ub) {
  quantize_row<1>(in, q, scale, cols, eps, scale_ub);
}
extern "C" __global__ void f8gemm_quantize_f16(const void* in, u8* q, float* scale, i64 cols,
                                               float eps, float scale_ub) {
  quantize_row<2>(in, q, scale, cols, eps, scale_ub);
}

/// The fp64 reference on plain X [B,M,K] and W [B,N,K], checking an output y [B,M,N] (bf16 or
/// fp16) in the same pass. stats[0] += sum (y - ref)^2, stats[1] += sum ref^2, stats[2] = max over
/// elements of |y - ref| / bound with bound = u*|ref| + (1 + u)*gamma*abs_ref + tiny, stats[3] +=
/// count of non-finite y where ref is finite. 16x16 outputs per block, K in steps of 64.
extern "C" __global__ void f8gemm_reference_check(const u8* __restrict__ x, const u8* __restrict__ w,
                                                  const float* __restrict__ xs,
                                                  const float* __restrict__ ws, const void* bias,
                                                  int bias_kind, const u16* __restrict__ y,
                                                  int out_f16, i64 m_count, i64 n_count,
                                                  i64 k_count, double unit, double gamma,
                                                  double tiny, double* stats) {
  __shared__ float xt[16][65];
  __shared__ float wt[16][65];
  const i64 b = blockIdx.z;
  const i64 m = blockIdx.y * 16 + threadIdx.y;
  const i64 n = blockIdx.x * 16 + threadIdx.x;
  const u8* xb = x + b * m_count * k_count;
  const u8* wb = w + b * n_count * k_count;
  double acc = 0.0, acc_abs = 0.0;
  for (i64 k0 = 0; k0 < k_count; k0 += 64) {
    for (int i = threadIdx.y * 16 + threadIdx.x; i < 16 * 64; i += 256) {
      const int r = i / 64, c = i % 64;
      const i64 xm = blockIdx.y * 16 + r, wn = blockIdx.x * 16 + r, k = k0 + c;
      xt[r][c] = (xm < m_count && k < k_count) ? e4m3_to_float(xb[xm * k_count + k]) : 0.0f;
      wt[r][c] = (wn < n_count && k < k_count) ? e4m3_to_float(wb[wn * k_count + k]) : 0.0f;
    }
    __syncthreads();
#pragma unroll 8
    for (int c = 0; c < 64; ++c) {
      const double prod = double(xt[threadIdx.y][c]) * double(wt[threadIdx.x][c]);
      acc += prod;
      acc_abs += fabs(prod);
    }
    __syncthreads();
  }
  if (m >= m_count || n >= n_count) return;
  const double s = double(xs[b * m_count + m]) * double(ws[b * n_count + n]);
  double bias_v = 0.0;
  if (bias_kind == 1) bias_v = static_cast<const float*>(bias)[b * n_count + n];
  if (bias_kind == 2) bias_v = bf16_to_float(static_cast<const u16*>(bias)[b * n_count + n]);
  const double ref = acc * s + bias_v;
  const double abs_ref = acc_abs * fabs(s) + fabs(bias_v);
  const u16 bits = y[(b * m_count + m) * n_count + n];
  const double got = out_f16 ? double(f16_to_float(bits)) : double(bf16_to_float(bits));
  const double err = got - ref;
  if (!isfinite(got) || isnan(err)) {
    atomicAdd(&stats[3], 1.0);
    return;
  }
  atomicAdd(&stats[0], err * err);
  atomicAdd(&stats[1], ref * ref);
  const double bound = unit * fabs(ref) + (1.0 + unit) * gamma * abs_ref + tiny;
  const double ratio = fabs(err) / bound;
  // Non-negative doubles order like their bit patterns, so an integer max is a float max.
  atomicMax(reinterpret_cast<unsigned long long*>(&stats[2]),
            static_cast<unsigned long long>(__double_as_longlong(ratio)));
}

}  // namespace dev
}  // namespace f8gemm
