/// \brief libnvrtc-builtins is loaded from the loaded libnvrtc's own folder before the first
/// compile (jit/nvrtc_builtins.hpp), not looked up by name on the loader's path.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <string>
#include <vector>

#include "jit/jit.hpp"
#include "jit/nvrtc_builtins.hpp"
#include "jit/nvrtc_identity.hpp"

namespace {

const std::string kSource = "extern \"C\" __global__ void f8gemm_builtins_test() {}\n";
const std::vector<std::string> kOptions = {"--gpu-architecture=sm_90a", "-std=c++17"};

TEST(NvrtcBuiltins, ThePathIsBesideLibnvrtcWithItsVersion) {
  using f8gemm::jit::nvrtc_builtins_path;
  EXPECT_EQ(nvrtc_builtins_path("/site/nvidia/cu13/lib/libnvrtc.so.13", 13, 0),
            "/site/nvidia/cu13/lib/libnvrtc-builtins.so.13.0");
  EXPECT_EQ(nvrtc_builtins_path("libnvrtc.so.13", 13, 2), "./libnvrtc-builtins.so.13.2");
  EXPECT_EQ(nvrtc_builtins_path("", 13, 0), "");
}

// The tests link the toolkit's libnvrtc.so, whose folder holds libnvrtc-builtins.so.<M>.<m>:
// it is loaded from there, and after a compile the one builtins library mapped is that file.
TEST(NvrtcBuiltins, AreLoadedFromLibnvrtcsFolder) {
  const std::string nvrtc = f8gemm::jit::loaded_nvrtc_path();
  ASSERT_NE(nvrtc, "");
  const std::string& loaded = f8gemm::jit::load_nvrtc_builtins_beside_nvrtc();
  EXPECT_EQ(loaded.substr(0, loaded.rfind('/')), nvrtc.substr(0, nvrtc.rfind('/'))) << loaded;
  EXPECT_NE(loaded.find("/libnvrtc-builtins.so."), std::string::npos) << loaded;
  EXPECT_EQ(&f8gemm::jit::load_nvrtc_builtins_beside_nvrtc(), &loaded);  // once per process
  f8gemm::jit::compile_cubin("nvrtc_builtins_test", kSource, kOptions, false, nullptr);
  std::ifstream maps("/proc/self/maps");
  std::string line, mapped;
  while (std::getline(maps, line)) {
    if (line.find("libnvrtc-builtins") == std::string::npos) continue;
    const std::string file = line.substr(line.find('/'));
    if (mapped.empty()) mapped = file;
    EXPECT_EQ(file, mapped) << "two builtins libraries mapped";
  }
  char resolved[4096];
  ASSERT_NE(realpath(loaded.c_str(), resolved), nullptr);
  EXPECT_EQ(mapped, std::string(resolved));
}

}  // namespace
