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
  // The first words say what happened; the call and its place follow for a bug report.
  if (no_device) {
    throw Error(ErrorCode::kNoDevice,
                concat("no usable CUDA device here: ", cudaGetErrorString(status), " (",
                       cudaGetErrorName(status), " in ", expr, " at ", base_name(file), ":", line,
                       ")"));
  }
  throw Error(ErrorCode::kCuda, concat(cudaGetErrorName(status), " (", cudaGetErrorString(status),
                                       ") in ", expr, " at ", base_name(file), ":", line));
}

std::string quoted(const std::string& text) {
  std::string out = "'";
  size_t shown = 0;
  for (; shown < text.size() && shown < kQuotedMax; ++shown) {
    const unsigned char c = static_cast<unsigned char>(text[shown]);
    if (c == '\\' || c == '\'') {
      out += '\\';  // so that an escape in the input cannot pass for one made here
      out += char(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      append_hex_escape(out, c);
    }
  }
  out += "'";
  if (shown < text.size()) out += concat(" (and ", text.size() - shown, " more bytes)");
  return out;
}

void throw_nvrtc(nvrtcResult status, const char* expr, const char* file, int line) {
  throw Error(ErrorCode::kCompile, concat(nvrtcGetErrorString(status), " in ", expr, " at ",
                                          base_name(file), ":", line));
}

}  // namespace detail
}  // namespace f8gemm
