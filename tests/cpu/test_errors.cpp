/// \brief Which f8gemm::ErrorCode a failed CUDA runtime call becomes (check.hpp's macro).
#include <gtest/gtest.h>

#include <string>

#include "check.hpp"
#include "common/test_util.hpp"

namespace f8gemm {
namespace {

ErrorCode code_of(cudaError_t status) {
  try {
    F8GEMM_CHECK_CUDA(status);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(cudaGetErrorName(status)), std::string::npos) << e.what();
    return e.code();
  }
  ADD_FAILURE() << "no exception for " << cudaGetErrorName(status);
  return ErrorCode::kInternal;
}

// Issue 8, defect 8: the toolkit's stub libcuda in place of a driver is "no GPU here", not a
// CUDA failure.
TEST(ErrorMapping, NoUsableGpuIsNoDevice) {
  EXPECT_EQ(code_of(cudaErrorStubLibrary), ErrorCode::kNoDevice);
  EXPECT_EQ(code_of(cudaErrorInsufficientDriver), ErrorCode::kNoDevice);
  EXPECT_EQ(code_of(cudaErrorNoDevice), ErrorCode::kNoDevice);
}

// Its message says so in its first words, before the call and its source line.
TEST(ErrorMapping, NoUsableGpuSaysSoFirst) {
  try {
    F8GEMM_CHECK_CUDA(cudaErrorInsufficientDriver);
    ADD_FAILURE() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.message().rfind("no usable CUDA device here: ", 0), 0u) << e.message();
  }
  try {
    F8GEMM_CHECK_CUDA(cudaErrorInvalidValue);
    ADD_FAILURE() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.message().find("no usable"), std::string::npos) << e.message();
  }
}

TEST(ErrorMapping, OtherFailuresAreCudaErrors) {
  EXPECT_EQ(code_of(cudaErrorInvalidValue), ErrorCode::kCuda);
  EXPECT_EQ(code_of(cudaErrorMemoryAllocation), ErrorCode::kCuda);
  EXPECT_EQ(code_of(cudaErrorLaunchFailure), ErrorCode::kCuda);
}

}  // namespace
}  // namespace f8gemm
