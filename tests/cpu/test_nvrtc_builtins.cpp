/// \brief libnvrtc-builtins is loaded from the loaded libnvrtc's own folder before the first
/// compile (jit/nvrtc_builtins.hpp), not looked up by name on the loader's path. The case that
/// needs it (a libnvrtc whose folder is not on the loader's path) is tested in installed mode by
/// python/tests/test_cpu_ops.py; here, with the toolkit's libnvrtc linked, the load itself.
#include <gtest/gtest.h>
#include <limits.h>
#include <nvrtc.h>
#include <stdlib.h>

#include <fstream>
#include <string>
#include <vector>

#include "jit/jit.hpp"
#include "jit/nvrtc_builtins.hpp"

namespace {

const std::string kSource = "extern \"C\" __global__ void f8gemm_builtins_test() {}\n";
const std::vector<std::string> kOptions = {"--gpu-architecture=sm_90a", "-std=c++17"};

TEST(NvrtcBuiltins, ThePathIsInTheFolderWithTheVersion) {
  using f8gemm::jit::nvrtc_builtins_path;
  EXPECT_EQ(nvrtc_builtins_path("/site/nvidia/cu13/lib", 13, 0),
            "/site/nvidia/cu13/lib/libnvrtc-builtins.so.13.0");
  EXPECT_EQ(nvrtc_builtins_path("/opt/cuda/lib64", 13, 2),
            "/opt/cuda/lib64/libnvrtc-builtins.so.13.2");
  EXPECT_EQ(nvrtc_builtins_path("", 13, 0), "");
}

// The tests link the toolkit's libnvrtc.so.<major>, whose folder holds the builtins: they are
// loaded from there (an absolute path), once, and after a compile the one builtins library
// mapped is that file.
TEST(NvrtcBuiltins, AreLoadedFromLibnvrtcsFolder) {
  const f8gemm::jit::BuiltinsLoad& load = f8gemm::jit::load_nvrtc_builtins_beside_nvrtc();
  ASSERT_NE(load.path, "") << load.why_not;
  EXPECT_EQ(load.path[0], '/') << load.path;
  int major = 0, minor = 0;
  ASSERT_EQ(nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
  const std::string folder = load.path.substr(0, load.path.rfind('/'));
  EXPECT_EQ(load.path, f8gemm::jit::nvrtc_builtins_path(folder, major, minor));
  EXPECT_EQ(&f8gemm::jit::load_nvrtc_builtins_beside_nvrtc(), &load);  // once per process
  f8gemm::jit::compile_cubin("nvrtc_builtins_test", kSource, kOptions, false, nullptr);
  std::ifstream maps("/proc/self/maps");
  std::string line, mapped, nvrtc;
  while (std::getline(maps, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string file = line.substr(slash);
    if (file.find("/libnvrtc.so.") != std::string::npos && nvrtc.empty()) nvrtc = file;
    if (file.find("libnvrtc-builtins") == std::string::npos) continue;
    if (mapped.empty()) mapped = file;
    EXPECT_EQ(file, mapped) << "two builtins libraries mapped";
  }
  char resolved[PATH_MAX];
  ASSERT_NE(realpath(load.path.c_str(), resolved), nullptr);
  EXPECT_EQ(mapped, std::string(resolved));
  // The folder is libnvrtc's own.
  ASSERT_NE(nvrtc, "");
  EXPECT_EQ(nvrtc.substr(0, nvrtc.rfind('/')), mapped.substr(0, mapped.rfind('/')));
}

}  // namespace
