/// \brief The checking macros of the library, its tools and any caller who wants failures as
/// f8gemm::Error: F8GEMM_REQUIRE for a precondition, F8GEMM_CHECK_CUDA for a CUDA runtime call.
/// Each failure throws one readable line.
#pragma once

#include <cuda_runtime_api.h>

#include <sstream>
#include <string>

#include "f8gemm/f8gemm.hpp"

namespace f8gemm::detail {

/// Throws Error(kNoDevice) when there is no usable GPU (no driver, an old one, the stub libcuda,
/// no device), else Error(kCuda), naming the call and its source line.
[[noreturn]] void throw_cuda(cudaError_t status, const char* expr, const char* file, int line);

/// `text` as an error message shows what a user gave: in single quotes, printable ASCII and
/// well-formed UTF-8 characters that print as themselves (a path of /home/josé stays readable)
/// as they are, each other byte written as \xNN (no terminal escapes, no C1 controls, no
/// characters that reorder or hide text, no malformed UTF-8, no raw binary), a backslash or a
/// quote of its own written as \\ or \', and cut after at most kQuotedMax bytes, never inside
/// a character, with the count of the bytes left out, so that the message stays one readable
/// line whatever the input.
inline constexpr size_t kQuotedMax = 120;
std::string quoted(const std::string& text);

/// The length of the well-formed UTF-8 sequence at text[i] (2-4 bytes: no overlong form, no
/// surrogate, at most U+10FFFF) whose character a terminal shows as itself, else 0 (an invalid
/// byte, a C1 control, an invisible or text-reordering character, private use, a
/// noncharacter). quoted() and the CLI's error lines both show UTF-8 by this one rule.
size_t printable_utf8_length(const std::string& text, size_t i);

/// Appends byte `c` as \xNN: the escape that quoted() and the CLI's error lines share.
inline void append_hex_escape(std::string& out, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

}  // namespace f8gemm::detail

/// Throws Error(code, message pieces...) unless cond holds.
#define F8GEMM_REQUIRE(cond, code, ...)                                                \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      throw ::f8gemm::Error(::f8gemm::ErrorCode::code, ::f8gemm::detail::concat(__VA_ARGS__)); \
    }                                                                                  \
  } while (0)

#define F8GEMM_CHECK_CUDA(expr)                                                         \
  do {                                                                                  \
    cudaError_t f8gemm_status_ = (expr);                                                \
    if (f8gemm_status_ != cudaSuccess) {                                                \
      ::f8gemm::detail::throw_cuda(f8gemm_status_, #expr, __FILE__, __LINE__);          \
    }                                                                                   \
  } while (0)
