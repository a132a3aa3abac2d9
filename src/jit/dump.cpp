/// \brief The F8GEMM_DUMP_DIR writer (dump.hpp).
#include "jit/dump.hpp"

#include <utility>

#include "check.hpp"
#include "env.hpp"
#include "jit/io.hpp"

namespace f8gemm::jit {

bool dump_requested() { return !detail::get_env<std::string>("F8GEMM_DUMP_DIR").empty(); }

void dump(const std::string& label, const std::string& key, const std::string& source,
          const std::string* ptx, const std::string& log, const std::vector<char>* cubin) {
  const std::string dir = detail::get_env<std::string>("F8GEMM_DUMP_DIR");
  if (dir.empty()) return;
  // One warning per directory: each instance would otherwise fail four files with it.
  const std::string problem = make_directory(dir);
  if (!problem.empty()) {
    print_line_once("dump " + dir, detail::concat("f8gemm: warning: F8GEMM_DUMP_DIR ",
                                                  detail::quoted(dir), " is unusable (", problem,
                                                  "); no instance is dumped"));
    return;
  }
  std::string base = dir + "/" + safe_name(label) + "." + key;
  std::vector<std::pair<std::string, const std::string*>> files = {{".cu", &source},
                                                                   {".log", &log}};
  if (ptx) files.emplace_back(".ptx", ptx);
  std::string cubin_bytes = cubin ? std::string(cubin->begin(), cubin->end()) : std::string();
  if (cubin) files.emplace_back(".cubin", &cubin_bytes);
  for (const auto& [ext, text] : files) {
    std::string why;
    if (!write_file(base + ext, {{text->data(), text->size()}}, &why)) {
      print_line_once("dump " + dir, detail::concat("f8gemm: warning: F8GEMM_DUMP_DIR ",
                                                    detail::quoted(dir), ": cannot write ",
                                                    detail::quoted(base + ext), ": ", why,
                                                    " (said once for the directory)"));
    }
  }
}

}  // namespace f8gemm::jit
