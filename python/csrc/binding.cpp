/// \brief The shared helpers of the PyTorch extension (binding.hpp).
#include "binding.hpp"

#include <ATen/cuda/EmptyTensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <cstring>

namespace f8gemm_torch {

using f8gemm::DType;
using f8gemm::TensorView;
using f8gemm::WeightLayout;

const char* torch_dtype_name(at::ScalarType s) {
  switch (s) {
    case at::ScalarType::Double: return "torch.float64";
    case at::ScalarType::Float: return "torch.float32";
    case at::ScalarType::Half: return "torch.float16";
    case at::ScalarType::BFloat16: return "torch.bfloat16";
    case at::ScalarType::Float8_e4m3fn: return "torch.float8_e4m3fn";
    case at::ScalarType::Float8_e5m2: return "torch.float8_e5m2";
    case at::ScalarType::Float8_e4m3fnuz: return "torch.float8_e4m3fnuz";
    case at::ScalarType::Float8_e5m2fnuz: return "torch.float8_e5m2fnuz";
    case at::ScalarType::Byte: return "torch.uint8";
    case at::ScalarType::Char: return "torch.int8";
    case at::ScalarType::Short: return "torch.int16";
    case at::ScalarType::Int: return "torch.int32";
    case at::ScalarType::Long: return "torch.int64";
    case at::ScalarType::Bool: return "torch.bool";
    default: return c10::toString(s);
  }
}

std::string bare_dtype_name(at::ScalarType s) {
  const std::string name = torch_dtype_name(s);
  return name.compare(0, 6, "torch.") == 0 ? name.substr(6) : name;
}

std::optional<DType> to_dtype(at::ScalarType s) {
  switch (s) {
    case at::ScalarType::Float8_e4m3fn: return DType::kE4M3;
    case at::ScalarType::Byte: return DType::kU8;
    case at::ScalarType::BFloat16: return DType::kBF16;
    case at::ScalarType::Half: return DType::kF16;
    case at::ScalarType::Float: return DType::kF32;
    case at::ScalarType::Int: return DType::kI32;   // group sizes
    case at::ScalarType::Long: return DType::kI64;  // group sizes
    default: return std::nullopt;
  }
}

namespace {

/// The checks of view_of that read no memory: a dtype the library knows and a rank it takes.
/// Returns the view's dtype and rank, shape unset.
TensorView view_head(const at::Tensor& t, const char* op, const char* name, const char* wanted) {
  const std::optional<DType> dtype = to_dtype(t.scalar_type());
  if (!dtype) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.", op, ": invalid argument: ", name,
                                         " must have dtype ", wanted, ", got ",
                                         torch_dtype_name(t.scalar_type())));
  }
  if (t.dim() > f8gemm::kMaxRank) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.", op, ": invalid argument: ", name, " has ",
                                         t.dim(), " dimensions (shape ", t.sym_sizes(),
                                         "); at most ", f8gemm::kMaxRank,
                                         " are supported: flatten the leading ones"));
  }
  TensorView v;
  v.dtype = *dtype;
  v.rank = static_cast<int>(t.dim());
  return v;
}

}  // namespace

namespace {

/// The data of every shape-only view: never read, but non-null, so that a present tensor is
/// defined() whatever its rank, as view_of's views are (a 0-dim bias is a bias, refused as one).
char kShapeOnly = 0;

}  // namespace

TensorView new_output_view(c10::SymIntArrayRef sizes, at::ScalarType dtype) {
  TORCH_INTERNAL_ASSERT(sizes.size() <= size_t(f8gemm::kMaxRank) && to_dtype(dtype).has_value());
  TensorView v;
  v.dtype = *to_dtype(dtype);
  v.rank = static_cast<int>(sizes.size());
  for (int i = 0; i < v.rank; ++i) {
    const std::optional<int64_t> size = sizes[i].maybe_as_int();
    v.shape[i] = size ? *size : f8gemm::kUnknownSize;
  }
  v.data = &kShapeOnly;
  return v;
}

TensorView unallocated_output_view(c10::SymIntArrayRef sizes, at::ScalarType dtype, int device,
                                   int slot) {
  TensorView v = new_output_view(sizes, dtype);
  // Unsigned: a product past int64 wraps instead of overflowing, and the library refuses such
  // a shape (require_view) before it reads a stride.
  uint64_t stride = 1;
  for (int i = v.rank - 1; i >= 0; --i) {
    v.stride[i] = static_cast<int64_t>(stride);
    stride *= static_cast<uint64_t>(v.shape[i]);
  }
  v.device = device;
  // 2^63 (+ 2^62 for slot 1): no input can lie there. User-space addresses, device memory's
  // included (CUDA's unified addressing), stay below 2^57 on x86-64 and 2^52 on AArch64, and
  // the library compares byte ranges in 128 bits, so [2^63 + slot * 2^62, + bytes) overlaps no
  // input, and the two slots overlap each other for no output under 2^62 bytes.
  v.data = reinterpret_cast<void*>((uintptr_t(1) << 63) + uintptr_t(slot & 1) * (uintptr_t(1) << 62));
  return v;
}

TensorView shape_view_of(const at::Tensor& t, const char* op, const char* name,
                         const char* wanted) {
  TensorView v = view_head(t, op, name, wanted);
  v.data = &kShapeOnly;
  const auto sizes = t.sym_sizes();
  for (int i = 0; i < v.rank; ++i) {
    // A symbolic size (torch.compile's dynamic shapes) is unknown to the library's rules; one
    // that the trace has specialised to a constant is as good as an int.
    const std::optional<int64_t> size = sizes[i].maybe_as_int();
    v.shape[i] = size ? *size : f8gemm::kUnknownSize;
  }
  return v;
}

TensorView view_of(const at::Tensor& t, const char* op, const char* name, const char* wanted) {
  TensorView v = view_head(t, op, name, wanted);
  if (t.is_cuda()) {
    v.device = t.get_device();
  } else if (t.is_cpu()) {
    v.device = f8gemm::kHost;
  } else {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.", op, ": invalid argument: ", name,
                                         " must be a CUDA tensor, got one on ", t.device()));
  }
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  for (int i = 0; i < v.rank; ++i) {
    v.shape[i] = sizes[i];
    v.stride[i] = strides[i];
  }
  if (t.numel() == 0) {
    // No element is addressed: give the row-major strides the library expects (torch computes
    // an empty tensor's strides from max(size, 1), which TensorView::is_contiguous rejects).
    int64_t stride = 1;
    for (int i = v.rank - 1; i >= 0; --i) {
      v.stride[i] = stride;
      stride *= sizes[i];
    }
  }
  v.data = t.numel() > 0 ? t.data_ptr() : nullptr;
  return v;
}

at::Tensor new_empty(const at::Tensor& like, at::IntArrayRef sizes, at::ScalarType dtype) {
  if (like.is_cuda()) {
    return at::Tensor(at::detail::empty_cuda(sizes, dtype, like.device(), std::nullopt));
  }
  return at::empty(sizes, like.options().dtype(dtype));
}

OnDevice::OnDevice(const at::Tensor& t) {
  if (t.is_cuda()) {
    device = t.get_device();
    guard.set_index(static_cast<c10::DeviceIndex>(device));
    stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
  }
}

f8gemm::Pdl to_pdl(const std::optional<bool>& pdl) {
  if (!pdl.has_value()) return f8gemm::Pdl::kDefault;
  return *pdl ? f8gemm::Pdl::kOn : f8gemm::Pdl::kOff;
}

bool stream_is_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    (void)cudaGetLastError();
    return true;  // cannot tell (e.g. an implicit capture elsewhere): treat as capturing
  }
  return status != cudaStreamCaptureStatusNone;
}

const char* layout_name(WeightLayout layout) {
  return layout == WeightLayout::kPlain ? "plain" : "preshuffled";
}

const char* dtype_torch_name(DType d) {
  switch (d) {
    case DType::kBF16: return "torch.bfloat16";
    case DType::kF16: return "torch.float16";
    case DType::kF32: return "torch.float32";
    case DType::kE4M3: return "torch.float8_e4m3fn";
    case DType::kU8: return "torch.uint8";
    case DType::kI32: return "torch.int32";
    case DType::kI64: return "torch.int64";
  }
  return "?";
}

void rethrow(const char* op, const f8gemm::Error& e, const std::string& hint) {
  std::string what = e.what();
  const char* prefix = "f8gemm: ";
  if (what.compare(0, std::strlen(prefix), prefix) == 0) what.erase(0, std::strlen(prefix));
  const std::string repeated = std::string(": ") + op + ": ";  // "code: op: message"
  const size_t at = what.find(repeated);
  if (at != std::string::npos) what.erase(at + 2, repeated.size() - 2);
  std::string message = std::string("f8gemm.") + op + ": " + what;
  if (!hint.empty()) message += " (" + hint + ")";
  if (e.code() == f8gemm::ErrorCode::kInvalidArgument) C10_THROW_ERROR(ValueError, message);
  C10_THROW_ERROR(Error, message);
}

}  // namespace f8gemm_torch
