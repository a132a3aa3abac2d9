/// \brief Launching a GEMM instance: the plan (compiled kernel, attributes, persistent grid
/// size, tensor-map memos) that gemm(), batched_gemm() and grouped_gemm() cache, and the launch
/// with its attributes (clusters, programmatic dependent launch) that every kernel uses.
#pragma once

#include <cuda.h>

#include <memory>
#include <mutex>
#include <unordered_map>

#include "codegen.hpp"
#include "hash.hpp"
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

/// The plans of one entry point by key (thread-safe). Key is compared and hashed as bytes: it
/// must have no padding. Threads whose first calls of one key overlap may each build its plan
/// (the JIT compiles the instance once for all of them); the first stored is kept and every
/// caller gets that one, and a build that throws stores nothing.
template <class Key>
class PlanCache {
 public:
  /// The plan of `key`, built by `build()` (outside the lock) when there is none yet.
  template <class Build>
  std::shared_ptr<Plan> get(const Key& key, Build&& build) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = plans_.find(key);
      if (it != plans_.end()) return it->second;
    }
    std::shared_ptr<Plan> plan = build();
    std::lock_guard<std::mutex> lock(mutex_);
    return plans_.emplace(key, std::move(plan)).first->second;
  }
  bool contains(const Key& key) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return plans_.count(key) > 0;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<Key, std::shared_ptr<Plan>, BytesHash<Key>> plans_;
};

/// Compiles (or finds) the instance, loads it on `device`, sets its shared-memory attribute and
/// finds how many CTAs of it run at once (whole clusters). Logs with F8GEMM_LOG=1.
std::shared_ptr<Plan> build_plan(const InstanceSpec& spec, int device);

/// The launch parameters every GEMM launch shares: the tensor maps of X as [x_batches, rows, K],
/// of plain W as [w_batches, N, K] and of Y as [x_batches, rows, N] (each memoised in the plan
/// by pointer), and the operand pointers. The caller sets batch, m and its own fields.
dev::GemmParams gemm_params(Plan& plan, const TensorView& x, const TensorView& w,
                            WeightLayout w_layout, const TensorView& x_scale,
                            const TensorView& w_scale, const void* bias, const TensorView& out,
                            int64_t x_batches, int64_t rows, int64_t w_batches, int64_t n,
                            int64_t k);

/// Throws Error(kInvalidArgument) naming `name` unless `pdl` is one of Pdl's three values (a
/// cast integer is not: Pdl(7) ran as off).
void require_pdl(Pdl pdl, const char* name);

/// Whether a launch uses programmatic dependent launch: `pdl`, or for Pdl::kDefault the
/// F8GEMM_PDL switch. Checks `pdl` with require_pdl.
bool use_pdl(Pdl pdl);

/// Launches `kernel` on `grid` CTAs in clusters of `cluster`, with programmatic stream
/// serialization when use_pdl(pdl) (see launch.cpp).
void launch(cudaKernel_t kernel, int grid, int cluster, int threads, int smem, cudaStream_t stream,
            void** args, int device, Pdl pdl);

/// The kernel's image of a driver tensor map (kernels/dev_types.cuh).
dev::TensorMap to_kernel_map(const CUtensorMap& map);

}  // namespace f8gemm::detail
