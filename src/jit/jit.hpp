/// \brief The NVRTC JIT: compile an instance source for sm_90a, cache it in memory and on disk,
/// keep ptxas's resource report, load it through the CUDA runtime's library API.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace f8gemm::jit {

/// ptxas's -v report for one kernel entry of an instance (or for a non-inlined device function
/// that ptxas reported separately: is_entry false, only the frame and spill fields are set).
struct KernelResources {
  std::string entry;       ///< mangled or extern "C" name as ptxas printed it
  bool is_entry = true;    ///< false for a called (non-inlined) function
  int registers = 0;
  int spill_stores = 0;    ///< bytes
  int spill_loads = 0;     ///< bytes
  int stack_frame = 0;     ///< bytes
  int shared_static = 0;   ///< bytes of static shared memory ("smem")
};

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

/// Parses ptxas -v lines out of an NVRTC log.
std::vector<KernelResources> parse_ptxas_report(const std::string& log);

/// Options every instance is compiled with (sm_90a, C++17, ptxas -v, ...).
std::vector<std::string> default_options();

/// The cache key of (source, options): 32 hex digits over the source, every embedded header,
/// the options, the NVRTC version, kVersion and the cache file format.
std::string make_key(const std::string& source, const std::vector<std::string>& options);

/// Returns the instance for (source, options), compiling it at most once per process and key:
/// memory cache -> disk cache (${F8GEMM_CACHE_DIR:-$HOME/.cache/f8gemm}/<key>.cubin, checked, a
/// corrupt file is rebuilt) -> NVRTC. The embedded device headers are the include files. The key
/// hashes the source, every embedded header, the options, the NVRTC version and kVersion.
/// `label` names the instance in logs and errors (e.g. the Config name). Throws Error(kCompile)
/// with NVRTC's log on failure. Thread-safe: concurrent callers of one key wait for one compile.
std::shared_ptr<const Instance> get_instance(const std::string& label, const std::string& source,
                                             const std::vector<std::string>& options);

/// The cache directory in use (created on demand).
std::string cache_dir();

/// Why the disk cache cannot be written (it cannot be created, is not a directory, or refuses a
/// new file), or "" when it works. A build that cannot use it warns once on stderr.
std::string cache_problem();

/// Counters for tests: how many NVRTC compilations / disk hits this process has done.
struct Stats {
  int64_t compiles = 0;
  int64_t disk_hits = 0;
  int64_t memory_hits = 0;
};
Stats stats();
/// Drops the in-memory cache (tests use it to force the disk path). Loaded libraries stay alive
/// for instances still referenced elsewhere.
void clear_memory_cache();

}  // namespace f8gemm::jit
