/// \brief f8gemm::Error, the names of enums, and the CUDA/NVRTC failure paths of check.hpp.
#include <cstring>

#include "check.hpp"

namespace f8gemm {

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kNoDevice: return "no device";
    case ErrorCode::kCuda: return "CUDA error";
    case ErrorCode::kCompile: return "compile error";
    case ErrorCode::kIo: return "I/O error";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown error";
}

const char* to_string(EpilogueOp op) {
  switch (op) {
    case EpilogueOp::kNone: return "none";
    case EpilogueOp::kSiluMul: return "silu_mul";
  }
  return "unknown";
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(std::string("f8gemm: ") + to_string(code) + ": " + message),
      code_(code),
      message_(message) {}

namespace detail {

static const char* base_name(const char* file) {
  const char* slash = std::strrchr(file, '/');
  return slash ? slash + 1 : file;
}

void throw_cuda(cudaError_t status, const char* expr, const char* file, int line) {
  // No driver, an old one, the toolkit's stub libcuda in place of a driver, or no device: there
  // is no usable GPU here, so say so plainly.
  const bool no_device = status == cudaErrorInsufficientDriver || status == cudaErrorNoDevice ||
                         status == cudaErrorStubLibrary;
  const ErrorCode code = no_device ? ErrorCode::kNoDevice : ErrorCode::kCuda;
  throw Error(code, concat(cudaGetErrorName(status), " (", cudaGetErrorString(status), ") in ",
                           expr, " at ", base_name(file), ":", line));
}

void throw_nvrtc(nvrtcResult status, const char* expr, const char* file, int line) {
  throw Error(ErrorCode::kCompile, concat(nvrtcGetErrorString(status), " in ", expr, " at ",
                                          base_name(file), ":", line));
}

}  // namespace detail
}  // namespace f8gemm
