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
