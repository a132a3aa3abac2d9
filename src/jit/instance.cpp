/// \brief Instance (instance.hpp): the report is parsed once, the library loaded on first use.
#include "jit/instance.hpp"

#include "check.hpp"

namespace f8gemm::jit {

Instance::Instance(std::string key, std::vector<char> cubin, std::string log, bool from_disk)
    : key_(std::move(key)),
      cubin_(std::move(cubin)),
      log_(std::move(log)),
      resources_(parse_ptxas_report(log_)),
      from_disk_(from_disk) {}

Instance::~Instance() {
  // Errors are ignored: a destructor must not throw, and at exit the runtime may be gone.
  if (library_) (void)cudaLibraryUnload(library_);
}

int Instance::spill_bytes() const {
  int total = 0;
  for (const KernelResources& r : resources_) total += r.spill_stores + r.spill_loads;
  return total;
}

cudaKernel_t Instance::kernel(const char* name) const {
  F8GEMM_REQUIRE(name != nullptr && *name != '\0', kInvalidArgument,
                 "Instance::kernel: empty kernel name");
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [known, handle] : kernels_) {
    if (known == name) return handle;
  }
  if (!library_) {
    cudaLibrary_t library = nullptr;
    F8GEMM_CHECK_CUDA(cudaLibraryLoadData(&library, cubin_.data(), nullptr, nullptr, 0, nullptr,
                                          nullptr, 0));
    library_ = library;
  }
  cudaKernel_t handle = nullptr;
  F8GEMM_CHECK_CUDA(cudaLibraryGetKernel(&handle, library_, name));
  kernels_.emplace_back(name, handle);
  return handle;
}

}  // namespace f8gemm::jit
