/// \brief Instance sources for the JIT: one GEMM kernel per (Config, N, K, W layout, output type,
/// bias, accumulation), plus the utility module (preshuffle, quantisation, reference check).
#pragma once

#include <memory>
#include <string>

#include "f8gemm/f8gemm.hpp"
#include "../kernels/gemm_params.cuh"
#include "jit/jit.hpp"

namespace f8gemm::detail {

using dev::BiasKind;

struct InstanceSpec {
  Config config;
  int64_t n = 0, k = 0;
  WeightLayout w_layout = WeightLayout::kPreshuffled;
  DType out_dtype = DType::kBF16;
  BiasKind bias = BiasKind::kNone;
  bool fast_accum = true;
  int groups_cap = 0;  ///< grouped GEMM: room for this many groups (0: batched)
  bool trace = false;  ///< instrumented: records per-tile timestamps (GemmOptions::trace)
  EpilogueOp epilogue_op = EpilogueOp::kNone;

  /// The printable name: the config name plus the problem constants, e.g.
  /// sm90_tiled_128x128x128_s4_c1x1_r8.n1280.k8192.preshuffled.bf16.nobias.fast (".silu_mul"
  /// after it with EpilogueOp::kSiluMul)
  std::string label() const;
  /// The device-side spec this instance is compiled with (kernels/gemm_params.cuh).
  dev::GemmSpec gemm_spec() const;
};

InstanceSpec make_spec(const Config& config, const ProblemShape& problem);

/// The generated source: the m64nBNk32 wgmma wrapper, the kernel header, and an extern "C"
/// entry `f8gemm_gemm` with the launch bounds the kernel needs.
std::string instance_source(const InstanceSpec& spec);

/// Threads and dynamic shared memory of an instance's kernel.
int instance_threads(const InstanceSpec& spec);
int instance_smem_bytes(const InstanceSpec& spec);

std::shared_ptr<const jit::Instance> gemm_instance(const InstanceSpec& spec);
std::shared_ptr<const jit::Instance> util_instance();

}  // namespace f8gemm::detail
