/// \brief make_key (key.hpp). The fields and their order are the disk cache's file names: a
/// change here recompiles every instance once.
#include "jit/key.hpp"

#include <cstring>

#include "f8gemm/f8gemm.hpp"
#include "hash.hpp"
#include "jit/disk_cache.hpp"
#include "jit/embedded.hpp"
#include "jit/nvrtc_identity.hpp"

namespace f8gemm::jit {
namespace {

/// The hash of everything that is the same for every key compiled by one NVRTC library with one
/// set of device headers.
detail::Hash128 prefix_for(const std::string& nvrtc, const EmbeddedFile* headers, int count) {
  detail::Hash128 h;
  h.field(std::string("f8gemm-jit"));
  h.field(kCacheFormat);
  h.field(std::string(kVersion));
  // The version and the library file (nvrtc_identity.hpp): a patch update of the toolkit keeps
  // nvrtcVersion's 13.0 but brings another ptxas, whose cubins must not be mixed with the old.
  h.field(nvrtc);
  h.field(static_cast<uint64_t>(count));
  for (int i = 0; i < count; ++i) {
    h.field(headers[i].name, std::strlen(headers[i].name));
    h.field(headers[i].text, std::strlen(headers[i].text));
  }
  return h;
}

/// This process's prefix, computed once: it hashes 137 KB of embedded headers.
const detail::Hash128& process_prefix() {
  static const detail::Hash128 prefix =
      prefix_for(nvrtc_identity(), kEmbeddedFiles, kNumEmbeddedFiles);
  return prefix;
}

std::string finish(detail::Hash128 h, const std::string& source,
                   const std::vector<std::string>& options) {
  h.field(source);
  h.field(static_cast<uint64_t>(options.size()));
  for (const std::string& o : options) h.field(o);
  return h.hex();
}

}  // namespace

std::string make_key(const std::string& source, const std::vector<std::string>& options) {
  return finish(process_prefix(), source, options);
}

std::string make_key_for_nvrtc(const std::string& nvrtc, const std::string& source,
                               const std::vector<std::string>& options) {
  return make_key_for_headers(nvrtc, kEmbeddedFiles, kNumEmbeddedFiles, source, options);
}

std::string make_key_for_headers(const std::string& nvrtc, const EmbeddedFile* headers, int count,
                                 const std::string& source,
                                 const std::vector<std::string>& options) {
  return finish(prefix_for(nvrtc, headers, count), source, options);
}

}  // namespace f8gemm::jit
