/// \brief Tests of the NVRTC JIT that need no GPU: ptxas report, key, memory and disk caches.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "f8gemm/f8gemm.hpp"
#include "jit/embedded.hpp"
#include "jit/jit.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using f8gemm::jit::clear_memory_cache;
using f8gemm::jit::default_options;
using f8gemm::jit::get_instance;
using f8gemm::jit::Instance;
using f8gemm::jit::KernelResources;
using f8gemm::jit::stats;

namespace {

constexpr const char* kEntry = "f8gemm_jit_test";

/// A tiny kernel with static shared memory and a barrier; `tag` makes the key unique per test.
std::string tiny_source(const std::string& tag) {
  return "// " + tag +
         "\n"
         "extern \"C\" __global__ void f8gemm_jit_test(float* y, const float* x, int n) {\n"
         "  __shared__ float s[256];\n"
         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  s[threadIdx.x] = i < n ? x[i] : 0.0f;\n"
         "  __syncthreads();\n"
         "  if (i < n) y[i] = s[255 - threadIdx.x] * 2.0f;\n"
         "}\n";
}

std::string test_name() {
  return ::testing::UnitTest::GetInstance()->current_test_info()->name();
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_text(const std::string& path) {
  std::vector<char> b = read_bytes(path);
  return std::string(b.begin(), b.end());
}

const KernelResources* find_entry(const std::vector<KernelResources>& rs, const std::string& name) {
  for (const KernelResources& r : rs) {
    if (r.entry == name) return &r;
  }
  return nullptr;
}

/// Sets an environment variable for one test and restores the previous value afterwards.
class ScopedEnv {
 public:
  explicit ScopedEnv(const char* name) : name_(name) {
    const char* v = getenv(name);
    had_ = v != nullptr;
    if (had_) old_ = v;
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  void set(const std::string& value) { setenv(name_, value.c_str(), 1); }
  void unset() { unsetenv(name_); }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

/// Every test gets a fresh cache directory and an empty memory cache.
class JitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/f8gemm_jit_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    cache_env_.set(cache());
    dump_env_.unset();
    clear_memory_cache();
  }
  void TearDown() override {
    clear_memory_cache();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string cache() const { return dir_ + "/cache"; }
  std::string cubin_path(const Instance& inst) const {
    return cache() + "/" + inst.key() + ".cubin";
  }
  std::shared_ptr<const Instance> get(const std::string& source) {
    return get_instance(test_name(), source, default_options());
  }

  std::string dir_;
  ScopedEnv cache_env_{"F8GEMM_CACHE_DIR"};
  ScopedEnv dump_env_{"F8GEMM_DUMP_DIR"};
};

TEST_F(JitTest, ParsesTheReportOfARealCompile) {
  auto inst = get(tiny_source(test_name()));
  ASSERT_TRUE(inst);
  EXPECT_FALSE(inst->cubin().empty());
  EXPECT_NE(inst->log().find("ptxas"), std::string::npos) << inst->log();
  std::vector<KernelResources> rs = f8gemm::jit::parse_ptxas_report(inst->log());
  const KernelResources* r = find_entry(rs, kEntry);
  ASSERT_NE(r, nullptr) << inst->log();
  EXPECT_TRUE(r->is_entry);
  EXPECT_GT(r->registers, 0);
  EXPECT_EQ(r->spill_stores, 0);
  EXPECT_EQ(r->spill_loads, 0);
  EXPECT_EQ(r->shared_static, 1024) << inst->log();
  EXPECT_EQ(inst->spill_bytes(), 0);
  ASSERT_NE(find_entry(inst->resources(), kEntry), nullptr);
  EXPECT_EQ(find_entry(inst->resources(), kEntry)->registers, r->registers);
}

TEST(JitReport, ParsesEveryLineVariant) {
  const std::string log =
      "ptxas warning : For profile sm_90a adjusting per thread register count of 16 to lower "
      "bound of 24\n"
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Function properties for _Z6helperPf\n"
      "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'f8gemm_a' for 'sm_90a'\n"
      "ptxas info    : Function properties for f8gemm_a\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers, 2048 bytes smem, 400 bytes cmem[0]\n"
      "ptxas info    : Compile time = 3.018 ms\n"
      "ptxas info    : Compiling entry function 'f8gemm_b' for 'sm_90a'\n"
      "ptxas info    : Function properties for f8gemm_b\n"
      "ptxas         .     1360 bytes stack frame, 492 bytes spill stores, 512 bytes spill loads\n"
      "ptxas info    : Used 24 registers, used 0 barriers, 1360 bytes cumulative stack size\n"
      "ptxas info    : Compiling entry function 'f8gemm_c' for 'sm_90a'\n"
      "ptxas info    : Used 32 registers\n";
  std::vector<KernelResources> rs = f8gemm::jit::parse_ptxas_report(log);
  ASSERT_EQ(rs.size(), 4u);

  const KernelResources* helper = find_entry(rs, "_Z6helperPf");
  ASSERT_NE(helper, nullptr);
  EXPECT_FALSE(helper->is_entry);
  EXPECT_EQ(helper->stack_frame, 16);
  EXPECT_EQ(helper->spill_stores, 8);
  EXPECT_EQ(helper->spill_loads, 4);
  EXPECT_EQ(helper->registers, 0);

  const KernelResources* a = find_entry(rs, "f8gemm_a");
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->is_entry);
  EXPECT_EQ(a->registers, 168);
  EXPECT_EQ(a->shared_static, 2048);
  EXPECT_EQ(a->spill_stores + a->spill_loads + a->stack_frame, 0);

  const KernelResources* b = find_entry(rs, "f8gemm_b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->registers, 24);
  EXPECT_EQ(b->stack_frame, 1360);
  EXPECT_EQ(b->spill_stores, 492);
  EXPECT_EQ(b->spill_loads, 512);
  EXPECT_EQ(b->shared_static, 0);

  const KernelResources* c = find_entry(rs, "f8gemm_c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->registers, 32);

  Instance inst("k", std::vector<char>{1}, log, false);
  EXPECT_EQ(inst.spill_bytes(), 8 + 4 + 492 + 512);
  EXPECT_TRUE(f8gemm::jit::parse_ptxas_report("").empty());
}

// ptxas's serialisation notes are info lines that the warnings-as-errors rule does not catch; the
// reports (InstanceReport::wgmma_serialized, `f8gemm precompile`) name them. The two notes below
// are ptxas 13.0's words: C7514 from a precise-mode experiment (perf log, card 54,
// docs/logs/2026-12-01-s14-precise-slice-pipeline-sass.log), C7515 from a split-tail one
// (card 41, docs/logs/2026-12-01-s9-c7515-sass.log).
TEST(PtxasReport, TellsWhetherTheWgmmasWereSerialised) {
  const std::string c7514 =
      "ptxas info    : (C7514) Potential Performance Loss: wgmma.mma_async instructions are "
      "serialized due to non wgmma instructions reading accumulator registers of  a wgmma "
      "between start and end of the pipeline stage in the function 'f8gemm_gemm'\n"
      "ptxas info    : Compiling entry function 'f8gemm_gemm' for 'sm_90a'\n"
      "ptxas info    : Used 168 registers, used 16 barriers\n";
  const std::string c7515 =
      "ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are "
      "serialized due to non wgmma instructions defining accumulator registers of a wgmma "
      "between start and end of the pipeline stage in the function 'f8gemm_gemm'\n";
  const std::string clean =
      "ptxas info    : Compiling entry function 'f8gemm_gemm' for 'sm_90a'\n"
      "ptxas info    : Used 168 registers, used 16 barriers\n";
  EXPECT_TRUE(f8gemm::jit::reports_wgmma_serialization(c7514));
  EXPECT_TRUE(f8gemm::jit::reports_wgmma_serialization(c7515));
  EXPECT_FALSE(f8gemm::jit::reports_wgmma_serialization(clean));
  EXPECT_FALSE(f8gemm::jit::reports_wgmma_serialization(""));
  // The report still reads the registers of a serialised instance.
  const auto rs = f8gemm::jit::parse_ptxas_report(c7514);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].registers, 168);
}

TEST(JitKey, IsStableHexAndCoversSourceAndOptions) {
  const std::string src = tiny_source("key");
  const std::vector<std::string> opts = default_options();
  const std::string key = f8gemm::jit::make_key(src, opts);
  ASSERT_EQ(key.size(), 32u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos) << key;
  EXPECT_EQ(f8gemm::jit::make_key(src, opts), key);
  EXPECT_NE(f8gemm::jit::make_key(src + " ", opts), key);
  std::vector<std::string> more = opts;
  more.push_back("-DX=1");
  EXPECT_NE(f8gemm::jit::make_key(src, more), key);
  EXPECT_NE(f8gemm::jit::make_key(src, {"-a", "b"}), f8gemm::jit::make_key(src, {"-ab"}));
}

// ---- the disk cache's file check, on a stored file edited in place ----------------------------

/// A cache file stored for `key` in `dir` (a fake cubin and a log), and its bytes.
std::vector<char> store_file(const std::string& dir, const std::string& key) {
  const std::vector<char> cubin(200, 'c');
  std::string why;
  EXPECT_TRUE(f8gemm::jit::store_cache_file(dir, key, cubin, "ptxas info: log text", &why)) << why;
  std::ifstream in(f8gemm::jit::cache_file_path(dir, key), std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

/// load_cache_file of `bytes` written as `key`'s file in `dir`: the result, and why when corrupt.
std::pair<f8gemm::jit::DiskResult, std::string> load_bytes(const std::string& dir,
                                                           const std::string& key,
                                                           const std::vector<char>& bytes) {
  const std::string path = f8gemm::jit::cache_file_path(dir, key);
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(),
                                                                std::streamsize(bytes.size()));
  std::vector<char> cubin;
  std::string log, why;
  const f8gemm::jit::DiskResult r = f8gemm::jit::load_cache_file(path, key, &cubin, &log, &why);
  return {r, why};
}

TEST(DiskCacheFile, AnotherKeysFileUnderThisKeysNameIsCorrupt) {
  const f8gemm::test::TempDir dir("f8gemm_disk_cache");
  const std::string a = f8gemm::jit::make_key(tiny_source("a"), default_options());
  const std::string b = f8gemm::jit::make_key(tiny_source("b"), default_options());
  const std::vector<char> bytes = store_file(dir.path(), a);
  EXPECT_EQ(load_bytes(dir.path(), a, bytes).first, f8gemm::jit::DiskResult::kHit);
  const auto [result, why] = load_bytes(dir.path(), b, bytes);  // copied under b's name
  EXPECT_EQ(result, f8gemm::jit::DiskResult::kCorrupt);
  EXPECT_EQ(why, "key mismatch");
}

TEST(DiskCacheFile, AFileLongerOrShorterThanItsHeaderSaysIsCorrupt) {
  const f8gemm::test::TempDir dir("f8gemm_disk_cache");
  const std::string key = f8gemm::jit::make_key(tiny_source("sizes"), default_options());
  const std::vector<char> bytes = store_file(dir.path(), key);
  std::vector<char> longer = bytes;
  longer.insert(longer.end(), {'x', 'y', 'z'});
  const std::vector<char> shorter(bytes.begin(), bytes.end() - 3);  // 3 bytes of the log lost
  const std::vector<char>* const bads[] = {&longer, &shorter};
  for (const std::vector<char>* bad : bads) {
    const auto [result, why] = load_bytes(dir.path(), key, *bad);
    EXPECT_EQ(result, f8gemm::jit::DiskResult::kCorrupt) << bad->size() << " bytes";
    EXPECT_EQ(why, "size mismatch") << bad->size() << " bytes";
  }
}

TEST(DiskCacheFile, AFlippedByteOfTheLogIsCorrupt) {
  // The log is the ptxas report that spills and warnings are read from: the checksum covers it.
  const f8gemm::test::TempDir dir("f8gemm_disk_cache");
  const std::string key = f8gemm::jit::make_key(tiny_source("log"), default_options());
  std::vector<char> bytes = store_file(dir.path(), key);
  bytes.back() ^= 0x01;  // the log's last character
  const auto [result, why] = load_bytes(dir.path(), key, bytes);
  EXPECT_EQ(result, f8gemm::jit::DiskResult::kCorrupt);
  EXPECT_EQ(why, "checksum mismatch");
}

// A FIFO under a key's name hung the loader in its open, and a link to /dev/zero read until
// memory ran out (session 42's probe): both are now corrupt entries, at once.
TEST(DiskCacheFile, AFifoOrAnEndlessFileIsCorruptWithoutHangingOrReadingItAll) {
  const f8gemm::test::TempDir dir("f8gemm_disk_cache");
  const std::string key = f8gemm::jit::make_key(tiny_source("fifo"), default_options());
  const std::string path = f8gemm::jit::cache_file_path(dir.path(), key);
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
  std::vector<char> cubin;
  std::string log, why;
  EXPECT_EQ(f8gemm::jit::load_cache_file(path, key, &cubin, &log, &why),
            f8gemm::jit::DiskResult::kCorrupt);
  EXPECT_EQ(why, "shorter than its header");
  if (!std::filesystem::exists("/dev/zero")) return;
  std::filesystem::remove(path);
  std::filesystem::create_symlink("/dev/zero", path);
  EXPECT_EQ(f8gemm::jit::load_cache_file(path, key, &cubin, &log, &why),
            f8gemm::jit::DiskResult::kCorrupt);
  EXPECT_EQ(why, "longer than 256 MiB");
}

TEST_F(JitTest, SameSourceTwiceIsAMemoryHit) {
  const std::string src = tiny_source(test_name());
  auto a = get(src);
  auto before = stats();
  auto b = get(src);
  auto after = stats();
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(after.compiles, before.compiles);
  EXPECT_EQ(after.memory_hits, before.memory_hits + 1);
}

TEST_F(JitTest, DiskCacheServesAfterTheMemoryCacheIsCleared) {
  const std::string src = tiny_source(test_name());
  auto before = stats();
  auto a = get(src);
  EXPECT_EQ(stats().compiles, before.compiles + 1);
  EXPECT_FALSE(a->from_disk());
  EXPECT_EQ(a->key(), f8gemm::jit::make_key(src, default_options()));
  EXPECT_EQ(f8gemm::jit::cache_dir(), cache());
  ASSERT_TRUE(fs::is_regular_file(cubin_path(*a)));
  for (const auto& e : fs::directory_iterator(cache())) {
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  }

  clear_memory_cache();
  auto mid = stats();
  auto b = get(src);
  auto after = stats();
  EXPECT_NE(a.get(), b.get());
  EXPECT_TRUE(b->from_disk());
  EXPECT_EQ(after.disk_hits, mid.disk_hits + 1);
  EXPECT_EQ(after.compiles, mid.compiles);
  EXPECT_EQ(b->cubin(), a->cubin());
  EXPECT_EQ(b->log(), a->log());
  EXPECT_EQ(b->resources().size(), a->resources().size());
}

TEST_F(JitTest, CorruptFilesAreRebuilt) {
  const std::string src = tiny_source(test_name());
  auto original = get(src);
  const std::string path = cubin_path(*original);
  const std::vector<char> good = read_bytes(path);
  ASSERT_GT(good.size(), original->cubin().size());

  std::vector<char> flipped = good;
  flipped[flipped.size() / 2] ^= 0x40;  // inside the cubin: only the checksum can notice
  std::vector<char> truncated(good.begin(), good.end() - 7);
  for (const std::vector<char>* bad : {&flipped, &truncated}) {
    write_bytes(path, *bad);
    clear_memory_cache();
    auto before = stats();
    auto rebuilt = get(src);
    EXPECT_EQ(stats().compiles, before.compiles + 1);
    EXPECT_EQ(stats().disk_hits, before.disk_hits);
    EXPECT_FALSE(rebuilt->from_disk());
    EXPECT_EQ(rebuilt->cubin(), original->cubin());
    // Not byte-equal to `good`: the log carries ptxas's "Compile time = ... ms". The reload
    // below proves the rewritten file valid.
    EXPECT_NE(read_bytes(path), *bad);

    clear_memory_cache();
    before = stats();
    auto reloaded = get(src);
    EXPECT_TRUE(reloaded->from_disk());
    EXPECT_EQ(stats().disk_hits, before.disk_hits + 1);
    EXPECT_EQ(stats().compiles, before.compiles);
  }
}

TEST_F(JitTest, ConcurrentCallersShareOneCompile) {
  const std::string src = tiny_source(test_name());
  constexpr int kThreads = 8;
  auto before = stats();
  std::atomic<int> ready{0};
  std::vector<std::shared_ptr<const Instance>> got(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  const std::string label = test_name();
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      try {
        got[i] = get_instance(label, src, default_options());
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  auto after = stats();
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(errors[i], "");
    ASSERT_TRUE(got[i]);
    EXPECT_EQ(got[i].get(), got[0].get());
  }
  EXPECT_EQ(after.compiles, before.compiles + 1);
  EXPECT_EQ(after.disk_hits, before.disk_hits);
  EXPECT_EQ(after.memory_hits, before.memory_hits + kThreads - 1);
}

TEST_F(JitTest, SyntaxErrorThrowsCompileErrorNamingTheLabel) {
  const std::string label = "broken_instance_label";
  const std::string src = "extern \"C\" __global__ void f(int* y) { int x = ; }\n";
  try {
    get_instance(label, src, default_options());
    FAIL() << "no exception";
  } catch (const f8gemm::Error& e) {
    EXPECT_EQ(e.code(), f8gemm::ErrorCode::kCompile);
    const std::string what = e.what();
    const std::string first_line = what.substr(0, what.find('\n'));
    EXPECT_NE(first_line.find(label), std::string::npos) << what;
    EXPECT_NE(first_line.find("error"), std::string::npos) << what;
    EXPECT_NE(what.find("expected an expression"), std::string::npos) << what;
  }
  // A failure is not cached: the next call compiles (and fails) again.
  auto before = stats();
  EXPECT_THROW(get_instance(label, src, default_options()), f8gemm::Error);
  EXPECT_EQ(stats().compiles, before.compiles + 1);
}

TEST_F(JitTest, UnwritableCacheDirectoryKeepsTheMemoryCache) {
  const std::string blocker = dir_ + "/blocker";
  write_bytes(blocker, {'x'});
  cache_env_.set(blocker + "/sub");  // a regular file where a directory should be, even for root
  const std::string src = tiny_source(test_name());
  auto before = stats();
  auto a = get(src);
  ASSERT_TRUE(a);
  EXPECT_FALSE(a->cubin().empty());
  EXPECT_EQ(stats().compiles, before.compiles + 1);
  EXPECT_EQ(get(src).get(), a.get());

  clear_memory_cache();
  auto b = get(src);
  EXPECT_FALSE(b->from_disk());
  EXPECT_EQ(stats().compiles, before.compiles + 2);
  EXPECT_EQ(stats().disk_hits, before.disk_hits);
}

// Issue 8, defect 1: NVRTC only warns about an int32 overflow in a template constant (#61-D) and
// builds a kernel that computes garbage. Any warning fails the compile of f8gemm's sources.
TEST_F(JitTest, AWarningIsACompileError) {
  const std::string overflow =
      "// " + test_name() + "\n"
      "template <int kK> struct Blocks { static constexpr int kValue = (kK + 127) / 128; };\n"
      "extern \"C\" __global__ void f8gemm_jit_test(int* y) { y[0] = Blocks<2147483632>::kValue; }\n";
  const std::string unused = "// " + test_name() +
                             "\nextern \"C\" __global__ void f8gemm_jit_test(int* y) { int u; }\n";
  for (const std::string* src : {&overflow, &unused}) {
    try {
      get(*src);
      FAIL() << "no exception for\n" << *src;
    } catch (const f8gemm::Error& e) {
      EXPECT_EQ(e.code(), f8gemm::ErrorCode::kCompile) << e.what();
      const std::string what = e.what();
      const std::string first_line = what.substr(0, what.find('\n'));
      EXPECT_NE(first_line.find(test_name()), std::string::npos) << what;
      EXPECT_NE(first_line.find("a warning is an error"), std::string::npos) << what;
      EXPECT_NE(first_line.find(src == &overflow ? "#61-D" : "#177-D"), std::string::npos) << what;
    }
  }
  // Nothing was cached: neither file exists on disk.
  EXPECT_FALSE(fs::exists(cache() + "/" + f8gemm::jit::make_key(overflow, default_options()) + ".cubin"));
}

TEST_F(JitTest, ACachedCubinWhoseLogHasAWarningIsCompiledAgain) {
  // A cache written before warnings were errors: the file is valid, its log holds a warning.
  const std::string src = tiny_source(test_name());
  auto good = get(src);
  const std::string path = cubin_path(*good);
  std::vector<char> bytes = read_bytes(path);
  const std::string old_log = good->log();
  const std::string new_log = "x.cu(1): warning #61-D: integer operation result is out of range\n";
  // Rewrite the file with the warning as its log: header fields are native-endian integers.
  ASSERT_EQ(bytes.size(), 8 + 4 + 4 + 32 + 8 + 8 + 8 + good->cubin().size() + old_log.size());
  bytes.resize(bytes.size() - old_log.size());
  bytes.insert(bytes.end(), new_log.begin(), new_log.end());
  const uint64_t log_size = new_log.size();
  std::memcpy(bytes.data() + 8 + 4 + 4 + 32 + 8, &log_size, 8);
  uint64_t h = 0xcbf29ce484222325ull;  // the payload checksum: FNV-1a over cubin then log
  for (char c : good->cubin()) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  for (char c : new_log) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  std::memcpy(bytes.data() + 8 + 4 + 4 + 32 + 16, &h, 8);
  write_bytes(path, bytes);

  clear_memory_cache();
  auto before = stats();
  auto again = get(src);
  EXPECT_FALSE(again->from_disk());
  EXPECT_EQ(stats().compiles, before.compiles + 1);
  EXPECT_NE(again->log().find("Compiling entry function 'f8gemm_jit_test'"), std::string::npos)
      << again->log();
}

// Issue 8, defect 4: a disk cache that cannot be used costs a compile in every process; that is
// said once on stderr, naming the directory and the reason, and cache_problem() says it too.
void expect_one_warning(const std::string& err, const std::string& dir, const std::string& reason) {
  const std::string needle = "f8gemm: warning: the JIT disk cache '" + dir + "' is unusable (";
  const size_t at = err.find(needle);
  ASSERT_NE(at, std::string::npos) << "stderr: " << err;
  EXPECT_EQ(err.find(needle, at + 1), std::string::npos) << "warned twice: " << err;
  EXPECT_NE(err.find(reason, at), std::string::npos) << "no reason '" << reason << "': " << err;
}

TEST_F(JitTest, CacheDirNamingAFileWarnsOnceWithThePathAndTheReason) {
  const std::string file = dir_ + "/a_file";
  write_bytes(file, {'x'});
  cache_env_.set(file);  // a regular file: not a directory, for root as for anyone
  ::testing::internal::CaptureStderr();
  auto a = get(tiny_source(test_name() + "1"));
  auto b = get(tiny_source(test_name() + "2"));
  const std::string err = ::testing::internal::GetCapturedStderr();
  expect_one_warning(err, file, "it exists and is not a directory");
  EXPECT_FALSE(a->from_disk());
  EXPECT_EQ(f8gemm::jit::cache_problem(), "it exists and is not a directory");
  EXPECT_NE(f8gemm::device_info().cache_problem, "");

  // Under a file: create_directories fails with "Not a directory".
  cache_env_.set(file + "/sub");
  ::testing::internal::CaptureStderr();
  get(tiny_source(test_name() + "3"));
  expect_one_warning(::testing::internal::GetCapturedStderr(), file + "/sub", "Not a directory");
}

// A cache directory that is a symbolic link to a missing target said "cannot create it: File
// exists" (create_directories' EEXIST): now the warning and cache_problem() name the link and
// its target, and nothing is created at the target.
TEST_F(JitTest, CacheDirThatIsADanglingLinkWarnsOnceNamingTheLinkAndItsTarget) {
  const std::string link = dir_ + "/dangling", target = dir_ + "/missing";
  fs::create_symlink(target, link);
  cache_env_.set(link);
  ::testing::internal::CaptureStderr();
  auto a = get(tiny_source(test_name() + "1"));
  get(tiny_source(test_name() + "2"));
  const std::string err = ::testing::internal::GetCapturedStderr();
  const std::string why = "it is a symbolic link to a missing target '" + target + "'";
  expect_one_warning(err, link, why);
  EXPECT_EQ(err.find("File exists"), std::string::npos) << err;
  EXPECT_FALSE(a->from_disk());
  EXPECT_EQ(f8gemm::jit::cache_problem(), why);
  EXPECT_EQ(f8gemm::device_info().cache_problem, why);
  EXPECT_FALSE(fs::exists(target));

  // A directory under the link: the link on its path is named.
  cache_env_.set(link + "/sub");
  EXPECT_EQ(f8gemm::jit::cache_problem(),
            "'" + link + "' is a symbolic link to a missing target '" + target + "'");
  // Once the target exists, the link serves as the cache.
  ASSERT_TRUE(fs::create_directory(target));
  cache_env_.set(link);
  EXPECT_EQ(f8gemm::jit::cache_problem(), "");
}

TEST_F(JitTest, ReadOnlyCacheDirectoryWarnsOnceWithThePathAndTheReason) {
  if (geteuid() == 0) {
    GTEST_SKIP() << "root writes into a mode-0555 directory; "
                    "ReadOnlyMountedCacheDirectoryWarnsEvenForRoot covers root";
  }
  const std::string ro = dir_ + "/read_only";
  ASSERT_TRUE(fs::create_directories(ro));
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                          fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  cache_env_.set(ro);
  ::testing::internal::CaptureStderr();
  auto a = get(tiny_source(test_name() + "1"));
  get(tiny_source(test_name() + "2"));
  const std::string err = ::testing::internal::GetCapturedStderr();
  fs::permissions(ro, fs::perms::owner_all);
  expect_one_warning(err, ro, "Permission denied");
  EXPECT_NE(err.find(ro + "/" + a->key() + ".cubin"), std::string::npos) << err;
  cache_env_.set(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_NE(f8gemm::jit::cache_problem().find("cannot write in it: Permission denied"),
            std::string::npos);
  fs::permissions(ro, fs::perms::owner_all);
}

TEST_F(JitTest, ReadOnlyMountedCacheDirectoryWarnsEvenForRoot) {
  // procfs refuses new files to everyone, root included: a directory that exists and cannot be
  // written, whoever runs the test.
  const std::string proc = "/proc/self";
  if (!fs::is_directory(proc)) GTEST_SKIP() << "no procfs";
  cache_env_.set(proc);
  ::testing::internal::CaptureStderr();
  get(tiny_source(test_name() + "1"));
  get(tiny_source(test_name() + "2"));
  const std::string err = ::testing::internal::GetCapturedStderr();
  expect_one_warning(err, proc, "cannot write " + proc + "/");
  EXPECT_NE(f8gemm::jit::cache_problem().find("cannot write in it"), std::string::npos);
}

TEST_F(JitTest, AWritableCacheHasNoProblemAndNoWarning) {
  ::testing::internal::CaptureStderr();
  get(tiny_source(test_name()));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("warning"), std::string::npos) << err;
  EXPECT_EQ(f8gemm::jit::cache_problem(), "");
  for (const auto& e : fs::directory_iterator(cache())) {
    EXPECT_EQ(e.path().filename().string().find(".probe"), std::string::npos) << e.path();
  }
}

TEST_F(JitTest, DumpDirectoryGetsSourcePtxAndLog) {
  const std::string dump = dir_ + "/dump";
  dump_env_.set(dump);
  const std::string src = tiny_source(test_name());
  auto a = get(src);
  const std::string base = dump + "/" + test_name() + "." + a->key();
  auto check = [&] {
    EXPECT_EQ(read_text(base + ".cu"), src);
    const std::string ptx = read_text(base + ".ptx");
    EXPECT_NE(ptx.find(".entry f8gemm_jit_test"), std::string::npos) << ptx;
    EXPECT_NE(ptx.find(".target sm_90a"), std::string::npos) << ptx;
    EXPECT_EQ(read_text(base + ".log"), a->log());
  };
  check();

  // A disk hit dumps too (its PTX comes from a PTX-only compile).
  std::error_code ec;
  fs::remove_all(dump, ec);
  clear_memory_cache();
  auto b = get(src);
  EXPECT_TRUE(b->from_disk());
  check();
}

// A dump directory that is a file: one warning with the path and the reason, however many
// instances compile, and the instances still come (dumping is a side output).
TEST_F(JitTest, DumpDirectoryNamingAFileWarnsOnceWithThePathAndTheReason) {
  const std::string file = dir_ + "/not_a_dir";
  write_bytes(file, {'x'});
  dump_env_.set(file);
  ::testing::internal::CaptureStderr();
  auto a = get(tiny_source(test_name() + "1"));
  auto b = get(tiny_source(test_name() + "2"));
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(a && b);
  const std::string needle = "f8gemm: warning: F8GEMM_DUMP_DIR '" + file + "' is unusable (";
  const size_t at = err.find(needle);
  ASSERT_NE(at, std::string::npos) << err;
  EXPECT_NE(err.find("it exists and is not a directory", at), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << "more than one line: " << err;
}

TEST_F(JitTest, KernelWithoutADeviceThrowsNoDevice) {
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) {
    GTEST_SKIP() << "a GPU is present: this test is for machines without one";
  }
  auto inst = get(tiny_source(test_name()));
  try {
    inst->kernel(kEntry);
    FAIL() << "no exception";
  } catch (const f8gemm::Error& e) {
    EXPECT_EQ(e.code(), f8gemm::ErrorCode::kNoDevice) << e.what();
  }
}

TEST_F(JitTest, EmbeddedHeadersResolveWithoutAnIncludePath) {
  if (f8gemm::jit::kNumEmbeddedFiles == 0) GTEST_SKIP() << "no embedded headers in this build";
  // Prefer the main kernel header when it is embedded; any embedded name proves the mechanism.
  std::string header = f8gemm::jit::kEmbeddedFiles[0].name;
  for (int i = 0; i < f8gemm::jit::kNumEmbeddedFiles; ++i) {
    if (std::strcmp(f8gemm::jit::kEmbeddedFiles[i].name, "gemm_kernel.cuh") == 0) {
      header = f8gemm::jit::kEmbeddedFiles[i].name;
    }
  }
  const std::string src = "#include \"" + header + "\"\n" + tiny_source(test_name());
  auto inst = get(src);
  ASSERT_TRUE(inst);
  EXPECT_NE(find_entry(inst->resources(), kEntry), nullptr) << inst->log();
}

}  // namespace
