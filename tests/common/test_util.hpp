/// \brief The GoogleTest side of the test support: readable failure messages for the library's
/// types and the sm_90 skip macro, over testing/test_support.hpp (the f8gemm_testing target).
#pragma once

#include <gtest/gtest.h>

#include <ostream>

#include "f8gemm/f8gemm.hpp"
#include "test_support.hpp"

namespace f8gemm {

// Readable gtest failure messages for the library's enums and configs (found by ADL).
inline void PrintTo(ErrorCode code, std::ostream* os) { *os << to_string(code); }
inline void PrintTo(DType dtype, std::ostream* os) { *os << to_string(dtype); }
inline void PrintTo(KernelPath path, std::ostream* os) {
  *os << (path == KernelPath::kSwapAB     ? "kSwapAB"
          : path == KernelPath::kPingPong ? "kPingPong"
                                          : "kTiled");
}
inline void PrintTo(const Config& config, std::ostream* os) { *os << config.name(); }

}  // namespace f8gemm

namespace f8gemm::test {

/// Skips the current test (GTEST_SKIP) unless device 0 is an sm_90 GPU, with the reason.
#define F8GEMM_SKIP_WITHOUT_SM90()                                                 \
  do {                                                                             \
    if (!::f8gemm::test::have_sm90()) {                                            \
      GTEST_SKIP() << "needs an sm_90 GPU: " << ::f8gemm::test::sm90_skip_reason(); \
    }                                                                              \
  } while (0)

}  // namespace f8gemm::test
