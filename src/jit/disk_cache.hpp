/// \brief The disk cache: ${F8GEMM_CACHE_DIR:-$HOME/.cache/f8gemm}/<key>.cubin, one checked file
/// per instance, written under a private name and renamed into place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace f8gemm::jit {

/// Version of the cache file layout; part of the key, so a new layout never reads an old file.
constexpr uint32_t kCacheFormat = 1;

/// The cache directory in use (created on demand).
std::string cache_dir();

/// Why the disk cache cannot be written (it cannot be created, is not a directory, or refuses a
/// new file), or "" when it works. A build that cannot use it warns once on stderr.
std::string cache_problem();

/// The directory that F8GEMM_CACHE_DIR, else the home directory, names; not created. "" when
/// neither is known.
std::string cache_dir_path();

/// Creates dir; true when it is a usable directory now, else warns once (warn_cache_unusable).
bool ensure_cache_dir(const std::string& dir);

/// Says once per directory and process, on stderr, that the disk cache cannot be used and why.
void warn_cache_unusable(const std::string& dir, const std::string& why);

/// dir/<key>.cubin
std::string cache_file_path(const std::string& dir, const std::string& key);

enum class DiskResult { kMiss, kHit, kCorrupt };

/// Reads path, checking magic, format, key, sizes and checksum. kCorrupt says why in *why.
DiskResult load_cache_file(const std::string& path, const std::string& key,
                           std::vector<char>* cubin, std::string* log, std::string* why);

/// Writes cache_file_path(dir, key) through a private temporary name and a rename: readers see
/// either no file or a whole one. On failure returns false with the reason in *why.
bool store_cache_file(const std::string& dir, const std::string& key,
                      const std::vector<char>& cubin, const std::string& log, std::string* why);

}  // namespace f8gemm::jit
