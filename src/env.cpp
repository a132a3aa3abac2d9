/// \brief get_env<T> (env.hpp): every environment variable f8gemm reads goes through here.
#include "env.hpp"

#include <cstdlib>
#include <cstring>

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
  return v ? std::strcmp(v, "0") != 0 : fallback;
}

}  // namespace f8gemm::detail
