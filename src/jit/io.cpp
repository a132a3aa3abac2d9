/// \brief stderr lines, whole-file writes and safe file names for the JIT (io.hpp).
#include "jit/io.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "env.hpp"

namespace f8gemm::jit {

void print_line(const std::string& line) {
  std::string s = line + "\n";
  std::fwrite(s.data(), 1, s.size(), stderr);
  std::fflush(stderr);
}

void log_line(const std::string& line) {
  if (detail::get_env<bool>("F8GEMM_LOG")) print_line(line);
}

// fopen/fwrite rather than streams: errno then says why a write failed.
bool write_file(const std::string& path, const std::vector<std::pair<const char*, size_t>>& parts,
                std::string* why) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    *why = std::strerror(errno);
    return false;
  }
  bool ok = true;
  for (const auto& [data, n] : parts) {
    if (n && std::fwrite(data, 1, n, f) != n) {
      ok = false;
      break;
    }
  }
  if (!ok) *why = std::strerror(errno);
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    *why = std::strerror(errno);
  }
  return ok;
}

std::string safe_name(const std::string& label) {
  std::string s = label.empty() ? std::string("instance") : label;
  for (char& c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return s;
}

}  // namespace f8gemm::jit
