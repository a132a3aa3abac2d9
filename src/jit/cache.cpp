/// \brief The in-memory cache front (cache.hpp): one slot per key behind a mutex, filled from
/// the disk cache or by NVRTC, and the F8GEMM_LOG / F8GEMM_FAIL_ON_SPILL policies.
#include "jit/cache.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <future>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "check.hpp"
#include "env.hpp"
#include "jit/compiler.hpp"
#include "jit/disk_cache.hpp"
#include "jit/dump.hpp"
#include "jit/io.hpp"
#include "jit/key.hpp"

namespace f8gemm::jit {
namespace {

std::atomic<int64_t> g_compiles{0};
std::atomic<int64_t> g_disk_hits{0};
std::atomic<int64_t> g_memory_hits{0};

std::string summary(const Instance& inst) {
  int regs = 0;
  for (const KernelResources& r : inst.resources()) regs = std::max(regs, r.registers);
  return detail::concat("(regs=", regs, ", spills=", inst.spill_bytes(),
                        reports_wgmma_serialization(inst.log()) ? ", wgmma serialized" : "", ")");
}

/// The disk cache's instance for key, or null (a miss, a corrupt file, or no usable cache).
std::shared_ptr<const Instance> load_from_disk(const std::string& label, const std::string& key,
                                               const std::string& source,
                                               const std::vector<std::string>& options,
                                               const std::string& path) {
  std::vector<char> cubin;
  std::string log, why;
  DiskResult r = load_cache_file(path, key, &cubin, &log, &why);
  if (r == DiskResult::kHit && !first_warning_line(log).empty()) {
    // Written before warnings were errors: compile again, which reports the warning.
    why = "compiled with a warning";
    r = DiskResult::kCorrupt;
  }
  if (r == DiskResult::kCorrupt) {
    log_line(detail::concat("f8gemm: jit ", detail::quoted(path), " is corrupt (", why,
                            "), recompiling"));
  }
  if (r != DiskResult::kHit) return nullptr;
  g_disk_hits.fetch_add(1);
  auto inst = std::make_shared<const Instance>(key, std::move(cubin), std::move(log), true);
  log_line(detail::concat("f8gemm: jit ", label, " key=", key, " loaded from disk ",
                          summary(*inst)));
  if (dump_requested()) {
    // The cubin came from disk: NVRTC runs again only as far as PTX, for the dump.
    try {
      std::string ptx = compile_ptx(label, source, options);
      dump(label, key, source, &ptx, inst->log(), &inst->cubin());
    } catch (const Error& e) {
      print_line(detail::concat("f8gemm: jit cannot dump the PTX of ", label, ": ",
                                first_error_line(e.what())));
    }
  }
  return inst;
}

/// Disk cache, else NVRTC (then the disk cache is written). Runs once per key and process.
std::shared_ptr<const Instance> build(const std::string& label, const std::string& key,
                                      const std::string& source,
                                      const std::vector<std::string>& options) {
  const std::string dir = cache_dir_path();
  const bool disk = ensure_cache_dir(dir);
  const std::string path = cache_file_path(dir, key);
  if (disk) {
    if (auto inst = load_from_disk(label, key, source, options, path)) return inst;
  }

  auto start = std::chrono::steady_clock::now();
  g_compiles.fetch_add(1);
  const bool with_dump = dump_requested();
  Compiled out = compile_cubin(label, source, options, with_dump,
                               [&](const std::string& failed_log) {
                                 if (dump_requested()) dump(label, key, source, nullptr, failed_log);
                               });
  if (with_dump) dump(label, key, source, &out.ptx, out.log, &out.cubin);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  auto inst =
      std::make_shared<const Instance>(key, std::move(out.cubin), std::move(out.log), false);
  char ms_text[32];
  std::snprintf(ms_text, sizeof ms_text, "%.0f", ms);
  log_line(detail::concat("f8gemm: jit ", label, " key=", key, " compiled in ", ms_text, " ms ",
                          summary(*inst)));
  if (disk) {
    std::string why;
    if (!store_cache_file(dir, key, inst->cubin(), inst->log(), &why)) {
      warn_cache_unusable(dir, detail::concat("cannot write ", path, ": ", why));
    }
  }
  return inst;
}

struct Slot {
  std::shared_future<std::shared_ptr<const Instance>> future;
};

struct MemoryCache {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<Slot>> slots;
};

/// Never destroyed: instances must not be unloaded during static destruction, after the CUDA
/// runtime may already have shut down.
MemoryCache& memory_cache() {
  static MemoryCache* cache = new MemoryCache;
  return *cache;
}

}  // namespace

std::shared_ptr<const Instance> get_instance(const std::string& label, const std::string& source,
                                             const std::vector<std::string>& options) {
  std::string key = make_key(source, options);
  MemoryCache& cache = memory_cache();
  std::shared_ptr<Slot> slot;
  std::promise<std::shared_ptr<const Instance>> promise;
  bool owner = false;
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.slots.find(key);
    if (it != cache.slots.end()) {
      slot = it->second;
    } else {
      slot = std::make_shared<Slot>();
      slot->future = promise.get_future().share();
      cache.slots.emplace(key, slot);
      owner = true;
    }
  }
  if (!owner) {
    // Either done, or another thread is building it right now: wait for that one build.
    g_memory_hits.fetch_add(1);
    return slot->future.get();
  }
  try {
    std::shared_ptr<const Instance> inst = build(label, key, source, options);
    // F8GEMM_FAIL_ON_SPILL=1: a spilling instance is an error, not a slow kernel.
    F8GEMM_REQUIRE(!detail::get_env<bool>("F8GEMM_FAIL_ON_SPILL") || inst->spill_bytes() == 0,
                   kCompile, "instance ", label, " spills ", inst->spill_bytes(),
                   " bytes of registers (F8GEMM_FAIL_ON_SPILL is set)");
    promise.set_value(inst);
    return inst;
  } catch (...) {
    // Waiters get this failure; later callers try again (the cause may have been transient).
    {
      std::lock_guard<std::mutex> lock(cache.mutex);
      auto it = cache.slots.find(key);
      if (it != cache.slots.end() && it->second == slot) cache.slots.erase(it);
    }
    promise.set_exception(std::current_exception());
    throw;
  }
}

Stats stats() {
  Stats s;
  s.compiles = g_compiles.load();
  s.disk_hits = g_disk_hits.load();
  s.memory_hits = g_memory_hits.load();
  return s;
}

void clear_memory_cache() {
  MemoryCache& cache = memory_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.slots.clear();
}

}  // namespace f8gemm::jit
