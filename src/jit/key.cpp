/// \brief make_key (key.hpp). The fields and their order are the disk cache's file names: a
/// change here recompiles every instance once.
#include "jit/key.hpp"

#include <nvrtc.h>

#include <cstring>

#include "check.hpp"
#include "hash.hpp"
#include "jit/disk_cache.hpp"
#include "jit/embedded.hpp"

namespace f8gemm::jit {
namespace {

/// The hash of everything that is the same for every key of this process: computed once.
const detail::Hash128& constant_prefix() {
  static const detail::Hash128 prefix = [] {
    detail::Hash128 h;
    int major = 0, minor = 0;
    F8GEMM_CHECK_NVRTC(nvrtcVersion(&major, &minor));
    h.field(std::string("f8gemm-jit"));
    h.field(kCacheFormat);
    h.field(std::string(kVersion));
    h.field(static_cast<uint64_t>(major));
    h.field(static_cast<uint64_t>(minor));
    h.field(static_cast<uint64_t>(kNumEmbeddedFiles));
    for (int i = 0; i < kNumEmbeddedFiles; ++i) {
      h.field(kEmbeddedFiles[i].name, std::strlen(kEmbeddedFiles[i].name));
      h.field(kEmbeddedFiles[i].text, std::strlen(kEmbeddedFiles[i].text));
    }
    return h;
  }();
  return prefix;
}

}  // namespace

std::string make_key(const std::string& source, const std::vector<std::string>& options) {
  detail::Hash128 h = constant_prefix();
  h.field(source);
  h.field(static_cast<uint64_t>(options.size()));
  for (const std::string& o : options) h.field(o);
  return h.hex();
}

}  // namespace f8gemm::jit
