/// \brief The cache key of an instance: what must change the cubin, hashed (hash.hpp).
#pragma once

#include <string>
#include <vector>

namespace f8gemm::jit {

/// The cache key of (source, options): 32 hex digits over the source, every embedded header,
/// the options, the NVRTC version, kVersion and the cache file format.
std::string make_key(const std::string& source, const std::vector<std::string>& options);

}  // namespace f8gemm::jit
