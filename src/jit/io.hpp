/// \brief What the JIT's pieces share for output: whole lines on stderr, F8GEMM_LOG lines, whole
/// files written with a reason on failure, and labels made safe as file names.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace f8gemm::jit {

/// Writes line and a newline to stderr in one write, so that lines of concurrent compiles do
/// not interleave.
void print_line(const std::string& line);

/// print_line when F8GEMM_LOG is on.
void log_line(const std::string& line);

/// Writes the parts, in order, as the file at path (created or truncated). On failure returns
/// false with errno's text in *why.
bool write_file(const std::string& path, const std::vector<std::pair<const char*, size_t>>& parts,
                std::string* why);

/// print_line, the first time that `key` is given in this process only (one warning per
/// directory, however many instances meet it).
void print_line_once(const std::string& key, const std::string& line);

/// Creates dir (recursively); empty when it is a directory now, else why not (for one that is,
/// or lies under, a symbolic link to a missing target: that link and its target).
std::string make_directory(const std::string& dir);

/// A label as a file name: anything outside [A-Za-z0-9._-] becomes '_'; empty is "instance".
std::string safe_name(const std::string& label);

}  // namespace f8gemm::jit
