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

// Printable UTF-8 was written byte by byte as \xNN: a cache path under /home/josé read as
// /home/jos\xc3\xa9. Characters that print as themselves now show as they are; the C1
// controls, the characters that reorder or hide text, and malformed sequences (overlong,
// surrogate, past U+10FFFF, cut short, a stray continuation byte) stay escaped byte by byte,
// and the cut never splits a character.
TEST(Quoted, ShowsPrintableUtf8AsItIsAndEscapesTheRest) {
  EXPECT_EQ(detail::quoted("/home/jos\xc3\xa9/cache"), "'/home/jos\xc3\xa9/cache'");
  EXPECT_EQ(detail::quoted("\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x99\x82"),
            "'\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x99\x82'");  // CJK and an emoji
  const struct {
    const char* in;
    const char* out;
  } escaped[] = {
      {"a\xc2\x9b" "2Jb", "'a\\xc2\\x9b2Jb'"},          // U+009B, the C1 CSI
      {"x\xe2\x80\xaey", "'x\\xe2\\x80\\xaey'"},        // U+202E, right-to-left override
      {"\xe2\x81\xa6", "'\\xe2\\x81\\xa6'"},           // U+2066, left-to-right isolate
      {"\xe2\x80\x8b", "'\\xe2\\x80\\x8b'"},           // U+200B, zero-width space
      {"\xef\xbb\xbf", "'\\xef\\xbb\\xbf'"},           // U+FEFF, byte-order mark
      {"\xc2\xad", "'\\xc2\\xad'"},                     // U+00AD, soft hyphen
      {"\xee\x80\x80", "'\\xee\\x80\\x80'"},           // U+E000, private use
      {"\xef\xbf\xbe", "'\\xef\\xbf\\xbe'"},           // U+FFFE, a noncharacter
      {"\xc0\xaf", "'\\xc0\\xaf'"},                     // overlong '/'
      {"\xe0\x80\xaf", "'\\xe0\\x80\\xaf'"},           // overlong '/', three bytes
      {"\xed\xa0\x80", "'\\xed\\xa0\\x80'"},           // a surrogate, U+D800
      {"\xf4\x90\x80\x80", "'\\xf4\\x90\\x80\\x80'"},  // past U+10FFFF
      {"\xc3", "'\\xc3'"},                               // cut short at the end
      {"\xe6\x97z", "'\\xe6\\x97z'"},                  // cut short before ASCII
      {"\xa9z", "'\\xa9z'"},                              // a stray continuation byte
      {"\xf3\xa0\x81\x81", "'\\xf3\\xa0\\x81\\x81'"},  // U+E0041, a tag character
      {"\xef\xb8\x8f", "'\\xef\\xb8\\x8f'"},           // U+FE0F, a variation selector
      {"\xe3\x85\xa4", "'\\xe3\\x85\\xa4'"},           // U+3164, a Hangul filler
      {"\xe1\xa0\x8e", "'\\xe1\\xa0\\x8e'"},           // U+180E, Mongolian vowel separator
      {"\xcd\x8f", "'\\xcd\\x8f'"},                     // U+034F, combining grapheme joiner
      {"\xd8\x80", "'\\xd8\\x80'"},                     // U+0600, Arabic number sign
  };
  for (const auto& e : escaped) EXPECT_EQ(detail::quoted(e.in), e.out) << e.out;
  // A two-byte character that would end one byte past the cut is left out whole.
  const std::string before(detail::kQuotedMax - 1, 'z');
  EXPECT_EQ(detail::quoted(before + "\xc3\xa9"), "'" + before + "' (and 2 more bytes)");
  EXPECT_EQ(detail::quoted(before + "\xc3"), "'" + before + "\\xc3'");
}

}  // namespace
}  // namespace f8gemm
