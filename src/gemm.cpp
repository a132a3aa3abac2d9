/// \brief gemm() and batched_gemm(): validation of every argument, the configuration choice,
/// and the launch on the caller's stream. The per-call host path is a validation, one cached
/// lookup, one or two tensor-map encodes and one launch: a few microseconds.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "check.hpp"
#include "codegen.hpp"
#include "config.hpp"
#include "device.hpp"
#include "env.hpp"
#include "hash.hpp"
#include "validate.hpp"

namespace f8gemm {
namespace detail {

namespace {

/// Everything the launch of one (problem, device) needs that does not depend on pointers.
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

struct Plan {
  InstanceSpec spec;
  std::shared_ptr<const jit::Instance> instance;
  cudaKernel_t kernel = nullptr;
  int threads = 0, smem = 0;
  int max_ctas = 0;  // CTAs that run at once: the persistent grid's size (a whole number of clusters)
  MapMemo x_map, w_map, out_map;
};

struct PlanKey {
  int64_t b, m, n, k;
  int layout, out, bias, fast, device;
  int forced[9];  // a forced Config's fields (all zero when the choice is automatic)
  bool operator==(const PlanKey& o) const { return std::memcmp(this, &o, sizeof(*this)) == 0; }
};
static_assert(std::has_unique_object_representations_v<PlanKey>,
              "PlanKey must have no padding: uninitialised padding bytes would make equal keys "
              "compare unequal and miss the plan cache");
using PlanKeyHash = BytesHash<PlanKey>;

std::mutex g_plan_mutex;
std::unordered_map<PlanKey, std::shared_ptr<Plan>, PlanKeyHash> g_plans;

std::shared_ptr<Plan> make_plan(const ProblemShape& p, int device, const Config* forced) {
  const DeviceProps& props = require_sm90(device);
  auto plan_ptr = std::make_shared<Plan>();
  Plan& plan = *plan_ptr;
  Config config = forced ? *forced : decide(props.name, props.sm_count, p);
  if (forced) {
    const std::string why = config_illegal_reason(config, p);
    F8GEMM_REQUIRE(why.empty(), kUnsupported, "config ", config.name(), " cannot run B,M,N,K=",
                   p.batch, ",", p.m, ",", p.n, ",", p.k, ": ", why);
  }
  plan.spec = make_spec(config, p);
  plan.instance = gemm_instance(plan.spec);
  plan.kernel = plan.instance->kernel("f8gemm_gemm");
  plan.threads = instance_threads(plan.spec);
  plan.smem = instance_smem_bytes(plan.spec);
  DeviceGuard guard(device);
  F8GEMM_CHECK_CUDA(cudaFuncSetAttribute(reinterpret_cast<const void*>(plan.kernel),
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, plan.smem));
  plan.max_ctas = props.sm_count;
  const int cluster = config.cluster_m * config.split_k;
  if (cluster > 1) {
    // A cluster needs that many free SMs of one GPC: fewer clusters than SMs / size may fit at
    // once, and a persistent grid larger than that would run its last clusters as a second wave.
    cudaLaunchConfig_t cfg{};
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = unsigned(cluster);
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.gridDim = dim3(unsigned(props.sm_count / cluster * cluster));
    cfg.blockDim = dim3(unsigned(plan.threads));
    cfg.dynamicSmemBytes = size_t(plan.smem);
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    int clusters = 0;
    F8GEMM_CHECK_CUDA(cudaOccupancyMaxActiveClusters(
        &clusters, reinterpret_cast<const void*>(plan.kernel), &cfg));
    F8GEMM_REQUIRE(clusters > 0, kUnsupported, "config ", config.name(),
                   ": no ", cluster, "-CTA cluster of it fits on device ", device);
    plan.max_ctas = clusters * cluster;
  }
  if (get_env<bool>("F8GEMM_LOG")) {
    std::fprintf(stderr, "f8gemm: plan %s: %d threads, %d bytes of shared memory, %d CTAs at once\n",
                 plan.spec.label().c_str(), plan.threads, plan.smem, plan.max_ctas);
  }
  return plan_ptr;
}

/// A driver entry point by name, or null (the runtime's launch is the fallback).
template <typename Fn>
Fn driver_entry(const char* name, int version) {
  void* ptr = nullptr;
  cudaDriverEntryPointQueryResult query{};
  if (cudaGetDriverEntryPointByVersion(name, &ptr, version, cudaEnableDefault, &query) !=
          cudaSuccess ||
      query != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    ptr = nullptr;
  }
  return reinterpret_cast<Fn>(ptr);
}

/// Launches through the driver's cuLaunchKernel, or cuLaunchKernelEx for clusters (a
/// cudaKernel_t is a CUkernel, which they take as their function): about a microsecond of host
/// time less than the runtime's launch, which matters at the 5 µs per call this path is held to.
/// A thread whose current context is not yet the device's primary one gets it through
/// cudaSetDevice and a second try; any other driver error falls back to the runtime's launch,
/// whose error is the one reported.
void launch(cudaKernel_t kernel, int grid, int cluster, int threads, int smem,
            cudaStream_t stream, void** args, int device) {
  static const auto launch_fn = driver_entry<PFN_cuLaunchKernel_v4000>("cuLaunchKernel", 4000);
  static const auto launch_ex_fn =
      driver_entry<PFN_cuLaunchKernelEx_v11060>("cuLaunchKernelEx", 11060);
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = unsigned(cluster);
  attr.value.clusterDim.y = 1;
  attr.value.clusterDim.z = 1;
  auto try_launch = [&]() -> CUresult {
    if (cluster == 1) {
      if (!launch_fn) return CUDA_ERROR_NOT_FOUND;
      return launch_fn(reinterpret_cast<CUfunction>(kernel), unsigned(grid), 1, 1,
                       unsigned(threads), 1, 1, unsigned(smem), reinterpret_cast<CUstream>(stream),
                       args, nullptr);
    }
    if (!launch_ex_fn) return CUDA_ERROR_NOT_FOUND;
    CUlaunchConfig cfg{};
    cfg.gridDimX = unsigned(grid);
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = unsigned(threads);
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = unsigned(smem);
    cfg.hStream = reinterpret_cast<CUstream>(stream);
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    return launch_ex_fn(&cfg, reinterpret_cast<CUfunction>(kernel), args, nullptr);
  };
  CUresult r = try_launch();
  if (r == CUDA_ERROR_INVALID_CONTEXT) {
    F8GEMM_CHECK_CUDA(cudaSetDevice(device));
    r = try_launch();
  }
  if (r == CUDA_SUCCESS) return;
  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute rt_attr{};
  rt_attr.id = cudaLaunchAttributeClusterDimension;
  rt_attr.val.clusterDim.x = unsigned(cluster);
  rt_attr.val.clusterDim.y = 1;
  rt_attr.val.clusterDim.z = 1;
  cfg.gridDim = dim3(unsigned(grid));
  cfg.blockDim = dim3(unsigned(threads));
  cfg.dynamicSmemBytes = size_t(smem);
  cfg.stream = stream;
  cfg.attrs = &rt_attr;
  cfg.numAttrs = 1;
  F8GEMM_CHECK_CUDA(cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(kernel), args));
  F8GEMM_CHECK_CUDA(cudaGetLastError());
}

/// The kernel's image of a driver tensor map (kernels/dev_types.cuh).
dev::TensorMap to_kernel_map(const CUtensorMap& map) {
  static_assert(sizeof(dev::TensorMap) == sizeof(CUtensorMap) &&
                    alignof(dev::TensorMap) == alignof(CUtensorMap),
                "the kernel's TensorMap mirrors CUtensorMap");
  dev::TensorMap out;
  std::memcpy(&out, &map, sizeof(out));
  return out;
}

PlanKey plan_key(const ProblemShape& p, int device, const Config* forced) {
  PlanKey key{p.batch, p.m, p.n, p.k, int(p.w_layout), int(p.out_dtype),
              p.has_bias ? int(p.bias_dtype) + 1 : 0, p.fast_accum ? 1 : 0, device, {}};
  if (forced) {
    const int fields[9] = {int(forced->path) + 1, forced->bm,        forced->bn,
                           forced->bk,           forced->stages,    forced->cluster_m,
                           forced->cluster_n,    forced->raster,    forced->split_k};
    std::memcpy(key.forced, fields, sizeof(fields));
  }
  return key;
}

/// The cached plan, or a new one (compiled, loaded, attributes set) stored for the next call.
std::shared_ptr<Plan> get_plan(const ProblemShape& p, int device, const Config* forced) {
  const PlanKey key = plan_key(p, device, forced);
  {
    std::lock_guard<std::mutex> lock(g_plan_mutex);
    auto it = g_plans.find(key);
    if (it != g_plans.end()) return it->second;
  }
  auto plan = make_plan(p, device, forced);
  std::lock_guard<std::mutex> lock(g_plan_mutex);
  return g_plans.emplace(key, plan).first->second;
}

void run(const TensorView& x, const TensorView& w, WeightLayout layout, const TensorView& xs,
         const TensorView& ws, const TensorView& out, const GemmOptions& opt, bool batched) {
  const Validated v = validate_call(x, w, layout, xs, ws, out, opt, batched);
  const ProblemShape& p = v.shape;
  if (p.m == 0 || p.batch == 0) {
    require_sm90(v.device);  // the same answer with or without work: no sm_90, no success
    return;
  }
  const std::shared_ptr<Plan> plan = get_plan(p, v.device, opt.config);

  const Config& c = plan->spec.config;
  const bool swap = c.path == KernelPath::kSwapAB;
  const int x_rows = swap ? c.bn : c.bm, w_rows = swap ? c.bm : c.bn;
  dev::GemmParams params{};
  params.x_map = to_kernel_map(plan->x_map.get(x.data, [&] {
    return make_tensor_map_3d(x.data, uint64_t(p.k), uint64_t(p.m), uint64_t(p.batch), 128,
                              uint32_t(x_rows));
  }));
  if (p.w_layout == WeightLayout::kPlain) {
    // In a pair each CTA loads half of the W tile.
    params.w_map = to_kernel_map(plan->w_map.get(w.data, [&] {
      return make_tensor_map_3d(w.data, uint64_t(p.k), uint64_t(p.n), uint64_t(p.batch), 128,
                                uint32_t(w_rows / c.cluster_m));
    }));
  }
  // The epilogue's tensor stores (kernels/gemm_params.cuh decides the box and the swizzle).
  const dev::OutBox box = dev::gemm_out_box(c.bn, swap);
  if (box.cols > 0) {
    params.out_map = to_kernel_map(plan->out_map.get(out.data, [&] {
      return make_tensor_map_3d(out.data, uint64_t(p.n), uint64_t(p.m), uint64_t(p.batch),
                                uint32_t(box.cols), uint32_t(box.rows), 2, box.swizzle_bytes);
    }));
  }
  params.w_shuffled = static_cast<const uint8_t*>(w.data);
  params.x_scale = static_cast<const float*>(xs.data);
  params.w_scale = static_cast<const float*>(ws.data);
  params.bias = p.has_bias ? opt.bias->data : nullptr;
  params.out = out.data;
  params.batch = int(p.batch);
  params.m = int(p.m);

  // Persistent: at most as many CTAs as run at once, in whole clusters (cluster_m X tiles that
  // share W, or split_k slices of K of one tile).
  const int cluster = c.cluster_m * c.split_k;
  const int64_t x_tiles = (p.m + x_rows - 1) / x_rows;
  const int64_t cluster_tiles =
      p.batch * ((x_tiles + c.cluster_m - 1) / c.cluster_m) * ((p.n + w_rows - 1) / w_rows);
  const int grid = int(std::min<int64_t>(cluster_tiles, plan->max_ctas / cluster)) * cluster;
  DeviceGuard guard(v.device);
  void* args[] = {&params};
  launch(plan->kernel, grid, cluster, plan->threads, plan->smem, opt.stream, args, v.device);
}

}  // namespace

void prepare(const ProblemShape& problem, int device) { get_plan(problem, device, nullptr); }

}  // namespace detail

bool is_ready(const ProblemShape& problem) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  const detail::PlanKey key = detail::plan_key(problem, device, nullptr);
  std::lock_guard<std::mutex> lock(detail::g_plan_mutex);
  return problem.m == 0 || problem.batch == 0 || detail::g_plans.count(key) > 0;
}

void gemm(const TensorView& x, const TensorView& w, WeightLayout w_layout, const TensorView& x_scale,
          const TensorView& w_scale, const TensorView& out, const GemmOptions& options) {
  detail::run(x, w, w_layout, x_scale, w_scale, out, options, false);
}

void batched_gemm(const TensorView& x, const TensorView& w, WeightLayout w_layout,
                  const TensorView& x_scale, const TensorView& w_scale, const TensorView& out,
                  const GemmOptions& options) {
  detail::run(x, w, w_layout, x_scale, w_scale, out, options, true);
}

}  // namespace f8gemm
