/// \brief Output files the CLI writes after its work (`tune --out/--log`, `bench --csv`,
/// `run --trace`): checked before that work, so a bad path costs no run.
#pragma once

#include <string>

namespace f8gemm::cli {

/// Why `path` cannot be written (empty when it can): an existing file must be a writable regular
/// file; a new one needs a writable directory. Nothing is created.
std::string unwritable_reason(const std::string& path);

}  // namespace f8gemm::cli
