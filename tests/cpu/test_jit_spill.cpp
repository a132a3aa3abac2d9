/// \brief F8GEMM_FAIL_ON_SPILL: an instance that spills registers is a compile error when set.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "common/test_util.hpp"
#include "jit/jit.hpp"

namespace f8gemm {
namespace {

// 96 values live across a loop, compiled with a 32-register cap: ptxas must spill.
constexpr const char* kSpillingSource = R"(
extern "C" __global__ void f8gemm_spill_probe(float* out, int n) {
  float v[96];
#pragma unroll
  for (int i = 0; i < 96; ++i) v[i] = out[i * n + threadIdx.x];
  for (int r = 0; r < n; ++r) {
#pragma unroll
    for (int i = 0; i < 96; ++i) v[i] = v[i] * v[(i + 1) % 96] + 1.0f;
  }
#pragma unroll
  for (int i = 0; i < 96; ++i) out[i * n + threadIdx.x] = v[i];
}
)";

TEST(JitSpill, SpillingInstanceFailsOnlyWhenAsked) {
  test::TempDir dir("f8gemm-spill");
  test::ScopedEnv cache("F8GEMM_CACHE_DIR");
  cache.set(dir.path());
  test::ScopedEnv strict("F8GEMM_FAIL_ON_SPILL");
  strict.unset();
  auto options = jit::default_options();
  options.push_back("--maxrregcount=32");
  auto inst = jit::get_instance("spill_probe", kSpillingSource, options);
  ASSERT_GT(inst->spill_bytes(), 0) << inst->log();
  inst.reset();
  jit::clear_memory_cache();
  strict.set("1");
  try {
    jit::get_instance("spill_probe", kSpillingSource, options);
    ADD_FAILURE() << "a spilling instance was accepted with F8GEMM_FAIL_ON_SPILL=1";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCompile);
    EXPECT_NE(std::string(e.what()).find("spill_probe"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace f8gemm
