/// \brief The NVRTC front (compiler.hpp).
#include "jit/compiler.hpp"

#include <nvrtc.h>

#include <cctype>
#include <cstring>

#include "check.hpp"
#include "jit/embedded.hpp"
#include "jit/io.hpp"
#include "jit/nvrtc_builtins.hpp"

namespace f8gemm::jit {
namespace {

/// Owns an nvrtcProgram.
struct Program {
  nvrtcProgram handle = nullptr;
  Program() = default;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program() {
    if (handle) nvrtcDestroyProgram(&handle);
  }
};

/// The embedded headers as NVRTC wants them: two parallel arrays of names and texts.
struct Headers {
  std::vector<const char*> names;
  std::vector<const char*> texts;
};

const Headers& headers() {
  static const Headers h = [] {
    Headers k;
    for (int i = 0; i < kNumEmbeddedFiles; ++i) {
      k.names.push_back(kEmbeddedFiles[i].name);
      k.texts.push_back(kEmbeddedFiles[i].text);
    }
    return k;
  }();
  return h;
}

std::string program_log(nvrtcProgram prog) {
  size_t size = 0;
  F8GEMM_CHECK_NVRTC(nvrtcGetProgramLogSize(prog, &size));
  std::string log(size, '\0');
  if (size) F8GEMM_CHECK_NVRTC(nvrtcGetProgramLog(prog, &log[0]));
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

std::string program_ptx(nvrtcProgram prog) {
  size_t size = 0;
  F8GEMM_CHECK_NVRTC(nvrtcGetPTXSize(prog, &size));
  std::string ptx(size, '\0');
  if (size) F8GEMM_CHECK_NVRTC(nvrtcGetPTX(prog, &ptx[0]));
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

/// Compiles source into prog; on failure throws as compile_cubin says.
void compile_program(Program& prog, const std::string& label, const std::string& source,
                     const std::vector<std::string>& options, std::string* log,
                     const std::function<void(const std::string&)>& on_failure) {
  const Headers& h = headers();
  const BuiltinsLoad& builtins = load_nvrtc_builtins_beside_nvrtc();
  std::string name = safe_name(label) + ".cu";
  F8GEMM_CHECK_NVRTC(nvrtcCreateProgram(&prog.handle, source.c_str(), name.c_str(),
                                        static_cast<int>(h.names.size()), h.texts.data(),
                                        h.names.data()));
  std::vector<const char*> opts;
  opts.reserve(options.size());
  for (const std::string& o : options) opts.push_back(o.c_str());
  nvrtcResult status =
      nvrtcCompileProgram(prog.handle, static_cast<int>(opts.size()), opts.data());
  *log = program_log(prog.handle);
  if (status != NVRTC_SUCCESS) {
    if (on_failure) on_failure(*log);
    const std::string beside =  // NVRTC's message names the file but not why it is missing
        status == NVRTC_ERROR_BUILTIN_OPERATION_FAILURE && builtins.path.empty()
            ? " (its builtins library was not loaded from libnvrtc's folder: " +
                  builtins.why_not + ")"
            : "";
    throw Error(ErrorCode::kCompile,
                detail::concat("instance ", label, " failed to compile (",
                               nvrtcGetErrorString(status), "): ", first_error_line(*log), beside,
                               "\n", *log));
  }
  const std::string warning = first_warning_line(*log);
  if (!warning.empty()) {
    if (on_failure) on_failure(*log);
    throw Error(ErrorCode::kCompile,
                detail::concat("instance ", label, " failed to compile (a warning is an error ",
                               "for f8gemm's sources): ", warning, "\n", *log));
  }
}

/// The options with the real architecture swapped for its virtual one: NVRTC then stops at PTX.
std::vector<std::string> ptx_only_options(const std::vector<std::string>& options) {
  std::vector<std::string> out = options;
  for (std::string& o : out) {
    for (const char* flag : {"--gpu-architecture=", "-arch="}) {
      size_t n = std::strlen(flag);
      if (o.compare(0, n, flag) == 0 && o.compare(n, 3, "sm_") == 0) {
        o = std::string(flag) + "compute_" + o.substr(n + 3);
      }
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> default_options() {
  // No --use_fast_math (results must be exact) and no -lineinfo (it changes nothing we need and
  // makes cubins larger).
  return {"--gpu-architecture=sm_90a", "-std=c++17", "--ptxas-options=-v", "-default-device"};
}

Compiled compile_cubin(const std::string& label, const std::string& source,
                       const std::vector<std::string>& options, bool with_ptx,
                       const std::function<void(const std::string&)>& on_failure) {
  Program prog;
  Compiled out;
  compile_program(prog, label, source, options, &out.log, on_failure);
  size_t size = 0;
  F8GEMM_CHECK_NVRTC(nvrtcGetCUBINSize(prog.handle, &size));
  F8GEMM_REQUIRE(size > 0, kCompile, "instance ", label, ": NVRTC produced an empty cubin");
  out.cubin.resize(size);
  F8GEMM_CHECK_NVRTC(nvrtcGetCUBIN(prog.handle, out.cubin.data()));
  if (with_ptx) out.ptx = program_ptx(prog.handle);
  return out;
}

std::string compile_ptx(const std::string& label, const std::string& source,
                        const std::vector<std::string>& options) {
  Program prog;
  std::string log;
  compile_program(prog, label, source, ptx_only_options(options), &log, nullptr);
  return program_ptx(prog.handle);
}

std::string first_error_line(const std::string& log) {
  std::string first;
  size_t start = 0;
  while (start <= log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(start, end - start);
    if (line.find("error") != std::string::npos) return line;
    if (first.empty() && line.find_first_not_of(" \t\r") != std::string::npos) first = line;
    start = end + 1;
  }
  return first.empty() ? std::string("(empty log)") : first;
}

// NVRTC 13 has no option that turns every warning into an error (-Werror is refused), so the log
// is read instead. The "Remark: The warnings can be suppressed" footer is not a warning.
std::string first_warning_line(const std::string& log) {
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(start, end - start);
    std::string lower = line;
    for (char& ch : lower) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    if (lower.find("warning") != std::string::npos && lower.compare(0, 6, "remark") != 0) {
      return line;
    }
    start = end + 1;
  }
  return {};
}

}  // namespace f8gemm::jit
