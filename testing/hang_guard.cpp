/// \brief sync_stream_or_exit and its deadline (hang_guard.hpp).
#include "hang_guard.hpp"

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <utility>

#include "env.hpp"
#include "f8gemm/check.hpp"
#include "f8gemm/f8gemm.hpp"

namespace f8gemm::test {

namespace {

thread_local std::string current_label;

/// The label as a report names it.
const char* blamed() { return current_label.empty() ? "unlabelled work" : current_label.c_str(); }

/// The deadline that `text` (the variable's value; empty: unset) gives, or why it gives none.
/// No library call: it also runs during static initialisation (below), when other files'
/// statics may not be ready.
std::string parse_hang_seconds(const std::string& text, double& seconds) {
  seconds = 120.0;
  if (text.empty()) return "";
  // A plain decimal number (from_chars: no spaces, '+' or hex, which strtod took).
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec == std::errc() && ptr == text.data() + text.size() && std::isfinite(seconds) &&
      seconds >= kMinHangSeconds) {
    return "";
  }
  return detail::concat("F8GEMM_HANG_SECONDS must be a finite number of seconds, at least ",
                        kMinHangSeconds, ", got ", detail::quoted(text));
}

/// The value when the program starts, checked before main(): in every program that waits with
/// this guard (the CLI, the test binaries), a bad value ends it with exit 2 and one line before
/// any GPU work. Checked at the first wait only, it was reported after kernels had launched, and
/// never by a run that does not wait (`run --once`).
const bool kCheckedAtStart = [] {
  const char* raw = std::getenv("F8GEMM_HANG_SECONDS");
  double seconds = 0.0;
  const std::string why = parse_hang_seconds(raw ? raw : "", seconds);
  if (!why.empty()) {
    std::fprintf(stderr, "f8gemm: %s\n", why.c_str());
    std::_Exit(2);
  }
  return true;
}();

}  // namespace

double hang_seconds() {
  double seconds = 0.0;
  const std::string why =
      parse_hang_seconds(detail::get_env<std::string>("F8GEMM_HANG_SECONDS", ""), seconds);
  F8GEMM_REQUIRE(why.empty(), kInvalidArgument, why);
  return seconds;
}

HangLabel::HangLabel(std::string label) : previous_(std::exchange(current_label, std::move(label))) {}

HangLabel::~HangLabel() { current_label = std::move(previous_); }

const std::string& hang_label() { return current_label; }

void wait_or_exit(const std::function<cudaError_t()>& poll, const char* poll_name) {
  using Clock = std::chrono::steady_clock;
  const double limit_s = hang_seconds();
  const auto start = Clock::now();
  for (;;) {
    const cudaError_t st = poll();
    if (st == cudaSuccess) return;
    if (st != cudaErrorNotReady) {
      // The error a synchronising call would have thrown, naming the work in flight.
      (void)cudaGetLastError();
      throw Error(ErrorCode::kCuda,
                  detail::concat("CUDA error: ", poll_name, " failed while waiting for ",
                                 blamed(), ": ", cudaGetErrorName(st), " (",
                                 cudaGetErrorString(st), ")"));
    }
    const double waited_s = std::chrono::duration<double>(Clock::now() - start).count();
    if (waited_s > limit_s) {
      std::fprintf(stderr,
                   "f8gemm: %s: the GPU work did not finish within %g s (a kernel that never "
                   "ends: a deadlock?); exiting\n",
                   blamed(), limit_s);
      // Every open stream, so that a tune's --log rows up to the hang are kept.
      std::fflush(nullptr);
      std::_Exit(kHangExitCode);
    }
    if (waited_s < 0.01) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

void sync_stream_or_exit(cudaStream_t stream) {
  wait_or_exit([stream] { return cudaStreamQuery(stream); }, "cudaStreamQuery");
}

void sync_event_or_exit(cudaEvent_t event) {
  wait_or_exit([event] { return cudaEventQuery(event); }, "cudaEventQuery");
}

}  // namespace f8gemm::test
