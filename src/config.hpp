/// \brief Choosing a configuration: enumerate candidates, check legality, score with a cost
/// model, then let a tuned table (checked in, or the user's) override the model.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "cost_model.hpp"
#include "f8gemm/f8gemm.hpp"

namespace f8gemm::detail {

/// Largest dynamic shared memory a Hopper block may opt into (227 KB).
inline constexpr int kMaxSmemBytes = 232448;

/// The widest raster band a config may name, in X tiles (Config::raster is 0..kMaxRaster).
inline constexpr int kMaxRaster = 64;

/// Every field of a Config as ints, for plan keys compared and hashed as bytes; operator== and
/// the keys of gemm() and grouped_gemm() read Config through this one list.
using ConfigFields = std::array<int, 10>;
ConfigFields config_fields(const Config& config);

/// Shared memory a config's kernel needs (ring, staging, barriers; and a grouped GEMM's tables
/// for groups_cap groups). EpilogueOp::kSiluMul stages half the output columns, so it never
/// needs more than kNone: rings and legality are sized without it.
int config_smem_bytes(const Config& config, int groups_cap = 0,
                      EpilogueOp op = EpilogueOp::kNone);

/// Empty when the config can run this problem, else the reason it cannot.
std::string config_illegal_reason(const Config& config, const ProblemShape& problem);

/// Which candidates: the cost model's, or the tune's, which adds ping-pong tile widths that the
/// model has not been checked on (its picks with them changed on 74 problems that nothing
/// measured; perf log, card 47). Only a measured table entry picks those.
enum class CandidateSet { kModel, kTune };

/// Legal candidates for a problem, best estimate first.
std::vector<Config> candidates(const ProblemShape& problem, int sm_count,
                               CandidateSet set = CandidateSet::kModel);

/// The most SMs a target may have: H100 and H200 have 132; the bound only keeps the model's
/// arithmetic (SM count times waves) far from overflow. A table key names 1..kMaxSmCount SMs.
inline constexpr int kMaxSmCount = 1024;

/// The cost model's pick: the first of its candidates (what decide() runs without a table entry
/// or F8GEMM_CONFIG). Throws kInternal when no config is legal.
Config model_pick(const ProblemShape& problem, int sm_count);

/// The configuration that F8GEMM_CONFIG forces, or none when it is unset. A name that does not
/// parse throws Error(kInvalidArgument) naming the variable. Read when a plan is made: each
/// problem's plan is cached for the process (README "Environment").
std::optional<Config> env_forced_config();

/// How every refusal of F8GEMM_CONFIG's value begins: "F8GEMM_CONFIG='<name>': " (a name that
/// does not parse, a config no problem can run, and the dense and grouped refusals for one).
std::string env_config_label(const std::string& name);

/// env_forced_config() for `problem`: a forced config that cannot run it throws
/// Error(kUnsupported) naming the variable, the config, the problem and why. decide() and the
/// public check_forced_config() (the CLI's check before any GPU work) share it.
std::optional<Config> env_forced_config_for(const ProblemShape& problem);

/// The full decision: F8GEMM_CONFIG, then the tables, then the model. Logs with F8GEMM_LOG=1.
Config decide(const std::string& gpu_name, int sm_count, const ProblemShape& problem);

}  // namespace f8gemm::detail
