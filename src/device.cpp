/// \brief Device properties, the sm_90 check, the same-memory check, the device guard, the
/// tensor-map encoder, and device_info() (what `f8gemm info` prints).
#include "device.hpp"

#include <cudaTypedefs.h>
#include <nvrtc.h>

#include <array>
#include <mutex>

#include "check.hpp"
#include "jit/disk_cache.hpp"
#include "jit/nvrtc_identity.hpp"

namespace f8gemm::detail {

namespace {
constexpr int kMaxDevices = 64;
std::mutex g_props_mutex;
std::array<DeviceProps*, kMaxDevices> g_props{};
}  // namespace

const DeviceProps& device_props(int device) {
  F8GEMM_REQUIRE(device >= 0 && device < kMaxDevices, kInvalidArgument, "device ordinal ", device,
                 " is out of range");
  std::lock_guard<std::mutex> lock(g_props_mutex);
  if (g_props[device]) return *g_props[device];
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw Error(ErrorCode::kNoDevice, detail::concat("no usable CUDA device: ",
                                                     cudaGetErrorString(status)));
  }
  F8GEMM_REQUIRE(device < count, kNoDevice, "device ", device, " does not exist (", count,
                 " CUDA device(s) present)");
  cudaDeviceProp prop{};
  F8GEMM_CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  auto* props = new DeviceProps();  // lives for the process: handed out by reference
  props->name = prop.name;
  props->sm_count = prop.multiProcessorCount;
  props->cc_major = prop.major;
  props->cc_minor = prop.minor;
  props->smem_optin = int(prop.sharedMemPerBlockOptin);
  g_props[device] = props;
  return *props;
}

const DeviceProps& require_sm90(int device) {
  const DeviceProps& props = device_props(device);
  F8GEMM_REQUIRE(props.cc_major == 9 && props.cc_minor == 0, kNoDevice, "device ", device, " (",
                 props.name, ") has compute capability ", props.cc_major, ".", props.cc_minor,
                 "; f8gemm's kernels need sm_90 (H100/H200)");
  return props;
}

void require_same_place(const TensorView& a, const char* an, const TensorView& b, const char* bn) {
  F8GEMM_REQUIRE(a.device == b.device, kInvalidArgument, an, " and ", bn,
                 " must be in the same memory (host or one GPU)");
}

DeviceGuard::DeviceGuard(int device) {
  F8GEMM_CHECK_CUDA(cudaGetDevice(&previous_));
  if (previous_ != device) {
    F8GEMM_CHECK_CUDA(cudaSetDevice(device));
  } else {
    previous_ = -1;
  }
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

namespace {
PFN_cuTensorMapEncodeTiled_v12000 encode_tiled_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* ptr = nullptr;
    cudaDriverEntryPointQueryResult query{};
    F8GEMM_CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000,
                                                       cudaEnableDefault, &query));
    F8GEMM_REQUIRE(query == cudaDriverEntryPointSuccess && ptr != nullptr, kNoDevice,
                   "the CUDA driver does not provide cuTensorMapEncodeTiled");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(ptr);
  }();
  return fn;
}
}  // namespace

CUtensorMap make_tensor_map_3d(const void* base, uint64_t dim0, uint64_t dim1, uint64_t dim2,
                               uint32_t box0, uint32_t box1, int elem_bytes, int swizzle_bytes) {
  CUtensorMap map;
  const cuuint64_t dims[3] = {dim0, dim1, dim2};
  const cuuint64_t strides[2] = {dim0 * elem_bytes, dim0 * dim1 * elem_bytes};  // bytes
  const cuuint32_t box[3] = {box0, box1, 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const auto type = elem_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16 : CU_TENSOR_MAP_DATA_TYPE_UINT8;
  CUresult r = encode_tiled_fn()(&map, type, 3, const_cast<void*>(base),
                                 dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                 swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  F8GEMM_REQUIRE(r == CUDA_SUCCESS, kCuda, "cuTensorMapEncodeTiled failed (CUresult ", int(r),
                 ") for a tensor of ", dim2, "x", dim1, "x", dim0, " bytes, box ", box1, "x", box0);
  return map;
}

}  // namespace f8gemm::detail

namespace f8gemm {

DeviceInfo device_info() {
  DeviceInfo info;
  nvrtcVersion(&info.nvrtc_major, &info.nvrtc_minor);
  info.nvrtc_library = jit::nvrtc_identity();
  info.cache_dir = jit::cache_dir();
  info.cache_problem = jit::cache_problem();
  cudaRuntimeGetVersion(&info.runtime_version);
  cudaDriverGetVersion(&info.driver_version);
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    cudaGetLastError();
    info.reason = status != cudaSuccess ? cudaGetErrorString(status) : "no CUDA device found";
    return info;
  }
  int device = 0;
  cudaGetDevice(&device);
  const auto& props = detail::device_props(device);
  info.has_device = true;
  info.device = device;
  info.name = props.name;
  info.sm_count = props.sm_count;
  info.cc_major = props.cc_major;
  info.cc_minor = props.cc_minor;
  if (props.cc_major != 9 || props.cc_minor != 0) {
    info.reason = "not an sm_90 GPU: f8gemm's kernels will not run here";
  }
  return info;
}

}  // namespace f8gemm
