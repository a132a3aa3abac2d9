/// \brief The CLI's shapes: parsing, shapes files and the default list (see shapes.hpp).
#include "shapes.hpp"

#include <cstring>
#include <sstream>

#include "cli_args.hpp"
#include "commands.hpp"
#include "f8gemm/check.hpp"
#include "f8gemm/small_file.hpp"

namespace f8gemm::cli {

namespace {

/// A shapes file holds a few lines of B,M,N,K: anything far longer is not one (a device file,
/// a binary), and is refused at the cap rather than read whole into memory.
constexpr size_t kMaxLineBytes = 4096;
constexpr size_t kMaxFileBytes = size_t(16) << 20;

/// The next line of `in` (without its '\n') into `line`; false at the end of the text. Throws a
/// UsageError once the line passes kMaxLineBytes (the file's size is capped when it is read).
bool read_line(std::istream& in, std::string& line, const std::string& path, int line_no) {
  line.clear();
  for (char c = 0;;) {
    if (!in.get(c)) return !line.empty();
    if (c == '\n') return true;
    if (line.size() == kMaxLineBytes) {
      throw UsageError(path + ":" + std::to_string(line_no) + ": line longer than " +
                       std::to_string(kMaxLineBytes) + " bytes; expected B,M,N,K");
    }
    line += c;
  }
}

std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
}

}  // namespace

std::string Shape::label() const {
  return std::to_string(b) + "," + std::to_string(m) + "," + std::to_string(n) + "," +
         std::to_string(k);
}

const std::vector<Shape>& default_shapes() {
  static const std::vector<Shape> kShapes = {
      {16, 1, 1280, 8192},    {16, 32, 1280, 8192},   {16, 128, 1280, 8192},
      {16, 512, 1280, 8192},  {16, 1024, 1280, 8192}, {16, 4096, 1280, 8192},
      {16, 1, 8192, 1024},    {16, 128, 8192, 1024},  {16, 512, 8192, 1024},
      {16, 1024, 8192, 1024}, {16, 4096, 8192, 1024}};
  return kShapes;
}

Shape parse_shape(const std::string& text, const std::string& where) {
  std::vector<int64_t> dims;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string part =
        trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    int64_t v = -1;
    // The CLI's one rule for integers (cli_args.hpp): no '+', hex or inner spaces; spaces around
    // a number in a shape are trimmed above.
    const IntText read = parse_int_text(part, v);
    if (read == IntText::kOutOfRange) {
      throw UsageError(where + ": a size past int64 in " + detail::quoted(text));
    }
    if (read != IntText::kOk || v < 0) {
      throw UsageError(where + ": expected B,M,N,K of non-negative integers, got " +
                       detail::quoted(text));
    }
    dims.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (dims.size() != 4) throw UsageError(where + ": expected B,M,N,K, got " + detail::quoted(text));
  return Shape{dims[0], dims[1], dims[2], dims[3]};
}

std::vector<Shape> read_shapes_file(const std::string& path) {
  // Read whole first (a FIFO with no writer reads as empty, a device file stops at the cap),
  // then taken line by line.
  const detail::SmallFile file = detail::read_small_file(path, kMaxFileBytes);
  switch (file.status) {
    case detail::SmallFile::Status::kOk: break;
    case detail::SmallFile::Status::kDirectory:
      throw UsageError("shapes file " + detail::quoted(path) +
                       " is a directory; give a file of B,M,N,K lines");
    case detail::SmallFile::Status::kCannotOpen:
      throw UsageError("cannot read shapes file " + detail::quoted(path) + ": " +
                       std::strerror(file.error));
    case detail::SmallFile::Status::kReadError:
      throw UsageError("cannot read shapes file " + detail::quoted(path) + ": read error (" +
                       std::strerror(file.error) + ")");
    case detail::SmallFile::Status::kTooLong:
      throw UsageError("shapes file " + detail::quoted(path) + " is longer than " +
                       std::to_string(kMaxFileBytes >> 20) + " MiB; give a file of B,M,N,K lines");
  }
  std::istringstream in(std::string(detail::without_utf8_bom(file.text)));
  std::vector<Shape> shapes;
  std::string line;
  int line_no = 0;
  while (read_line(in, line, path, line_no + 1)) {
    ++line_no;
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    shapes.push_back(parse_shape(line, path + ":" + std::to_string(line_no)));
  }
  if (shapes.empty()) {
    throw UsageError("shapes file " + detail::quoted(path) +
                     " holds no shapes (expected lines B,M,N,K)");
  }
  return shapes;
}

ProblemShape problem_of(const Shape& shape) {
  ProblemShape p;
  p.batch = shape.b;
  p.m = shape.m;
  p.n = shape.n;
  p.k = shape.k;
  return p;
}

}  // namespace f8gemm::cli
