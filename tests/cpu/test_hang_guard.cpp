/// \brief The GPU wait with a deadline (testing/hang_guard.hpp), with polls that stand in for a
/// stream: no GPU needed.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "common/test_util.hpp"
#include "f8gemm/f8gemm.hpp"
#include "hang_guard.hpp"

namespace f8gemm {
namespace {

using test::HangLabel;
using test::ScopedEnv;

TEST(HangGuard, DeadlineIsTwoMinutesUnlessSet) {
  ScopedEnv env("F8GEMM_HANG_SECONDS");
  env.unset();
  EXPECT_EQ(test::hang_seconds(), 120.0);
  env.set("2.5");
  EXPECT_EQ(test::hang_seconds(), 2.5);
  for (const char* bad : {"0", "-3", "ten", "5s"}) {
    env.set(bad);
    test::expect_error([] { (void)test::hang_seconds(); }, ErrorCode::kInvalidArgument,
                       "F8GEMM_HANG_SECONDS must be a positive number");
  }
}

TEST(HangGuard, ReturnsOnceThePollSucceeds) {
  ScopedEnv env("F8GEMM_HANG_SECONDS");
  env.set("10");
  int polls = 0;
  test::wait_or_exit([&] { return ++polls < 50 ? cudaErrorNotReady : cudaSuccess; });
  EXPECT_EQ(polls, 50);
}

TEST(HangGuard, ACudaErrorThrowsLikeAChecked) {
  test::expect_error([] { test::wait_or_exit([] { return cudaErrorIllegalAddress; }); },
                     ErrorCode::kCuda, "");
}

// The work that never finishes: the process ends with kHangExitCode and one line that names the
// innermost label, after about the deadline.
TEST(HangGuardDeathTest, WorkThatNeverFinishesEndsTheProcessNamingItsLabel) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ScopedEnv env("F8GEMM_HANG_SECONDS");
        env.set("0.2");
        const HangLabel outer("tune 1,2,3,4 fast outer");
        {
          const HangLabel inner("tune 1,1,4096,4096 fast sm90_swap_64x8x128_s12_c1x1_r0");
        }
        const HangLabel innermost("tune 1,1,4096,4096 precise sm90_pingpong_64x256x128_s5_c2x1_r8");
        test::wait_or_exit([] { return cudaErrorNotReady; });
      },
      ::testing::ExitedWithCode(test::kHangExitCode),
      "f8gemm: tune 1,1,4096,4096 precise sm90_pingpong_64x256x128_s5_c2x1_r8: the GPU work did "
      "not finish within 0.2 s \\(a kernel that never ends: a deadlock\\?\\); exiting");
}

TEST(HangGuardDeathTest, TheDeadlineIsWaitedOut) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ScopedEnv env("F8GEMM_HANG_SECONDS");
  env.set("0.3");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EXIT(test::wait_or_exit([] { return cudaErrorNotReady; }),
              ::testing::ExitedWithCode(test::kHangExitCode), "unlabelled work");
  EXPECT_GE(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 0.3);
}

}  // namespace
}  // namespace f8gemm
