/// \brief `f8gemm tune` refuses an `--out` or `--log` it cannot write before it times anything
/// (issue 8: it used to learn so only after the whole run). Runs the built binary.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "common/test_util.hpp"

namespace fs = std::filesystem;

namespace {

TEST(TuneCli, UnwritableOutOrLogExitsTwoBeforeTheRun) {
  std::error_code ec;
  const fs::path cli = fs::read_symlink("/proc/self/exe", ec).parent_path() / "f8gemm";
  ASSERT_TRUE(fs::is_regular_file(cli)) << "the f8gemm binary is not built at " << cli;
  const f8gemm::test::TempDir dir("f8gemm_tune_cli");
  const std::string shapes = dir.path() + "/shapes.txt", err = dir.path() + "/stderr";
  std::ofstream(shapes) << "1,16,256,256\n";
  const std::string missing = dir.path() + "/no/such/dir";
  struct Case {
    std::string args, needle;
  };
  for (const Case& c : {Case{"--out " + missing + "/t.tsv", "cannot write --out"},
                        Case{"--out " + dir.path(), "cannot write --out"},
                        Case{"--out " + dir.path() + "/t.tsv --log " + missing + "/t.csv",
                             "cannot write --log"}}) {
    SCOPED_TRACE(c.args);
    const std::string command = "'" + cli.string() + "' tune --shapes '" + shapes + "' " + c.args +
                                " >/dev/null 2>'" + err + "'";
    const int status = std::system(command.c_str());
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 2);
    std::ifstream in(err);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    EXPECT_NE(text.find(c.needle), std::string::npos) << text;
    EXPECT_EQ(text.find('\n'), text.size() - 1) << "one line: " << text;
  }
  EXPECT_FALSE(fs::exists(dir.path() + "/t.tsv")) << "a refused run leaves no table behind";
}

}  // namespace
