/// \brief Rates of the epilogue's instruction kinds on one GPU, per SM and clock at the maximum
/// clock (a lower bound): cvt.rn.bf16x2.f32 (F2FP), FMUL, an integer round-to-nearest-even pack,
/// and the epilogue's own mix per output pair (4 FMUL and one cvt). Perf log, "The epilogue's
/// arithmetic rates" (docs/logs/2026-12-06-s32-call1-micro-tune-h100.log).
///
/// Build and run on the GPU machine: nvcc -arch=sm_90a -O3 -o epilogue_op_rates
/// bench/probes/epilogue_op_rates.cu && ./epilogue_op_rates
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); return 1; } } while (0)
constexpr int kChains = 16;
__device__ __forceinline__ uint32_t cvt2(float lo, float hi) {
  uint32_t o; asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(o) : "f"(hi), "f"(lo)); return o;
}
__device__ __forceinline__ uint32_t rne_hi(uint32_t b) { return b + 0x7fffu + ((b >> 16) & 1u); }
template <int kMode>
__global__ void __launch_bounds__(256) kern(float* out, int iters, float s) {
  float a[kChains], b[kChains];
#pragma unroll
  for (int i = 0; i < kChains; ++i) { a[i] = 1.0f + threadIdx.x * 1e-3f + i; b[i] = 2.0f - i * 1e-2f; }
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
int run(const char* name, int sms, float* out, int clk_khz) {
  const int blocks = sms * 4, threads = 256, iters = 4096;
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  kern<kMode><<<blocks, threads>>>(out, 16, 1.0000001f);
  CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  CK(cudaEventRecord(e0));
  kern<kMode><<<blocks, threads>>>(out, iters, 1.0000001f);
  CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1)); CK(cudaGetLastError());
  float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
  const double pairs = double(blocks) * threads * iters * kChains;
  int mhz = 0; CK(cudaDeviceGetAttribute(&mhz, cudaDevAttrClockRate, 0));
  const double clocks = ms * 1e-3 * mhz * 1e3;  // at the max clock: a lower bound on ops/clk
  printf("%-28s %8.3f ms  %7.1f Gpairs/s  %6.2f pair-lanes/clk/SM at %d MHz (max clock)\n", name, ms,
         pairs / (ms * 1e-3) / 1e9, pairs / clocks / sms, mhz / 1000);
  return 0;
}
int main() {
  int sms = 0; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs\n", prop.name, sms);
  float* out; CK(cudaMalloc(&out, sizeof(float) * sms * 4 * 256));
  for (int r = 0; r < 2; ++r) {
    if (run<1>("fmul (1 per pair)", sms, out, 0) || run<0>("cvt.rn.bf16x2.f32", sms, out, 0) ||
        run<2>("integer RNE pack", sms, out, 0) || run<3>("4 fmul + cvt (epilogue)", sms, out, 0))
      return 1;
  }
  return 0;
}
