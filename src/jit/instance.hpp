/// \brief The runtime loader: one compiled instance (cubin, NVRTC log, ptxas report) and its
/// kernels, loaded through the CUDA runtime's library API on first use.
#pragma once

#include <cuda_runtime_api.h>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "jit/ptxas_report.hpp"

namespace f8gemm::jit {

/// One compiled instance: the cubin, its report, and (lazily, once per process) its loaded library.
class Instance {
 public:
  Instance(std::string key, std::vector<char> cubin, std::string log, bool from_disk);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  const std::string& key() const { return key_; }          ///< hex hash (32 hex digits)
  const std::vector<char>& cubin() const { return cubin_; }
  const std::string& log() const { return log_; }          ///< NVRTC's program log (ptxas -v)
  const std::vector<KernelResources>& resources() const { return resources_; }
  bool from_disk() const { return from_disk_; }
  /// Total spill bytes (stores + loads) over every entry and every called function.
  int spill_bytes() const;

  /// The kernel handle for an extern "C" __global__ name. Loads the library on first use
  /// (cudaLibraryLoadData), thread-safe. Throws Error(kNoDevice) without a usable device and
  /// Error(kCuda) on other failures.
  cudaKernel_t kernel(const char* name) const;

 private:
  std::string key_;
  std::vector<char> cubin_;
  std::string log_;
  std::vector<KernelResources> resources_;
  bool from_disk_;
  mutable std::mutex mutex_;
  mutable cudaLibrary_t library_ = nullptr;
  mutable std::vector<std::pair<std::string, cudaKernel_t>> kernels_;  ///< handles looked up so far
};

}  // namespace f8gemm::jit
