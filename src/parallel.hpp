/// \brief parallel_units: a work list spread over host threads, for the host paths that touch
/// large tensors (preshuffle, the fp64 reference, seeded random operands).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace f8gemm::detail {

/// `threads` when positive, else std::thread::hardware_concurrency() (at least 1).
inline int resolve_threads(int threads) {
  if (threads > 0) return threads;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

/// Runs body(unit) for every unit in [0, count) on up to `threads` threads (<= 0: all of them).
/// Units are handed out one at a time from an atomic counter, so uneven units (ragged edges)
/// still balance.
template <typename Body>
void parallel_units(int64_t count, int threads, const Body& body) {
  const int n = static_cast<int>(std::min<int64_t>(resolve_threads(threads), count));
  if (n <= 1) {
    for (int64_t u = 0; u < count; ++u) body(u);
    return;
  }
  std::atomic<int64_t> next{0};
  auto worker = [&]() {
    for (int64_t u = next.fetch_add(1); u < count; u = next.fetch_add(1)) body(u);
  };
  std::vector<std::thread> pool;
  pool.reserve(n - 1);
  try {
    for (int i = 1; i < n; ++i) pool.emplace_back(worker);
  } catch (...) {
    // A thread could not start: the ones that did finish the list before the error leaves.
    for (auto& t : pool) t.join();
    throw;
  }
  worker();
  for (auto& t : pool) t.join();
}

}  // namespace f8gemm::detail
