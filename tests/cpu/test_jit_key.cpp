/// \brief The JIT cache key names the loaded NVRTC library, not only nvrtcVersion's major.minor:
/// a patch update of the toolkit (same 13.0, another ptxas) must not reuse the old cubins.
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <string>
#include <thread>
#include <vector>

#include "f8gemm/check.hpp"
#include "jit/embedded.hpp"
#include "jit/jit.hpp"
#include "jit/nvrtc_identity.hpp"

namespace {

using f8gemm::jit::describe_nvrtc_library;
using f8gemm::jit::make_key;
using f8gemm::jit::make_key_for_nvrtc;
using f8gemm::jit::nvrtc_identity;

const std::string kSource = "extern \"C\" __global__ void f8gemm_key_test() {}\n";
const std::vector<std::string> kOptions = {"--gpu-architecture=sm_90a", "-std=c++17"};

// Two installations of one minor version, as describe_nvrtc_library() writes them: the older
// patch and the newer differ in build id (or, without one, in size), not in nvrtcVersion or file
// name (or in the name).
const std::string kOld = "NVRTC 13.0, libnvrtc.so.13 build-id 65be0db342ad51a06876e71e210bccc5aa8322cf";
const std::string kNewBuild =
    "NVRTC 13.0, libnvrtc.so.13 build-id 65be0db342ad51a06876e71e210bccc5aa8322d0";
const std::string kNewName =
    "NVRTC 13.0, libnvrtc.so.13.0.88 build-id 65be0db342ad51a06876e71e210bccc5aa8322cf";
const std::string kNoBuildId = "NVRTC 13.0, libnvrtc.so.13 109338064 bytes";

TEST(JitKey, ChangesWithTheNvrtcLibraryWithinOneMinorVersion) {
  const std::string old_key = make_key_for_nvrtc(kOld, kSource, kOptions);
  ASSERT_EQ(old_key.size(), 32u);
  for (const std::string& other : {kNewBuild, kNewName, kNoBuildId}) {
    EXPECT_NE(make_key_for_nvrtc(other, kSource, kOptions), old_key) << other;
  }
  // Equal identities, equal keys (a copy of the string, not the same object).
  EXPECT_EQ(make_key_for_nvrtc(std::string(kOld.data(), kOld.size()), kSource, kOptions), old_key);
  // The identity is its own field: moving text between it and the source changes the key.
  EXPECT_NE(make_key_for_nvrtc(kOld + "x", kSource, kOptions),
            make_key_for_nvrtc(kOld, "x" + kSource, kOptions));
}

TEST(JitKey, TheProcessKeyUsesTheLoadedLibrary) {
  EXPECT_EQ(make_key(kSource, kOptions), make_key_for_nvrtc(nvrtc_identity(), kSource, kOptions));
  EXPECT_NE(make_key(kSource, kOptions), make_key_for_nvrtc(kOld + " (another)", kSource, kOptions));
}

// An option's value is hashed, not only the number of options: -DX=1 and -DX=2 (one option
// each, the same length) compile different code.
TEST(JitKey, ChangesWithAnOptionsValue) {
  std::vector<std::string> one = kOptions, two = kOptions;
  one.push_back("-DX=1");
  two.push_back("-DX=2");
  EXPECT_NE(make_key(kSource, one), make_key(kSource, two));
  EXPECT_NE(make_key(kSource, {"--gpu-architecture=sm_90a", "-std=c++17"}),
            make_key(kSource, {"--gpu-architecture=sm_90a", "-std=c++20"}));
  EXPECT_EQ(make_key(kSource, one), make_key(kSource, std::vector<std::string>(one)));
}

// The instance source only #includes the device headers by name: an edit to any one of them (a
// fixed kernel) must change the key, or the disk cache serves the old cubin.
TEST(JitKey, ChangesWithTheTextOfEveryEmbeddedHeader) {
  using f8gemm::jit::EmbeddedFile;
  using f8gemm::jit::kEmbeddedFiles;
  using f8gemm::jit::kNumEmbeddedFiles;
  using f8gemm::jit::make_key_for_headers;
  ASSERT_GT(kNumEmbeddedFiles, 1);
  const std::vector<EmbeddedFile> shipped(kEmbeddedFiles, kEmbeddedFiles + kNumEmbeddedFiles);
  const std::string key = make_key_for_nvrtc(kOld, kSource, kOptions);
  const int count = int(shipped.size());
  EXPECT_EQ(make_key_for_headers(kOld, shipped.data(), count, kSource, kOptions), key);
  for (int i = 0; i < kNumEmbeddedFiles; ++i) {
    SCOPED_TRACE(kEmbeddedFiles[i].name);
    std::vector<EmbeddedFile> edited = shipped;
    const std::string text = std::string(kEmbeddedFiles[i].text) + "\n// edited\n";
    edited[size_t(i)].text = text.c_str();
    EXPECT_NE(make_key_for_headers(kOld, edited.data(), count, kSource, kOptions), key);
    edited = shipped;
    const std::string name = std::string(kEmbeddedFiles[i].name) + "x";
    edited[size_t(i)].name = name.c_str();
    EXPECT_NE(make_key_for_headers(kOld, edited.data(), count, kSource, kOptions), key);
  }
  // One header fewer is another set of headers.
  EXPECT_NE(make_key_for_headers(kOld, shipped.data(), count - 1, kSource, kOptions), key);
}

// One installation gives one identity: computed again from the loaded objects, and by eight
// threads at once (describe_nvrtc_library itself, not the process's kept copy, which an earlier
// test may have computed already), it is the same string as the one the keys use.
TEST(JitKey, TheNvrtcIdentityIsStableAndNamesTheLibrary) {
  const std::string first = describe_nvrtc_library();
  EXPECT_EQ(describe_nvrtc_library(), first);
  EXPECT_EQ(nvrtc_identity(), first);
  std::vector<std::string> seen(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&seen, i] { seen[i] = describe_nvrtc_library(); });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& s : seen) EXPECT_EQ(s, first);

  int major = 0, minor = 0;
  ASSERT_EQ(nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
  const std::string version = f8gemm::detail::concat("NVRTC ", major, ".", minor, ", ");
  EXPECT_EQ(first.rfind(version, 0), 0u) << first;
  // The tests link libnvrtc.so (CMake's CUDA::nvrtc), and the 13.0 toolkit's carries a 20-byte
  // build id: the identity names it by that.
  EXPECT_EQ(first.find("unidentified"), std::string::npos) << first;
  EXPECT_EQ(first.find(version + "libnvrtc.so"), 0u) << first;
  const size_t id = first.find(" build-id ");
  ASSERT_NE(id, std::string::npos) << first;
  EXPECT_EQ(first.size() - id - 10, 40u) << first;
  EXPECT_EQ(first.find_first_not_of("0123456789abcdef", id + 10), std::string::npos) << first;
  // No directory and no modification time: identical copies of the library at two paths, or on
  // two machines, share one cache.
  EXPECT_EQ(first.find("mtime"), std::string::npos) << first;
  EXPECT_EQ(first.find('/'), std::string::npos) << first;
}

}  // namespace
