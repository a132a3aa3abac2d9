/// \brief Output files the CLI writes after its work (`tune --out/--log`, `bench --csv`,
/// `run --trace`): checked before that work, so a bad path costs no run.
#pragma once

#include <string>

namespace f8gemm::cli {

/// Why `path` cannot be written (empty when it can): an existing file must open for writing
/// (appending, so no byte changes) and not be a directory (a device such as /dev/null or
/// /dev/stdout is fine); a new one must be creatable in an existing directory: it is created and
/// removed at once, so the answer is the kernel's, also for root.
std::string unwritable_reason(const std::string& path);

/// Whether two paths name one regular file, existing or not: "t.tsv", "./t.tsv" and a symbolic
/// link to it are one file (an output that another output or an input of the same command also
/// names). Devices, pipes and terminals (anything under /dev/ or /proc/, or not a regular file)
/// are never the same file: both writers reach them as the caller asked.
bool same_file(const std::string& a, const std::string& b);

}  // namespace f8gemm::cli
