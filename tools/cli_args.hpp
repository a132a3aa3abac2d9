/// \brief A small option parser for the CLI: `--name value` and `--flag`, every unknown or
/// malformed option a UsageError (exit 2, one line).
#pragma once

#include <charconv>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "commands.hpp"
#include "f8gemm/check.hpp"

namespace f8gemm::cli {

/// How a CLI integer reads: decimal digits with an optional leading '-' and nothing else (no
/// spaces, '+', hex or exponent: `std::stoll` took " 128" but refused "128 ", and read 2^63 as
/// no integer at all). The one rule for every integer option (`Options::integer`, bench's).
enum class IntText { kOk, kNotAnInteger, kOutOfRange };
inline IntText parse_int_text(const std::string& text, int64_t& value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec == std::errc::result_out_of_range && ptr == end) return IntText::kOutOfRange;
  return ec == std::errc() && ptr == end && !text.empty() ? IntText::kOk : IntText::kNotAnInteger;
}

/// The value of integer option `name` of `command` in [lo, hi], or a UsageError in the CLI's one
/// wording: "expects an integer" or "must be in lo..hi", the value quoted.
inline int64_t parse_int_option(const std::string& command, const std::string& name,
                                const std::string& text, int64_t lo, int64_t hi) {
  int64_t x = 0;
  const IntText read = parse_int_text(text, x);
  if (read == IntText::kNotAnInteger) {
    throw UsageError(command + ": " + name + " expects an integer, got " + detail::quoted(text));
  }
  if (read == IntText::kOutOfRange || x < lo || x > hi) {
    throw UsageError(command + ": " + name + " must be in " + std::to_string(lo) + ".." +
                     std::to_string(hi) + ", got " + detail::quoted(text));
  }
  return x;
}

class Options {
 public:
  /// `valued` options take a value; `flags` do not. Repeated valued options keep every value:
  /// str() and integer() take the last, as shells and most CLIs do, and all() takes each.
  Options(const Args& args, const std::set<std::string>& valued, const std::set<std::string>& flags,
          const char* command) {
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (valued.count(a)) {
        // `--m --n 256` lacks --m's value: the next option is not taken for it.
        if (i + 1 >= args.size() || valued.count(args[i + 1]) || flags.count(args[i + 1])) {
          throw UsageError(std::string(command) + ": " + a + " needs a value");
        }
        values_[a].push_back(args[++i]);
      } else if (flags.count(a)) {
        flags_.insert(a);
      } else {
        throw UsageError(std::string(command) + ": unknown option " + detail::quoted(a));
      }
    }
    command_ = command;
  }

  bool flag(const std::string& name) const { return flags_.count(name) > 0; }
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::string str(const std::string& name, const std::string& fallback) const {
    auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second.back();
  }
  std::vector<std::string> all(const std::string& name) const {
    auto it = values_.find(name);
    return it == values_.end() ? std::vector<std::string>{} : it->second;
  }
  /// An integer in [lo, hi].
  int64_t integer(const std::string& name, int64_t fallback, int64_t lo, int64_t hi) const {
    if (!has(name)) return fallback;
    return parse_int_option(command_, name, str(name, ""), lo, hi);
  }

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::set<std::string> flags_;
  std::string command_;
};

}  // namespace f8gemm::cli
