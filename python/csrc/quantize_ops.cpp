/// \brief The quantisation op of the PyTorch extension (schema in schemas.cpp): quantize_fp8_row
/// over f8gemm::quantize_rows, on CUDA or CPU tensors.
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "binding.hpp"
#include "f8gemm/f8gemm.hpp"

namespace f8gemm_torch {
namespace {

using f8gemm::TensorView;

/// Rowwise quantisation (FBGEMM's quantize_fp8_row): returns (a_fp8, scale) with scale of shape
/// a.shape[:-1] (fp32, the dequantisation multiplier). use_triton is accepted and ignored.
/// scale_ub, a 1-element fp32 tensor: on a's CUDA device the kernel reads it (no host sync, legal
/// inside CUDA-graph capture; a value <= 0 or NaN there means no bound); anywhere else it is read
/// on the host: free for a CPU tensor, a sync for one on another GPU (refused during capture).
/// pdl: QuantizeOptions::pdl (to_pdl); a CPU call launches nothing and ignores it.
std::tuple<at::Tensor, at::Tensor> quantize_fp8_row(const at::Tensor& a,
                                                    const std::optional<at::Tensor>& scale_ub,
                                                    bool use_triton,
                                                    const std::optional<at::Tensor>& output,
                                                    std::optional<bool> pdl) {
  (void)use_triton;
  const char* op = "quantize_fp8_row";
  if (a.dim() < 1) {
    C10_THROW_ERROR(ValueError, "f8gemm.quantize_fp8_row: invalid argument: a must have at least "
                                "1 dimension ([..., K]), got a 0-dimensional tensor");
  }
  f8gemm::QuantizeOptions opt;
  opt.pdl = to_pdl(pdl);
  TensorView ub_view;
  if (scale_ub.has_value() && scale_ub->defined()) {
    const at::Tensor& ub = *scale_ub;
    if (ub.numel() != 1 || ub.scalar_type() != at::ScalarType::Float) {
      C10_THROW_ERROR(ValueError, c10::str("f8gemm.quantize_fp8_row: invalid argument: scale_ub "
                                           "must be a 1-element torch.float32 tensor, got shape ",
                                           ub.sizes(), " and dtype ",
                                           torch_dtype_name(ub.scalar_type())));
    }
  }
  if (scale_ub.has_value() && scale_ub->defined() && a.is_cuda() &&
      scale_ub->device() == a.device()) {
    ub_view = view_of(*scale_ub, op, "scale_ub", "torch.float32");
    opt.scale_ub_tensor = &ub_view;
  } else if (scale_ub.has_value() && scale_ub->defined()) {
    const at::Tensor& ub = *scale_ub;
    if (ub.is_cuda()) {
      if (stream_is_capturing(c10::cuda::getCurrentCUDAStream(ub.get_device()).stream())) {
        C10_THROW_ERROR(Error, "f8gemm.quantize_fp8_row: scale_ub is a CUDA tensor, and reading "
                               "it on the host (a sync) is not allowed during CUDA-graph capture; "
                               "pass scale_ub on a's device or as a CPU tensor");
      }
    }
    const float value = ub.item<float>();  // a sync for a CUDA tensor
    if (!(value > 0.0f) || value > 3.0e38f) {
      C10_THROW_ERROR(ValueError, c10::str("f8gemm.quantize_fp8_row: invalid argument: scale_ub "
                                           "must be positive and finite, got ", value));
    }
    opt.scale_ub = value;
  }
  const TensorView in = view_of(a, op, "a", "torch.bfloat16, torch.float16 or torch.float32");
  at::Tensor q;
  if (output.has_value() && output->defined()) {
    q = *output;
  } else {
    q = new_empty(a, a.sizes(), at::ScalarType::Float8_e4m3fn);
  }
  const TensorView qv = view_of(q, op, "output", "torch.float8_e4m3fn");
  at::Tensor scale = new_empty(a, a.sizes().slice(0, a.dim() - 1), at::ScalarType::Float);
  const TensorView sv = view_of(scale, op, "scale", "torch.float32");
  OnDevice on(a);
  opt.stream = on.stream;
  static const f8gemm::QuantizeArgNames names{"a", "output", "scale"};
  opt.names = &names;
  try {
    f8gemm::quantize_rows(in, qv, sv, opt);
  } catch (const f8gemm::Error& e) {
    rethrow(op, e);
  }
  return std::make_tuple(q, scale);
}

}  // namespace
}  // namespace f8gemm_torch

TORCH_LIBRARY_IMPL(f8gemm, CUDA, m) {
  m.impl("quantize_fp8_row", TORCH_FN(f8gemm_torch::quantize_fp8_row));
}

TORCH_LIBRARY_IMPL(f8gemm, CPU, m) {
  m.impl("quantize_fp8_row", TORCH_FN(f8gemm_torch::quantize_fp8_row));
}
