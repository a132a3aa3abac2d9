/// \brief The utility kernels, one instance for all of them (codegen's util_instance()): each
/// kernel lives in its own file, and this one gathers them into the instance's source.
#pragma once

#include "preshuffle.cuh"
#include "quantize_rows.cuh"
#include "reference_check.cuh"
#include "silu_mul_quantize.cuh"
#include "silu_sfu_check.cuh"
