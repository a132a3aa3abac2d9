/// \brief parse_ptxas_report (ptxas_report.hpp): a line-by-line reader of ptxas -v output.
#include "jit/ptxas_report.hpp"

#include <algorithm>
#include <cstdlib>

namespace f8gemm::jit {
namespace {

/// The decimal number that ends just before `pos` (spaces skipped), or -1.
int number_before(const std::string& line, size_t pos) {
  size_t end = pos;
  while (end > 0 && line[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9') --begin;
  if (begin == end) return -1;
  return std::atoi(line.substr(begin, end - begin).c_str());
}

/// The number before `suffix` in `text`, or -1 when `suffix` is absent.
int number_before(const std::string& text, const char* suffix) {
  size_t pos = text.find(suffix);
  return pos == std::string::npos ? -1 : number_before(text, pos);
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

}  // namespace

std::vector<KernelResources> parse_ptxas_report(const std::string& log) {
  std::vector<KernelResources> out;
  auto index_of = [&out](const std::string& name, bool entry) -> long {
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].entry == name) {
        out[i].is_entry = out[i].is_entry || entry;
        return static_cast<long>(i);
      }
    }
    KernelResources r;
    r.entry = name;
    r.is_entry = entry;
    out.push_back(r);
    return static_cast<long>(out.size()) - 1;
  };
  long entry = -1;  // the entry whose "Compiling entry function" came last: "Used" lines are its
  long props = -1;  // the function whose "Function properties for" came last: the frame line is its
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(start, end - start);
    start = end + 1;

    const std::string compiling = "Compiling entry function '";
    const std::string properties = "Function properties for ";
    size_t pos;
    if ((pos = line.find(compiling)) != std::string::npos) {
      size_t b = pos + compiling.size();
      size_t q = line.find('\'', b);
      entry = index_of(line.substr(b, q == std::string::npos ? std::string::npos : q - b), true);
      props = -1;
    } else if ((pos = line.find(properties)) != std::string::npos) {
      props = index_of(trim(line.substr(pos + properties.size())), false);
    } else if (line.find("bytes stack frame") != std::string::npos) {
      long target = props >= 0 ? props : entry;
      if (target < 0) continue;
      KernelResources& r = out[static_cast<size_t>(target)];
      r.stack_frame = std::max(0, number_before(line, "bytes stack frame"));
      r.spill_stores = std::max(0, number_before(line, "bytes spill stores"));
      r.spill_loads = std::max(0, number_before(line, "bytes spill loads"));
      props = -1;
    } else if ((pos = line.find("Used ")) != std::string::npos &&
               line.find(" registers", pos) != std::string::npos) {
      long target = entry >= 0 ? entry : props;
      if (target < 0) continue;
      KernelResources& r = out[static_cast<size_t>(target)];
      r.registers = std::atoi(line.c_str() + pos + 5);
      // The rest is a comma-separated list whose members vary by version: "used N barriers",
      // "N bytes smem", "N bytes cmem[0]", "N bytes cumulative stack size", ...
      int smem = number_before(line, "bytes smem");
      if (smem >= 0) r.shared_static = smem;
    }
  }
  return out;
}

bool reports_wgmma_serialization(const std::string& log) {
  return log.find("wgmma.mma_async instructions are serialized") != std::string::npos;
}

}  // namespace f8gemm::jit
