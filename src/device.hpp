/// \brief Device facts (cached per ordinal), the sm_90 requirement, a device guard, and the TMA
/// tensor-map encoder fetched from the driver at run time (the library never links libcuda).
#pragma once

#include <cuda.h>

#include <string>

#include "f8gemm/f8gemm.hpp"

namespace f8gemm::detail {

struct DeviceProps {
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  int smem_optin = 0;  ///< max dynamic shared memory per block after opting in
};

/// Properties of `device`; throws Error(kNoDevice) when there is no driver or no such device.
const DeviceProps& device_props(int device);
/// Throws Error(kNoDevice) unless `device` is an sm_90 GPU (what the wgmma kernels need).
const DeviceProps& require_sm90(int device);

/// Throws Error(kInvalidArgument) unless views `a` and `b` (named an, bn) are in the same memory:
/// both on the host, or both on one GPU.
void require_same_place(const TensorView& a, const char* an, const TensorView& b, const char* bn);

/// Makes `device` current for its lifetime and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

/// A 3-D tiled tensor map over a row-major tensor [dim2][dim1][dim0] of 1- or 2-byte elements
/// with a box of {box0, box1, 1}, the 128- or 64-byte swizzle (box0 * elem_bytes must equal it),
/// and zero fill outside the tensor.
CUtensorMap make_tensor_map_3d(const void* base, uint64_t dim0, uint64_t dim1, uint64_t dim2,
                               uint32_t box0, uint32_t box1, int elem_bytes = 1,
                               int swizzle_bytes = 128);

}  // namespace f8gemm::detail
