/// \brief The host-only record of grouped problems that have run (grouped_readiness.hpp).
#include "grouped_readiness.hpp"

#include <mutex>
#include <set>
#include <tuple>

namespace f8gemm_torch {

namespace {

auto as_tuple(const GroupedProblem& p) {
  return std::make_tuple(p.device, p.groups, p.rows, p.n, p.k, p.padded, int(p.layout),
                         int(p.out_dtype), p.has_bias, p.has_bias ? int(p.bias_dtype) : -1,
                         p.fast_accum, int(p.sizes_dtype));
}

std::mutex& ready_mutex() {
  static std::mutex m;
  return m;
}

std::set<GroupedProblem>& ready_set() {
  static std::set<GroupedProblem> s;
  return s;
}

}  // namespace

bool GroupedProblem::operator<(const GroupedProblem& o) const { return as_tuple(*this) < as_tuple(o); }

std::string GroupedProblem::sizes() const {
  return std::string(padded ? "G,M_max,N,K = (" : "G,total_M,N,K = (") + std::to_string(groups) +
         ", " + std::to_string(rows) + ", " + std::to_string(n) + ", " + std::to_string(k) + ")";
}

bool grouped_is_ready(const GroupedProblem& p) {
  std::lock_guard<std::mutex> lock(ready_mutex());
  return ready_set().count(p) > 0;
}

void mark_grouped_ready(const GroupedProblem& p) {
  std::lock_guard<std::mutex> lock(ready_mutex());
  ready_set().insert(p);
}

}  // namespace f8gemm_torch
