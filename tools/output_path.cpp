/// \brief Output-path checks of the CLI (output_path.hpp).
#include "output_path.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace f8gemm::cli {

std::string unwritable_reason(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (fs::exists(p, ec)) {
    if (fs::is_directory(p, ec)) return "it is a directory";
    return access(path.c_str(), W_OK) == 0 ? "" : std::strerror(errno);
  }
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) return "no directory " + dir.string();
  return access(dir.c_str(), W_OK) == 0 ? "" : std::strerror(errno);
}

bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // Hard links too, where both exist; else the paths as they resolve (a new file has no inode).
  if (fs::equivalent(a, b, ec) && !ec) return true;
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, ec), ec);
  const fs::path cb = fs::weakly_canonical(fs::absolute(b, ec), ec);
  return ca == cb;
}

}  // namespace f8gemm::cli
