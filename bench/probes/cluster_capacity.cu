/// \brief How many clusters of c CTAs a GPU runs at once (cudaOccupancyMaxActiveClusters), with
/// one CTA per SM (200 KB of shared memory) and two (100 KB), checked by timing: a grid of exactly
/// that many clusters of CTAs that spin for ~50 µs, then one cluster more (a second wave doubles
/// the time). The cost model's kClusterCtasOn132 (src/config.cpp) comes from its run on an H200
/// (docs/logs/2026-12-06-s32-call2-cluster-capacity-h200.log).
///
/// Build and run on the GPU machine: nvcc -arch=sm_90a -O2 -o cluster_capacity
/// bench/probes/cluster_capacity.cu && ./cluster_capacity
#include <cuda_runtime.h>

#include <cstdio>
#include "check_cuda.cuh"

__global__ void spin(long long cycles, int* out) {
  extern __shared__ int s[];
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
  if (threadIdx.x == 0) {
    s[0] = blockIdx.x;
    out[blockIdx.x] = s[0];
  }
}
int main() {
  cudaDeviceProp p;
  CHECK_CUDA(cudaGetDeviceProperties(&p, 0));
  printf("%s, %d SMs\n", p.name, p.multiProcessorCount);
  int* out;
  CHECK_CUDA(cudaMalloc(&out, 4 << 20));
  CHECK_CUDA(cudaFuncSetAttribute(spin, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  CHECK_CUDA(cudaFuncSetAttribute(spin, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  for (int smem_kb : {200, 100}) {
    for (int c = 1; c <= 16; ++c) {
      cudaLaunchConfig_t cfg{};
      cudaLaunchAttribute attr{};
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim.x = c;
      attr.val.clusterDim.y = 1;
      attr.val.clusterDim.z = 1;
      cfg.gridDim = dim3(c * 64);
      cfg.blockDim = dim3(384);
      cfg.dynamicSmemBytes = smem_kb * 1024;
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
      int n = 0;
      cudaError_t e = cudaOccupancyMaxActiveClusters(&n, spin, &cfg);
      if (e != cudaSuccess) {
        cudaGetLastError();
        printf("smem %d KB cluster %2d: %s\n", smem_kb, c, cudaGetErrorString(e));
        continue;
      }
      // Timing: n clusters, then n + 1.
      float ms[2] = {0, 0};
      for (int extra = 0; extra < 2 && n > 0; ++extra) {
        cfg.gridDim = dim3(c * (n + extra));
        cudaEvent_t a, b;
        CHECK_CUDA(cudaEventCreate(&a));
        CHECK_CUDA(cudaEventCreate(&b));
        CHECK_CUDA(cudaLaunchKernelEx(&cfg, spin, 100000LL, out));
        CHECK_CUDA(cudaDeviceSynchronize());
        CHECK_CUDA(cudaEventRecord(a));
        CHECK_CUDA(cudaLaunchKernelEx(&cfg, spin, 100000LL, out));
        CHECK_CUDA(cudaEventRecord(b));
        CHECK_CUDA(cudaEventSynchronize(b));
        CHECK_CUDA(cudaEventElapsedTime(&ms[extra], a, b));
      }
      printf(
          "smem %3d KB cluster %2d: %3d clusters = %3d CTAs at once; %d clusters %.1f us, %d "
          "clusters %.1f us\n",
          smem_kb, c, n, n * c, n, ms[0] * 1e3, n + 1, ms[1] * 1e3);
    }
  }
  return 0;
}
