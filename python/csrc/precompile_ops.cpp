/// \brief The ops of the PyTorch extension that take no tensor (schemas in schemas.cpp):
/// precompile and precompile_grouped over f8gemm::precompile, info (what `f8gemm info` prints)
/// and the preshuffled layout's version. They are dispatched through CompositeExplicitAutograd.
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "binding.hpp"
#include "f8gemm/f8gemm.hpp"

namespace f8gemm_torch {
namespace {

using f8gemm::DType;
using f8gemm::WeightLayout;

DType out_dtype_of(const std::optional<at::ScalarType>& s) {
  if (!s.has_value() || *s == at::ScalarType::BFloat16) return DType::kBF16;
  if (*s == at::ScalarType::Half) return DType::kF16;
  C10_THROW_ERROR(ValueError, c10::str("f8gemm.precompile: invalid argument: out_dtype must be "
                                       "torch.bfloat16 or torch.float16, got ",
                                       torch_dtype_name(*s)));
}

WeightLayout layout_of(const char* op, c10::string_view layout) {
  if (layout == "preshuffled") return WeightLayout::kPreshuffled;
  if (layout == "plain") return WeightLayout::kPlain;
  C10_THROW_ERROR(ValueError, c10::str("f8gemm.", op, ": invalid argument: layout must be "
                                       "'preshuffled' or 'plain', got '", layout, "'"));
}

/// Sets has_bias and bias_dtype of a problem from the op's bias_dtype argument.
template <class Problem>
void set_bias(const char* op, const std::optional<at::ScalarType>& bias_dtype, Problem& p) {
  if (!bias_dtype.has_value()) return;
  p.has_bias = true;
  if (*bias_dtype == at::ScalarType::Float) {
    p.bias_dtype = DType::kF32;
  } else if (*bias_dtype == at::ScalarType::BFloat16) {
    p.bias_dtype = DType::kBF16;
  } else {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.", op, ": invalid argument: bias_dtype must "
                                         "be None, torch.float32 or torch.bfloat16, got ",
                                         torch_dtype_name(*bias_dtype)));
  }
}

/// Makes `device` (else torch's current device) current for the library's precompile.
void select_device(const char* op, const std::optional<at::Device>& device,
                   c10::cuda::OptionalCUDAGuard& guard) {
  if (device.has_value()) {
    if (!device->is_cuda()) {
      C10_THROW_ERROR(ValueError, c10::str("f8gemm.", op, ": invalid argument: device must be "
                                           "a CUDA device, got ", *device));
    }
    guard.set_index(device->has_index() ? device->index() : c10::cuda::current_device());
  } else if (c10::cuda::device_count() > 0) {
    // torch's current device (the runtime's may differ: torch defers some device switches)
    guard.set_index(c10::cuda::current_device());
  }
}

/// Compiles (disk-cached) and, on an sm_90 GPU, loads the kernel of one problem so that calls
/// with it need no compilation: what CUDA-graph capture requires. shape is [M, N, K] for the
/// single ops (M = the product of XQ's leading dimensions) or [B, M, N, K] for the batched ones.
/// epilogue: 'none', or 'silu_mul' for the _silu_mul ops (N: the merged weight's 2I rows).
/// pdl and prefetch_w: the single preshuffled ops' arguments of the calls to come. A call with
/// prefetch_w=True and PDL on is chained (f8gemm::ProblemShape::chained, which the library sets
/// in validate_call): it looks up a plan of its own, which may use another configuration. So
/// prefetch_w=True builds that plan for pdl=True, the plain one for pdl=False, and both for
/// pdl=None, whose calls follow the F8GEMM_PDL switch as they find it when they run.
void precompile(at::IntArrayRef shape, c10::string_view layout, bool use_fast_accum,
                std::optional<at::ScalarType> out_dtype, std::optional<at::ScalarType> bias_dtype,
                std::optional<at::Device> device, c10::string_view epilogue,
                std::optional<bool> pdl, bool prefetch_w) {
  if (shape.size() != 3 && shape.size() != 4) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.precompile: invalid argument: shape must be "
                                         "[M, N, K] or [B, M, N, K], got ", shape));
  }
  f8gemm::ProblemShape p;
  const size_t o = shape.size() - 3;
  p.batch = o ? shape[0] : 1;
  p.m = shape[o];
  p.n = shape[o + 1];
  p.k = shape[o + 2];
  p.w_layout = layout_of("precompile", layout);
  if (epilogue == "silu_mul") {
    p.epilogue_op = f8gemm::EpilogueOp::kSiluMul;
  } else if (epilogue != "none") {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.precompile: invalid argument: epilogue must be "
                                         "'none' or 'silu_mul', got '", epilogue, "'"));
  }
  p.fast_accum = use_fast_accum;
  p.out_dtype = out_dtype_of(out_dtype);
  set_bias("precompile", bias_dtype, p);
  if (prefetch_w && (p.w_layout != WeightLayout::kPreshuffled || shape.size() != 3)) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.precompile: invalid argument: prefetch_w=True "
                                         "is an argument of the single preshuffled GEMMs only: "
                                         "pass a shape [M, N, K] with layout='preshuffled', or "
                                         "prefetch_w=False (got shape ", shape, ", layout='",
                                         layout, "')"));
  }
  std::vector<f8gemm::ProblemShape> problems;
  if (!prefetch_w || pdl != true) problems.push_back(p);  // unchained calls
  if (prefetch_w && pdl != false) {
    p.chained = true;
    problems.push_back(p);
  }
  c10::cuda::OptionalCUDAGuard guard;
  select_device("precompile", device, guard);
  try {
    f8gemm::precompile(problems);
  } catch (const f8gemm::Error& e) {
    rethrow("precompile", e);
  }
}

/// The same for a grouped problem: shape [G, total_M, N, K] (the stacked ops) or, with padded,
/// [G, M_max, N, K] (the dynamic ops). Any sizes run without compiling afterwards.
void precompile_grouped(at::IntArrayRef shape, c10::string_view layout, bool padded,
                        bool use_fast_accum, std::optional<at::ScalarType> bias_dtype,
                        std::optional<at::Device> device) {
  if (shape.size() != 4) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.precompile_grouped: invalid argument: shape "
                                         "must be [G, total_M, N, K] (or [G, M_max, N, K] with "
                                         "padded=True), got ", shape));
  }
  f8gemm::GroupedProblem p;
  p.groups = shape[0];
  p.rows = shape[1];
  p.n = shape[2];
  p.k = shape[3];
  p.padded = padded;
  p.w_layout = layout_of("precompile_grouped", layout);
  p.fast_accum = use_fast_accum;
  set_bias("precompile_grouped", bias_dtype, p);
  c10::cuda::OptionalCUDAGuard guard;
  select_device("precompile_grouped", device, guard);
  try {
    f8gemm::precompile(std::vector<f8gemm::GroupedProblem>{p});
  } catch (const f8gemm::Error& e) {
    rethrow("precompile_grouped", e);
  }
}

/// What `f8gemm info` prints (tools/cmd_basic.cpp), as one string: `python -m f8gemm info`.
std::string info() {
  const f8gemm::DeviceInfo d = f8gemm::device_info();
  std::string text = c10::str("f8gemm ", f8gemm::kVersion, "\n", "NVRTC ", d.nvrtc_major, ".",
                              d.nvrtc_minor, ", CUDA runtime ", d.runtime_version, ", driver ",
                              d.driver_version, "\n", "NVRTC library (in the JIT cache key): ",
                              d.nvrtc_library, "\n", "cache: ", d.cache_dir, "\n");
  if (!d.has_device) {
    return text + c10::str("GPU: none (", d.reason, "); kernels still compile for sm_90a\n");
  }
  return text + c10::str("GPU ", d.device, ": ", d.name, ", ", d.sm_count,
                         " SMs, compute capability ", d.cc_major, ".", d.cc_minor,
                         d.reason.empty() ? "" : ": ", d.reason, "\n");
}

int64_t preshuffle_layout_version() { return f8gemm::kPreshuffleLayoutVersion; }

}  // namespace
}  // namespace f8gemm_torch

TORCH_LIBRARY_IMPL(f8gemm, CompositeExplicitAutograd, m) {
  m.impl("precompile", TORCH_FN(f8gemm_torch::precompile));
  m.impl("precompile_grouped", TORCH_FN(f8gemm_torch::precompile_grouped));
  m.impl("info", TORCH_FN(f8gemm_torch::info));
  m.impl("preshuffle_layout_version", TORCH_FN(f8gemm_torch::preshuffle_layout_version));
}
