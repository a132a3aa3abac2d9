/// \brief The CLI refuses what it cannot use before it times anything, with exit 2 and one line
/// on stderr: `f8gemm tune` an `--out` or `--log` it cannot write (issue 8: it used to learn so
/// only after the whole run), `f8gemm bench` a `--rotate-l2` outside (0, 64]. Runs the built
/// binary.
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

/// Runs the f8gemm binary beside this test binary with `args` (shell words), stdout discarded;
/// expects exit 2 and one line of stderr that contains `needle`.
void expect_refusal(const f8gemm::test::TempDir& dir, const std::string& args,
                    const std::string& needle) {
  SCOPED_TRACE(args);
  std::error_code ec;
  const fs::path cli = fs::read_symlink("/proc/self/exe", ec).parent_path() / "f8gemm";
  ASSERT_TRUE(fs::is_regular_file(cli)) << "the f8gemm binary is not built at " << cli;
  const std::string err = dir.path() + "/stderr";
  const std::string command = "'" + cli.string() + "' " + args + " >/dev/null 2>'" + err + "'";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  std::ifstream in(err);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find(needle), std::string::npos) << text;
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "one line: " << text;
}

TEST(TuneCli, UnwritableOutOrLogExitsTwoBeforeTheRun) {
  const f8gemm::test::TempDir dir("f8gemm_tune_cli");
  const std::string shapes = dir.path() + "/shapes.txt";
  std::ofstream(shapes) << "1,16,256,256\n";
  const std::string missing = dir.path() + "/no/such/dir";
  const std::string tune = "tune --shapes '" + shapes + "' ";
  expect_refusal(dir, tune + "--out " + missing + "/t.tsv", "cannot write --out");
  expect_refusal(dir, tune + "--out " + dir.path(), "cannot write --out");
  expect_refusal(dir, tune + "--out " + dir.path() + "/t.tsv --log " + missing + "/t.csv",
                 "cannot write --log");
  EXPECT_FALSE(fs::exists(dir.path() + "/t.tsv")) << "a refused run leaves no table behind";
}

TEST(TuneCli, EpilogueOtherThanNoneOrSiluMulOrAnNTheOperationCannotSplitExitsTwo) {
  const f8gemm::test::TempDir dir("f8gemm_tune_cli");
  const std::string shapes = dir.path() + "/shapes.txt";
  std::ofstream(shapes) << "1,16,256,256\n1,16,264,256\n";
  const std::string tune = "tune --shapes '" + shapes + "' --out " + dir.path() + "/t.tsv ";
  expect_refusal(dir, tune + "--epilogue silu", "--epilogue must be none or silu_mul, got 'silu'");
  // 264 gate|up rows are not 2 x a multiple of 8: the library's refusal, before any shape is
  // timed and before the log is opened (an existing log keeps its text).
  const std::string log = dir.path() + "/t.csv";
  std::ofstream(log) << "an earlier run's log\n";
  expect_refusal(dir, tune + "--log " + log + " --epilogue silu_mul",
                 "with the SiLU·mul epilogue N (gate then up rows, 2I) must be a multiple of 16, "
                 "got 264");
  EXPECT_FALSE(fs::exists(dir.path() + "/t.tsv")) << "a refused run leaves no table behind";
  std::ifstream in(log);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), "an earlier run's log\n");
}

TEST(BenchCli, RotateL2OutsideItsRangeExitsTwoWithOneLine) {
  const f8gemm::test::TempDir dir("f8gemm_bench_cli");
  // Refused before the shapes file is read (it does not exist) or a GPU is looked for.
  for (const std::string value : {"0", "-1", "65", "nan", "inf", "2x", "''"}) {
    expect_refusal(dir, "bench --rotate-l2 " + value + " --shapes /no/such/shapes.txt",
                   "--rotate-l2 must be a number in (0, 64]");
  }
  // Values in range pass the check and reach the shapes file, which then refuses the run.
  for (const std::string arg : {"--rotate-l2 64", "--rotate-l2 0.5", "--rotate-l2=8"}) {
    expect_refusal(dir, "bench " + arg + " --shapes /no/such/shapes.txt",
                   "cannot read shapes file");
  }
}

}  // namespace
