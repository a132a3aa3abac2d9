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

}  // namespace f8gemm::cli
