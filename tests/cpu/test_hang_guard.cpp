/// \brief The GPU wait with a deadline (testing/hang_guard.hpp), with polls that stand in for a
/// stream: no GPU needed.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "common/test_util.hpp"
#include "f8gemm/f8gemm.hpp"
#include "hang_guard.hpp"

namespace f8gemm {
namespace {

using test::HangLabel;
using test::ScopedEnv;
using test::TempDir;

TEST(HangGuard, DeadlineIsTwoMinutesUnlessSet) {
  ScopedEnv env("F8GEMM_HANG_SECONDS");
  env.unset();
  EXPECT_EQ(test::hang_seconds(), 120.0);
  env.set("2.5");
  EXPECT_EQ(test::hang_seconds(), 2.5);
  for (const char* bad : {"0", "-3", "ten", "5s", "inf", "nan"}) {
    env.set(bad);
    test::expect_error([] { (void)test::hang_seconds(); }, ErrorCode::kInvalidArgument,
                       std::string("F8GEMM_HANG_SECONDS must be a finite number of seconds, at "
                                   "least 0.001, got '") + bad + "'");
  }
  // Echoed as one line: the guard runs before main(), so it escapes on its own.
  env.set("1\nsecond line\x1b[31m");
  test::expect_error([] { (void)test::hang_seconds(); }, ErrorCode::kInvalidArgument,
                     "F8GEMM_HANG_SECONDS must be a finite number of seconds, at least 0.001, "
                     "got '1\\x0asecond line\\x1b[31m'");
}

// A binary that links the guard checks the value it starts with before main(): this one, run
// again to list its tests, ends with exit 2 and the one line naming the variable.
TEST(HangGuard, ABadValueEndsATestBinaryAtStart) {
  const TempDir dir("f8gemm_hang_guard");
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  auto list_tests = [&](const std::string& value, std::string& err) {
    const std::string command = "F8GEMM_HANG_SECONDS='" + value + "' '" + self +
                                "' --gtest_list_tests >/dev/null 2>'" + dir.path() + "/err'";
    const int status = std::system(command.c_str());
    std::ifstream in(dir.path() + "/err");
    err.assign(std::istreambuf_iterator<char>(in), {});
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  std::string err;
  EXPECT_EQ(list_tests("ten", err), 2);
  EXPECT_EQ(err, "f8gemm: F8GEMM_HANG_SECONDS must be a finite number of seconds, at least "
                 "0.001, got 'ten'\n");
  EXPECT_EQ(list_tests("1e-300", err), 2);
  EXPECT_EQ(err, "f8gemm: F8GEMM_HANG_SECONDS must be a finite number of seconds, at least "
                 "0.001, got '1e-300'\n");
  EXPECT_EQ(list_tests("7", err), 0) << err;
}

// A deadline shorter than the clock's tick was accepted (1e-300, even the subnormal 4.9e-324):
// every wait for work not done at its first poll then ended the process as a deadlock that was
// none. Under kMinHangSeconds (1 ms) a value is refused as 0 is; 1 ms itself is a deadline.
TEST(HangGuard, ADeadlineUnderOneMillisecondIsRefused) {
  ScopedEnv env("F8GEMM_HANG_SECONDS");
  for (const char* tiny : {"1e-300", "4.9e-324", "1e-9", "0.000999"}) {
    env.set(tiny);
    test::expect_error([] { (void)test::hang_seconds(); }, ErrorCode::kInvalidArgument,
                       std::string("F8GEMM_HANG_SECONDS must be a finite number of seconds, at "
                                   "least 0.001, got '") + tiny + "'");
  }
  env.set("0.001");
  EXPECT_EQ(test::hang_seconds(), test::kMinHangSeconds);
  EXPECT_EQ(test::kMinHangSeconds, 0.001);
}

TEST(HangGuard, ReturnsOnceThePollSucceeds) {
  ScopedEnv env("F8GEMM_HANG_SECONDS");
  env.set("10");
  int polls = 0;
  test::wait_or_exit([&] { return ++polls < 50 ? cudaErrorNotReady : cudaSuccess; }, "poll");
  EXPECT_EQ(polls, 50);
}

TEST(HangGuard, ACudaErrorThrowsNamingThePollAndTheLabel) {
  const HangLabel label("bench 1,1,4096,4096 f8gemm_preshuffled");
  test::expect_error(
      [] { test::wait_or_exit([] { return cudaErrorIllegalAddress; }, "cudaStreamQuery"); },
      ErrorCode::kCuda,
      "cudaStreamQuery failed while waiting for bench 1,1,4096,4096 f8gemm_preshuffled: "
      "cudaErrorIllegalAddress");
}

TEST(HangGuard, LabelsNestAndTheOuterOneReturns) {
  EXPECT_EQ(test::hang_label(), "");
  {
    const HangLabel outer("outer");
    EXPECT_EQ(test::hang_label(), "outer");
    {
      const HangLabel inner("inner");
      EXPECT_EQ(test::hang_label(), "inner");
    }
    EXPECT_EQ(test::hang_label(), "outer");
  }
  EXPECT_EQ(test::hang_label(), "");
}

// The work that never finishes: the process ends with kHangExitCode and one line that names the
// label in force, the outer one once the inner one has gone.
TEST(HangGuardDeathTest, WorkThatNeverFinishesEndsTheProcessNamingItsLabel) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ScopedEnv env("F8GEMM_HANG_SECONDS");
        env.set("0.2");
        const HangLabel outer("tune 1,1,4096,4096 precise sm90_pingpong_64x256x128_s5_c2x1_r8");
        { const HangLabel inner("tune 1,1,4096,4096 fast sm90_swap_64x8x128_s12_c1x1_r0"); }
        test::wait_or_exit([] { return cudaErrorNotReady; }, "poll");
      },
      ::testing::ExitedWithCode(test::kHangExitCode),
      "f8gemm: tune 1,1,4096,4096 precise sm90_pingpong_64x256x128_s5_c2x1_r8: the GPU work did "
      "not finish within 0.2 s \\(a kernel that never ends: a deadlock\\?\\); exiting");
}

// The deadline is waited out, not shortened: work done after 0.1 s of a 0.5 s deadline returns,
// work not done after 1 s of it ends the process (the times are measured inside the process that
// waits, from the first poll).
TEST(HangGuardDeathTest, TheDeadlineIsWaitedOut) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ScopedEnv env("F8GEMM_HANG_SECONDS");
  env.set("0.5");
  auto done_after = [](double seconds) {
    return [seconds, start = std::chrono::steady_clock::time_point()]() mutable {
      const auto now = std::chrono::steady_clock::now();
      if (start == std::chrono::steady_clock::time_point()) start = now;
      return std::chrono::duration<double>(now - start).count() < seconds ? cudaErrorNotReady
                                                                           : cudaSuccess;
    };
  };
  test::wait_or_exit(done_after(0.1), "poll");
  EXPECT_EXIT(test::wait_or_exit(done_after(1.0), "poll"),
              ::testing::ExitedWithCode(test::kHangExitCode), "unlabelled work");
}

}  // namespace
}  // namespace f8gemm
