/// \brief How f8gemm chooses and builds a configuration, as a public seam for tools (the `f8gemm`
/// CLI's `tune`, `precompile`, `run` and `demo`): the GPU a choice is made for, the candidates,
/// the cost model, the tuning-table key, and what one compiled instance reports.
///
/// These are the functions gemm()/batched_gemm() use themselves; nothing here launches a kernel.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "f8gemm/f8gemm.hpp"

namespace f8gemm {

/// The GPU that precompile() and the CLI assume without a usable sm_90 GPU: the H200 that
/// serving runs on, with its name and SM count as the tuning tables key them.
inline constexpr const char* kAssumedGpuName = "NVIDIA H200";
inline constexpr int kAssumedGpuSmCount = 132;

/// The GPU a configuration is chosen for: its name and SM count, both part of a table key.
struct TargetGpu {
  std::string name;
  int sm_count = 0;
  bool assumed = false;  ///< true when no usable sm_90 GPU is here and the H200 stands in
};

/// The current device; throws Error(kNoDevice) unless it is an sm_90 GPU.
TargetGpu current_gpu();

/// The current device when it is an sm_90 GPU, else the assumed H200 (kAssumedGpuName,
/// kAssumedGpuSmCount): the GPU that precompile() compiles for.
TargetGpu target_gpu();

/// A GPU whose tuning table ships with the library, by its short name: "h100" (NVIDIA H100 80GB
/// HBM3, tables/h100.tsv) or "h200" (NVIDIA H200, tables/h200.tsv), both with 132 SMs, as the
/// driver names them and the tables key them; `assumed` is true (it need not be this process's
/// device). For choosing and compiling on a machine without that GPU (`f8gemm precompile --gpu`).
/// Throws Error(kInvalidArgument) naming the known short names for any other.
TargetGpu named_gpu(const std::string& short_name);

/// The full decision for `problem` on `gpu`: F8GEMM_CONFIG, then the tuned tables, then the cost
/// model (logged with F8GEMM_LOG=1). On the current sm_90 GPU it equals choose_config().
Config decide_config(const TargetGpu& gpu, const ProblemShape& problem);

/// The legal configurations for `problem` on a GPU with `sm_count` SMs, best model estimate
/// first (the list `f8gemm tune` times: the cost model's candidates plus tile widths that only a
/// measurement may pick). For a chained problem (ProblemShape::chained) each is followed by its
/// twin with Config::early_dependents, so the list, and the tune's time, is twice as long.
std::vector<Config> candidate_configs(const ProblemShape& problem, int sm_count);

/// The cost model's own pick for `problem`: what it runs when no table entry, F8GEMM_CONFIG or
/// tune names one. It never picks the tile widths that candidate_configs() offers the tune only.
Config model_config(const ProblemShape& problem, int sm_count);

/// The cost model's estimate of one call in microseconds on a GPU with `sm_count` SMs.
double model_estimate_us(const Config& config, const ProblemShape& problem, int sm_count);

/// Empty when `config` can run `problem`, else the reason it cannot (shared memory, alignment,
/// cluster shape, ...).
std::string config_unfit_reason(const Config& config, const ProblemShape& problem);

/// The one text of a refusal of `config` for `problem`, `why` being config_unfit_reason()'s:
/// "config <name> cannot run B,M,N,K=<b>,<m>,<n>,<k>: <why>". A call's forced config, the
/// functions of this seam, F8GEMM_CONFIG (after "F8GEMM_CONFIG='<name>': ") and
/// `f8gemm run --config` all say it in these words, each with its own ErrorCode.
std::string config_unfit_message(const Config& config, const ProblemShape& problem,
                                 const std::string& why);

/// Throws what a call of `problem` would throw for F8GEMM_CONFIG, without a GPU: a name that
/// does not parse or no problem can run (kInvalidArgument), or a config that cannot run this
/// problem (kUnsupported; not for an empty problem, B or M = 0, which a call returns from
/// without deciding a config). Nothing when F8GEMM_CONFIG is unset or fits. `problem` itself is
/// checked first (validate_problem's errors). For tools that check every problem before they
/// allocate or measure anything (`f8gemm run`, `bench`).
void check_forced_config(const ProblemShape& problem);

/// The key of `problem` in a tuning table (tables/*.tsv, F8GEMM_TUNE_FILE):
/// "<gpu>|<sms>|<version>|B,M,N,K|<layout>|<out>|<accum>", then "|<op>" for an epilogue operation
/// (ProblemShape::epilogue_op, e.g. "|silu_mul") and "|chained" for a chained problem.
std::string tuning_table_key(const TargetGpu& gpu, const ProblemShape& problem);

/// Where a described instance came from in this process.
enum class InstanceSource : int {
  kCompiled = 0,   ///< NVRTC compiled it during describe()
  kDiskCache = 1,  ///< loaded from the disk cache
  kMemory = 2,     ///< already in this process's memory cache
};

/// What one compiled kernel instance (a Config plus the problem's constants) reports.
struct InstanceReport {
  /// The instance's printable name: the config name plus N, K, layout, output, bias and
  /// accumulation, e.g. sm90_tiled_128x128x128_s4_c1x1_r8.n1280.k8192.preshuffled.bf16.nobias.fast
  std::string label;
  int registers = 0;       ///< the most registers per thread of any kernel entry
  int spill_bytes = 0;     ///< spill stores plus loads over every entry and called function
  /// ptxas serialised the instance's wgmmas (each waits for the one before it): right, but slow.
  bool wgmma_serialized = false;
  std::string cache_key;   ///< the JIT cache key (32 hex digits; the disk file is <key>.cubin)
  InstanceSource source = InstanceSource::kCompiled;
};

/// Compiles (or finds in the memory or disk cache) the instance that `config` needs for
/// `problem`, without a GPU, and reports it. Throws Error(kCompile) when NVRTC fails.
InstanceReport describe(const Config& config, const ProblemShape& problem);

/// describe() of every config, on all host cores (the JIT is thread-safe), so that a later
/// describe() of each finds it in the memory cache. Throws nothing: a config that fails to build
/// fails again, with its error, when it is described or run.
void build_all(const std::vector<Config>& configs, const ProblemShape& problem);

/// build_all() of (config, problem) pairs of several problems at once, on all host cores.
void build_all(const std::vector<std::pair<Config, ProblemShape>>& instances);

}  // namespace f8gemm
