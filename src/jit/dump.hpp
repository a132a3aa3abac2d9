/// \brief F8GEMM_DUMP_DIR: the files of each compiled instance, for reading its PTX and SASS.
#pragma once

#include <string>
#include <vector>

namespace f8gemm::jit {

/// Whether F8GEMM_DUMP_DIR is set.
bool dump_requested();

/// Writes <label>.<key>.cu / .log, and .ptx / .cubin when given (the cubin for cuobjdump
/// --dump-sass), into F8GEMM_DUMP_DIR. The user asked for these files, so a failure to write
/// them is reported on stderr even without F8GEMM_LOG, but never thrown.
void dump(const std::string& label, const std::string& key, const std::string& source,
          const std::string* ptx, const std::string& log, const std::vector<char>* cubin = nullptr);

}  // namespace f8gemm::jit
