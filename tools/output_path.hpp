/// \brief Output files the CLI writes after its work (`tune --out/--log`, `bench --csv`,
/// `run --trace`): checked before that work, so a bad path costs no run.
#pragma once

#include <string>

namespace f8gemm::cli {

/// Why `path` cannot be written (empty when it can): an existing file must be writable and not a
/// directory (a device such as /dev/null or /dev/stdout is fine); a new one needs a writable
/// directory. Nothing is created.
std::string unwritable_reason(const std::string& path);

/// Whether two paths name one regular file, existing or not: "t.tsv", "./t.tsv" and a symbolic
/// link to it are one file (an output that another output or an input of the same command also
/// names). Devices, pipes and terminals (anything under /dev/ or /proc/, or not a regular file)
/// are never the same file: both writers reach them as the caller asked.
bool same_file(const std::string& a, const std::string& b);

}  // namespace f8gemm::cli
