/// \brief The host mirror of the kernel's parameter block (kernels/f8gemm_gemm.cuh GemmParams).
#pragma once

#include <cuda.h>

namespace f8gemm::detail {

/// Must match f8gemm::dev::GemmParams field for field (the tensor maps are 128-byte aligned).
struct GemmLaunchParams {
  CUtensorMap x_map;
  CUtensorMap w_map;
  CUtensorMap out_map;
  const void* w_shuffled;
  const float* x_scale;
  const float* w_scale;
  const void* bias;
  void* out;
  int batch;
  int m;
};
static_assert(sizeof(CUtensorMap) == 128 && alignof(CUtensorMap) == 128,
              "the kernel's TensorMap mirrors CUtensorMap");

}  // namespace f8gemm::detail
