/// \brief read_small_file (f8gemm/small_file.hpp).
#include "f8gemm/small_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace f8gemm::detail {

SmallFile read_small_file(const std::string& path, size_t max_bytes) {
  SmallFile r;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    r.status = SmallFile::Status::kCannotOpen;
    r.error = errno;
    return r;
  }
  struct stat st {};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  if (stat_ok && S_ISDIR(st.st_mode)) {
    ::close(fd);
    r.status = SmallFile::Status::kDirectory;
    return r;
  }
  // A regular file that says it is too long is refused unread (a /proc file says 0: read on).
  if (stat_ok && S_ISREG(st.st_mode) && uint64_t(st.st_size) > max_bytes) {
    ::close(fd);
    r.status = SmallFile::Status::kTooLong;
    return r;
  }
  // Blocking reads from here: an empty pipe whose writer is still at work is waited for, and one
  // with no writer reads as its end (0 bytes).
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    r.status = SmallFile::Status::kReadError;
    r.error = errno;
    ::close(fd);
    return r;
  }
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      r.status = SmallFile::Status::kReadError;
      r.error = errno;
      break;
    }
    if (n == 0) break;
    if (r.text.size() + size_t(n) > max_bytes) {
      r.status = SmallFile::Status::kTooLong;
      break;
    }
    r.text.append(buf, size_t(n));
  }
  ::close(fd);
  return r;
}

}  // namespace f8gemm::detail
