/// \brief DeviceBuffer (see device_buffer.hpp).
#include "device_buffer.hpp"

#include <utility>

#include "check.hpp"

namespace f8gemm::detail {

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  F8GEMM_CHECK_CUDA(cudaGetDevice(&device_));
  // cudaMalloc(0) may return null; one byte keeps get() a real, unique device address.
  F8GEMM_CHECK_CUDA(cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes));
}

DeviceBuffer::~DeviceBuffer() {
  // A destructor must not throw; a failing free means a broken context that the next checked
  // call reports.
  if (ptr_) (void)cudaFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      device_(other.device_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (ptr_) (void)cudaFree(ptr_);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    device_ = other.device_;
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (ptr_) {
    void* p = std::exchange(ptr_, nullptr);
    bytes_ = 0;
    F8GEMM_CHECK_CUDA(cudaFree(p));
  }
}

void DeviceBuffer::upload(const void* host, size_t bytes) {
  F8GEMM_REQUIRE(bytes <= bytes_, kInvalidArgument, "upload of ", bytes, " bytes into ", bytes_);
  if (bytes) F8GEMM_CHECK_CUDA(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice));
}

void DeviceBuffer::download(void* host, size_t bytes) const {
  F8GEMM_REQUIRE(bytes <= bytes_, kInvalidArgument, "download of ", bytes, " bytes from ", bytes_);
  if (bytes) F8GEMM_CHECK_CUDA(cudaMemcpy(host, ptr_, bytes, cudaMemcpyDeviceToHost));
}

TensorView DeviceBuffer::view(DType dtype, std::vector<int64_t> shape) const {
  TensorView v = make_view(ptr_, dtype, std::move(shape), device_);
  F8GEMM_REQUIRE(size_t(v.numel()) * size_t(dtype_size(dtype)) <= bytes_, kInvalidArgument,
                 "view of ", v.numel(), " elements does not fit in ", bytes_, " bytes");
  return v;
}

}  // namespace f8gemm::detail
