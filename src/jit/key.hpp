/// \brief The cache key of an instance: what must change the cubin, hashed (hash.hpp).
#pragma once

#include <string>
#include <vector>

namespace f8gemm::jit {

/// The cache key of (source, options): 32 hex digits over the source, every embedded header,
/// the options, the loaded NVRTC library (nvrtc_identity(): its version, file and build id),
/// kVersion and the cache file format.
std::string make_key(const std::string& source, const std::vector<std::string>& options);

/// make_key() with the NVRTC identity given instead of the process's: the seam that lets a test
/// stand for another NVRTC library without faking files. make_key(s, o) equals
/// make_key_for_nvrtc(nvrtc_identity(), s, o).
std::string make_key_for_nvrtc(const std::string& nvrtc, const std::string& source,
                               const std::vector<std::string>& options);

struct EmbeddedFile;

/// make_key_for_nvrtc() over `count` given device headers instead of the embedded ones: the seam
/// that lets a test show that an edit to one header changes the key (the instance source only
/// names the headers it includes). make_key_for_nvrtc(n, s, o) equals
/// make_key_for_headers(n, kEmbeddedFiles, kNumEmbeddedFiles, s, o).
std::string make_key_for_headers(const std::string& nvrtc, const EmbeddedFile* headers, int count,
                                 const std::string& source,
                                 const std::vector<std::string>& options);

}  // namespace f8gemm::jit
