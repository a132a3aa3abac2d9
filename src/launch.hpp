/// \brief Launching a GEMM instance: the plan (compiled kernel, attributes, persistent grid
/// size, tensor-map memos) that gemm(), batched_gemm() and grouped_gemm() cache, and the launch.
#pragma once

#include <cuda.h>

#include <memory>
#include <mutex>

#include "codegen.hpp"
#include "../kernels/gemm_params.cuh"

namespace f8gemm::detail {

/// The tensor map of the last pointer seen: a plan's dimensions are fixed, so the map depends
/// on the pointer alone, and serving reuses its buffers (weights always, activations through a
/// caching allocator). A hit skips cuTensorMapEncodeTiled (~0.3-0.5 µs of host time each).
class MapMemo {
 public:
  template <typename Encode>
  CUtensorMap get(const void* ptr, Encode&& encode) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (valid_ && ptr == ptr_) return map_;
    }
    CUtensorMap map = encode();
    std::lock_guard<std::mutex> lock(mutex_);
    ptr_ = ptr;
    map_ = map;
    valid_ = true;
    return map;
  }

 private:
  std::mutex mutex_;
  bool valid_ = false;
  const void* ptr_ = nullptr;
  CUtensorMap map_{};
};

/// Everything the launch of one instance on one device needs that does not depend on pointers.
struct Plan {
  InstanceSpec spec;
  std::shared_ptr<const jit::Instance> instance;
  cudaKernel_t kernel = nullptr;
  int threads = 0, smem = 0;
  int max_ctas = 0;  // CTAs that run at once: the persistent grid's size (a whole number of clusters)
  MapMemo x_map, w_map, out_map;
};

/// Compiles (or finds) the instance, loads it on `device`, sets its shared-memory attribute and
/// finds how many CTAs of it run at once (whole clusters). Logs with F8GEMM_LOG=1.
std::shared_ptr<Plan> build_plan(const InstanceSpec& spec, int device);

/// Launches `kernel` on `grid` CTAs in clusters of `cluster` (see launch.cpp).
void launch(cudaKernel_t kernel, int grid, int cluster, int threads, int smem, cudaStream_t stream,
            void** args, int device);

/// The kernel's image of a driver tensor map (kernels/dev_types.cuh).
dev::TensorMap to_kernel_map(const CUtensorMap& map);

}  // namespace f8gemm::detail
