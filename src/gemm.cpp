/// \brief gemm() and batched_gemm(): validation of every argument, the configuration choice,
/// and the launch on the caller's stream. The per-call host path is a validation, one cached
/// lookup, one or two tensor-map encodes and one launch: a few microseconds.
#include <cuda.h>

#include <cstring>
#include <string>
#include <type_traits>

#include "check.hpp"
#include "codegen.hpp"
#include "config.hpp"
#include "device.hpp"
#include "f8gemm/tuning.hpp"
#include "launch.hpp"
#include "validate.hpp"

namespace f8gemm {
namespace detail {

namespace {

struct PlanKey {
  int64_t b, m, n, k;
  int layout, out, bias, fast, chained, device;
  ConfigFields forced;  // a forced Config's fields (all zero when the choice is automatic)
  int trace = 0;        // the instrumented instance (GemmOptions::trace)
  int epilogue_op = 0;  // EpilogueOp
  bool operator==(const PlanKey& o) const { return std::memcmp(this, &o, sizeof(*this)) == 0; }
};
static_assert(std::has_unique_object_representations_v<PlanKey>,
              "PlanKey must have no padding: uninitialised padding bytes would make equal keys "
              "compare unequal and miss the plan cache");

PlanCache<PlanKey> g_plans;

std::shared_ptr<Plan> make_plan(const ProblemShape& p, int device, const Config* forced,
                                bool trace) {
  const DeviceProps& props = require_sm90(device);
  const Config config = forced ? *forced : decide(props.name, props.sm_count, p);
  if (forced) {
    const std::string why = config_illegal_reason(config, p);
    F8GEMM_REQUIRE(why.empty(), kUnsupported, config_unfit_message(config, p, why));
  }
  InstanceSpec spec = make_spec(config, p);
  spec.trace = trace;
  return build_plan(spec, device);
}

PlanKey plan_key(const ProblemShape& p, int device, const Config* forced, bool trace = false) {
  PlanKey key{p.batch, p.m, p.n, p.k, int(p.w_layout), int(p.out_dtype),
              p.has_bias ? int(p.bias_dtype) + 1 : 0, p.fast_accum ? 1 : 0, p.chained ? 1 : 0,
              device, {}, 0};
  if (forced) key.forced = config_fields(*forced);
  key.trace = trace ? 1 : 0;
  key.epilogue_op = int(p.epilogue_op);
  return key;
}

/// The cached plan, or a new one (compiled, loaded, attributes set) stored for the next call.
std::shared_ptr<Plan> get_plan(const ProblemShape& p, int device, const Config* forced,
                               bool trace = false) {
  return g_plans.get(plan_key(p, device, forced, trace),
                     [&] { return make_plan(p, device, forced, trace); });
}

/// The persistent grid of a call: at most as many CTAs as run at once, in whole clusters
/// (cluster_m X tiles that share W, or split_k slices of K of one tile).
int persistent_grid(const Plan& plan, const ProblemShape& p) {
  const Config& c = plan.spec.config;
  const bool swap = c.path == KernelPath::kSwapAB;
  const int x_rows = swap ? c.bn : c.bm, w_rows = swap ? c.bm : c.bn;
  const int cluster = c.cluster_m * c.split_k;
  const int64_t x_tiles = (p.m + x_rows - 1) / x_rows;
  const int64_t cluster_tiles =
      p.batch * ((x_tiles + c.cluster_m - 1) / c.cluster_m) * ((p.n + w_rows - 1) / w_rows);
  return int(std::min<int64_t>(cluster_tiles, plan.max_ctas / cluster)) * cluster;
}

/// GemmOptions::trace's buffer is device memory of the call's device (its fields were checked
/// with the other arguments, validate_call), before anything is compiled or launched.
void check_trace_memory(const GemmTrace& t, int device) {
  require_sm90(device);  // no GPU: kNoDevice, as for any call
  cudaPointerAttributes attr{};
  const cudaError_t e = cudaPointerGetAttributes(&attr, t.data);
  if (e != cudaSuccess) cudaGetLastError();
  F8GEMM_REQUIRE(e == cudaSuccess &&
                     (attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged) &&
                     attr.device == device,
                 kInvalidArgument, "trace.data must be device memory on cuda:", device);
}

void run(const TensorView& x, const TensorView& w, WeightLayout layout, const TensorView& xs,
         const TensorView& ws, const TensorView& out, const GemmOptions& opt, bool batched) {
  const Validated v = validate_call(x, w, layout, xs, ws, out, opt, batched);
  const ProblemShape& p = v.shape;
  if (p.m == 0 || p.batch == 0) {
    require_sm90(v.device);  // the same answer with or without work: no sm_90, no success
    return;
  }
  if (opt.trace) check_trace_memory(*opt.trace, v.device);
  const std::shared_ptr<Plan> plan = get_plan(p, v.device, opt.config, opt.trace != nullptr);

  const Config& c = plan->spec.config;
  dev::GemmParams params =
      gemm_params(*plan, x, w, p.w_layout, xs, ws, p.has_bias ? opt.bias->data : nullptr, out,
                  p.batch, p.m, p.batch, p.n, p.k);
  params.batch = int(p.batch);
  params.m = int(p.m);
  // The PDL switch was resolved once (validate_call): it decides both the launch and prefetch_w.
  // W is loaded early only with PDL (ProblemShape::chained): without it there is no tail to
  // overlap, and the early W copies only put the first slots' X behind them (perf log, card 50:
  // the Llama MLP block 3-6% slower).
  const Pdl pdl = v.pdl;
  params.prefetch_w = p.chained ? 1 : 0;

  const int cluster = c.cluster_m * c.split_k;
  const int grid = persistent_grid(*plan, p);
  if (opt.trace) {
    const int64_t need = dev::gemm_trace_words(grid, opt.trace->tiles);
    F8GEMM_REQUIRE(opt.trace->words >= need, kInvalidArgument, "trace.words is ",
                   opt.trace->words, " but this call's ", grid, " CTAs need ", need,
                   " (trace_words(", grid, ", ", opt.trace->tiles, "))");
    params.trace = opt.trace->data;
    params.trace_tiles = opt.trace->tiles;
  }
  DeviceGuard guard(v.device);
  void* args[] = {&params};
  launch(plan->kernel, grid, cluster, plan->threads, plan->smem, opt.stream, args, v.device, pdl);
}

}  // namespace

void prepare(const ProblemShape& problem, int device) { get_plan(problem, device, nullptr); }

}  // namespace detail

int trace_ctas(const ProblemShape& problem, const Config* config) {
  validate_problem(problem);
  if (problem.m == 0 || problem.batch == 0) return 0;
  int device = 0;
  F8GEMM_CHECK_CUDA(cudaGetDevice(&device));
  return detail::persistent_grid(*detail::get_plan(problem, device, config, true), problem);
}

int64_t trace_words(int ctas, int tiles) {
  F8GEMM_REQUIRE(ctas >= 0 && tiles >= 1 && tiles <= dev::kTraceMaxTiles, kInvalidArgument,
                 "trace_words: ctas must be >= 0 and tiles in [1, ", dev::kTraceMaxTiles,
                 "], got ", ctas, " and ", tiles);
  return dev::gemm_trace_words(ctas, tiles);
}

bool is_ready(const ProblemShape& problem) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  const detail::PlanKey key = detail::plan_key(problem, device, nullptr);
  return problem.m == 0 || problem.batch == 0 || detail::g_plans.contains(key);
}

void gemm(const TensorView& x, const TensorView& w, WeightLayout w_layout, const TensorView& x_scale,
          const TensorView& w_scale, const TensorView& out, const GemmOptions& options) {
  detail::run(x, w, w_layout, x_scale, w_scale, out, options, false);
}

void batched_gemm(const TensorView& x, const TensorView& w, WeightLayout w_layout,
                  const TensorView& x_scale, const TensorView& w_scale, const TensorView& out,
                  const GemmOptions& options) {
  detail::run(x, w, w_layout, x_scale, w_scale, out, options, true);
}

}  // namespace f8gemm
