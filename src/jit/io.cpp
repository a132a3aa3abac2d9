/// \brief stderr lines, whole-file writes and safe file names for the JIT (io.hpp).
#include "jit/io.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include "env.hpp"
#include "f8gemm/check.hpp"

namespace f8gemm::jit {

void print_line(const std::string& line) {
  std::string s = line + "\n";
  std::fwrite(s.data(), 1, s.size(), stderr);
  std::fflush(stderr);
}

void print_line_once(const std::string& key, const std::string& line) {
  static std::mutex mutex;
  static auto* said = new std::set<std::string>;  // never destroyed: used until exit
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!said->insert(key).second) return;
  }
  print_line(line);
}

namespace {

/// Why `dir` cannot be created through a symbolic link, its own or an ancestor's, whose target
/// does not exist; empty when no such link is on the path. mkdir does not follow a dangling link,
/// and create_directories then fails with EEXIST ("File exists"), which names neither the link
/// nor what is wrong with it.
std::string dangling_link_reason(const std::string& dir) {
  namespace fs = std::filesystem;
  for (fs::path p(dir); !p.empty(); p = p.parent_path()) {
    std::error_code ec;
    if (fs::is_symlink(fs::symlink_status(p, ec)) &&
        fs::status(p, ec).type() == fs::file_type::not_found) {
      const fs::path target = fs::read_symlink(p, ec);
      return detail::concat(p == fs::path(dir) ? std::string("it") : detail::quoted(p.string()),
                            " is a symbolic link to a missing target",
                            ec ? std::string() : " " + detail::quoted(target.string()));
    }
    if (p == p.parent_path()) break;  // the root
  }
  return {};
}

}  // namespace

std::string make_directory(const std::string& dir) {
  std::error_code ec;
  if (std::string why = dangling_link_reason(dir); !why.empty()) return why;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec)) {
    return "it exists and is not a directory";
  }
  std::filesystem::create_directories(dir, ec);
  if (!ec && std::filesystem::is_directory(dir, ec)) return {};
  return ec ? "cannot create it: " + ec.message() : std::string("it is not a directory");
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
