/// \brief The exhaustive check of the epilogue's SiLU (silu_sfu.cuh) against fp64, on every fp32
/// input (f8gemm_silu_sfu_check, launched by testing/reference_gpu.cpp for the GPU tests).
#pragma once

#include "f8gemm_ptx.cuh"
#include "silu_sfu.cuh"

namespace f8gemm {
namespace dev {

/// For the fp32 bit patterns [first, first + count) as g, h = silu_mul_sfu(g, 1) against
/// ref = g / (1 + exp(-g)) in fp64 (double exp on the GPU, within an ulp of fp64):
/// stats[0] = max over finite g of |h - ref| / ((kSiluSfuRel + kSiluSfuRelPerG |g|) |ref| +
/// kSiluSfuAbs), the bound's ratio; stats[1] = max |h - ref| / |ref| where |ref| >= 2^-100 and
/// |g| <= 16 (the plain relative error where the |g| term is small); stats[2] += the inputs
/// whose h is not finite where ref is, or whose special value (inf, NaN) differs from ref's.
extern "C" __global__ void f8gemm_silu_sfu_check(u64 first, u64 count, double* stats) {
  double worst_ratio = 0.0, worst_rel = 0.0, bad = 0.0;
  const u64 stride = u64(gridDim.x) * blockDim.x;
  for (u64 i = u64(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float g = __uint_as_float(u32(first + i));
    const double h = double(silu_mul_sfu(g, 1.0f));
    const double ref = double(g) / (1.0 + exp(-double(g)));
    if (!isfinite(ref) || !isfinite(h)) {
      const bool same = (isnan(ref) && isnan(h)) ||
                        (isinf(ref) && isinf(h) && (ref > 0) == (h > 0));
      if (!same) bad += 1.0;
      continue;
    }
    const double err = fabs(h - ref);
    const double ag = fabs(double(g));
    worst_ratio = fmax(worst_ratio, err / ((kSiluSfuRel + kSiluSfuRelPerG * ag) * fabs(ref) +
                                           kSiluSfuAbs));
    if (fabs(ref) >= 0x1p-100 && ag <= 16.0) worst_rel = fmax(worst_rel, err / fabs(ref));
  }
  for (int off = 16; off > 0; off /= 2) {
    worst_ratio = fmax(worst_ratio, __shfl_xor_sync(0xffffffffu, worst_ratio, off));
    worst_rel = fmax(worst_rel, __shfl_xor_sync(0xffffffffu, worst_rel, off));
    bad += __shfl_xor_sync(0xffffffffu, bad, off);
  }
  if (threadIdx.x % 32 == 0) {
    // Non-negative doubles order like their bit patterns, so an integer max is a float max.
    atomicMax(reinterpret_cast<unsigned long long*>(&stats[0]),
              static_cast<unsigned long long>(__double_as_longlong(worst_ratio)));
    atomicMax(reinterpret_cast<unsigned long long*>(&stats[1]),
              static_cast<unsigned long long>(__double_as_longlong(worst_rel)));
    if (bad > 0.0) atomicAdd(&stats[2], bad);
  }
}

}  // namespace dev
}  // namespace f8gemm
