/// \brief Rates of the epilogue's instruction kinds on one GPU, per SM and clock at the maximum
/// clock (a lower bound), in output pairs. As compiled (nvcc 13.0, sm_90a), the loops run: one
/// FMUL a pair; one cvt.rn.bf16x2.f32 (F2FP) a pair; one value rounded to nearest-even with
/// integer operations and a PRMT (the other value's rounding is loop-invariant and hoisted: four
/// ALU operations a pair); and, for the mode labelled "4 fmul + cvt", three FMUL and one cvt a
/// pair (one product is hoisted; the epilogue itself runs four). The labels are kept as they
/// printed in the committed log. Perf log, "The epilogue's arithmetic rates"
/// (docs/logs/2026-12-06-s32-call1-micro-tune-h100.log).
///
/// Build and run on the GPU machine: nvcc -arch=sm_90a -O3 -o epilogue_op_rates
/// bench/probes/epilogue_op_rates.cu && ./epilogue_op_rates
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include "check_cuda.cuh"

constexpr int kChains = 16;
__device__ __forceinline__ uint32_t cvt2(float lo, float hi) {
  uint32_t o;
  asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(o) : "f"(hi), "f"(lo));
  return o;
}
__device__ __forceinline__ uint32_t rne_hi(uint32_t b) { return b + 0x7fffu + ((b >> 16) & 1u); }
template <int kMode>
__global__ void __launch_bounds__(256) kern(float* out, int iters, float s) {
  float a[kChains], b[kChains];
#pragma unroll
  for (int i = 0; i < kChains; ++i) {
    a[i] = 1.0f + threadIdx.x * 1e-3f + i;
    b[i] = 2.0f - i * 1e-2f;
  }
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < kChains; ++i) {
      if (kMode == 0) {  // one cvt per pair
        a[i] = __uint_as_float(cvt2(a[i], b[i]));
      } else if (kMode == 1) {  // one FMUL
        a[i] = a[i] * s;
      } else if (kMode == 2) {  // integer RNE of two values and a byte permute
        uint32_t r0 = rne_hi(__float_as_uint(a[i])), r1 = rne_hi(__float_as_uint(b[i]));
        a[i] = __uint_as_float(__byte_perm(r0, r1, 0x7632));
      } else if (kMode == 3) {  // the epilogue's pair: 4 FMUL and one cvt
        float y0 = a[i] * s * b[i], y1 = b[i] * s * a[i];
        a[i] = __uint_as_float(cvt2(y0, y1));
      }
    }
  }
  float acc = 0.f;
#pragma unroll
  for (int i = 0; i < kChains; ++i) acc += a[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
template <int kMode>
int run(const char* name, int sms, float* out) {
  const int blocks = sms * 4, threads = 256, iters = 4096;
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  kern<kMode><<<blocks, threads>>>(out, 16, 1.0000001f);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaEventRecord(e0));
  kern<kMode><<<blocks, threads>>>(out, iters, 1.0000001f);
  CHECK_CUDA(cudaEventRecord(e1));
  CHECK_CUDA(cudaEventSynchronize(e1));
  CHECK_CUDA(cudaGetLastError());
  float ms;
  CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
  const double pairs = double(blocks) * threads * iters * kChains;
  int khz = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  const double clocks = ms * 1e-3 * khz * 1e3;  // at the max clock: a lower bound on ops/clk
  printf("%-28s %8.3f ms  %7.1f Gpairs/s  %6.2f pair-lanes/clk/SM at %d MHz (max clock)\n", name,
         ms, pairs / (ms * 1e-3) / 1e9, pairs / clocks / sms, khz / 1000);
  return 0;
}
int main() {
  int sms = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs\n", prop.name, sms);
  float* out;
  CHECK_CUDA(cudaMalloc(&out, sizeof(float) * sms * 4 * 256));
  for (int r = 0; r < 2; ++r) {
    if (run<1>("fmul (1 per pair)", sms, out) || run<0>("cvt.rn.bf16x2.f32", sms, out) ||
        run<2>("integer RNE pack", sms, out) || run<3>("4 fmul + cvt (epilogue)", sms, out))
      return 1;
  }
  return 0;
}
