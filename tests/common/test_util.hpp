/// \brief The GoogleTest side of the test support: readable failure messages for the library's
/// types and the sm_90 skip macro, over testing/test_support.hpp (the f8gemm_testing target).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "f8gemm/check.hpp"
#include "device_buffer.hpp"
#include "f8gemm/f8gemm.hpp"
#include "hang_guard.hpp"
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

/// A stacked grouped problem of these sizes (G, total_M, N, K), the other fields at their
/// defaults: fast accumulation, preshuffled weights, bf16 output, no bias.
inline GroupedProblem grouped(int64_t groups, int64_t rows, int64_t n, int64_t k) {
  GroupedProblem p;
  p.groups = groups;
  p.rows = rows;
  p.n = n;
  p.k = k;
  return p;
}

/// A fake device address (device 0) that validation tests pass and no test dereferences: every
/// check runs before the first CUDA call.
inline void* fake(uintptr_t base, uintptr_t offset = 0) {
  return reinterpret_cast<void*>(base + offset);
}
inline TensorView dev_view(uintptr_t base, DType dtype, std::vector<int64_t> shape) {
  return make_view(fake(base), dtype, std::move(shape), 0);
}

/// Runs f and expects f8gemm::Error with `code` whose message contains `needle`.
inline void expect_error(const std::function<void()>& f, ErrorCode code,
                         const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected " << to_string(code) << " containing '" << needle
                  << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message '" << e.what() << "' lacks '" << needle << "'";
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an f8gemm::Error: " << e.what();
  }
}

/// `stmt` throws Error(kInvalidArgument) whose message contains `needle`; the trace names stmt.
#define F8GEMM_EXPECT_INVALID(stmt, needle)                                               \
  do {                                                                                    \
    SCOPED_TRACE(#stmt);                                                                  \
    ::f8gemm::test::expect_error([&] { stmt; }, ::f8gemm::ErrorCode::kInvalidArgument,    \
                                 needle);                                                 \
  } while (0)

/// A call that passes validation reaches the device lookup first: without an sm_90 GPU that is
/// kNoDevice, which proves validation accepted every argument. With an sm_90 GPU the call would
/// launch on the fake pointers, so it is not made there (the GPU tests cover valid calls).
#define F8GEMM_EXPECT_PASSES_VALIDATION(stmt)                                             \
  do {                                                                                    \
    SCOPED_TRACE(#stmt);                                                                  \
    if (!::f8gemm::test::have_sm90()) {                                                   \
      ::f8gemm::test::expect_error([&] { stmt; }, ::f8gemm::ErrorCode::kNoDevice, "");    \
    }                                                                                     \
  } while (0)

/// "Suite.Test" of the running GoogleTest test, for hang reports (HangLabel).
inline std::string current_test_name() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return info ? std::string(info->test_suite_name()) + "." + info->name() : std::string("no test");
}

/// GPU outputs are allocated kGuardBytes past their size and poisoned with 0xFF before a call.
inline constexpr size_t kGuardBytes = 4096;

/// The first `count` 16-bit outputs in `out` once `stream` has finished; a byte changed past
/// them (a store past the output) fails the test.
inline std::vector<uint16_t> output_bits(const detail::DeviceBuffer& out, size_t count,
                                         cudaStream_t stream) {
  sync_stream_or_exit(stream);
  std::vector<uint16_t> all = out.to_host<uint16_t>();
  for (size_t i = count; i < all.size(); ++i) {
    if (all[i] != 0xFFFF) {
      ADD_FAILURE() << "store past the output at element " << i << " (count " << count << ")";
      break;
    }
  }
  all.resize(count);
  return all;
}

}  // namespace f8gemm::test
