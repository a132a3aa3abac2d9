/// \brief The NVRTC front: compiles an instance source, with the embedded device headers as its
/// include files, to a cubin (or only to PTX), and turns every warning into an error.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace f8gemm::jit {

/// Options every instance is compiled with (sm_90a, C++17, ptxas -v, ...).
std::vector<std::string> default_options();

/// What one NVRTC compilation produced.
struct Compiled {
  std::vector<char> cubin;
  std::string log;  ///< NVRTC's program log, ptxas -v included
  std::string ptx;  ///< only when asked for
};

/// Compiles source to a cubin (and its PTX when with_ptx). Throws Error(kCompile) naming label,
/// with the first error line then the log, on an error or on any warning: f8gemm's sources
/// compile cleanly, and a warning such as #61-D (an int32 overflow in a template constant) means
/// a kernel that computes garbage. `on_failure`, when set, sees the log before the throw.
Compiled compile_cubin(const std::string& label, const std::string& source,
                       const std::vector<std::string>& options, bool with_ptx,
                       const std::function<void(const std::string&)>& on_failure);

/// Compiles source only as far as PTX: the options' real architecture (sm_90a) becomes its
/// virtual one (compute_90a). Throws as compile_cubin does.
std::string compile_ptx(const std::string& label, const std::string& source,
                        const std::vector<std::string>& options);

/// The line a reader wants first: the first one that says "error", else the first non-empty one.
std::string first_error_line(const std::string& log);

/// The first warning in an NVRTC log (front end "warning #NNN-D", ptxas "ptxas warning"), or "".
std::string first_warning_line(const std::string& log);

}  // namespace f8gemm::jit
