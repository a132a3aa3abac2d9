/// \brief Whether a grouped GEMM call may be captured in a CUDA graph: a host-only record of the
/// grouped problems that have run on each device in this process.
///
/// The library's is_ready() answers for gemm()/batched_gemm() from its plan cache; it has no
/// grouped counterpart yet. Until it has, the extension remembers each grouped problem that
/// completed a call, keyed by everything the library may specialise a kernel on (sizes aside,
/// which stay on the device), so that a capture refuses a problem that would compile or load a
/// kernel. A problem that ran once needs no compilation again: the library's plans live for the
/// process.
#pragma once

#include <cstdint>
#include <string>

#include "f8gemm/f8gemm.hpp"

namespace f8gemm_torch {

/// A grouped call as the host sees it. rows: total_M (stacked) or M_max (padded).
struct GroupedProblem {
  int device = -1;
  int64_t groups = 0, rows = 0, n = 0, k = 0;
  bool padded = false;
  f8gemm::WeightLayout layout = f8gemm::WeightLayout::kPreshuffled;
  f8gemm::DType out_dtype = f8gemm::DType::kBF16;
  bool has_bias = false;
  f8gemm::DType bias_dtype = f8gemm::DType::kF32;
  bool fast_accum = true;
  f8gemm::DType sizes_dtype = f8gemm::DType::kI64;

  bool operator<(const GroupedProblem& o) const;
  /// "G,total_M,N,K = (8, 64, 28672, 4096)" (or "G,M_max,N,K = ..." padded).
  std::string sizes() const;
};

/// True when a call with this problem completed before in this process (thread-safe).
bool grouped_is_ready(const GroupedProblem& p);
/// Records a completed call.
void mark_grouped_ready(const GroupedProblem& p);

}  // namespace f8gemm_torch
