/// \brief The disk cache (disk_cache.hpp): its directory, its file format, load and store.
#include "jit/disk_cache.hpp"

#include <pwd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>

#include "check.hpp"
#include "f8gemm/small_file.hpp"
#include "env.hpp"
#include "hash.hpp"
#include "jit/io.hpp"

namespace f8gemm::jit {
namespace {

// File layout: header (kHeaderBytes, native byte order: the cache is per machine), cubin, log.
constexpr char kMagic[8] = {'F', '8', 'G', 'E', 'M', 'M', 'J', '1'};
constexpr size_t kKeyChars = detail::Hash128::kHexChars;
/// magic, format, header size, key, cubin size, log size, payload checksum.
constexpr size_t kHeaderBytes = 8 + 4 + 4 + kKeyChars + 8 + 8 + 8;
/// A cubin of this project is kilobytes to a few MiB; a cache file past this is not one.
constexpr size_t kMaxCacheFileBytes = size_t(256) << 20;

std::string home_dir() {
  std::string home = detail::get_env<std::string>("HOME");
  if (!home.empty()) return home;
  // Services often run without HOME; the password database still knows the home directory.
  struct passwd pw;
  struct passwd* found = nullptr;
  char buf[4096];
  if (getpwuid_r(getuid(), &pw, buf, sizeof buf, &found) == 0 && found && found->pw_dir) {
    return found->pw_dir;
  }
  return {};
}

/// Creates the cache directory (make_directory); empty when it is a directory now, else why not.
std::string make_dir(const std::string& dir) {
  if (dir.empty()) return "no directory: HOME is not set and F8GEMM_CACHE_DIR is empty";
  return make_directory(dir);
}

/// A name no other thread or process of this machine uses at the same time.
std::string private_name(const std::string& base) {
  static std::atomic<uint64_t> counter{0};
  return detail::concat(base, ".", getpid(), ".",
                        std::hash<std::thread::id>()(std::this_thread::get_id()), ".",
                        counter.fetch_add(1));
}

template <typename T>
void put(std::vector<char>& out, const T& v) {
  const char* p = reinterpret_cast<const char*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

template <typename T>
T get(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint64_t payload_checksum(const std::vector<char>& cubin, const std::string& log) {
  return detail::fnv1a(log.data(), log.size(), detail::fnv1a(cubin.data(), cubin.size()));
}

}  // namespace

std::string cache_dir_path() {
  std::string dir = detail::get_env<std::string>("F8GEMM_CACHE_DIR");
  if (!dir.empty()) return dir;
  std::string home = home_dir();
  return home.empty() ? std::string() : home + "/.cache/f8gemm";
}

std::string cache_dir() {
  std::string dir = cache_dir_path();
  make_dir(dir);
  return dir;
}

std::string cache_problem() {
  const std::string dir = cache_dir_path();
  std::string why = make_dir(dir);
  if (!why.empty()) return why;
  // Only a write shows whether one is allowed: root ignores permission bits, a read-only mount
  // stops everyone.
  const std::string probe = detail::concat(dir, "/.probe.", getpid(), ".",
                                           std::hash<std::thread::id>()(std::this_thread::get_id()));
  if (!write_file(probe, {}, &why)) return "cannot write in it: " + why;
  std::remove(probe.c_str());
  return {};
}

// A cache that does not work only costs recompiles, so it never throws; but a user who set
// F8GEMM_CACHE_DIR (or precompiled for a server) must hear that every process compiles again.
void warn_cache_unusable(const std::string& dir, const std::string& why) {
  print_line_once("cache " + dir,
                  detail::concat("f8gemm: warning: the JIT disk cache ", detail::quoted(dir),
                                 " is unusable (", why,
                                 "); compiled kernels are kept in memory only"));
}

bool ensure_cache_dir(const std::string& dir) {
  const std::string why = make_dir(dir);
  if (!why.empty()) warn_cache_unusable(dir, why);
  return why.empty();
}

std::string cache_file_path(const std::string& dir, const std::string& key) {
  return dir + "/" + key + ".cubin";
}

DiskResult load_cache_file(const std::string& path, const std::string& key,
                           std::vector<char>* cubin, std::string* log, std::string* why) {
  // Without blocking on a FIFO put in its place, and capped: a cubin is at most a few MiB, so a
  // link to a device file is a corrupt entry, not a read to the end of memory.
  const detail::SmallFile file = detail::read_small_file(path, kMaxCacheFileBytes);
  switch (file.status) {
    case detail::SmallFile::Status::kOk: break;
    case detail::SmallFile::Status::kCannotOpen: return DiskResult::kMiss;
    case detail::SmallFile::Status::kDirectory: *why = "a directory"; return DiskResult::kCorrupt;
    case detail::SmallFile::Status::kTooLong:
      *why = detail::concat("longer than ", kMaxCacheFileBytes >> 20, " MiB");
      return DiskResult::kCorrupt;
    case detail::SmallFile::Status::kReadError: *why = "read error"; return DiskResult::kCorrupt;
  }
  const std::string& data = file.text;
  if (data.size() < kHeaderBytes) {
    *why = "shorter than its header";
    return DiskResult::kCorrupt;
  }
  const char* p = data.data();
  if (std::memcmp(p, kMagic, sizeof kMagic) != 0) {
    *why = "bad magic";
    return DiskResult::kCorrupt;
  }
  p += sizeof kMagic;
  if (get<uint32_t>(p) != kCacheFormat || get<uint32_t>(p + 4) != kHeaderBytes) {
    *why = "other format version";
    return DiskResult::kCorrupt;
  }
  p += 8;
  if (std::string(p, kKeyChars) != key) {
    *why = "key mismatch";
    return DiskResult::kCorrupt;
  }
  p += kKeyChars;
  uint64_t cubin_size = get<uint64_t>(p);
  uint64_t log_size = get<uint64_t>(p + 8);
  uint64_t checksum = get<uint64_t>(p + 16);
  uint64_t body = data.size() - kHeaderBytes;
  if (cubin_size == 0 || cubin_size > body || log_size != body - cubin_size) {
    *why = "size mismatch";
    return DiskResult::kCorrupt;
  }
  const char* payload = data.data() + kHeaderBytes;
  cubin->assign(payload, payload + cubin_size);
  log->assign(payload + cubin_size, log_size);
  if (payload_checksum(*cubin, *log) != checksum) {
    *why = "checksum mismatch";
    return DiskResult::kCorrupt;
  }
  return DiskResult::kHit;
}

bool store_cache_file(const std::string& dir, const std::string& key,
                      const std::vector<char>& cubin, const std::string& log, std::string* why) {
  std::vector<char> header;
  header.insert(header.end(), kMagic, kMagic + sizeof kMagic);
  put(header, kCacheFormat);
  put(header, static_cast<uint32_t>(kHeaderBytes));
  header.insert(header.end(), key.begin(), key.end());
  put(header, static_cast<uint64_t>(cubin.size()));
  put(header, static_cast<uint64_t>(log.size()));
  put(header, payload_checksum(cubin, log));

  const std::string final_path = cache_file_path(dir, key);
  const std::string tmp = private_name(final_path + ".tmp");
  if (!write_file(tmp, {{header.data(), header.size()}, {cubin.data(), cubin.size()},
                        {log.data(), log.size()}}, why)) {
    std::remove(tmp.c_str());
    return false;
  }
  if (std::rename(tmp.c_str(), final_path.c_str()) != 0) {
    *why = std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace f8gemm::jit
