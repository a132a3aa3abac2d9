/// \brief An owning device allocation for the CLI and the tests (f8gemm_testing, not the library).
#pragma once

#include <cstddef>
#include <vector>

#include "f8gemm/f8gemm.hpp"

namespace f8gemm::detail {

/// Owns one cudaMalloc allocation on the device current at construction; move-only; every CUDA
/// call is checked (throws f8gemm::Error).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }
  int device() const { return device_; }
  /// Frees the memory now (checked, unlike the destructor's free).
  void reset();

  /// Synchronous copies of `bytes` bytes (at most bytes()).
  void upload(const void* host, size_t bytes);
  void download(void* host, size_t bytes) const;

  template <typename T>
  static DeviceBuffer from(const std::vector<T>& host) {
    DeviceBuffer b(host.size() * sizeof(T));
    b.upload(host.data(), host.size() * sizeof(T));
    return b;
  }
  template <typename T>
  std::vector<T> to_host() const {
    std::vector<T> out(bytes_ / sizeof(T));
    download(out.data(), out.size() * sizeof(T));
    return out;
  }
  /// A contiguous view of this memory.
  TensorView view(DType dtype, std::vector<int64_t> shape) const;

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  int device_ = 0;
};

}  // namespace f8gemm::detail
