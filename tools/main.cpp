/// \brief The `f8gemm` command-line tool: dispatch to the subcommands; errors become one line
/// on stderr (exit 2 for a bad argument, 1 for everything else).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

#include "bench_options.hpp"
#include "commands.hpp"
#include "f8gemm/check.hpp"
#include "f8gemm/f8gemm.hpp"

namespace {

/// An error line as the CLI prints it: every control byte and every byte that is not part of a
/// printable UTF-8 character by the library's rule (detail::printable_utf8_length: a terminal
/// escape in a file name, a key or a path from a table, a bidirectional override)
/// written as \xNN, and the line cut at kMaxLineBytes, so that what reaches the terminal is one
/// readable line whatever the input. The library's own messages (a `·`) pass as they are.
std::string printable_line(const std::string& text) {
  constexpr size_t kMaxLineBytes = 1000;
  std::string out;
  size_t shown = 0;
  while (shown < text.size() && out.size() < kMaxLineBytes) {
    const unsigned char c = static_cast<unsigned char>(text[shown]);
    if (c >= 0x20 && c < 0x7f) {
      out += char(c);
      ++shown;
    } else if (const size_t n = f8gemm::detail::printable_utf8_length(text, shown); n > 0) {
      out.append(text, shown, n);
      shown += n;
    } else {
      f8gemm::detail::append_hex_escape(out, c);
      ++shown;
    }
  }
  if (shown < text.size()) out += " ... (" + std::to_string(text.size() - shown) + " more bytes)";
  return out;
}

constexpr const char* kUsage =
    "usage: f8gemm <command> [options]\n"
    "  info                       GPU, SMs, driver, NVRTC, cache directory\n"
    "  demo [--iters N]           the 11 batched shapes, verified, with a table (CPU path without a GPU;\n"
    "                             --iters: calls timed per shape and mode, graph replay; default 50)\n"
    "  run --b B --m M --n N --k K [--out bf16|fp16] [--bias] [--bias-dtype f32|bf16] [--precise]\n"
    "      [--plain] [--config NAME] [--verify] [--once] [--iters N] [--seed S]\n"
    "      [--trace CSV [--trace-tiles N]] (per-tile clocks of one call: GemmOptions::trace)\n"
    "      (defaults: --b 1, --out bf16, --iters 100, --seed 1, --trace-tiles 1024)\n"
    "  bench [--shapes FILE] [--csv FILE] [--iters N] [--precise] [--no-peak] [--prefetch-w]\n"
    "        [--rotate-l2 F]            (input sets span F x the L2; default 2)\n"
    "        (defaults: --csv bench.csv, --iters 100)\n"
    "  precompile [--shape B,M,N,K]... [--shapes FILE] [--plain] [--precise] [--out bf16|fp16]\n"
    "      [--candidates] [--chained] (every candidate `tune` would time; --chained: as called\n"
    "                                  with PDL and prefetch_w, ProblemShape::chained)\n"
    "      [--gpu h100|h200]          (choose for that GPU's table, with or without it here)\n"
    "  tune --shapes FILE [--out FILE] [--log CSV] [--precise|--both] [--plain] [--iters N]\n"
    "      [--prefetch-w]             (GemmOptions::prefetch_w; with F8GEMM_PDL=1: decode chains)\n"
    "      [--epilogue none|silu_mul] (silu_mul: N is the merged [gate; up] rows; its own entries)\n"
    "      (defaults: --out tune.tsv, --iters 40)\n"
    "  help                       this text\n";
}

int main(int argc, char** argv) {
  using namespace f8gemm::cli;
  if (argc < 2) {
    std::fputs("f8gemm: no command (try: f8gemm help)\n", stderr);
    return 2;
  }
  const std::string command = argv[1];
  Args args(argv + 2, argv + argc);
  // One table for the dispatch and for `<command> --help`.
  struct Command {
    const char* name;
    int (*run)(const Args&);
  };
  static constexpr Command kCommands[] = {{"info", cmd_info},   {"demo", cmd_demo},
                                          {"run", cmd_run},     {"bench", cmd_bench},
                                          {"precompile", cmd_precompile}, {"tune", cmd_tune}};
  const Command* found = nullptr;
  for (const Command& c : kCommands) {
    if (command == c.name) found = &c;
  }
  // `f8gemm <command> ... --help` is a question wherever the flag stands: the usage on stdout,
  // exit 0, nothing checked or run (bench's own usage line for bench).
  bool help = false;
  for (const std::string& a : args) help = help || a == "--help" || a == "-h";
  if (found != nullptr && help) {
    if (command == "bench") {
      std::printf("%s\n", kBenchUsage);
    } else {
      std::fputs(kUsage, stdout);
    }
    return 0;
  }
  try {
    // A bad F8GEMM_* value is a bad argument, reported before a command looks for a GPU. Not for
    // `info`, which reports what is here whatever the variables say, and not the table for
    // `tune`, which writes one and reads none (F8GEMM_TUNE_FILE may name the table it rewrites).
    if (found != nullptr && command != "info") f8gemm::check_environment(command != "tune");
    if (found != nullptr) return found->run(args);
    if (command == "help" || command == "--help" || command == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    throw UsageError("unknown command " + f8gemm::detail::quoted(command) + " (try: f8gemm help)");
  } catch (const UsageError& e) {
    std::fprintf(stderr, "f8gemm: %s\n", printable_line(e.what()).c_str());
    return 2;
  } catch (const f8gemm::Error& e) {
    // The JIT's compile errors carry NVRTC's log after the first line; print the first line only
    // unless F8GEMM_LOG is on (a value that is not a switch is itself the error reported here).
    std::string message = e.what();
    bool whole = false;
    try {
      whole = f8gemm::log_enabled();
    } catch (const f8gemm::Error&) {
    }
    if (!whole) message = message.substr(0, message.find('\n'));
    // Each line escaped and cut on its own: the whole log keeps its lines.
    for (size_t begin = 0; begin <= message.size();) {
      const size_t end = std::min(message.find('\n', begin), message.size());
      std::fprintf(stderr, "%s\n", printable_line(message.substr(begin, end - begin)).c_str());
      begin = end + 1;
    }
    // kInvalidArgument is a bad argument by definition; kUnsupported comes from a configuration
    // the user forced (--config, F8GEMM_CONFIG) that cannot run the problem.
    const f8gemm::ErrorCode code = e.code();
    return code == f8gemm::ErrorCode::kInvalidArgument || code == f8gemm::ErrorCode::kUnsupported
               ? 2
               : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "f8gemm: %s\n", printable_line(e.what()).c_str());
    return 1;
  }
}
