/// \brief The subcommands of the `f8gemm` CLI. Each takes its arguments after the subcommand name
/// and returns the process exit code; a bad argument throws UsageError (exit 2, one line).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace f8gemm::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using Args = std::vector<std::string>;

int cmd_info(const Args& args);
int cmd_demo(const Args& args);
int cmd_run(const Args& args);
int cmd_bench(const Args& args);
int cmd_precompile(const Args& args);
int cmd_tune(const Args& args);

}  // namespace f8gemm::cli
