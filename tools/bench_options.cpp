/// \brief `f8gemm bench`'s option parser (bench_options.hpp).
#include "bench_options.hpp"

#include <charconv>
#include <optional>
#include <string>

#include "cli_args.hpp"
#include "f8gemm/check.hpp"

namespace f8gemm::cli {
namespace {

/// bench's options: the one list that both the parse below (an option not listed here is
/// unknown) and its look-ahead (a listed option is never taken for a value) read.
struct BenchOption {
  const char* name;
  bool takes_value;
};
constexpr BenchOption kBenchOptions[] = {
    {"--shapes", true},     {"--csv", true},        {"--iters", true},
    {"--rotate-l2", true},  {"--no-peak", false},   {"--precise", false},
    {"--prefetch-w", false}, {"--help", false},     {"-h", false}};

/// The listed option that `name` (without any =value) is; null for none.
const BenchOption* find_bench_option(const std::string& name) {
  for (const BenchOption& o : kBenchOptions) {
    if (name == o.name) return &o;
  }
  return nullptr;
}

/// One of bench's options, alone or as --name=value.
bool is_bench_option(const std::string& arg) {
  return find_bench_option(arg.substr(0, arg.rfind("--", 0) == 0 ? arg.find('=') : arg.npos)) !=
         nullptr;
}

}  // namespace

BenchOptions parse_bench_options(const Args& args) {
  BenchOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i];
    std::optional<std::string> inline_value;
    size_t eq = name.find('=');
    if (name.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (find_bench_option(name) == nullptr) {
      throw UsageError("bench: unknown option " + detail::quoted(args[i]) + "; " + kBenchUsage);
    }
    auto value = [&]() -> std::string {
      if (inline_value) return *inline_value;
      // `--csv --iters 5` lacks --csv's value: the next option is not taken for it.
      if (i + 1 >= args.size() || is_bench_option(args[i + 1])) {
        throw UsageError("bench: " + name + " needs a value; " + kBenchUsage);
      }
      return args[++i];
    };
    auto flag = [&]() {
      if (inline_value) throw UsageError("bench: " + name + " takes no value; " + kBenchUsage);
      return true;
    };
    if (name == "--shapes") {
      o.shapes_file = value();
      // Not the default list: an empty name is a mistake (`--shapes "$UNSET"`), not a choice.
      if (o.shapes_file.empty()) throw UsageError("bench: --shapes needs a file name");
    } else if (name == "--csv") {
      o.csv = value();
      if (o.csv.empty()) throw UsageError("bench: --csv needs a file name");
    } else if (name == "--iters") {
      o.iters = static_cast<int>(parse_int_option("bench", "--iters", value(), 1, 100000));
    } else if (name == "--no-peak") {
      o.peak = !flag();
    } else if (name == "--precise") {
      o.precise = flag();
    } else if (name == "--prefetch-w") {
      o.prefetch_w = flag();
    } else if (name == "--rotate-l2") {
      const std::string text = value();
      // A plain decimal number (from_chars: no spaces, '+' or hex, which strtod took).
      double f = 0.0;
      const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), f);
      if (ec != std::errc() || ptr != text.data() + text.size() ||
          !(f > 0.0 && f <= 64.0)) {  // "" and NaN fail too
        throw UsageError("bench: --rotate-l2 must be a number in (0, 64], got " +
                         detail::quoted(text));
      }
      o.rotate_l2 = f;
    } else if (name == "--help" || name == "-h") {
      flag();  // `--help` itself is answered in main before any parse; `--help=x` is refused
    } else {  // listed in kBenchOptions and not parsed here
      throw std::logic_error("bench: option " + name + " is listed but has no parse");
    }
  }
  return o;
}

}  // namespace f8gemm::cli
