/// \brief The grouped GEMM (mixture-of-experts) inside the library: its validated problem, the
/// validation (validate_grouped.cpp) and the launch (grouped_gemm.cpp).
#pragma once

#include <cstdint>

#include "f8gemm/f8gemm.hpp"

namespace f8gemm::detail {

/// Groups per call: the kernel keeps each group's first row and first tile in shared memory
/// (8 bytes a group).
inline constexpr int64_t kMaxGroups = 4096;

/// What the host knows of a grouped call: everything but the group sizes, which stay on the
/// device.
struct GroupedShape {
  int64_t groups = 0;  ///< G
  int64_t rows = 0;    ///< total_M (stacked form) or M_max (padded form)
  int64_t n = 0, k = 0;
  bool padded = false;
  WeightLayout w_layout = WeightLayout::kPreshuffled;
  DType out_dtype = DType::kBF16;
  bool has_bias = false;
  DType bias_dtype = DType::kF32;
  bool fast_accum = true;
  DType sizes_dtype = DType::kI32;  ///< kI32 or kI64
};

struct ValidatedGrouped {
  GroupedShape shape;
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

/// Launches the grouped kernel for a validated call on options.stream.
void launch_grouped(const ValidatedGrouped& v, const TensorView& x, const TensorView& w,
                    const TensorView& x_scale, const TensorView& w_scale,
                    const TensorView& m_sizes, const TensorView& out, const GemmOptions& options);

}  // namespace f8gemm::detail
