/// \brief The grouped GEMM (mixture-of-experts) inside the library: its validated problem, the
/// validation (validate_grouped.cpp) and the launch (grouped_gemm.cpp).
#pragma once

#include <cstdint>

#include "codegen.hpp"
#include "f8gemm/f8gemm.hpp"

namespace f8gemm::detail {

/// Groups per call: the kernel keeps each group's first row, end row and first tile in shared
/// memory (12 bytes a group).
inline constexpr int64_t kMaxGroups = 4096;

struct ValidatedGrouped {
  GroupedProblem shape;
  int device = 0;
};

/// Checks every argument of grouped_gemm() (padded false) or grouped_gemm_padded() (padded true):
/// dtypes, ranks, shapes, contiguity, alignment and devices, m_sizes included (on x's device,
/// int32 or int64, [G]), and the sizes against the kernel's int32 limits. Throws
/// Error(kInvalidArgument) naming the argument as options.names calls it.
ValidatedGrouped validate_grouped_call(const TensorView& x, const TensorView& w, WeightLayout layout,
                                       const TensorView& x_scale, const TensorView& w_scale,
                                       const TensorView& m_sizes, const TensorView& out,
                                       const GemmOptions& options, bool padded);

/// Throws Error(kInvalidArgument) when a call would reject this problem for its sizes, layout
/// or dtypes alone (precompile() checks with it).
void validate_grouped_problem(const GroupedProblem& problem);

/// The instance a grouped call runs (grouped_config.cpp): `forced` (else F8GEMM_CONFIG) as named,
/// or the cost model's best unsplit config for a design group size on `sm_count` SMs (its best
/// 64-row ping-pong for large stacked groups: card 38), its ring shortened where the group tables
/// need the room. Throws kUnsupported for a forced config that
/// cannot run the problem.
InstanceSpec grouped_spec(const GroupedProblem& problem, int sm_count, const Config* forced);

/// Launches the grouped kernel for a validated call on options.stream.
void launch_grouped(const ValidatedGrouped& v, const TensorView& x, const TensorView& w,
                    const TensorView& x_scale, const TensorView& w_scale,
                    const TensorView& m_sizes, const TensorView& out, const GemmOptions& options);

}  // namespace f8gemm::detail
