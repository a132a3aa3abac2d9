/// \brief The `f8gemm` CLI as a user meets it: exit codes (2 for a bad argument, one line on
/// stderr), precompile's checks, shapes files and `info`'s cache line. Runs the built binary.
#include <gtest/gtest.h>
#include <dlfcn.h>
#include <limits.h>
#include <nvrtc.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/test_util.hpp"
#include "f8gemm/f8gemm.hpp"
#include "f8gemm/tuning.hpp"

namespace fs = std::filesystem;

namespace {

/// The CLI binary: CMake puts it beside the test executable (both in the build directory).
std::string cli_path() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : (self.parent_path() / "f8gemm").string();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct Result {
  int rc = -1;
  std::string out, err;
};

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cli_ = cli_path();
    ASSERT_TRUE(fs::is_regular_file(cli_)) << "the f8gemm binary is not built at '" << cli_ << "'";
    char tmpl[] = "/tmp/f8gemm_cli_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  /// Runs `f8gemm args` with its own cache directory (or `env` first on the command line).
  Result run(const std::string& args, const std::string& env = "") {
    const std::string out = dir_ + "/stdout", err = dir_ + "/stderr";
    const std::string env_part = env.empty() ? "F8GEMM_CACHE_DIR='" + dir_ + "/cache'" : env;
    const std::string command = "env " + env_part + " '" + cli_ + "' " + args + " >'" + out +
                                "' 2>'" + err + "'";
    const int status = std::system(command.c_str());
    Result r;
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_text(out);
    r.err = read_text(err);
    return r;
  }

  /// Exit 2 and exactly one line on stderr that contains `needle`.
  void expect_bad_argument(const std::string& args, const std::string& needle) {
    SCOPED_TRACE("f8gemm " + args);
    const Result r = run(args);
    EXPECT_EQ(r.rc, 2) << r.err;
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }

  std::string cli_, dir_;
};

// An environment variable that the decision reads, with a value it cannot use, is a bad
// argument naming the variable: a missing F8GEMM_TUNE_FILE exited 1 as an I/O error, a
// directory was read as an empty table, and F8GEMM_NO_TUNED=maybe silently turned the tables
// off.
TEST_F(CliTest, EnvironmentValuesTheDecisionCannotUseExitTwoNamingTheVariable) {
  const std::string cache = "F8GEMM_CACHE_DIR='" + dir_ + "/cache' ";
  const struct {
    std::string env, needle;
  } cases[] = {
      {"F8GEMM_TUNE_FILE='" + dir_ + "/missing.tsv'",
       "F8GEMM_TUNE_FILE='" + dir_ + "/missing.tsv' cannot be read"},
      // A directory opened as a stream, read as an empty table, and the user's tuning was
      // silently not used (exit 0).
      {"F8GEMM_TUNE_FILE='" + dir_ + "'", "F8GEMM_TUNE_FILE='" + dir_ + "' is a directory"},
      {"F8GEMM_CONFIG=garbage", "F8GEMM_CONFIG='garbage': config name 'garbage' does not match"},
      // A name that parses but that no problem can run: judged before the GPU is looked for
      // (session 42's probe: run said "no device" first, exit 1), as --config is.
      {"F8GEMM_CONFIG=sm90_tiled_0x0x0_s0_c0x0_r0",
       "F8GEMM_CONFIG='sm90_tiled_0x0x0_s0_c0x0_r0': bk must be 128"},
      {"F8GEMM_CONFIG=sm90_tiled_128x256x128_s99_c1x1_r8",
       "F8GEMM_CONFIG='sm90_tiled_128x256x128_s99_c1x1_r8': stages must be 2..16"},
      {"F8GEMM_NO_TUNED=maybe", "F8GEMM_NO_TUNED='maybe' is not a switch value"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.env);
    const Result r = run("precompile --shape 1,16,256,256", cache + c.env);
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << r.err;
  }
}

// `f8gemm <command> --help` asks for the usage: on stdout, nothing on stderr, exit 0, for
// every command (only bench answered it before; the others exited 2 on an unknown option).
// Wherever it stands among the other arguments (session 41: before, only as the whole list, while
// bench answered it anywhere; argparse- and clap-style tools answer it anywhere).
TEST_F(CliTest, EveryCommandAnswersHelpOnStdout) {
  for (const char* command : {"info", "demo", "run", "bench", "precompile", "tune"}) {
    for (const char* flag : {"--help", "-h"}) {
      SCOPED_TRACE(std::string(command) + " " + flag);
      const Result r = run(std::string(command) + " " + flag);
      EXPECT_EQ(r.rc, 0) << r.err;
      EXPECT_EQ(r.err, "");
      EXPECT_EQ(r.out.rfind("usage: f8gemm", 0), 0u) << r.out;
    }
  }
  // Beside other arguments, first, last or between them: the usage, and nothing is run or built
  // (the precompile would fill the cache directory).
  for (const char* args : {"run --m 16 --help", "run --help --m 16 --n 256 --k 256",
                           "precompile -h --shape 1,16,256,256", "bench --iters 5 --help",
                           "tune --shapes none.txt -h --iters 2"}) {
    SCOPED_TRACE(args);
    const Result r = run(args);
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(r.out.rfind("usage: f8gemm", 0), 0u) << r.out;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/cache")) << "a --help run built instances";
  // Nothing is checked either: a bad variable does not stand between a user and the usage.
  for (const char* args : {"bench --help", "bench --iters x --help", "run -h"}) {
    SCOPED_TRACE(args);
    const Result r = run(args, "F8GEMM_PDL=maybe F8GEMM_CACHE_DIR='" + dir_ + "/cache'");
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.out.rfind("usage: f8gemm", 0), 0u) << r.out;
  }
}

// `f8gemm` alone: one line that says what is missing and where the usage is, exit 2 (it printed
// the 20-line usage on stderr).
TEST_F(CliTest, NoCommandIsOneLine) {
  expect_bad_argument("", "no command (try: f8gemm help)");
}

// Issue 8, defect 3: every kInvalidArgument (and a forced config that cannot run) is a bad
// argument: exit 2 with one readable line, as the README says.
TEST_F(CliTest, BadArgumentsExitTwoWithOneLine) {
  expect_bad_argument("run --m 16 --n 256 --k 40", "K must be a positive multiple of 16");
  expect_bad_argument("run --m 16 --n 20 --k 256", "N must be a positive multiple of 8");
  expect_bad_argument("run --m 16 --n 256 --k 256 --config garbage",
                      "config name 'garbage' does not match");
  expect_bad_argument("run --m 16 --n 256 --k 256 --config sm90_tiled_128x256x128_s16_c1x1_r8",
                      "config sm90_tiled_128x256x128_s16_c1x1_r8 cannot run");
  expect_bad_argument("run --m 16 --n 256 --k 256 --config sm90_tiled_128x128x128_s4_c1x1_r99999999999",
                      "raster = 99999999999 is out of range");
  expect_bad_argument("precompile --shape 1,16,256,40", "K must be a positive multiple of 16");
  // Unknown options and malformed values were exit 2 already.
  expect_bad_argument("run --m 16 --n 256", "--m, --n and --k are required");
  expect_bad_argument("precompile --frobnicate", "unknown option '--frobnicate'");
}

// Issue 8, defect 2: precompile runs the call's size checks; these exited 0 (with UBSan's signed
// overflow in the cost model) or failed as an NVRTC error.
TEST_F(CliTest, PrecompileRejectsSizesACallRejects) {
  expect_bad_argument("precompile --shape 9223372036854775807,1,8,16",
                      "B = 9223372036854775807 is more than 2147483647");
  expect_bad_argument("precompile --shape 100000,100000,256,100000",
                      "B * ceil(M/8) * ceil(N/8) is more than 1073741824");
  expect_bad_argument("precompile --shape 1,1,8,4294967296", "K = 4294967296 is more than 2147483392");
  expect_bad_argument("precompile --shape 1,1,8,2147483632", "K = 2147483632 is more than 2147483392");
}

// precompile's --out names the output type of the instances it builds: any other value than
// bf16 or fp16 is a bad argument, refused before any compile (it built the bf16 instances).
TEST_F(CliTest, PrecompileOutOtherThanBf16OrFp16ExitsTwo) {
  for (const char* out : {"fp32", "f16", "BF16"}) {
    SCOPED_TRACE(out);
    expect_bad_argument(std::string("precompile --shape 1,16,256,256 --out ") + out,
                        "precompile: --out must be bf16 or fp16");
    EXPECT_EQ(run(std::string("precompile --shape 1,16,256,256 --out ") + out).out, "")
        << "built before the check";
  }
}

// precompile builds the instance a call with these flags loads: --plain, --precise and --out fp16
// each reach the instance's label (layout, output type, accumulation). A flag parsed and then
// dropped would build the bf16 fast preshuffled instance instead, with exit 0 (the s38 mutation
// audit: two such drops survived every CPU test).
TEST_F(CliTest, PrecompileBuildsTheInstanceItsFlagsName) {
  const Result r = run("precompile --shape 1,16,256,256 --plain --precise --out fp16");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find(".n256.k256.plain.f16.nobias.precise  regs="), std::string::npos) << r.out;
  const Result d = run("precompile --shape 1,16,256,256");
  ASSERT_EQ(d.rc, 0) << d.err;
  EXPECT_NE(d.out.find(".n256.k256.preshuffled.bf16.nobias.fast  regs="), std::string::npos)
      << d.out;
}

// `precompile --candidates` builds every candidate `tune` would time, each into the disk cache,
// and says how many it built: one line per candidate, then the count. It runs the call's size
// checks first, as precompile does.
TEST_F(CliTest, PrecompileCandidatesBuildsEveryCandidateIntoTheCache) {
  const Result r = run("precompile --candidates --shape 1,4096,256,256");
  ASSERT_EQ(r.rc, 0) << r.err;
  f8gemm::ProblemShape p;
  p.m = 4096;
  p.n = 256;
  p.k = 256;
  const size_t expected = f8gemm::candidate_configs(p, f8gemm::target_gpu().sm_count).size();
  ASSERT_GT(expected, 1u);
  size_t built_lines = 0;
  for (size_t at = 0; (at = r.out.find(" regs=", at)) != std::string::npos; ++at) ++built_lines;
  EXPECT_EQ(built_lines, expected) << r.out;
  EXPECT_NE(r.out.find("1,4096,256,256: " + std::to_string(expected) + " candidates built, 0 not"),
            std::string::npos)
      << r.out;
  size_t cubins = 0;
  for (const auto& e : fs::directory_iterator(dir_ + "/cache")) {
    cubins += e.path().extension() == ".cubin";
  }
  EXPECT_EQ(cubins, expected) << "each candidate is its own kernel, cached on disk";
  expect_bad_argument("precompile --candidates --shape 1,16,100,256",
                      "N must be a positive multiple of 8");
  expect_bad_argument("precompile --candidates --shape 1,16,256,40",
                      "K must be a positive multiple of 16");
}

// `precompile --candidates` checks every shape before the first compile, as precompile does: a
// bad shape after a good one exits 2 having built (and printed) nothing.
TEST_F(CliTest, PrecompileCandidatesChecksEveryShapeBeforeBuilding) {
  const Result r = run("precompile --candidates --shape 1,16,256,256 --shape 1,16,256,40");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("K must be a positive multiple of 16"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "") << "built before the check";
}

// `precompile --gpu h100` chooses as the H100's table does, on a machine without that GPU (a
// cache built here for a fleet of H100s), and says so in what it reports; an unknown name is a
// bad argument.
TEST_F(CliTest, PrecompileForANamedGpuBuildsItsTablesPick) {
  f8gemm::ProblemShape p;
  p.batch = 16;
  p.m = 4096;
  p.n = 1280;
  p.k = 8192;
  const std::string h100 = f8gemm::decide_config(f8gemm::named_gpu("h100"), p).name();
  ASSERT_NE(h100, f8gemm::decide_config(f8gemm::named_gpu("h200"), p).name());
  const Result r = run("precompile --gpu h100 --shape 16,4096,1280,8192");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("16,4096,1280,8192  " + h100 + ".n1280.k8192."), std::string::npos)
      << r.out;
  expect_bad_argument("precompile --gpu h300 --shape 1,16,256,256",
                      "unknown GPU 'h300': the GPUs with shipped tables are h100 and h200");
  expect_bad_argument("precompile --gpu", "--gpu");
  // The call's size checks come first here too, before any compile.
  expect_bad_argument("precompile --gpu h100 --shape 1,16,100,256",
                      "N must be a positive multiple of 8");
}

// Issue 8, defect 8: a directory or a file without shapes said "give --shape B,M,N,K or --shapes".
TEST_F(CliTest, ShapesFileThatIsADirectoryOrEmptySaysSo) {
  expect_bad_argument("precompile --shapes '" + dir_ + "'", "is a directory");
  const std::string empty = dir_ + "/empty.txt";
  std::ofstream(empty).close();
  expect_bad_argument("precompile --shapes '" + empty + "'", "holds no shapes");
  const std::string comments = dir_ + "/comments.txt";
  std::ofstream(comments) << "# B,M,N,K\n\n   \n";
  expect_bad_argument("precompile --shapes '" + comments + "'", "holds no shapes");
  expect_bad_argument("precompile --shapes '" + dir_ + "/missing.txt'",
                      "No such file or directory");
}

TEST_F(CliTest, OtherErrorsExitOne) {
  if (f8gemm::test::have_sm90()) GTEST_SKIP() << "an sm_90 GPU is present: run would succeed";
  const Result r = run("run --m 16 --n 256 --k 256");
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find("no device"), std::string::npos) << r.err;
}

// Issue 8, defect 4: `info` shows a cache that cannot be used, and why.
TEST_F(CliTest, InfoShowsAnUnusableCache) {
  const std::string file = dir_ + "/a_file";
  std::ofstream(file) << "x";
  const Result bad = run("info", "F8GEMM_CACHE_DIR='" + file + "'");
  EXPECT_EQ(bad.rc, 0) << bad.err;
  EXPECT_NE(bad.out.find("cache: " + file + " (unusable: it exists and is not a directory;"), std::string::npos)
      << bad.out;
  const Result good = run("info");
  EXPECT_EQ(good.rc, 0) << good.err;
  EXPECT_NE(good.out.find("cache: " + dir_ + "/cache\n"), std::string::npos) << good.out;
}

// Without a GPU `info` says why, as device_info() (the same library, on this machine) does.
TEST_F(CliTest, InfoWithoutAGpuSaysWhy) {
  const f8gemm::DeviceInfo info = f8gemm::device_info();
  if (info.has_device) GTEST_SKIP() << "a GPU is present";
  ASSERT_FALSE(info.reason.empty());
  const Result r = run("info");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("GPU: none (" + info.reason + "); kernels still compile for sm_90a\n"),
            std::string::npos)
      << r.out;
}

// The JIT cache key's NVRTC identity is the same in another process of this installation (the
// CLI and this test link one libnvrtc): a second run finds the first run's cubins.
TEST_F(CliTest, InfoNamesTheNvrtcLibraryOfTheCacheKeyAsThisProcessDoes) {
  const Result r = run("info");
  EXPECT_EQ(r.rc, 0) << r.err;
  const std::string identity = f8gemm::device_info().nvrtc_library;
  EXPECT_NE(r.out.find("NVRTC library (in the JIT cache key): " + identity + "\n"),
            std::string::npos)
      << r.out;
}

// The identity is the libnvrtc that nvrtc* calls bind to, also where an object named like
// another major's libnvrtc was loaded first: it named the first loaded "libnvrtc.so*" before
// session 29. The stand-in is a copy of libm (any harmless library), preloaded as
// libnvrtc.so.<major - 1> so that it comes before the real one among the loaded objects.
TEST_F(CliTest, InfoNamesTheBoundNvrtcWhenAnotherMajorsNameWasLoadedFirst) {
  void* libm = dlopen("libm.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(libm, nullptr) << "this test process has no libm.so.6 loaded";
  char origin[PATH_MAX] = {};
  ASSERT_EQ(dlinfo(libm, RTLD_DI_ORIGIN, origin), 0) << dlerror();
  dlclose(libm);
  int major = 0, minor = 0;
  ASSERT_EQ(nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
  const std::string stand_in = dir_ + "/libnvrtc.so." + std::to_string(major - 1);
  fs::copy_file(std::string(origin) + "/libm.so.6", stand_in);
  // Under ASan (scripts/sanitize-cpu.sh) the preload comes before the sanitizer's runtime,
  // which ASan refuses unless told not to check; other builds ignore ASAN_OPTIONS.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string asan_options =
      (asan != nullptr && asan[0] != '\0' ? std::string(asan) + ":" : std::string()) +
      "verify_asan_link_order=0";
  const Result r = run("info", "F8GEMM_CACHE_DIR='" + dir_ + "/cache' ASAN_OPTIONS='" +
                                   asan_options + "' LD_PRELOAD='" + stand_in + "'");
  EXPECT_EQ(r.rc, 0) << r.err;
  const std::string identity = f8gemm::device_info().nvrtc_library;
  EXPECT_NE(r.out.find("NVRTC library (in the JIT cache key): " + identity + "\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("libnvrtc.so." + std::to_string(major - 1)), std::string::npos) << r.out;
}

}  // namespace
