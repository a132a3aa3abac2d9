/// \brief grouped_gemm() and grouped_gemm_padded(): validation, then the grouped launch.
#include "check.hpp"
#include "grouped.hpp"

namespace f8gemm {

namespace detail {
void launch_grouped(const ValidatedGrouped&, const TensorView&, const TensorView&,
                    const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                    const GemmOptions&) {
  F8GEMM_REQUIRE(false, kUnsupported, "the grouped kernel is being built");
}
}  // namespace detail

void grouped_gemm(const TensorView& x, const TensorView& w, WeightLayout w_layout,
                  const TensorView& x_scale, const TensorView& w_scale, const TensorView& m_sizes,
                  const TensorView& out, const GemmOptions& options) {
  const auto v = detail::validate_grouped_call(x, w, w_layout, x_scale, w_scale, m_sizes, out,
                                               options, false);
  if (v.shape.rows == 0 || v.shape.groups == 0) return;
  detail::launch_grouped(v, x, w, x_scale, w_scale, m_sizes, out, options);
}

void grouped_gemm_padded(const TensorView& x, const TensorView& w, WeightLayout w_layout,
                         const TensorView& x_scale, const TensorView& w_scale,
                         const TensorView& m_sizes, const TensorView& out,
                         const GemmOptions& options) {
  const auto v = detail::validate_grouped_call(x, w, w_layout, x_scale, w_scale, m_sizes, out,
                                               options, true);
  if (v.shape.rows == 0 || v.shape.groups == 0) return;
  detail::launch_grouped(v, x, w, x_scale, w_scale, m_sizes, out, options);
}

}  // namespace f8gemm
