/// \brief The tuned tables: a table key per problem, parsing table text, and the entry that
/// decides a problem (config.hpp's decide() consults it before the cost model).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config.hpp"

namespace f8gemm::detail {

/// Key of a problem in the tuning tables: "<gpu>|<sms>|<version>|B,M,N,K|<layout>|<out>|<accum>",
/// then "|<op>" for an epilogue operation (ProblemShape::epilogue_op, e.g. "|silu_mul"; N is W's
/// rows) and "|chained" for a chained problem (ProblemShape::chained), in that order.
std::string table_key(const std::string& gpu_name, int sm_count, const ProblemShape& problem);

/// A table key's parts, the inverse of table_key(): false when `key` is not one (another
/// version's key included). The problem's bias fields keep their defaults (keys carry no bias).
struct TableKeyParts {
  std::string gpu_name;
  int sm_count = 0;
  ProblemShape problem;
};
bool parse_table_key(const std::string& key, TableKeyParts& parts);

/// Reads the tables now ($F8GEMM_TUNE_FILE, then the built-in ones) unless they are loaded;
/// throws what the first lookup would (a file that cannot be read or parsed).
void load_tuned_tables();

/// A table entry that decides a problem: its config, and the rows (M) of its key.
struct TunedEntry {
  Config config;
  int64_t m = 0;
};

/// A tuned config for this problem, from $F8GEMM_TUNE_FILE first, then the checked-in tables;
/// ignored when F8GEMM_NO_TUNED=1. The lookup order: the problem's key; a chained problem then its
/// unchained key; a problem with an epilogue operation its own keys (chained, then unchained), then
/// the same GEMM's entries without the operation where that config can run it. Exact keys are
/// looked up in that whole order first. Where none has an entry, from 65 rows, the same order
/// takes entries of more rows in the same 64-row block, the fewest rows first (an entry of 208 rows
/// serves 193-207 where no entry lies between).
std::optional<TunedEntry> tuned_entry(const std::string& gpu_name, int sm_count,
                                      const ProblemShape& problem);
/// tuned_entry()'s config.
std::optional<Config> tuned_config(const std::string& gpu_name, int sm_count,
                                   const ProblemShape& problem);

/// Parses table text (lines "key<TAB>config", '#' comments) and appends to entries.
void parse_table(const std::string& text, const std::string& origin,
                 std::vector<std::pair<std::string, Config>>& entries);

}  // namespace f8gemm::detail
