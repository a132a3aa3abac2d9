/// \brief `f8gemm bench --rotate-l2` refuses a span it cannot use, with exit 2 and one line,
/// before it looks for a GPU or reads its shapes. Runs the built binary.
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

TEST(BenchCli, RotateL2OutsideItsRangeExitsTwoWithOneLine) {
  std::error_code ec;
  const fs::path cli = fs::read_symlink("/proc/self/exe", ec).parent_path() / "f8gemm";
  ASSERT_TRUE(fs::is_regular_file(cli)) << "the f8gemm binary is not built at " << cli;
  const f8gemm::test::TempDir dir("f8gemm_bench_cli");
  const std::string err = dir.path() + "/stderr";
  for (const std::string value : {"0", "-1", "65", "nan", "2x", "''"}) {
    SCOPED_TRACE(value);
    const std::string command = "'" + cli.string() + "' bench --rotate-l2 " + value +
                                " --shapes /no/such/shapes.txt >/dev/null 2>'" + err + "'";
    const int status = std::system(command.c_str());
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 2);
    std::ifstream in(err);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    EXPECT_NE(text.find("--rotate-l2 must be a number in (0, 64]"), std::string::npos) << text;
    EXPECT_EQ(text.find('\n'), text.size() - 1) << "one line: " << text;
  }
}

}  // namespace
