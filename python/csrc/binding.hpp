/// \brief Shared by the op files of the PyTorch extension: torch tensors as f8gemm TensorViews,
/// new outputs, the device guard and stream of an op, the ops' `pdl` argument, and library errors
/// as torch errors.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>

#include <optional>
#include <string>

#include "f8gemm/f8gemm.hpp"

namespace f8gemm_torch {

/// "torch.float32", ... : dtype names as a Python user writes them.
const char* torch_dtype_name(at::ScalarType s);
/// torch_dtype_name without "torch.": the library's spelling ("float8_e4m3fn").
std::string bare_dtype_name(at::ScalarType s);
const char* dtype_torch_name(f8gemm::DType d);
const char* layout_name(f8gemm::WeightLayout layout);

/// The library's dtype of a torch dtype, or nullopt for one that it does not know.
std::optional<f8gemm::DType> to_dtype(at::ScalarType s);

/// A torch tensor as a TensorView: sizes, strides, data pointer (storage offset included) and
/// device (a CUDA ordinal, or kHost for a CPU tensor so that the library's own validation
/// rejects it where GPU memory is needed). Raises ValueError for what a view cannot express.
f8gemm::TensorView view_of(const at::Tensor& t, const char* op, const char* name,
                           const char* wanted);

/// view_of's checks that read no memory (dtype and rank) and the tensor's shape, for the
/// library's shape-only checks (f8gemm::check_gemm_shapes) in a Meta kernel: a symbolic size
/// becomes f8gemm::kUnknownSize, strides and device stay unset, and data is a placeholder that
/// is never read but keeps the view defined() (a present 0-dim tensor, as in view_of).
f8gemm::TensorView shape_view_of(const at::Tensor& t, const char* op, const char* name,
                                 const char* wanted);

/// The shape-only view of an output that is not allocated yet (a functional op's, whose shape
/// and dtype follow from its inputs), as shape_view_of would give for it: a symbolic size
/// becomes f8gemm::kUnknownSize. The dtype is one the library knows and the rank at most
/// kMaxRank (the ops' outputs have XQ's rank, already checked, or fewer).
f8gemm::TensorView new_output_view(c10::SymIntArrayRef sizes, at::ScalarType dtype);

/// The view of a functional op's output before it is allocated, for the library's whole
/// validation of the call (gemm_problem, grouped_problem: placement and memory included), so
/// that every argument is checked before the op allocates anything: new_output_view's shape and
/// dtype, row-major strides, `device` (the inputs' XQ's), and a 16-byte-aligned address that
/// overlaps no input (a fresh output shares no byte with them); a call of two outputs gives
/// the second `slot` 1, an address the first does not overlap. The address is never read.
f8gemm::TensorView unallocated_output_view(c10::SymIntArrayRef sizes, at::ScalarType dtype,
                                           int device, int slot = 0);

/// A new tensor of `sizes` and `dtype` on `like`'s device: the CUDA path skips the dispatcher.
at::Tensor new_empty(const at::Tensor& like, at::IntArrayRef sizes, at::ScalarType dtype);

/// The device guard and current stream of an op whose data lives where `t` is.
struct OnDevice {
  c10::cuda::OptionalCUDAGuard guard;
  cudaStream_t stream = nullptr;
  int device = -1;
  explicit OnDevice(const at::Tensor& t);
};

/// The ops' trailing `bool? pdl=None` as the library's launch option: None leaves the choice to
/// the library (Pdl::kDefault: the F8GEMM_PDL switch, off when unset), True asks for
/// programmatic dependent launch (Pdl::kOn), False forbids it (Pdl::kOff) whatever the switch.
f8gemm::Pdl to_pdl(const std::optional<bool>& pdl);

/// True when `stream` is capturing a CUDA graph (or when that cannot be told).
bool stream_is_capturing(cudaStream_t stream);

/// Rethrows a library error as a torch error: "f8gemm.<op>: <code>: <message>" (the library
/// already names the arguments as the op does), with " (<hint>)" appended when a hint is given.
/// ValueError for ErrorCode::kInvalidArgument, RuntimeError otherwise.
[[noreturn]] void rethrow(const char* op, const f8gemm::Error& e,
                          const std::string& hint = std::string());

}  // namespace f8gemm_torch
