/// \brief The plan of an instance (compile, load, attributes, resident CTAs) and its launch
/// through the driver (see launch.hpp).
#include "launch.hpp"

#include <cudaTypedefs.h>

#include <cstdio>
#include <cstring>

#include "check.hpp"
#include "device.hpp"
#include "env.hpp"

namespace f8gemm::detail {

std::shared_ptr<Plan> build_plan(const InstanceSpec& spec, int device) {
  const DeviceProps& props = require_sm90(device);
  auto plan_ptr = std::make_shared<Plan>();
  Plan& plan = *plan_ptr;
  const Config& config = spec.config;
  // First: loading the library and looking up its kernel are runtime calls, which may start a
  // context on the caller's current device when that is another GPU (not measured; the guard
  // first costs nothing).
  DeviceGuard guard(device);
  plan.spec = spec;
  plan.instance = gemm_instance(plan.spec);
  plan.kernel = plan.instance->kernel("f8gemm_gemm");
  plan.threads = instance_threads(plan.spec);
  plan.smem = instance_smem_bytes(plan.spec);
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

namespace {
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
}  // namespace

void require_pdl(Pdl pdl, const char* name) {
  F8GEMM_REQUIRE(pdl == Pdl::kDefault || pdl == Pdl::kOff || pdl == Pdl::kOn, kInvalidArgument,
                 name, " must be Pdl::kDefault, Pdl::kOff or Pdl::kOn, got ", int(pdl));
}

bool use_pdl(Pdl pdl) {
  require_pdl(pdl, "pdl");
  if (pdl != Pdl::kDefault) return pdl == Pdl::kOn;
  return get_env<bool>("F8GEMM_PDL");
}

/// Launches through the driver's cuLaunchKernel, or cuLaunchKernelEx for clusters and
/// programmatic launches (a cudaKernel_t is a CUkernel, which they take as their function):
/// about a microsecond of host time less than the runtime's launch, which matters at the 5 µs
/// per call this path is held to. A thread whose current context is not yet the device's
/// primary one gets it through cudaSetDevice and a second try; any other driver error falls
/// back to the runtime's launch, with the same attributes, whose error is the one reported.
void launch(cudaKernel_t kernel, int grid, int cluster, int threads, int smem,
            cudaStream_t stream, void** args, int device, Pdl pdl) {
  static const auto launch_fn = driver_entry<PFN_cuLaunchKernel_v4000>("cuLaunchKernel", 4000);
  static const auto launch_ex_fn =
      driver_entry<PFN_cuLaunchKernelEx_v11060>("cuLaunchKernelEx", 11060);
  CUlaunchAttribute attrs[2]{};
  unsigned num_attrs = 0;
  if (cluster > 1) {
    attrs[num_attrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[num_attrs].value.clusterDim.x = unsigned(cluster);
    attrs[num_attrs].value.clusterDim.y = 1;
    attrs[num_attrs].value.clusterDim.z = 1;
    ++num_attrs;
  }
  if (use_pdl(pdl)) {
    attrs[num_attrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[num_attrs].value.programmaticStreamSerializationAllowed = 1;
    ++num_attrs;
  }
  auto try_launch = [&]() -> CUresult {
    if (num_attrs == 0) {
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
    cfg.attrs = attrs;
    cfg.numAttrs = num_attrs;
    return launch_ex_fn(&cfg, reinterpret_cast<CUfunction>(kernel), args, nullptr);
  };
  CUresult r = try_launch();
  if (r == CUDA_ERROR_INVALID_CONTEXT) {
    F8GEMM_CHECK_CUDA(cudaSetDevice(device));
    r = try_launch();
  }
  if (r == CUDA_SUCCESS) return;
  // The runtime's attributes are the driver's, field for field (the same ids and value union).
  static_assert(sizeof(cudaLaunchAttribute) == sizeof(CUlaunchAttribute) &&
                    int(cudaLaunchAttributeClusterDimension) ==
                        int(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) &&
                    int(cudaLaunchAttributeProgrammaticStreamSerialization) ==
                        int(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION),
                "cudaLaunchAttribute mirrors CUlaunchAttribute");
  cudaLaunchAttribute rt_attrs[2]{};
  std::memcpy(rt_attrs, attrs, sizeof(rt_attrs));
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(unsigned(grid));
  cfg.blockDim = dim3(unsigned(threads));
  cfg.dynamicSmemBytes = size_t(smem);
  cfg.stream = stream;
  cfg.attrs = rt_attrs;
  cfg.numAttrs = num_attrs;
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

dev::GemmParams gemm_params(Plan& plan, const TensorView& x, const TensorView& w,
                            WeightLayout w_layout, const TensorView& xs, const TensorView& ws,
                            const void* bias, const TensorView& out, int64_t x_batches,
                            int64_t rows, int64_t w_batches, int64_t n, int64_t k) {
  const Config& c = plan.spec.config;
  const bool swap = c.path == KernelPath::kSwapAB;
  const int x_rows = swap ? c.bn : c.bm, w_rows = swap ? c.bm : c.bn;
  const bool silu_mul = plan.spec.epilogue_op == EpilogueOp::kSiluMul;
  dev::GemmParams params{};
  params.x_map = to_kernel_map(plan.x_map.get(x.data, [&] {
    return make_tensor_map_3d(x.data, uint64_t(k), uint64_t(rows), uint64_t(x_batches), 128,
                              uint32_t(x_rows));
  }));
  if (w_layout == WeightLayout::kPlain) {
    // In a pair each CTA loads half of the W tile; with SiLU·mul a load is always one half
    // (gate or up rows, kernels/gemm_producer.cuh).
    const int box_rows = silu_mul ? w_rows / 2 : w_rows / c.cluster_m;
    params.w_map = to_kernel_map(plan.w_map.get(w.data, [&] {
      return make_tensor_map_3d(w.data, uint64_t(k), uint64_t(n), uint64_t(w_batches), 128,
                                uint32_t(box_rows));
    }));
  }
  // The epilogue's tensor stores (kernels/gemm_params.cuh decides the box and the swizzle), over
  // Y's columns: N, or N / 2 with SiLU·mul.
  const dev::OutBox box = dev::gemm_out_box(dev::gemm_out_cols(c.bn, silu_mul), swap,
                                            c.path == KernelPath::kPingPong);
  if (box.cols > 0) {
    const int64_t out_n = silu_mul ? n / 2 : n;
    params.out_map = to_kernel_map(plan.out_map.get(out.data, [&] {
      return make_tensor_map_3d(out.data, uint64_t(out_n), uint64_t(rows), uint64_t(x_batches),
                                uint32_t(box.cols), uint32_t(box.rows), 2, box.swizzle_bytes);
    }));
  }
  params.w_shuffled = static_cast<const uint8_t*>(w.data);
  params.x_scale = static_cast<const float*>(xs.data);
  params.w_scale = static_cast<const float*>(ws.data);
  params.bias = bias;
  params.out = out.data;
  return params;
}

}  // namespace f8gemm::detail
