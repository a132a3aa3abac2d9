/// \brief The public tuning seam (f8gemm/tuning.hpp) over the configuration choice (config.hpp),
/// the instance generator (codegen.hpp) and the JIT.
#include "f8gemm/tuning.hpp"

#include <algorithm>

#include "check.hpp"
#include "codegen.hpp"
#include "config.hpp"
#include "device.hpp"
#include "jit/ptxas_report.hpp"
#include "parallel.hpp"
#include "tuned_tables.hpp"

namespace f8gemm {

TargetGpu current_gpu() {
  int device = 0;
  F8GEMM_CHECK_CUDA(cudaGetDevice(&device));
  const auto& props = detail::require_sm90(device);
  return TargetGpu{props.name, props.sm_count, false};
}

TargetGpu target_gpu() {
  try {
    return current_gpu();
  } catch (const Error&) {
    // No usable sm_90 GPU here: choose for the H200 that serving will run on.
    cudaGetLastError();
    return TargetGpu{kAssumedGpuName, kAssumedGpuSmCount, true};
  }
}

TargetGpu named_gpu(const std::string& short_name) {
  // The names the driver reports, which the shipped tables key (tables/*.tsv).
  static const struct {
    const char* short_name;
    const char* name;
  } kKnown[] = {{"h100", "NVIDIA H100 80GB HBM3"}, {"h200", kAssumedGpuName}};
  for (const auto& k : kKnown) {
    if (short_name == k.short_name) return TargetGpu{k.name, kAssumedGpuSmCount, true};
  }
  throw Error(ErrorCode::kInvalidArgument,
              detail::concat("unknown GPU ", detail::quoted(short_name),
                             ": the GPUs with shipped tables are h100 and h200"));
}

namespace {

/// What every function of this seam checks first: it takes a problem and an SM count from any
/// caller, and the cost model divides by both (sm_count 0 was a SIGFPE).
void require_target(const ProblemShape& problem, int sm_count) {
  validate_problem(problem);
  F8GEMM_REQUIRE(sm_count >= 1 && sm_count <= detail::kMaxSmCount, kInvalidArgument,
                 "sm_count must be 1..", detail::kMaxSmCount, ", got ", sm_count);
}

/// A config that the caller passes must be able to run the problem: the model's estimate divides
/// by its tile and split sizes, and an instance of an illegal config does not compile.
void require_runnable(const Config& config, const ProblemShape& problem) {
  const std::string why = detail::config_illegal_reason(config, problem);
  F8GEMM_REQUIRE(why.empty(), kInvalidArgument, config_unfit_message(config, problem, why));
}

/// require_target for a TargetGpu, and its name as a table key holds it: between '|'
/// separators, on one line of a tab-separated file whose lines starting with '#' are comments.
/// The driver's names never break these rules; a hand-made TargetGpu may.
void require_target_gpu(const ProblemShape& problem, const TargetGpu& gpu) {
  require_target(problem, gpu.sm_count);
  const std::string& name = gpu.name;
  F8GEMM_REQUIRE(!name.empty() && name[0] != '#' &&
                     name.find_first_of("|\t\r\n") == std::string::npos,
                 kInvalidArgument,
                 "TargetGpu::name must be non-empty, not start with '#', and hold no '|', tab or "
                 "line break (a table key holds it), got ", detail::quoted(name));
}

}  // namespace

Config decide_config(const TargetGpu& gpu, const ProblemShape& problem) {
  require_target_gpu(problem, gpu);
  return detail::decide(gpu.name, gpu.sm_count, problem);
}

std::vector<Config> candidate_configs(const ProblemShape& problem, int sm_count) {
  require_target(problem, sm_count);
  return detail::candidates(problem, sm_count, detail::CandidateSet::kTune);
}

Config model_config(const ProblemShape& problem, int sm_count) {
  require_target(problem, sm_count);
  return detail::model_pick(problem, sm_count);
}

double model_estimate_us(const Config& config, const ProblemShape& problem, int sm_count) {
  require_target(problem, sm_count);
  require_runnable(config, problem);
  return detail::estimate_us(config, problem, sm_count);
}

std::string config_unfit_reason(const Config& config, const ProblemShape& problem) {
  validate_problem(problem);
  return detail::config_illegal_reason(config, problem);
}

void check_forced_config(const ProblemShape& problem) {
  validate_problem(problem);
  // An empty problem (B or M = 0) launches nothing and decides no config: a call reads
  // F8GEMM_CONFIG's name only (check_environment), which env_forced_config() judges.
  if (problem.batch == 0 || problem.m == 0) {
    (void)detail::env_forced_config();
    return;
  }
  (void)detail::env_forced_config_for(problem);
}

std::string tuning_table_key(const TargetGpu& gpu, const ProblemShape& problem) {
  require_target_gpu(problem, gpu);
  return detail::table_key(gpu.name, gpu.sm_count, problem);
}

InstanceReport describe(const Config& config, const ProblemShape& problem) {
  validate_problem(problem);
  require_runnable(config, problem);
  const detail::InstanceSpec spec = detail::make_spec(config, problem);
  const int64_t compiles_before = jit::stats().compiles;
  const auto instance = detail::gemm_instance(spec);
  InstanceReport report;
  report.label = spec.label();
  for (const auto& r : instance->resources()) report.registers = std::max(report.registers, r.registers);
  report.spill_bytes = instance->spill_bytes();
  report.wgmma_serialized = jit::reports_wgmma_serialization(instance->log());
  report.cache_key = instance->key();
  report.source = jit::stats().compiles > compiles_before ? InstanceSource::kCompiled
                  : instance->from_disk()                 ? InstanceSource::kDiskCache
                                                          : InstanceSource::kMemory;
  return report;
}

void build_all(const std::vector<Config>& configs, const ProblemShape& problem) {
  std::vector<std::pair<Config, ProblemShape>> instances;
  for (const Config& c : configs) instances.emplace_back(c, problem);
  build_all(instances);
}

void build_all(const std::vector<std::pair<Config, ProblemShape>>& instances) {
  detail::parallel_units(int64_t(instances.size()), 0, [&](int64_t i) {
    try {
      describe(instances[size_t(i)].first, instances[size_t(i)].second);
    } catch (const Error&) {
      // Reported by the caller's own describe() or run of the same config.
    }
  });
}

}  // namespace f8gemm
