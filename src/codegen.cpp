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
  return s;
}

namespace {
/// wgmma m64n<bn>k32 with both operands in shared memory: bn/2 fp32 accumulators per thread.
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

std::string kernel_type(const InstanceSpec& s) {
  std::ostringstream os;
  os << "f8gemm::dev::GemmKernel<" << s.n << ", " << s.k << ", " << s.config.bm << ", "
     << s.config.bn << ", " << s.config.stages << ", "
     << (s.config.path == KernelPath::kSwapAB ? "true" : "false") << ", "
     << (s.w_layout == WeightLayout::kPlain ? "true" : "false") << ", "
     << (s.out_dtype == DType::kF16 ? "true" : "false") << ", " << int(s.bias) << ", "
     << (s.fast_accum ? "true" : "false") << ", " << s.config.raster << ">";
  return os.str();
}
}  // namespace

std::string instance_source(const InstanceSpec& s) {
  std::ostringstream os;
  os << "// f8gemm instance " << s.label() << "\n"
     << "#include \"f8gemm_gemm.cuh\"\n"
     << wgmma_wrapper(s.config.bn) << "using Kernel = " << kernel_type(s) << ";\n"
     << "static_assert(Kernel::kSmemBytes == " << config_smem_bytes(s.config)
     << ", \"config_smem_bytes() must mirror GemmKernel::kSmemBytes\");\n"
     << "extern \"C\" __global__ void __launch_bounds__(Kernel::kThreads, 1)\n"
     << "f8gemm_gemm(const __grid_constant__ f8gemm::dev::GemmParams params) {\n"
     << "  Kernel::run(params);\n}\n";
  return os.str();
}

int instance_threads(const InstanceSpec& s) { return 128 * (1 + s.config.bm / 64); }
int instance_smem_bytes(const InstanceSpec& s) { return config_smem_bytes(s.config); }

std::shared_ptr<const jit::Instance> gemm_instance(const InstanceSpec& s) {
  return jit::get_instance(s.label(), instance_source(s), jit::default_options());
}

std::shared_ptr<const jit::Instance> util_instance() {
  return jit::get_instance("util", "#include \"f8gemm_util.cuh\"\n", jit::default_options());
}

}  // namespace f8gemm::detail
