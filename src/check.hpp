/// \brief The one checking macro family: every CUDA/NVRTC call and every precondition goes
/// through these, and a failure throws f8gemm::Error with a single readable line. The CUDA and
/// precondition macros are public (f8gemm/check.hpp); NVRTC's stay inside the library.
#pragma once

#include <nvrtc.h>

#include "f8gemm/check.hpp"

namespace f8gemm::detail {

[[noreturn]] void throw_nvrtc(nvrtcResult status, const char* expr, const char* file, int line);

}  // namespace f8gemm::detail

#define F8GEMM_CHECK_NVRTC(expr)                                                        \
  do {                                                                                  \
    nvrtcResult f8gemm_status_ = (expr);                                                \
    if (f8gemm_status_ != NVRTC_SUCCESS) {                                              \
      ::f8gemm::detail::throw_nvrtc(f8gemm_status_, #expr, __FILE__, __LINE__);         \
    }                                                                                   \
  } while (0)
