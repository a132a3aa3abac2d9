/// \brief Generates and compiles the instance sources (see codegen.hpp).
#include "codegen.hpp"

#include <sstream>

#include "check.hpp"
#include "config.hpp"

namespace f8gemm::detail {

std::string InstanceSpec::label() const {
  std::ostringstream os;
  os << config.name() << ".n" << n << ".k" << k << "."
     << (w_layout == WeightLayout::kPlain ? "plain" : "preshuffled") << "."
     << (out_dtype == DType::kF16 ? "f16" : "bf16") << "."
     << (bias == BiasKind::kNone ? "nobias" : bias == BiasKind::kF32 ? "biasf32" : "biasbf16")
     << "." << (fast_accum ? "fast" : "precise");
  if (epilogue_op != EpilogueOp::kNone) os << "." << to_string(epilogue_op);
  if (groups_cap > 0) os << ".grouped" << groups_cap;
  if (trace) os << ".trace";
  return os.str();
}

InstanceSpec make_spec(const Config& config, const ProblemShape& p) {
  InstanceSpec s;
  s.config = config;
  s.n = p.n;
  s.k = p.k;
  s.w_layout = p.w_layout;
  s.out_dtype = p.out_dtype;
  s.bias = !p.has_bias ? BiasKind::kNone
                       : (p.bias_dtype == DType::kBF16 ? BiasKind::kBF16 : BiasKind::kF32);
  s.fast_accum = p.fast_accum;
  s.epilogue_op = p.epilogue_op;
  return s;
}

namespace {
/// wgmma m64n<bn>k32 with both operands in shared memory: bn/2 fp32 accumulators per thread.
/// The mainloop issues one width: the tile's bn, or its precise-mode promotion slice.
/// The scale-d flag is a run-time predicate (NVRTC 13.0 crashes on constant asm operands here).
std::string wgmma_wrapper(int bn) {
  const int regs = bn / 2;
  std::ostringstream os;
  os << "namespace f8gemm { namespace dev {\n"
     << "template <> struct Wgmma<" << bn << "> {\n"
     << "  static __device__ __forceinline__ void mma(float* d, u64 a, u64 b, u32 accumulate) {\n"
     << "    asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" << regs + 2 << ", 0;\\n"
     << "wgmma.mma_async.sync.aligned.m64n" << bn << "k32.f32.e4m3.e4m3 {";
  for (int i = 0; i < regs; ++i) os << (i ? ", " : "") << "%" << i;
  os << "}, %" << regs << ", %" << regs + 1 << ", p, 1, 1;\\n}\\n\"\n      : ";
  for (int i = 0; i < regs; ++i) os << (i ? ", " : "") << "\"+f\"(d[" << i << "])";
  os << "\n      : \"l\"(a), \"l\"(b), \"r\"(accumulate));\n  }\n};\n}  // namespace dev\n}  // namespace f8gemm\n";
  return os.str();
}

/// A constexpr function returning the spec, each field assigned by name (a field added to
/// GemmSpec and not set here keeps its zero value, never a neighbour's).
std::string spec_function(const dev::GemmSpec& g) {
  auto b = [](bool v) { return v ? "true" : "false"; };
  std::ostringstream os;
  os << "constexpr f8gemm::dev::GemmSpec instance_spec() {\n"
     << "  f8gemm::dev::GemmSpec g{};\n"
     << "  g.n = " << g.n << "LL;\n  g.k = " << g.k << "LL;\n"
     << "  g.bm = " << g.bm << ";\n  g.bn = " << g.bn << ";\n  g.stages = " << g.stages
     << ";\n  g.cluster_m = " << g.cluster_m << ";\n  g.raster = " << g.raster << ";\n"
     << "  g.split_k = " << g.split_k << ";\n  g.groups_cap = " << g.groups_cap << ";\n"
     << "  g.swap = " << b(g.swap) << ";\n  g.pingpong = " << b(g.pingpong) << ";\n"
     << "  g.plain_w = " << b(g.plain_w) << ";\n  g.out_f16 = " << b(g.out_f16) << ";\n"
     << "  g.fast_accum = " << b(g.fast_accum) << ";\n"
     << "  g.bias = f8gemm::dev::BiasKind(" << int(g.bias) << ");\n"
     << "  g.silu_mul = " << b(g.silu_mul) << ";\n"
     << "  g.early_dependents = " << b(g.early_dependents) << ";\n"
     << "  return g;\n}\n";
  return os.str();
}
}  // namespace

dev::GemmSpec InstanceSpec::gemm_spec() const {
  dev::GemmSpec g{};
  g.n = n;
  g.k = k;
  g.bm = config.bm;
  g.bn = config.bn;
  g.stages = config.stages;
  g.cluster_m = config.cluster_m;
  g.raster = config.raster;
  g.split_k = config.split_k;
  g.groups_cap = groups_cap;
  g.swap = config.path == KernelPath::kSwapAB;
  g.pingpong = config.path == KernelPath::kPingPong;
  g.plain_w = w_layout == WeightLayout::kPlain;
  g.out_f16 = out_dtype == DType::kF16;
  g.fast_accum = fast_accum;
  g.bias = bias;
  g.silu_mul = epilogue_op == EpilogueOp::kSiluMul;
  g.early_dependents = config.early_dependents != 0;
  return g;
}

std::string instance_source(const InstanceSpec& s) {
  const dev::GemmSpec g = s.gemm_spec();
  std::ostringstream os;
  os << "// f8gemm instance " << s.label() << "\n";
  // An instrumented instance (GemmOptions::trace): gemm_trace.cuh records its tiles.
  if (s.trace) os << "#define F8GEMM_TRACE 1\n";
  os << "#include \"gemm_kernel.cuh\"\n"
     << wgmma_wrapper(dev::gemm_promote_cols(g.bn, g.fast_accum, dev::gemm_blocks(g.bm, g.pingpong),
                                             g.swap))
     << spec_function(g)
     << "struct Spec {\n  static constexpr f8gemm::dev::GemmSpec value = instance_spec();\n};\n"
     << "using Kernel = f8gemm::dev::GemmKernel<Spec>;\n"
     << "extern \"C\" __global__ void __launch_bounds__(Kernel::kThreads, 1)\n"
     << "f8gemm_gemm(const __grid_constant__ f8gemm::dev::GemmParams params) {\n"
     << "  Kernel::run(params);\n}\n";
  return os.str();
}

int instance_threads(const InstanceSpec& s) {
  return 128 * (1 + dev::gemm_consumers(s.config.bm, s.config.path == KernelPath::kPingPong));
}
int instance_smem_bytes(const InstanceSpec& s) {
  return config_smem_bytes(s.config, s.groups_cap, s.epilogue_op);
}

std::shared_ptr<const jit::Instance> gemm_instance(const InstanceSpec& s) {
  return jit::get_instance(s.label(), instance_source(s), jit::default_options());
}

std::shared_ptr<const jit::Instance> util_instance() {
  return jit::get_instance("util", "#include \"f8gemm_util.cuh\"\n", jit::default_options());
}

}  // namespace f8gemm::detail
