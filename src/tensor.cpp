/// \brief TensorView helpers and dtype names.
#include <string>

#include "check.hpp"

namespace f8gemm {

const char* to_string(DType dtype) {
  switch (dtype) {
    case DType::kE4M3: return "float8_e4m3fn";
    case DType::kBF16: return "bfloat16";
    case DType::kF16: return "float16";
    case DType::kF32: return "float32";
    case DType::kU8: return "uint8";
    case DType::kI32: return "int32";
    case DType::kI64: return "int64";
  }
  return "unknown";
}

int dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kE4M3:
    case DType::kU8: return 1;
    case DType::kBF16:
    case DType::kF16: return 2;
    case DType::kF32:
    case DType::kI32: return 4;
    case DType::kI64: return 8;
  }
  return 0;
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];
  return n;
}

bool TensorView::is_contiguous() const {
  if (numel() == 0) return true;  // no element to misplace (torch gives empty tensors any strides)
  int64_t expected = 1;
  for (int i = rank - 1; i >= 0; --i) {
    // Size-1 dimensions may carry any stride (torch gives them arbitrary ones).
    if (shape[i] != 1 && stride[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

TensorView make_view(void* data, DType dtype, std::vector<int64_t> shape, int device) {
  F8GEMM_REQUIRE(shape.size() >= 1 && shape.size() <= size_t(kMaxRank), kInvalidArgument,
                 "make_view: rank must be 1..", kMaxRank, ", got ", shape.size());
  F8GEMM_REQUIRE(device >= kHost, kInvalidArgument,
                 "make_view: device must be kHost (-1) or a CUDA device ordinal, got ", device);
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.rank = int(shape.size());
  v.device = device;
  // The product of the nonzero dimensions within int64, as require_view admits (validate.hpp):
  // then no stride below and no numel() of the view overflows.
  int64_t product = 1;
  for (int64_t d : shape) {
    F8GEMM_REQUIRE(d >= 0, kInvalidArgument, "make_view: negative dimension ", d);
    if (d == 0) continue;
    if (__builtin_mul_overflow(product, d, &product)) {
      std::string s = "[";
      for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
      throw Error(ErrorCode::kInvalidArgument,
                  detail::concat("make_view: shape ", s,
                                 "]: the product of its nonzero dimensions passes int64"));
    }
  }
  int64_t stride = 1;
  for (int i = v.rank - 1; i >= 0; --i) {
    v.shape[i] = shape[i];
    v.stride[i] = stride;
    stride *= shape[i];
  }
  return v;
}

}  // namespace f8gemm
