/// \brief The Autograd kernels of the PyTorch extension's ops (schemas in schemas.cpp): none of
/// them has a derivative, and these kernels say so instead of torch's default for custom ops,
/// which attaches a grad_fn that only warns at backward and leaves every gradient unset (a
/// model trained through an f8gemm op would silently not learn through it).
///
/// The ops that return new tensors get torch's autogradNotImplementedFallback: when an input
/// requires grad, the outputs get a grad_fn whose backward raises "derivative for f8gemm::<op>
/// is not implemented", and the forward still runs (a frozen FP8 layer inside a model that
/// trains elsewhere works until something backpropagates into it). The _out ops return nothing,
/// so no grad_fn could carry that error: they refuse an input that requires grad at the call,
/// as torch's own out= ops do. Under torch.no_grad() or inference mode nothing changes.
///
/// f8f8bf16_rowwise_batched[_preshuffled] are CompositeImplicitAutograd (gemm_ops.cpp): they
/// reach autograd through _rowwise_batched and _rowwise_batched_out. The ops without tensors
/// (precompile, info) have nothing to differentiate.
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/library.h>

#include <string>

namespace f8gemm_torch {
namespace {

/// The _out ops' Autograd kernel: RuntimeError naming the first argument that requires grad
/// (with grad mode on), else the call continues below autograd unchanged.
void refuse_grad_for_out(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                         torch::jit::Stack* stack) {
  const auto& arguments = op.schema().arguments();
  if (at::GradMode::is_enabled()) {
    const size_t first = stack->size() - arguments.size();
    for (size_t i = 0; i < arguments.size(); ++i) {
      const c10::IValue& value = (*stack)[first + i];
      if (!value.isTensor() || !value.toTensor().requires_grad()) continue;
      const std::string& name = op.schema().name();  // "f8gemm::<op>"
      const std::string& arg = arguments[i].name();
      C10_THROW_ERROR(Error,
                      c10::str("f8gemm.", name.substr(name.find("::") + 2), ": ", arg,
                               " requires grad, but f8gemm's ops have no derivative and this one "
                               "writes output in place, where no autograd history can be "
                               "recorded: pass ", arg, ".detach() or call it under "
                               "torch.no_grad()"));
    }
  }
  op.redispatchBoxed(keys & c10::after_autograd_keyset, stack);
}

}  // namespace
}  // namespace f8gemm_torch

TORCH_LIBRARY_IMPL(f8gemm, Autograd, m) {
  for (const char* name :
       {"f8f8bf16_rowwise", "f8f8f16_rowwise", "_rowwise_batched", "f8f8bf16_rowwise_preshuffled",
        "f8f8f16_rowwise_preshuffled", "f8f8bf16_rowwise_preshuffle", "f8f8f16_rowwise_preshuffle",
        "f8f8bf16_rowwise_silu_mul", "f8f8bf16_rowwise_preshuffled_silu_mul", "preshuffle",
        "unshuffle", "quantize_fp8_row", "silu_mul_quantize_fp8_row",
        "f8f8bf16_rowwise_grouped_stacked", "f8f8bf16_rowwise_grouped_stacked_preshuffled",
        "f8f8bf16_rowwise_grouped_dynamic", "f8f8bf16_rowwise_grouped_dynamic_preshuffled"}) {
    m.impl(name, torch::autograd::autogradNotImplementedFallback());
  }
  for (const char* name :
       {"f8f8bf16_rowwise_out", "f8f8bf16_rowwise_preshuffled_out", "_rowwise_batched_out",
        "f8f8bf16_rowwise_grouped_stacked_out",
        "f8f8bf16_rowwise_grouped_stacked_preshuffled_out"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&f8gemm_torch::refuse_grad_for_out>());
  }
}
