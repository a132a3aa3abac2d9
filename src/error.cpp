/// \brief f8gemm::Error, the names of enums, and the CUDA/NVRTC failure paths of check.hpp.
#include <cstdint>
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

size_t printable_utf8_length(const std::string& text, size_t i) {
  if (i >= text.size()) return 0;
  const auto byte = [&](size_t j) { return static_cast<unsigned char>(text[j]); };
  const unsigned char lead = byte(i);
  size_t length;
  uint32_t cp;
  if (lead >= 0xc2 && lead <= 0xdf) length = 2, cp = lead & 0x1f;
  else if (lead >= 0xe0 && lead <= 0xef) length = 3, cp = lead & 0x0f;
  else if (lead >= 0xf0 && lead <= 0xf4) length = 4, cp = lead & 0x07;
  else return 0;
  if (i + length > text.size()) return 0;
  for (size_t j = 1; j < length; ++j) {
    if ((byte(i + j) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + j) & 0x3f);
  }
  const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < least[length] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  // Not shown as themselves: the C1 controls; the default-ignorable code points and the format
  // characters (invisible, or reordering the text around them: soft hyphen, combining grapheme
  // joiner, Arabic and Syriac marks, Hangul fillers, Khmer invisible vowels, Mongolian
  // selectors, zero-width and bidirectional controls, line and paragraph separators, invisible
  // operators, variation selectors, the byte-order mark, interlinear annotation, shorthand and
  // musical format controls, Egyptian format controls, the tag characters); private use; and the
  // noncharacters.
  static constexpr uint32_t kHidden[][2] = {
      {0x80, 0x9f},       {0xad, 0xad},       {0x34f, 0x34f},     {0x600, 0x605},
      {0x61c, 0x61c},     {0x6dd, 0x6dd},     {0x70f, 0x70f},     {0x890, 0x891},
      {0x8e2, 0x8e2},     {0x115f, 0x1160},   {0x17b4, 0x17b5},   {0x180b, 0x180f},
      {0x200b, 0x200f},   {0x2028, 0x202e},   {0x2060, 0x206f},   {0x3164, 0x3164},
      {0xe000, 0xf8ff},   {0xfdd0, 0xfdef},   {0xfe00, 0xfe0f},   {0xfeff, 0xfeff},
      {0xffa0, 0xffa0},   {0xfff0, 0xfffb},   {0x110bd, 0x110bd}, {0x110cd, 0x110cd},
      {0x13430, 0x1343f}, {0x1bca0, 0x1bca3}, {0x1d173, 0x1d17a}, {0xe0000, 0x10ffff}};
  for (const auto& range : kHidden) {
    if (cp >= range[0] && cp <= range[1]) return 0;
  }
  if ((cp & 0xfffe) == 0xfffe) return 0;  // U+xxFFFE and U+xxFFFF of every plane
  return length;
}

std::string quoted(const std::string& text) {
  std::string out = "'";
  size_t shown = 0;
  while (shown < text.size() && shown < kQuotedMax) {
    const unsigned char c = static_cast<unsigned char>(text[shown]);
    if (c == '\\' || c == '\'') {
      out += '\\';  // so that an escape in the input cannot pass for one made here
      out += char(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else if (const size_t length = printable_utf8_length(text, shown);
               length > 0 && shown + length <= kQuotedMax) {
      out.append(text, shown, length);  // a character a terminal shows as itself
      shown += length;
      continue;
    } else if (length > 0) {
      break;  // the cut never splits a character
    } else {
      append_hex_escape(out, c);
    }
    ++shown;
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
