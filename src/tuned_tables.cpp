/// \brief The tuned tables: keys, parsing, and the lookup that lets an entry override the cost
/// model ($F8GEMM_TUNE_FILE first, then tables/*.tsv embedded at build time).
#include "tuned_tables.hpp"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>

#include "check.hpp"
#include "f8gemm/small_file.hpp"
#include "env.hpp"
#include "jit/embedded.hpp"

namespace f8gemm::detail {

std::string table_key(const std::string& gpu_name, int sm_count, const ProblemShape& p) {
  std::ostringstream os;
  os << gpu_name << "|" << sm_count << "|" << kVersion << "|" << p.batch << "," << p.m << ","
     << p.n << "," << p.k << "|" << (p.w_layout == WeightLayout::kPlain ? "plain" : "preshuffled")
     << "|" << to_string(p.out_dtype) << "|" << (p.fast_accum ? "fast" : "precise");
  if (p.epilogue_op != EpilogueOp::kNone) os << "|" << to_string(p.epilogue_op);
  if (p.chained) os << "|chained";
  return os.str();
}

bool parse_table_key(const std::string& key, TableKeyParts& parts) {
  std::vector<std::string> f;
  for (size_t at = 0;;) {
    const size_t bar = key.find('|', at);
    f.push_back(key.substr(at, bar == std::string::npos ? std::string::npos : bar - at));
    if (bar == std::string::npos) break;
    at = bar + 1;
  }
  if (f.size() < 7 || f.size() > 9) return false;
  if (f[2] != kVersion) return false;
  ProblemShape p;
  // The optional fields, in table_key()'s order: the epilogue's operation, then "chained".
  size_t next = 7;
  if (next < f.size() && f[next] == to_string(EpilogueOp::kSiluMul)) {
    p.epilogue_op = EpilogueOp::kSiluMul;
    ++next;
  }
  if (next < f.size() && f[next] == "chained") {
    p.chained = true;
    ++next;
  }
  if (next != f.size()) return false;
  long long b = 0, m = 0, n = 0, k = 0;
  char tail = 0;
  if (std::sscanf(f[1].c_str(), "%d%c", &parts.sm_count, &tail) != 1) return false;
  // A GPU has a name and 1..kMaxSmCount SMs: another key could never match a call.
  if (f[0].empty() || parts.sm_count < 1 || parts.sm_count > kMaxSmCount) return false;
  if (std::sscanf(f[3].c_str(), "%lld,%lld,%lld,%lld%c", &b, &m, &n, &k, &tail) != 4) return false;
  p.batch = b;
  p.m = m;
  p.n = n;
  p.k = k;
  if (f[4] != "plain" && f[4] != "preshuffled") return false;
  p.w_layout = f[4] == "plain" ? WeightLayout::kPlain : WeightLayout::kPreshuffled;
  if (f[5] == to_string(DType::kBF16)) p.out_dtype = DType::kBF16;
  else if (f[5] == to_string(DType::kF16)) p.out_dtype = DType::kF16;
  else return false;
  if (f[6] != "fast" && f[6] != "precise") return false;
  p.fast_accum = f[6] == "fast";
  parts.gpu_name = f[0];
  parts.problem = p;
  // Exactly what table_key() writes (no leading zeros, signs or spaces in the numbers).
  return table_key(parts.gpu_name, parts.sm_count, p) == key;
}

namespace {

/// The version field of a key (its third), or empty when the key has fewer than three fields.
std::string key_version(const std::string& key) {
  const size_t first = key.find('|');
  if (first == std::string::npos) return {};
  const size_t second = key.find('|', first + 1);
  if (second == std::string::npos) return {};
  const size_t third = key.find('|', second + 1);
  return key.substr(second + 1, third == std::string::npos ? std::string::npos
                                                          : third - second - 1);
}

}  // namespace

void parse_table(const std::string& text, const std::string& origin,
                 std::vector<std::pair<std::string, Config>>& entries) {
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // a table saved with CRLF
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    F8GEMM_REQUIRE(tab != std::string::npos, kInvalidArgument, origin, ":", line_no,
                   ": expected '<key><TAB><config>'");
    std::string key = line.substr(0, tab);
    // Another version's entry is passed over whole, its config name too (its kernels and names
    // may differ); a key of this version that does not parse would be passed over too,
    // silently, so it is an error.
    if (key_version(key) != kVersion) continue;
    TableKeyParts parts;
    F8GEMM_REQUIRE(parse_table_key(key, parts), kInvalidArgument,
                   origin, ":", line_no, ": ", detail::quoted(key), " is not a table key: expected ",
                   "<gpu>|<sms>|<version>|B,M,N,K|plain or preshuffled|bfloat16 or float16|",
                   "fast or precise[|silu_mul][|chained], as f8gemm tune writes it");
    // Sizes that no call can have would never match, and the lookup's row arithmetic assumes
    // the limits of a call (M + 63 passed int64 for M near 2^63).
    try {
      validate_problem(parts.problem);
    } catch (const Error& e) {
      throw Error(ErrorCode::kInvalidArgument,
                  concat(origin, ":", line_no, ": ", detail::quoted(key),
                         " names sizes no call can have: ", e.message()));
    }
    try {
      entries.emplace_back(std::move(key), Config::parse(line.substr(tab + 1)));
    } catch (const Error& e) {
      throw Error(ErrorCode::kInvalidArgument, concat(origin, ":", line_no, ": ", e.message()));
    }
  }
}

namespace {

/// The rows an entry serves beside its own: fewer rows in the same number of 64-row blocks. Its
/// tile was timed on M' >= M rows with the same X tiles or more, and without this a call at an M
/// between tuned rows took the model's tile (perf log, card 80: the Llama MLP block at rows
/// between its 16-row entries).
constexpr int64_t kRowBlock = 64;
int64_t row_blocks(int64_t m) { return (m + kRowBlock - 1) / kRowBlock; }

/// A problem's key with its rows left out (M written as 0, which no real key has).
std::string key_without_rows(const std::string& gpu_name, int sm_count, ProblemShape p) {
  p.m = 0;
  return table_key(gpu_name, sm_count, p);
}

/// An entry's rows and its key without them, parsed once.
struct RowsIndexEntry {
  int64_t m;
  std::string key_without_rows;
  const Config* config;
};

/// Every table's entries ($F8GEMM_TUNE_FILE first: the lookup takes the first match), and their
/// rows index in the same order.
struct LoadedTables {
  std::vector<std::pair<std::string, Config>> entries;
  std::vector<RowsIndexEntry> rows;  // points into entries, which never grow after the load
};

constexpr size_t kMaxTuneFileBytes = size_t(64) << 20;

std::unique_ptr<const LoadedTables> load_tables() {
  auto t = std::make_unique<LoadedTables>();
  if (const std::string path = get_env<std::string>("F8GEMM_TUNE_FILE"); !path.empty()) {
    // Read whole, without blocking on a FIFO that has no writer and capped: a table is
    // kilobytes, so a file past kMaxTuneFileBytes (a device file, a wrong path) is refused.
    // The user named the file: one that cannot be read is a bad argument, not an I/O fault.
    const detail::SmallFile file = detail::read_small_file(path, kMaxTuneFileBytes);
    const std::string named = "F8GEMM_TUNE_FILE=" + detail::quoted(path);
    switch (file.status) {
      case detail::SmallFile::Status::kOk: break;
      case detail::SmallFile::Status::kCannotOpen:
        throw Error(ErrorCode::kInvalidArgument,
                    named + " cannot be read: " + std::strerror(file.error));
      case detail::SmallFile::Status::kReadError:
        throw Error(ErrorCode::kInvalidArgument, named + " cannot be read: read error (" +
                                                     std::strerror(file.error) + ")");
      case detail::SmallFile::Status::kDirectory:
        throw Error(ErrorCode::kInvalidArgument,
                    named + " is a directory; give a table file (key<TAB>config lines, as "
                            "`f8gemm tune` writes)");
      case detail::SmallFile::Status::kTooLong:
        throw Error(ErrorCode::kInvalidArgument,
                    detail::concat(named, " is longer than ", kMaxTuneFileBytes >> 20,
                                   " MiB; give a table file (key<TAB>config lines, as `f8gemm "
                                   "tune` writes)"));
    }
    parse_table(std::string(detail::without_utf8_bom(file.text)), path, t->entries);
  }
  for (int i = 0; i < jit::kNumEmbeddedTables; ++i) {
    parse_table(jit::kEmbeddedTables[i].text, jit::kEmbeddedTables[i].name, t->entries);
  }
  for (const auto& [k, c] : t->entries) {
    TableKeyParts parts;
    if (!parse_table_key(k, parts)) continue;  // another version's key
    t->rows.push_back(
        {parts.problem.m, key_without_rows(parts.gpu_name, parts.sm_count, parts.problem), &c});
  }
  return t;
}

/// The tables, loaded by the first call that succeeds. Not a function-local static initialised by
/// a throwing lambda: a load that throws (an unreadable F8GEMM_TUNE_FILE) must leave nothing
/// behind so that the next call tries again, and an aborted static initialisation left the other
/// waiting threads deadlocked under ThreadSanitizer (the CI sanitizer job).
const LoadedTables& loaded_tables() {
  static std::mutex mutex;
  static std::unique_ptr<const LoadedTables> tables;  // written once, under mutex
  static std::atomic<const LoadedTables*> ready{nullptr};
  if (const LoadedTables* t = ready.load(std::memory_order_acquire)) return *t;
  std::lock_guard<std::mutex> lock(mutex);
  if (!tables) {
    tables = load_tables();  // a throw sets nothing
    ready.store(tables.get(), std::memory_order_release);
  }
  return *tables;
}

const std::vector<std::pair<std::string, Config>>& all_tables() {
  return loaded_tables().entries;
}
const std::vector<RowsIndexEntry>& rows_index() { return loaded_tables().rows; }

/// The first entry of exactly this problem's key that can run it.
std::optional<TunedEntry> exact_entry(const std::string& gpu_name, int sm_count,
                                      const ProblemShape& p) {
  const std::string key = table_key(gpu_name, sm_count, p);
  for (const auto& [k, c] : all_tables()) {
    if (k == key && config_illegal_reason(c, p).empty()) return TunedEntry{c, p.m};
  }
  return std::nullopt;
}

/// From 65 rows, the entry of the fewest rows M' > M with ceil(M' / 64) == ceil(M / 64), all else
/// in the key equal, that can run the problem (the first of equal rows). Not in the first block:
/// the decode rows' entries (swap-AB rings tuned per M, many chained) were not measured at other
/// rows (card 80).
std::optional<TunedEntry> entry_above(const std::string& gpu_name, int sm_count,
                                      const ProblemShape& p) {
  if (p.m <= kRowBlock) return std::nullopt;
  const std::string key = key_without_rows(gpu_name, sm_count, p);
  std::optional<TunedEntry> above;
  for (const RowsIndexEntry& e : rows_index()) {
    if (e.m <= p.m || row_blocks(e.m) != row_blocks(p.m)) continue;
    if (above && e.m >= above->m) continue;
    if (e.key_without_rows != key || !config_illegal_reason(*e.config, p).empty()) continue;
    above = TunedEntry{*e.config, e.m};
  }
  return above;
}

using EntryLookup = std::optional<TunedEntry> (*)(const std::string&, int, const ProblemShape&);

/// The fallback order with one kind of lookup: the problem's own key; a chained call then its
/// unchained key; an operation's call then the same GEMM's entries where that config can run it.
std::optional<TunedEntry> entry_in_order(EntryLookup lookup, const std::string& gpu_name,
                                         int sm_count, const ProblemShape& p) {
  if (auto e = lookup(gpu_name, sm_count, p)) return e;
  ProblemShape unchained = p;
  unchained.chained = false;
  if (p.epilogue_op != EpilogueOp::kNone) {
    // An operation's own entries (`f8gemm tune --epilogue`), chained then unchained; without
    // one, the same GEMM's entry where that config can run the operation: the mainloop's work
    // is the same. A chained call whose chained entry cannot run it tries the unchained entry.
    if (p.chained) {
      if (auto e = lookup(gpu_name, sm_count, unchained)) return e;
    }
    ProblemShape plain = p;
    plain.epilogue_op = EpilogueOp::kNone;
    std::optional<TunedEntry> e = entry_in_order(lookup, gpu_name, sm_count, plain);
    if (e && config_illegal_reason(e->config, p).empty()) return e;
    if (!plain.chained) return std::nullopt;
    plain.chained = false;
    e = entry_in_order(lookup, gpu_name, sm_count, plain);
    if (e && config_illegal_reason(e->config, p).empty()) return e;
    return std::nullopt;
  }
  // A chained call without an entry of its own takes the entry of the same call unchained.
  if (p.chained) return entry_in_order(lookup, gpu_name, sm_count, unchained);
  return std::nullopt;
}

}  // namespace

void load_tuned_tables() { (void)loaded_tables(); }

std::optional<TunedEntry> tuned_entry(const std::string& gpu_name, int sm_count,
                                      const ProblemShape& p) {
  if (get_env<bool>("F8GEMM_NO_TUNED")) return std::nullopt;
  // Exact keys in the whole fallback order first: entries of more rows only decide where, before
  // card 80, the model did.
  if (auto e = entry_in_order(exact_entry, gpu_name, sm_count, p)) return e;
  return entry_in_order(entry_above, gpu_name, sm_count, p);
}

std::optional<Config> tuned_config(const std::string& gpu_name, int sm_count,
                                   const ProblemShape& p) {
  const std::optional<TunedEntry> e = tuned_entry(gpu_name, sm_count, p);
  if (!e) return std::nullopt;
  return e->config;
}

}  // namespace f8gemm::detail
