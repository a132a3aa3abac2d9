/// \brief CPU tests of the launch options every kernel launch resolves: programmatic dependent
/// launch (Pdl, launch.hpp) from the options and the F8GEMM_PDL switch.
#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "launch.hpp"
#include "test_support.hpp"

namespace f8gemm {
namespace {

TEST(LaunchOptions, PdlFollowsTheOptionsAndElseTheSwitch) {
  test::ScopedEnv env("F8GEMM_PDL");
  env.unset();
  EXPECT_FALSE(detail::use_pdl(Pdl::kDefault)) << "off when the switch is unset";
  EXPECT_TRUE(detail::use_pdl(Pdl::kOn));
  EXPECT_FALSE(detail::use_pdl(Pdl::kOff));
  env.set("1");
  EXPECT_TRUE(detail::use_pdl(Pdl::kDefault));
  EXPECT_FALSE(detail::use_pdl(Pdl::kOff)) << "an explicit option wins over the switch";
  env.set("0");
  EXPECT_FALSE(detail::use_pdl(Pdl::kDefault));
  EXPECT_TRUE(detail::use_pdl(Pdl::kOn));
}

TEST(LaunchOptions, DefaultOptionsLeavePdlToTheSwitch) {
  EXPECT_EQ(GemmOptions{}.pdl, Pdl::kDefault);
  EXPECT_EQ(QuantizeOptions{}.pdl, Pdl::kDefault);
}

}  // namespace
}  // namespace f8gemm
