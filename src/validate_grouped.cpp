/// \brief Argument validation of grouped_gemm() and grouped_gemm_padded() (see grouped.hpp).
#include "check.hpp"
#include "grouped.hpp"
#include "validate.hpp"

namespace f8gemm::detail {

ValidatedGrouped validate_grouped_call(const TensorView&, const TensorView&, WeightLayout,
                                       const TensorView&, const TensorView&, const TensorView&,
                                       const TensorView&, const GemmOptions&, bool) {
  F8GEMM_REQUIRE(false, kUnsupported, "grouped validation is being built");
  return {};
}

}  // namespace f8gemm::detail
