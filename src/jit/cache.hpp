/// \brief The in-memory cache front: get_instance() finds an instance in memory, else on disk,
/// else compiles it, at most once per process and key.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "jit/instance.hpp"

namespace f8gemm::jit {

/// Returns the instance for (source, options), compiling it at most once per process and key:
/// memory cache -> disk cache (${F8GEMM_CACHE_DIR:-$HOME/.cache/f8gemm}/<key>.cubin, checked, a
/// corrupt file is rebuilt) -> NVRTC. The embedded device headers are the include files. The key
/// hashes the source, every embedded header, the options, the loaded NVRTC library (its version,
/// file and build id: nvrtc_identity.hpp) and kVersion.
/// `label` names the instance in logs and errors (e.g. the Config name). Throws Error(kCompile)
/// with NVRTC's log on failure. Thread-safe: concurrent callers of one key wait for one compile.
std::shared_ptr<const Instance> get_instance(const std::string& label, const std::string& source,
                                             const std::vector<std::string>& options);

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
