/// \brief grouped_gemm() and grouped_gemm_padded(): validation, the plan cache and the launch of
/// the grouped kernel (the GEMM kernel with its group tables, see
/// kernels/gemm_tile_scheduler.cuh; the configuration comes from grouped_config.cpp), and the
/// grouped problem's readiness and precompile(). The host never reads the group sizes.
#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <type_traits>

#include "check.hpp"
#include "config.hpp"
#include "device.hpp"
#include "env.hpp"
#include "f8gemm/tuning.hpp"
#include "grouped.hpp"
#include "launch.hpp"

namespace f8gemm {

namespace detail {

namespace {

/// The sizes' dtype is not part of the key: the kernel reads either (a run-time flag).
struct GroupedPlanKey {
  int64_t groups, rows, n, k;
  int padded, layout, out, bias, fast, device;
  ConfigFields forced;  // a forced Config's fields (all zero when the choice is automatic)
  bool operator==(const GroupedPlanKey& o) const {
    return std::memcmp(this, &o, sizeof(*this)) == 0;
  }
};
static_assert(std::has_unique_object_representations_v<GroupedPlanKey>,
              "GroupedPlanKey is compared and hashed as bytes: it must have no padding");

PlanCache<GroupedPlanKey> g_grouped_plans;

GroupedPlanKey grouped_key(const GroupedProblem& s, int device, const Config* forced) {
  GroupedPlanKey key{s.groups, s.rows, s.n, s.k, s.padded ? 1 : 0, int(s.w_layout),
                     int(s.out_dtype), s.has_bias ? int(s.bias_dtype) + 1 : 0,
                     s.fast_accum ? 1 : 0, device, {}};
  if (forced) key.forced = config_fields(*forced);
  return key;
}

std::shared_ptr<Plan> grouped_plan(const GroupedProblem& s, int device, const Config* forced) {
  return g_grouped_plans.get(grouped_key(s, device, forced), [&] {
    const DeviceProps& props = require_sm90(device);
    auto plan = build_plan(grouped_spec(s, props.sm_count, forced), device);
    if (get_env<bool>("F8GEMM_LOG")) {
      std::fprintf(stderr, "f8gemm: grouped G,%s,N,K=%lld,%lld,%lld,%lld -> %s\n",
                   s.padded ? "M_max" : "total_M", static_cast<long long>(s.groups),
                   static_cast<long long>(s.rows), static_cast<long long>(s.n),
                   static_cast<long long>(s.k), plan->spec.label().c_str());
    }
    return plan;
  });
}

}  // namespace

void launch_grouped(const ValidatedGrouped& v, const TensorView& x, const TensorView& w,
                    const TensorView& x_scale, const TensorView& w_scale,
                    const TensorView& m_sizes, const TensorView& out, const GemmOptions& opt) {
  const GroupedProblem& s = v.shape;
  const std::shared_ptr<Plan> plan = grouped_plan(s, v.device, opt.config);
  const Config& c = plan->spec.config;
  const bool swap = c.path == KernelPath::kSwapAB;
  const int x_rows = swap ? c.bn : c.bm, w_rows = swap ? c.bm : c.bn;
  // X and Y as one matrix each over every group's rows; W's batch coordinate is the group.
  const int64_t rows = s.padded ? s.groups * s.rows : s.rows;
  dev::GemmParams params =
      gemm_params(*plan, x, w, s.w_layout, x_scale, w_scale, s.has_bias ? opt.bias->data : nullptr,
                  out, 1, rows, s.groups, s.n, s.k);
  params.batch = int(s.groups);
  params.m = int(s.rows);
  params.m_sizes = m_sizes.data;
  params.sizes_i64 = s.sizes_dtype == DType::kI64 ? 1 : 0;
  params.padded = s.padded ? 1 : 0;

  // The tiles are counted on the device. Each group's X tiles are at most its rows' share of
  // the whole plus one partial tile, so at most x_tiles + G over all groups, and pairing them
  // rounds each group up by at most one more: the grid never needs more clusters than that.
  const int cluster = c.cluster_m * c.split_k;
  const int64_t x_tiles = (rows + x_rows - 1) / x_rows + s.groups;
  const int64_t bound = ((x_tiles + c.cluster_m - 1) / c.cluster_m + s.groups) *
                        ((s.n + w_rows - 1) / w_rows);
  const int grid = int(std::min<int64_t>(bound, plan->max_ctas / cluster)) * cluster;
  DeviceGuard guard(v.device);
  void* args[] = {&params};
  launch(plan->kernel, grid, cluster, plan->threads, plan->smem, opt.stream, args, v.device,
         opt.pdl);
}

}  // namespace detail

GroupedProblem grouped_problem(const TensorView& x, const TensorView& w, WeightLayout w_layout,
                               const TensorView& x_scale, const TensorView& w_scale,
                               const TensorView& m_sizes, const TensorView& out,
                               const GemmOptions& options, bool padded) {
  return detail::validate_grouped_call(x, w, w_layout, x_scale, w_scale, m_sizes, out, options,
                                       padded)
      .shape;
}

bool is_ready(const GroupedProblem& problem) {
  if (problem.rows == 0 || problem.groups == 0) return true;  // launches nothing
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  const detail::GroupedPlanKey key = detail::grouped_key(problem, device, nullptr);
  return detail::g_grouped_plans.contains(key);
}

void precompile(const std::vector<GroupedProblem>& problems) {
  // Every problem is checked before the first compile, as precompile() does for gemm().
  for (const GroupedProblem& p : problems) detail::validate_grouped_problem(p);
  // The current sm_90 GPU, else the H200 that serving will run on (target_gpu()).
  const TargetGpu gpu = target_gpu();
  int device = -1;
  if (!gpu.assumed) F8GEMM_CHECK_CUDA(cudaGetDevice(&device));
  for (const GroupedProblem& p : problems) {
    if (p.rows == 0 || p.groups == 0) continue;
    if (device >= 0) {
      detail::grouped_plan(p, device, nullptr);  // compiled, loaded, attributes set
    } else {
      detail::gemm_instance(detail::grouped_spec(p, gpu.sm_count, nullptr));
    }
  }
}

namespace detail {
namespace {
/// Both forms: validation (stacked or padded), then the launch when there is work.
void run_grouped(const TensorView& x, const TensorView& w, WeightLayout w_layout,
                 const TensorView& x_scale, const TensorView& w_scale, const TensorView& m_sizes,
                 const TensorView& out, const GemmOptions& options, bool padded) {
  const auto v = validate_grouped_call(x, w, w_layout, x_scale, w_scale, m_sizes, out, options,
                                       padded);
  if (v.shape.rows == 0 || v.shape.groups == 0) {
    require_sm90(v.device);  // the same answer with or without work, as gemm() gives
    return;
  }
  launch_grouped(v, x, w, x_scale, w_scale, m_sizes, out, options);
}
}  // namespace
}  // namespace detail

void grouped_gemm(const TensorView& x, const TensorView& w, WeightLayout w_layout,
                  const TensorView& x_scale, const TensorView& w_scale, const TensorView& m_sizes,
                  const TensorView& out, const GemmOptions& options) {
  detail::run_grouped(x, w, w_layout, x_scale, w_scale, m_sizes, out, options, false);
}

void grouped_gemm_padded(const TensorView& x, const TensorView& w, WeightLayout w_layout,
                         const TensorView& x_scale, const TensorView& w_scale,
                         const TensorView& m_sizes, const TensorView& out,
                         const GemmOptions& options) {
  detail::run_grouped(x, w, w_layout, x_scale, w_scale, m_sizes, out, options, true);
}

}  // namespace f8gemm
