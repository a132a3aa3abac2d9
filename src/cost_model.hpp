/// \brief The cost model's estimate of a configuration's time on a problem (cost_model.cpp);
/// config.hpp's candidates() ranks by it.
#pragma once

#include "f8gemm/f8gemm.hpp"

namespace f8gemm::detail {

/// The cost model's estimate in microseconds on a GPU with `sm_count` SMs (H200 ceilings).
double estimate_us(const Config& config, const ProblemShape& problem, int sm_count);

}  // namespace f8gemm::detail
