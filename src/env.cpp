/// \brief get_env<T> (env.hpp): every environment variable f8gemm reads goes through here.
#include "env.hpp"

#include <cctype>
#include <cstdlib>
#include <string>

#include "check.hpp"
#include "config.hpp"
#include "tuned_tables.hpp"

namespace f8gemm::detail {

namespace {
/// The value, or null when the variable is unset or empty (both mean "not given").
const char* raw(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}
}  // namespace

template <>
std::string get_env<std::string>(const char* name, const std::string& fallback) {
  const char* v = raw(name);
  return v ? std::string(v) : fallback;
}

template <>
bool get_env<bool>(const char* name, const bool& fallback) {
  const char* v = raw(name);
  if (!v) return fallback;
  std::string lower(v);
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  for (const char* on : {"1", "true", "yes", "on"}) {
    if (lower == on) return true;
  }
  for (const char* off : {"0", "false", "no", "off"}) {
    if (lower == off) return false;
  }
  // Anything else was a guess at the spelling: "off" turned logging on and "false" turned the
  // tuned tables off while every value but "0" counted as on.
  throw Error(ErrorCode::kInvalidArgument,
              concat(name, "=", detail::quoted(v), " is not a switch value: use 1, true, yes or ",
                     "on, or 0, false, no or off (any case), or leave it unset"));
}

}  // namespace f8gemm::detail

namespace f8gemm {

bool log_enabled() { return detail::get_env<bool>("F8GEMM_LOG"); }

void check_environment(bool tuned_tables) {
  for (const char* name : {"F8GEMM_LOG", "F8GEMM_PDL", "F8GEMM_NO_TUNED", "F8GEMM_FAIL_ON_SPILL"}) {
    (void)detail::get_env<bool>(name);
  }
  (void)detail::env_forced_config();
  if (tuned_tables && !detail::get_env<bool>("F8GEMM_NO_TUNED")) detail::load_tuned_tables();
}

}  // namespace f8gemm
