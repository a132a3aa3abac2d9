/// \brief The device headers (kernels/*.cuh), embedded at build time by cmake/embed.cmake.
#pragma once

namespace f8gemm::jit {

struct EmbeddedFile {
  const char* name;  ///< file name, e.g. "f8gemm_gemm.cuh": the name an #include uses
  const char* text;  ///< its whole contents
};

extern const EmbeddedFile kEmbeddedFiles[];
extern const int kNumEmbeddedFiles;

}  // namespace f8gemm::jit

namespace f8gemm::jit {
/// The tuned configuration tables (tables/*.tsv), embedded the same way.
extern const EmbeddedFile kEmbeddedTables[];
extern const int kNumEmbeddedTables;
}  // namespace f8gemm::jit
