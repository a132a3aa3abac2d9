/// \brief The NVRTC JIT (jit.hpp): compile, key, memory and disk caches, ptxas report, loading.
#include "jit/jit.hpp"

#include <nvrtc.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <future>
#include <thread>
#include <set>
#include <unordered_map>
#include <utility>

#include "check.hpp"
#include "jit/embedded.hpp"

namespace f8gemm::jit {
namespace {

/// Version of the cache file layout below; part of the key, so a new layout never reads an old file.
constexpr uint32_t kCacheFormat = 1;
constexpr char kMagic[8] = {'F', '8', 'G', 'E', 'M', 'M', 'J', '1'};
constexpr size_t kKeyChars = 32;
/// magic, format, header size, key, cubin size, log size, payload checksum.
constexpr size_t kHeaderBytes = 8 + 4 + 4 + kKeyChars + 8 + 8 + 8;

constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;

uint64_t fnv1a(const void* data, size_t n, uint64_t h = kFnvBasis) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * kFnvPrime;
  return h;
}

/// splitmix64's finaliser: spreads every input bit over the whole printed word.
uint64_t finalise(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

/// Two 64-bit FNV-1a lanes with different bases and multipliers, so that a collision needs both.
/// Every field is length-prefixed, so ("ab","c") and ("a","bc") hash differently.
class Hasher {
 public:
  void bytes(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
      a_ = (a_ ^ p[i]) * kFnvPrime;
      b_ = (b_ ^ p[i]) * 0x9e3779b97f4a7c15ull;
    }
  }
  void field(uint64_t v) { bytes(&v, sizeof v); }
  void field(const char* s, size_t n) {
    field(static_cast<uint64_t>(n));
    bytes(s, n);
  }
  void field(const std::string& s) { field(s.data(), s.size()); }
  std::string hex() const {
    char buf[kKeyChars + 1];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(finalise(a_)),
                  static_cast<unsigned long long>(finalise(b_)));
    return std::string(buf, kKeyChars);
  }

 private:
  uint64_t a_ = kFnvBasis;
  uint64_t b_ = 0x6c62272e07bb0142ull;
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool log_enabled() {
  std::string v = env("F8GEMM_LOG");
  return !v.empty() && v != "0";
}

/// One whole line per write, so that lines of concurrent compiles do not interleave.
void print_line(const std::string& line) {
  std::string s = line + "\n";
  std::fwrite(s.data(), 1, s.size(), stderr);
  std::fflush(stderr);
}

void log_line(const std::string& line) {
  if (log_enabled()) print_line(line);
}

std::string home_dir() {
  std::string home = env("HOME");
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

std::string cache_dir_path() {
  std::string dir = env("F8GEMM_CACHE_DIR");
  if (!dir.empty()) return dir;
  std::string home = home_dir();
  return home.empty() ? std::string() : home + "/.cache/f8gemm";
}

/// Says once per directory and process, on stderr, that the disk cache cannot be used and why.
/// A cache that does not work only costs recompiles, so it never throws; but a user who set
/// F8GEMM_CACHE_DIR (or precompiled for a server) must hear that every process compiles again.
void warn_cache_unusable(const std::string& dir, const std::string& why) {
  static std::mutex mutex;
  static auto* warned = new std::set<std::string>;  // never destroyed: used until exit
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!warned->insert(dir).second) return;
  }
  print_line(detail::concat("f8gemm: warning: the JIT disk cache '", dir, "' is unusable (", why,
                            "); compiled kernels are kept in memory only"));
}

/// Creates dir (recursively); empty when it is a directory now, else why not.
std::string make_dir(const std::string& dir) {
  if (dir.empty()) return "no directory: HOME is not set and F8GEMM_CACHE_DIR is empty";
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec)) {
    return "it exists and is not a directory";
  }
  std::filesystem::create_directories(dir, ec);
  if (!ec && std::filesystem::is_directory(dir, ec)) return {};
  return ec ? "cannot create it: " + ec.message() : std::string("it is not a directory");
}

/// Creates dir, warning once when that fails.
bool ensure_dir(const std::string& dir) {
  const std::string why = make_dir(dir);
  if (!why.empty()) warn_cache_unusable(dir, why);
  return why.empty();
}

/// A label as a file name: anything outside [A-Za-z0-9._-] becomes '_'.
std::string safe_name(const std::string& label) {
  std::string s = label.empty() ? std::string("instance") : label;
  for (char& c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return s;
}

/// Writes path with fopen/fwrite so that errno says why on failure.
bool write_file(const std::string& path, const std::vector<std::pair<const char*, size_t>>& parts,
                std::string* why) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    *why = std::strerror(errno);
    return false;
  }
  bool ok = true;
  for (const auto& [data, n] : parts) {
    if (n && std::fwrite(data, 1, n, f) != n) {
      ok = false;
      break;
    }
  }
  if (!ok) *why = std::strerror(errno);
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    *why = std::strerror(errno);
  }
  return ok;
}

// ---------------------------------------------------------------------------------------------
// Disk cache file: header (kHeaderBytes, native byte order: the cache is per machine), cubin, log.

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
  return fnv1a(log.data(), log.size(), fnv1a(cubin.data(), cubin.size()));
}

enum class DiskResult { kMiss, kHit, kCorrupt };

DiskResult load_file(const std::string& path, const std::string& key, std::vector<char>* cubin,
                     std::string* log, std::string* why) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return DiskResult::kMiss;
  std::vector<char> data;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) data.insert(data.end(), buf, buf + n);
  bool read_error = std::ferror(f) != 0;
  std::fclose(f);
  if (read_error) {
    *why = "read error";
    return DiskResult::kCorrupt;
  }
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

/// Writes to a name no other thread or process uses, then renames it into place: readers see
/// either no file or a whole one.
bool store_file(const std::string& dir, const std::string& key, const std::vector<char>& cubin,
                const std::string& log, std::string* why) {
  static std::atomic<uint64_t> counter{0};
  std::vector<char> header;
  header.insert(header.end(), kMagic, kMagic + sizeof kMagic);
  put(header, kCacheFormat);
  put(header, static_cast<uint32_t>(kHeaderBytes));
  header.insert(header.end(), key.begin(), key.end());
  put(header, static_cast<uint64_t>(cubin.size()));
  put(header, static_cast<uint64_t>(log.size()));
  put(header, payload_checksum(cubin, log));

  std::string final_path = dir + "/" + key + ".cubin";
  std::string tmp = detail::concat(final_path, ".tmp.", getpid(), ".",
                                   std::hash<std::thread::id>()(std::this_thread::get_id()), ".",
                                   counter.fetch_add(1));
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

// ---------------------------------------------------------------------------------------------
// NVRTC

struct Program {
  nvrtcProgram handle = nullptr;
  Program() = default;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program() {
    if (handle) nvrtcDestroyProgram(&handle);
  }
};

/// The embedded headers as NVRTC wants them, and the hash of everything constant in a key.
struct Constants {
  std::vector<const char*> header_names;
  std::vector<const char*> header_texts;
  Hasher prefix;
};

const Constants& constants() {
  static const Constants c = [] {
    Constants k;
    int major = 0, minor = 0;
    F8GEMM_CHECK_NVRTC(nvrtcVersion(&major, &minor));
    k.prefix.field(std::string("f8gemm-jit"));
    k.prefix.field(kCacheFormat);
    k.prefix.field(std::string(kVersion));
    k.prefix.field(static_cast<uint64_t>(major));
    k.prefix.field(static_cast<uint64_t>(minor));
    k.prefix.field(static_cast<uint64_t>(kNumEmbeddedFiles));
    for (int i = 0; i < kNumEmbeddedFiles; ++i) {
      k.header_names.push_back(kEmbeddedFiles[i].name);
      k.header_texts.push_back(kEmbeddedFiles[i].text);
      k.prefix.field(kEmbeddedFiles[i].name, std::strlen(kEmbeddedFiles[i].name));
      k.prefix.field(kEmbeddedFiles[i].text, std::strlen(kEmbeddedFiles[i].text));
    }
    return k;
  }();
  return c;
}

std::string program_log(nvrtcProgram prog) {
  size_t size = 0;
  F8GEMM_CHECK_NVRTC(nvrtcGetProgramLogSize(prog, &size));
  std::string log(size, '\0');
  if (size) F8GEMM_CHECK_NVRTC(nvrtcGetProgramLog(prog, &log[0]));
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

std::string program_ptx(nvrtcProgram prog) {
  size_t size = 0;
  F8GEMM_CHECK_NVRTC(nvrtcGetPTXSize(prog, &size));
  std::string ptx(size, '\0');
  if (size) F8GEMM_CHECK_NVRTC(nvrtcGetPTX(prog, &ptx[0]));
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

/// The line a reader wants first: the first one that says "error", else the first non-empty one.
std::string first_error_line(const std::string& log) {
  std::string first;
  size_t start = 0;
  while (start <= log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(start, end - start);
    if (line.find("error") != std::string::npos) return line;
    if (first.empty() && line.find_first_not_of(" \t\r") != std::string::npos) first = line;
    start = end + 1;
  }
  return first.empty() ? std::string("(empty log)") : first;
}

/// The first warning in an NVRTC log (front end "warning #NNN-D", ptxas "ptxas warning"), or "".
/// NVRTC 13 has no option that turns every warning into an error (-Werror is refused), so the
/// log is read instead. The "Remark: The warnings can be suppressed" footer is not a warning.
std::string first_warning_line(const std::string& log) {
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(start, end - start);
    std::string lower = line;
    for (char& ch : lower) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    if (lower.find("warning") != std::string::npos && lower.compare(0, 6, "remark") != 0) {
      return line;
    }
    start = end + 1;
  }
  return {};
}

/// Compiles source; throws Error(kCompile) naming label, with the first error line then the log.
/// A warning is an error too: f8gemm's sources compile cleanly, and a warning such as #61-D (an
/// int32 overflow in a template constant) means a kernel that computes garbage.
/// `on_failure` sees the log before the throw (the dump uses it).
void compile_program(Program& prog, const std::string& label, const std::string& source,
                     const std::vector<std::string>& options, std::string* log,
                     const std::function<void(const std::string&)>& on_failure) {
  const Constants& c = constants();
  std::string name = safe_name(label) + ".cu";
  F8GEMM_CHECK_NVRTC(nvrtcCreateProgram(&prog.handle, source.c_str(), name.c_str(),
                                        static_cast<int>(c.header_names.size()),
                                        c.header_texts.data(), c.header_names.data()));
  std::vector<const char*> opts;
  opts.reserve(options.size());
  for (const std::string& o : options) opts.push_back(o.c_str());
  nvrtcResult status =
      nvrtcCompileProgram(prog.handle, static_cast<int>(opts.size()), opts.data());
  *log = program_log(prog.handle);
  if (status != NVRTC_SUCCESS) {
    if (on_failure) on_failure(*log);
    throw Error(ErrorCode::kCompile,
                detail::concat("instance ", label, " failed to compile (",
                               nvrtcGetErrorString(status), "): ", first_error_line(*log), "\n",
                               *log));
  }
  const std::string warning = first_warning_line(*log);
  if (!warning.empty()) {
    if (on_failure) on_failure(*log);
    throw Error(ErrorCode::kCompile,
                detail::concat("instance ", label, " failed to compile (a warning is an error ",
                               "for f8gemm's sources): ", warning, "\n", *log));
  }
}

/// The options with the real architecture swapped for its virtual one: NVRTC then stops at PTX.
std::vector<std::string> ptx_only_options(const std::vector<std::string>& options) {
  std::vector<std::string> out = options;
  for (std::string& o : out) {
    for (const char* flag : {"--gpu-architecture=", "-arch="}) {
      size_t n = std::strlen(flag);
      if (o.compare(0, n, flag) == 0 && o.compare(n, 3, "sm_") == 0) {
        o = std::string(flag) + "compute_" + o.substr(n + 3);
      }
    }
  }
  return out;
}

/// F8GEMM_DUMP_DIR: <label>.<key>.cu / .ptx / .log / .cubin (for cuobjdump --dump-sass). The user
/// asked for these files, so a failure to write them is reported on stderr even without
/// F8GEMM_LOG, but never thrown.
void dump(const std::string& label, const std::string& key, const std::string& source,
          const std::string* ptx, const std::string& log, const std::vector<char>* cubin = nullptr) {
  std::string dir = env("F8GEMM_DUMP_DIR");
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string base = dir + "/" + safe_name(label) + "." + key;
  std::vector<std::pair<std::string, const std::string*>> files = {{".cu", &source},
                                                                   {".log", &log}};
  if (ptx) files.emplace_back(".ptx", ptx);
  std::string cubin_bytes = cubin ? std::string(cubin->begin(), cubin->end()) : std::string();
  if (cubin) files.emplace_back(".cubin", &cubin_bytes);
  for (const auto& [ext, text] : files) {
    std::string why;
    if (!write_file(base + ext, {{text->data(), text->size()}}, &why)) {
      print_line(detail::concat("f8gemm: jit cannot write ", base, ext, ": ", why));
    }
  }
}

bool dump_requested() { return !env("F8GEMM_DUMP_DIR").empty(); }

std::atomic<int64_t> g_compiles{0};
std::atomic<int64_t> g_disk_hits{0};
std::atomic<int64_t> g_memory_hits{0};

std::string summary(const Instance& inst) {
  int regs = 0;
  for (const KernelResources& r : inst.resources()) regs = std::max(regs, r.registers);
  return detail::concat("(regs=", regs, ", spills=", inst.spill_bytes(), ")");
}

/// Disk cache, else NVRTC (then the disk cache is written). Runs once per key and process.
std::shared_ptr<const Instance> build(const std::string& label, const std::string& key,
                                      const std::string& source,
                                      const std::vector<std::string>& options) {
  std::string dir = cache_dir_path();
  bool disk = ensure_dir(dir);
  std::string path = dir + "/" + key + ".cubin";
  if (disk) {
    std::vector<char> cubin;
    std::string log, why;
    DiskResult r = load_file(path, key, &cubin, &log, &why);
    if (r == DiskResult::kHit && !first_warning_line(log).empty()) {
      // Written before warnings were errors: compile again, which reports the warning.
      why = "compiled with a warning";
      r = DiskResult::kCorrupt;
    }
    if (r == DiskResult::kHit) {
      g_disk_hits.fetch_add(1);
      auto inst = std::make_shared<const Instance>(key, std::move(cubin), std::move(log), true);
      log_line(detail::concat("f8gemm: jit ", label, " key=", key, " loaded from disk ",
                              summary(*inst)));
      if (dump_requested()) {
        // The cubin came from disk: NVRTC runs again only as far as PTX, for the dump.
        try {
          Program prog;
          std::string ptx_log;
          compile_program(prog, label, source, ptx_only_options(options), &ptx_log, nullptr);
          std::string ptx = program_ptx(prog.handle);
          dump(label, key, source, &ptx, inst->log(), &inst->cubin());
        } catch (const Error& e) {
          print_line(detail::concat("f8gemm: jit cannot dump the PTX of ", label, ": ",
                                    first_error_line(e.what())));
        }
      }
      return inst;
    }
    if (r == DiskResult::kCorrupt) {
      log_line(detail::concat("f8gemm: jit ", path, " is corrupt (", why, "), recompiling"));
    }
  }

  auto start = std::chrono::steady_clock::now();
  g_compiles.fetch_add(1);
  Program prog;
  std::string log;
  compile_program(prog, label, source, options, &log, [&](const std::string& failed_log) {
    if (dump_requested()) dump(label, key, source, nullptr, failed_log);
  });
  size_t size = 0;
  F8GEMM_CHECK_NVRTC(nvrtcGetCUBINSize(prog.handle, &size));
  F8GEMM_REQUIRE(size > 0, kCompile, "instance ", label, ": NVRTC produced an empty cubin");
  std::vector<char> cubin(size);
  F8GEMM_CHECK_NVRTC(nvrtcGetCUBIN(prog.handle, cubin.data()));
  if (dump_requested()) {
    std::string ptx = program_ptx(prog.handle);
    dump(label, key, source, &ptx, log, &cubin);
  }
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  auto inst = std::make_shared<const Instance>(key, std::move(cubin), std::move(log), false);
  char ms_text[32];
  std::snprintf(ms_text, sizeof ms_text, "%.0f", ms);
  log_line(detail::concat("f8gemm: jit ", label, " key=", key, " compiled in ", ms_text, " ms ",
                          summary(*inst)));
  if (disk) {
    std::string why;
    if (!store_file(dir, key, inst->cubin(), inst->log(), &why)) {
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

// ---------------------------------------------------------------------------------------------
// ptxas -v report

/// The decimal number that ends just before `pos` (spaces skipped), or -1.
int number_before(const std::string& line, size_t pos) {
  size_t end = pos;
  while (end > 0 && line[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9') --begin;
  if (begin == end) return -1;
  return std::atoi(line.substr(begin, end - begin).c_str());
}

/// The number before `suffix` in `text`, or -1 when `suffix` is absent.
int number_before(const std::string& text, const char* suffix) {
  size_t pos = text.find(suffix);
  return pos == std::string::npos ? -1 : number_before(text, pos);
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

}  // namespace

// -----------------------------------------------------------------------------------------------

std::vector<KernelResources> parse_ptxas_report(const std::string& log) {
  std::vector<KernelResources> out;
  auto index_of = [&out](const std::string& name, bool entry) -> long {
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].entry == name) {
        out[i].is_entry = out[i].is_entry || entry;
        return static_cast<long>(i);
      }
    }
    KernelResources r;
    r.entry = name;
    r.is_entry = entry;
    out.push_back(r);
    return static_cast<long>(out.size()) - 1;
  };
  long entry = -1;  // the entry whose "Compiling entry function" came last: "Used" lines are its
  long props = -1;  // the function whose "Function properties for" came last: the frame line is its
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(start, end - start);
    start = end + 1;

    const std::string compiling = "Compiling entry function '";
    const std::string properties = "Function properties for ";
    size_t pos;
    if ((pos = line.find(compiling)) != std::string::npos) {
      size_t b = pos + compiling.size();
      size_t q = line.find('\'', b);
      entry = index_of(line.substr(b, q == std::string::npos ? std::string::npos : q - b), true);
      props = -1;
    } else if ((pos = line.find(properties)) != std::string::npos) {
      props = index_of(trim(line.substr(pos + properties.size())), false);
    } else if (line.find("bytes stack frame") != std::string::npos) {
      long target = props >= 0 ? props : entry;
      if (target < 0) continue;
      KernelResources& r = out[static_cast<size_t>(target)];
      r.stack_frame = std::max(0, number_before(line, "bytes stack frame"));
      r.spill_stores = std::max(0, number_before(line, "bytes spill stores"));
      r.spill_loads = std::max(0, number_before(line, "bytes spill loads"));
      props = -1;
    } else if ((pos = line.find("Used ")) != std::string::npos &&
               line.find(" registers", pos) != std::string::npos) {
      long target = entry >= 0 ? entry : props;
      if (target < 0) continue;
      KernelResources& r = out[static_cast<size_t>(target)];
      r.registers = std::atoi(line.c_str() + pos + 5);
      // The rest is a comma-separated list whose members vary by version: "used N barriers",
      // "N bytes smem", "N bytes cmem[0]", "N bytes cumulative stack size", ...
      int smem = number_before(line, "bytes smem");
      if (smem >= 0) r.shared_static = smem;
    }
  }
  return out;
}

std::vector<std::string> default_options() {
  // No --use_fast_math (results must be exact) and no -lineinfo (it changes nothing we need and
  // makes cubins larger).
  return {"--gpu-architecture=sm_90a", "-std=c++17", "--ptxas-options=-v", "-default-device"};
}

std::string make_key(const std::string& source, const std::vector<std::string>& options) {
  Hasher h = constants().prefix;
  h.field(source);
  h.field(static_cast<uint64_t>(options.size()));
  for (const std::string& o : options) h.field(o);
  return h.hex();
}

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
    const std::string strict = env("F8GEMM_FAIL_ON_SPILL");
    F8GEMM_REQUIRE(strict.empty() || strict == "0" || inst->spill_bytes() == 0, kCompile,
                   "instance ", label, " spills ", inst->spill_bytes(),
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

// -----------------------------------------------------------------------------------------------

Instance::Instance(std::string key, std::vector<char> cubin, std::string log, bool from_disk)
    : key_(std::move(key)),
      cubin_(std::move(cubin)),
      log_(std::move(log)),
      resources_(parse_ptxas_report(log_)),
      from_disk_(from_disk) {}

Instance::~Instance() {
  // Errors are ignored: a destructor must not throw, and at exit the runtime may be gone.
  if (library_) (void)cudaLibraryUnload(library_);
}

int Instance::spill_bytes() const {
  int total = 0;
  for (const KernelResources& r : resources_) total += r.spill_stores + r.spill_loads;
  return total;
}

cudaKernel_t Instance::kernel(const char* name) const {
  F8GEMM_REQUIRE(name != nullptr && *name != '\0', kInvalidArgument,
                 "Instance::kernel: empty kernel name");
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [known, handle] : kernels_) {
    if (known == name) return handle;
  }
  if (!library_) {
    cudaLibrary_t library = nullptr;
    F8GEMM_CHECK_CUDA(cudaLibraryLoadData(&library, cubin_.data(), nullptr, nullptr, 0, nullptr,
                                          nullptr, 0));
    library_ = library;
  }
  cudaKernel_t handle = nullptr;
  F8GEMM_CHECK_CUDA(cudaLibraryGetKernel(&handle, library_, name));
  kernels_.emplace_back(name, handle);
  return handle;
}

}  // namespace f8gemm::jit
