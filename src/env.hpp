/// \brief The one reader of environment variables (README "Environment" lists them all).
#pragma once

#include <string>

namespace f8gemm::detail {

/// The value of environment variable `name` as a T; `fallback` when it is unset or empty.
///   std::string: the text as it is.
///   bool: a switch: 1, true, yes or on is on; 0, false, no or off is off (any case). Any
///         other value throws Error(kInvalidArgument) naming the variable, so that a misspelt
///         value is not taken for either.
/// Read at each call, not cached: tests and long-lived servers may change a variable.
template <typename T>
T get_env(const char* name, const T& fallback = T{});

template <>
std::string get_env<std::string>(const char* name, const std::string& fallback);
template <>
bool get_env<bool>(const char* name, const bool& fallback);

}  // namespace f8gemm::detail
