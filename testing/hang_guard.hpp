/// \brief Waits for the GPU with a deadline (f8gemm_testing: the CLI and the GPU tests). A
/// kernel that never finishes, such as a configuration under development that deadlocks on its
/// barriers, then ends the process with one line that names the work in flight, instead of
/// hanging a test run or a tune until an outer `timeout` kills it and everything it would still
/// have printed (perf log, card 52: a deadlock cost a device call that way).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <string>

namespace f8gemm::test {

/// The process's exit code when GPU work outlives the deadline.
inline constexpr int kHangExitCode = 3;

/// The shortest deadline F8GEMM_HANG_SECONDS may set. A deadline is checked after each poll, so
/// one below the steady clock's 1 ns tick (1e-300 was accepted) is the refused 0 by another
/// name: the first poll of work not yet done passes it, and the process ends reporting a
/// deadlock that is none. 1 ms is 100x a launch's round trip (about 10 us) and far below any
/// deadline meant to catch a deadlock (120 s by default; this guard's own tests use 0.2 s).
inline constexpr double kMinHangSeconds = 0.001;

/// The deadline in seconds: F8GEMM_HANG_SECONDS (a finite number, at least kMinHangSeconds),
/// else 120. A tune candidate's or a GPU test's call takes well under a second, and one under
/// compute-sanitizer a few seconds. Read at each wait, so that a test may change it; an
/// f8gemm::Error (kInvalidArgument) names any other value and the accepted range. The value the
/// program starts with is checked before main() in every program that links this file (the CLI,
/// the test binaries): a bad one ends it with exit 2 and that line, before any GPU work.
double hang_seconds();

/// While one lives, its label names the work that a hang report blames (the innermost label of
/// this thread wins; the previous one returns when it goes).
class HangLabel {
 public:
  explicit HangLabel(std::string label);
  ~HangLabel();
  HangLabel(const HangLabel&) = delete;
  HangLabel& operator=(const HangLabel&) = delete;

 private:
  std::string previous_;
};

/// This thread's innermost label (empty without one).
const std::string& hang_label();

/// Calls `poll` until it returns cudaSuccess (cudaErrorNotReady: not yet; any other code throws
/// f8gemm::Error(kCuda) naming `poll_name` and the label, and clears the last error). It yields
/// for the first 10 ms, which keeps the wait as short as cudaStreamSynchronize's spin for the
/// millisecond waits of timing loops, then sleeps 100 us between polls. Past hang_seconds() it prints one line to stderr, "f8gemm:
/// <label>: the GPU work did not finish within N s (a kernel that never ends: a deadlock?);
/// exiting", and ends the process with kHangExitCode: a hung kernel cannot be stopped, and
/// every later call on the device would wait behind it.
void wait_or_exit(const std::function<cudaError_t()>& poll, const char* poll_name);

/// cudaStreamSynchronize with the deadline (wait_or_exit on cudaStreamQuery).
void sync_stream_or_exit(cudaStream_t stream);

/// cudaEventSynchronize with the deadline (wait_or_exit on cudaEventQuery).
void sync_event_or_exit(cudaEvent_t event);

}  // namespace f8gemm::test
