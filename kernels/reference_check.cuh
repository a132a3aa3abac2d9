/// \brief The fp64 reference GEMM that checks large outputs on the GPU (f8gemm_reference_check,
/// launched by testing/reference_gpu.cpp for the GPU tests, `f8gemm run --verify` and `demo`):
/// the element bound it evaluates is testing/reference.hpp's element_bound.
#pragma once

#include "f8gemm_ptx.cuh"

namespace f8gemm {
namespace dev {

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
