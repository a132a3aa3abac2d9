/// \brief describe_nvrtc_library() and nvrtc_identity() (nvrtc_identity.hpp).
#include "jit/nvrtc_identity.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <nvrtc.h>
#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "check.hpp"

namespace f8gemm::jit {
namespace {

// Why not NVIDIA's build string ("Cuda compilation tools, release 13.0, V13.0.88", "Compiler
// Build ID: CL-36424714"): NVRTC 13.0 exposes no call for it (nvrtc.h has nvrtcVersion only),
// and it appears only in the header of generated PTX. Compiling an empty kernel to read it took
// 48 ms on the CPU machine (2026-12-05), paid by every process at its first gemm() even when every
// cubin is on disk. The loaded object's ELF build id (the linker's hash of its contents, in a
// PT_NOTE segment already mapped) names the exact build and costs a walk of the loaded objects;
// the 13.0 toolkit's libnvrtc.so.13 carries one.

/// The object nvrtc* calls bind to (find_loaded_nvrtc's address), found among the loaded
/// objects for its name and build id, and not by the address of nvrtcVersion: in a non-PIE
/// executable that takes that address, the address is the executable's own PLT stub (a review
/// found the identity then named the application). Before session 29 it was the first loaded
/// object whose file name starts with "libnvrtc.so", which named another major's libnvrtc
/// loaded (or preloaded) before this one.
struct BoundNvrtc {
  ElfW(Addr) address = 0;  // the load address to match
  std::string path;        // as the loader names it; empty when none is found
  std::string build_id;    // hex; empty when the object has no NT_GNU_BUILD_ID note
};

std::string hex(const unsigned char* bytes, size_t count) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(count * 2);
  for (size_t i = 0; i < count; ++i) {
    s.push_back(kDigits[bytes[i] >> 4]);
    s.push_back(kDigits[bytes[i] & 15]);
  }
  return s;
}

/// The NT_GNU_BUILD_ID note among an object's mapped PT_NOTE segments, as hex.
std::string build_id_of(const dl_phdr_info& info) {
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info.dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const unsigned char*>(info.dlpi_addr + ph.p_vaddr);
    const unsigned char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const size_t name_bytes = (note->n_namesz + 3) & ~size_t(3);
      const size_t desc_bytes = (note->n_descsz + 3) & ~size_t(3);
      const unsigned char* name = p + sizeof(ElfW(Nhdr));
      const unsigned char* desc = name + name_bytes;
      if (desc + desc_bytes > end) break;
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0) {
        return hex(desc, note->n_descsz);
      }
      p = desc + desc_bytes;
    }
  }
  return {};
}

int visit(dl_phdr_info* info, size_t, void* data) {
  auto* found = static_cast<BoundNvrtc*>(data);
  const char* name = info->dlpi_name;
  if (info->dlpi_addr != found->address || name == nullptr || name[0] == '\0') return 0;
  found->path = name;
  found->build_id = build_id_of(*info);
  return 1;
}

/// "<file> <size> bytes" of a path, or "library unidentified (why)".
std::string describe_file(const char* path) {
  char resolved[PATH_MAX];
  if (realpath(path, resolved) == nullptr) {
    return detail::concat("library unidentified (realpath of ", path, ": ", std::strerror(errno),
                          ")");
  }
  struct stat st {};
  if (stat(resolved, &st) != 0) {
    return detail::concat("library unidentified (stat of ", resolved, ": ", std::strerror(errno),
                          ")");
  }
  const char* slash = std::strrchr(resolved, '/');
  return detail::concat(slash != nullptr ? slash + 1 : resolved, " ",
                        static_cast<long long>(st.st_size), " bytes");
}

}  // namespace

std::string describe_nvrtc_library() {
  int major = 0, minor = 0;
  F8GEMM_CHECK_NVRTC(nvrtcVersion(&major, &minor));
  const std::string version = detail::concat("NVRTC ", major, ".", minor, ", ");
  BoundNvrtc found;
  found.address = find_loaded_nvrtc(major).address;
  if (found.address != 0) dl_iterate_phdr(visit, &found);
  if (!found.path.empty()) {
    const char* slash = std::strrchr(found.path.c_str(), '/');
    const char* file = slash != nullptr ? slash + 1 : found.path.c_str();
    if (!found.build_id.empty()) return detail::concat(version, file, " build-id ", found.build_id);
    return version + describe_file(found.path.c_str());
  }
  // No libnvrtc.so.<major> is loaded: NVRTC is linked statically, into the object that holds
  // nvrtcVersion (a rebuilt binary is then a new identity).
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) == 0 || info.dli_fname == nullptr ||
      info.dli_fname[0] == '\0') {
    return version + "library unidentified (no libnvrtc.so." + std::to_string(major) +
           " loaded, and dladdr found no object for nvrtcVersion)";
  }
  return version + describe_file(info.dli_fname);
}

LoadedNvrtc find_loaded_nvrtc(int major) {
  LoadedNvrtc r;
  const std::string soname = detail::concat("libnvrtc.so.", major);
  void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) {
    r.why_not = soname + " is not loaded (NVRTC linked statically?)";
    return r;
  }
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr) r.address = map->l_addr;
  char origin[PATH_MAX] = {};
  if (dlinfo(handle, RTLD_DI_ORIGIN, origin) == 0) {
    r.folder = origin;
  } else {
    r.why_not = detail::concat("dlinfo of ", soname, ": ", dlerror());
  }
  dlclose(handle);  // drops only the reference RTLD_NOLOAD took
  return r;
}

const std::string& nvrtc_identity() {
  static const std::string identity = describe_nvrtc_library();
  return identity;
}

}  // namespace f8gemm::jit
