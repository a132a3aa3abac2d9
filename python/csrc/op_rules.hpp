/// \brief The argument rules that an op's CPU/CUDA kernel and its Meta kernel share, declared
/// once for the op files of the PyTorch extension (each is defined in the file named beside it),
/// so that the same input is refused alike on every device.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <c10/core/SymInt.h>

#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "f8gemm/f8gemm.hpp"

namespace f8gemm_torch {

// gemm_ops.cpp
/// The name of the public batched op (f8f8bf16_rowwise_batched[_preshuffled]).
const char* batched_name(bool preshuffled);
/// The _out ops' output dtype: the library takes bf16 or fp16, these ops promise `want`.
void require_out_dtype(const char* op, const at::Tensor& out, at::ScalarType want);

/// One GEMM op call (f8f8bf16_rowwise and its siblings), as its CPU/CUDA kernel and its Meta
/// kernel see it.
struct GemmArgs {
  const char* op;
  const at::Tensor& XQ;
  const at::Tensor& WQ;
  const at::Tensor& x_scale;
  const at::Tensor& w_scale;
  const std::optional<at::Tensor>& bias;
  bool use_fast_accum;
  f8gemm::WeightLayout layout;
  bool batched;
  f8gemm::Pdl pdl;  ///< the op's `pdl` (to_pdl): GemmOptions::pdl
  bool prefetch_w;  ///< the op's `prefetch_w` (false for ops without one): GemmOptions::prefetch_w
  /// GemmOptions::epilogue_op: kSiluMul for the _silu_mul ops (output [..., N / 2]).
  f8gemm::EpilogueOp epilogue_op = f8gemm::EpilogueOp::kNone;
};
/// The functional ops' output shape for valid inputs (symbolic sizes allowed): XQ.shape[:-1] +
/// [N] (or [B, M, N]; N / 2 for kSiluMul); {0} for an XQ of the wrong rank and N = 0 for a WQ of
/// the wrong rank, which the checks then refuse before they look at the output.
std::vector<c10::SymInt> gemm_out_shape(const GemmArgs& a);
/// The checks of a GEMM op that read no memory, for its Meta kernel: the library's
/// f8gemm::check_gemm_shapes (the rules that f8gemm::gemm runs first) over the views that the
/// CPU/CUDA kernel builds, with the same scale forms accepted, the same error and the same hint.
/// Symbolic sizes are unknown to it: a rule that needs one is skipped. `out`: the _out forms'
/// output; the functional forms give the shape and dtype of the output they will allocate
/// (gemm_out_shape), so that the check runs before it exists, as their CPU/CUDA kernels run it.
void check_gemm_shapes(const GemmArgs& a, const at::Tensor& out);
void check_gemm_shapes(const GemmArgs& a, c10::SymIntArrayRef out_shape,
                       at::ScalarType out_dtype);

// grouped_ops.cpp
/// One grouped GEMM op call (f8f8bf16_rowwise_grouped_stacked and _dynamic, their preshuffled
/// and _out forms), as its CPU/CUDA kernel and its Meta kernel see it.
struct GroupedArgs {
  const char* op;
  const at::Tensor& XQ;
  const at::Tensor& WQ;
  const at::Tensor& x_scale;
  const at::Tensor& w_scale;
  const at::Tensor& sizes;  ///< M_sizes (stacked) or zero_start_index_M (padded)
  const std::optional<at::Tensor>& bias;
  bool use_fast_accum;
  f8gemm::WeightLayout layout;
  bool padded;
  /// The dynamic ops' zeroing_output_tensor for a CUDA output: zeroed once every argument is
  /// valid, so that a bad call launches nothing.
  bool zero_output = false;
};
/// The functional ops' output shape for valid inputs (symbolic sizes allowed): [total_M, N] or
/// [G, M_max, N]; {0} for an XQ of the wrong rank and N = 0 for a WQ of the wrong rank, which
/// the checks then refuse before they look at the output.
std::vector<c10::SymInt> grouped_out_shape(const GroupedArgs& a);
/// The checks of a grouped op that read no memory, for its Meta kernel, as check_gemm_shapes:
/// f8gemm::check_grouped_shapes over the CPU/CUDA kernel's views, with its error and hint;
/// the functional forms give their output's shape (grouped_out_shape) before allocating it.
void check_grouped_shapes(const GroupedArgs& a, const at::Tensor& out);
void check_grouped_shapes(const GroupedArgs& a, c10::SymIntArrayRef out_shape);

// weight_ops.cpp
/// The preshuffled shape of a plain WQ, and the plain shape of a preshuffled one (ValueError for
/// what the CPU/CUDA kernels refuse).
std::vector<c10::SymInt> preshuffle_shape(const at::Tensor& WQ);
std::vector<c10::SymInt> unshuffle_shape(const at::Tensor& WQ_shuffled, int64_t K);

// quantize_ops.cpp
/// scale_ub's form: one fp32 value.
void require_scale_ub_form(const char* op, const at::Tensor& ub);
/// scale_ub of the quantising ops into `opt` (on the input's GPU the kernel reads it through
/// `view`; a CPU one is read on the host; another GPU is refused).
void pass_scale_ub(const char* op, const char* input_name, const at::Tensor& input,
                   const std::optional<at::Tensor>& scale_ub, f8gemm::TensorView& view,
                   f8gemm::QuantizeOptions& opt);
/// The quantising ops' input `name` [..., K] (K > 0 checked before): at most kMaxRank
/// dimensions and INT32_MAX rows (symbolic sizes allowed), before any output is allocated.
void require_rows(const char* op, const char* name, const at::Tensor& input);
/// quantize_fp8_row's arguments as the library will see them (symbolic sizes allowed).
void require_quantize_args(const at::Tensor& a, const std::optional<at::Tensor>& scale_ub,
                           const std::optional<at::Tensor>& output);

// meta_ops.cpp
/// ValueError unless every (name, tensor) given is on the meta device (null: absent).
void require_meta(const char* op,
                  std::initializer_list<std::pair<const char*, const at::Tensor*>> tensors);
/// scale_ub for require_meta: null when absent or on the CPU (a CPU scale_ub is legal beside
/// meta inputs, as beside CUDA ones).
const at::Tensor* scale_ub_off_cpu(const std::optional<at::Tensor>& scale_ub);

}  // namespace f8gemm_torch
