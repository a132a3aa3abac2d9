/// \brief The one hash of f8gemm: 64-bit FNV-1a over bytes, and Hash128, two FNV-1a lanes that
/// name a JIT cache entry (a collision then needs both lanes to collide).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>

namespace f8gemm::detail {

constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;

/// FNV-1a over n bytes, continuing from h: fnv1a(b, nb, fnv1a(a, na)) hashes a then b as one.
inline uint64_t fnv1a(const void* data, size_t n, uint64_t h = kFnvOffsetBasis,
                      uint64_t prime = kFnvPrime) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * prime;
  return h;
}

/// The hash of a value's bytes, for unordered containers. Padding bytes are indeterminate, so
/// only types without padding qualify.
template <typename T>
struct BytesHash {
  static_assert(std::has_unique_object_representations_v<T>,
                "BytesHash needs a type without padding: equal values must have equal bytes");
  size_t operator()(const T& v) const { return static_cast<size_t>(fnv1a(&v, sizeof v)); }
};

/// 128 bits printed as 32 hex digits: lane a is FNV-1a, lane b another basis and multiplier (the
/// golden-ratio constant). Every field is length-prefixed, so ("ab","c") and ("a","bc") differ.
/// The printed value is a disk-cache file name: changing any constant here orphans every cache.
class Hash128 {
 public:
  static constexpr size_t kHexChars = 32;

  void bytes(const void* data, size_t n) {
    a_ = fnv1a(data, n, a_);
    b_ = fnv1a(data, n, b_, kLaneBPrime);
  }
  void field(uint64_t v) { bytes(&v, sizeof v); }
  void field(const char* s, size_t n) {
    field(static_cast<uint64_t>(n));
    bytes(s, n);
  }
  void field(const std::string& s) { field(s.data(), s.size()); }

  std::string hex() const {
    char buf[kHexChars + 1];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(mix(a_)),
                  static_cast<unsigned long long>(mix(b_)));
    return std::string(buf, kHexChars);
  }

 private:
  static constexpr uint64_t kLaneBBasis = 0x6c62272e07bb0142ull;
  static constexpr uint64_t kLaneBPrime = 0x9e3779b97f4a7c15ull;

  /// splitmix64's finaliser: spreads every input bit over the whole printed word.
  static uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
  }

  uint64_t a_ = kFnvOffsetBasis;
  uint64_t b_ = kLaneBBasis;
};

}  // namespace f8gemm::detail
