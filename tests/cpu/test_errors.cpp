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

namespace f8gemm {
namespace {

// detail::quoted, which every echo of user input goes through: printable ASCII as it is, other
// bytes as \xNN, its own backslash and quote escaped, cut after kQuotedMax with a count. Called
// on a non-const std::string in namespace detail, an unqualified `quoted` lost to std::quoted
// by argument-dependent lookup (double quotes, nothing escaped): callers qualify it.
TEST(Quoted, EscapesControlBytesAndItsOwnQuotesAndCuts) {
  EXPECT_EQ(detail::quoted("sm90_x"), "'sm90_x'");
  EXPECT_EQ(detail::quoted(std::string("a\x1b[2Jb\n", 7)), "'a\\x1b[2Jb\\x0a'");
  EXPECT_EQ(detail::quoted("it's a\\b"), "'it\\'s a\\\\b'");
  EXPECT_EQ(detail::quoted(std::string("\0\xff", 2)), "'\\x00\\xff'");
  std::string many(detail::kQuotedMax + 5, 'z');
  EXPECT_EQ(detail::quoted(many),
            "'" + std::string(detail::kQuotedMax, 'z') + "' (and 5 more bytes)");
}

}  // namespace
}  // namespace f8gemm
