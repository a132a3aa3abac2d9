/// \brief The probes' check of a CUDA runtime call: on an error, print it with the line and
/// return 1 from the calling function (main or a run helper that returns int).
#pragma once

#include <cuda_runtime.h>

#include <cstdio>

#define CHECK_CUDA(x)                                             \
  do {                                                            \
    cudaError_t e = (x);                                          \
    if (e != cudaSuccess) {                                       \
      printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); \
      return 1;                                                   \
    }                                                             \
  } while (0)
