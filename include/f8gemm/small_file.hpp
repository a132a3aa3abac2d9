/// \brief Reading a small file that a user names (a shapes file, a tuned table, a cached cubin)
/// whole, without hanging on a FIFO that has no writer and without reading a device file to the
/// end of memory. Callers word their own errors from the status.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace f8gemm::detail {

struct SmallFile {
  enum class Status { kOk, kCannotOpen, kDirectory, kTooLong, kReadError };
  Status status = Status::kOk;
  int error = 0;     ///< errno for kCannotOpen and kReadError
  std::string text;  ///< the bytes read (with kTooLong: the first max_bytes or fewer)
};

/// The file at `path`, if it holds at most max_bytes. It is opened without blocking, so that a
/// FIFO with no writer reads as empty at once; its reads then block as usual, so that a pipe
/// with a writer (a shell's `<(...)`) is read to its end.
SmallFile read_small_file(const std::string& path, size_t max_bytes);

/// `text` without a UTF-8 byte-order mark at its start (an editor's; not part of a first line).
inline std::string_view without_utf8_bom(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  return text;
}

}  // namespace f8gemm::detail
