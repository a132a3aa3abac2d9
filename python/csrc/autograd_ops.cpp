/// \brief The Autograd kernels of the PyTorch extension's ops (schemas in schemas.cpp): none of
/// them has a derivative, and these kernels say so instead of torch's default for custom ops,
/// which attaches a grad_fn that only warns at backward and leaves every gradient unset (a
/// model trained through an f8gemm op would silently not learn through it).
///
/// The ops that return new tensors get torch's autogradNotImplementedFallback where it has work:
/// when an input requires grad (grad mode on) or carries a forward-mode gradient, the outputs get
/// a grad_fn whose backward raises "derivative for f8gemm::<op> is not implemented" (forward AD
/// is refused at the call), and the forward still runs (a frozen FP8 layer inside a model that
/// trains elsewhere works until something backpropagates into it). The _out ops return nothing,
/// so no grad_fn could carry that error: they refuse an input that requires grad at the call,
/// as torch's own out= ops do, and an input with a forward-mode gradient (its tangent would be
/// dropped, and a dual output's would be left stale). Under torch.no_grad() or inference mode
/// nothing changes.
///
/// Every tensor an op writes (a Tensor(a!) argument: the _out ops' output, quantize_fp8_row's
/// output) has its version counter bumped after the call, as torch's in-place ops do, so that
/// autograd refuses a backward that saved it before the write instead of reading the new values.
///
/// Serving calls have no such input, and there the kernel goes straight below autograd: torch's
/// fallback reads the schema's alias annotations and fills three vectors on every call. On meta
/// tensors under torch.no_grad(), quantize_fp8_row took 2.16 µs a call (median) with the
/// fallback and takes 1.90 with this kernel, 0.09 above inference mode
/// (docs/logs/2026-12-05-s27-autograd-host-cost.log); a call with a grad input pays 0.06 µs
/// more for the extra redispatch to the fallback.
///
/// f8f8bf16_rowwise_batched[_preshuffled] are CompositeImplicitAutograd (gemm_ops.cpp): they
/// reach autograd through _rowwise_batched and _rowwise_batched_out. The ops without tensors
/// (precompile, info) have nothing to differentiate.
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/library.h>

#include <string>

namespace f8gemm_torch {
namespace {

/// The call's arguments: the last `op`'s argument count values of the stack.
c10::ArrayRef<c10::IValue> arguments(const c10::OperatorHandle& op,
                                     const torch::jit::Stack& stack) {
  const size_t count = op.schema().arguments().size();
  return c10::ArrayRef<c10::IValue>(stack).slice(stack.size() - count, count);
}

/// Whether torch's fallback has work in this call: a tensor argument that requires grad with
/// grad mode on, or one with a forward-mode gradient (which the fallback refuses). Neither is
/// possible without autograd metadata, which a plain tensor (every one in inference mode, and
/// those a serving loop makes) does not have: one pointer read per argument. A Tensor[]
/// argument (isTensorList) takes the fallback unread; a Tensor?[] would not be looked into, and
/// no schema here has either.
bool autograd_has_work(const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  const bool grad_mode = at::GradMode::is_enabled();
  for (const c10::IValue& value : arguments(op, stack)) {
    if (value.isTensorList()) return true;
    if (!value.isTensor()) continue;
    const at::Tensor& t = value.toTensor();
    if (t.unsafeGetTensorImpl()->autograd_meta() == nullptr) continue;
    if ((grad_mode && t.requires_grad()) || t._fw_grad(/*level=*/0).defined()) return true;
  }
  return false;
}

/// The tensors that the call writes: its Tensor(a!) arguments that are given. Taken before the
/// call, which consumes its arguments, for bump_versions after it.
c10::SmallVector<at::Tensor, 1> written_tensors(const c10::OperatorHandle& op,
                                                const torch::jit::Stack& stack) {
  const std::vector<c10::Argument>& schema = op.schema().arguments();
  const c10::ArrayRef<c10::IValue> values = arguments(op, stack);
  c10::SmallVector<at::Tensor, 1> written;
  for (size_t i = 0; i < values.size(); ++i) {
    const c10::AliasInfo* alias = schema[i].alias_info();
    if (alias != nullptr && alias->isWrite() && values[i].isTensor()) {
      written.push_back(values[i].toTensor());
    }
  }
  return written;
}

/// One in-place write of each tensor on its version counter, as ADInplaceOrView records torch's
/// in-place ops: a backward that saved one of them before then raises instead of using the new
/// values. An inference tensor has no version counter (bumping it throws, after the kernel has
/// written it) and cannot have been saved for a backward, so it is left alone: such an output,
/// made under torch.inference_mode() and written outside it, worked before versions were bumped.
void bump_versions(const c10::SmallVector<at::Tensor, 1>& written) {
  for (const at::Tensor& t : written) {
    if (!t.is_inference()) torch::autograd::impl::bump_version(t);
  }
}

/// The Autograd kernel of the ops that return new tensors. Without work for autograd, the call
/// continues below it at once, where the fallback itself would continue for these ops (no
/// schema annotates a return as a view or as written: quantize_fp8_row returns its `output`
/// argument itself when given one, but as a plain Tensor, so the fallback skips
/// ADInplaceOrView too); else torch's fallback runs, registered at AutogradOther (below) and
/// reached through that key. Either way the written arguments' versions are bumped after.
void no_derivative(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                   torch::jit::Stack* stack) {
  const c10::SmallVector<at::Tensor, 1> written = written_tensors(op, *stack);
  if (!autograd_has_work(op, *stack)) {
    at::AutoDispatchBelowADInplaceOrView guard;
    op.redispatchBoxed(keys & c10::after_ADInplaceOrView_keyset, stack);
  } else {
    // AutogradOther is the lowest autograd key, and after_autograd_keyset drops every one:
    // added back, it is the highest key of the set.
    op.redispatchBoxed((keys & c10::after_autograd_keyset) |
                           c10::DispatchKeySet(c10::DispatchKey::AutogradOther),
                       stack);
  }
  bump_versions(written);
}

/// The _out ops' Autograd kernel: RuntimeError naming the first argument that requires grad
/// (with grad mode on), NotImplementedError naming the first that carries a forward-mode
/// gradient (as torch's fallback refuses forward AD), else the call continues below autograd
/// and the written output's version is bumped.
void refuse_grad_for_out(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                         torch::jit::Stack* stack) {
  const bool grad_mode = at::GradMode::is_enabled();
  const c10::ArrayRef<c10::IValue> values = arguments(op, *stack);
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i].isTensor()) continue;
    const at::Tensor& t = values[i].toTensor();
    if (t.unsafeGetTensorImpl()->autograd_meta() == nullptr) continue;  // neither is possible
    const bool requires_grad = grad_mode && t.requires_grad();
    if (!requires_grad && !t._fw_grad(/*level=*/0).defined()) continue;
    const std::string& name = op.schema().name();  // "f8gemm::<op>"
    const std::string op_name = name.substr(name.find("::") + 2);
    const std::string& arg = op.schema().arguments()[i].name();
    if (requires_grad) {
      C10_THROW_ERROR(Error,
                      c10::str("f8gemm.", op_name, ": ", arg,
                               " requires grad, but f8gemm's ops have no derivative and this one "
                               "writes output in place, where no autograd history can be "
                               "recorded: pass ", arg, ".detach() or call it under "
                               "torch.no_grad()"));
    }
    // Writing through a dual output's primal would leave its tangent stale: for the written
    // argument the way out is another tensor, not the primal.
    const c10::AliasInfo* alias = op.schema().arguments()[i].alias_info();
    const bool written = alias != nullptr && alias->isWrite();
    C10_THROW_ERROR(NotImplementedError,
                    c10::str("f8gemm.", op_name, ": ", arg,
                             " carries a forward-mode gradient (a dual tensor), but f8gemm's ops "
                             "have no derivative and this one writes output in place, where the "
                             "tangent would be lost: ",
                             written ? c10::str("pass an ", arg, " that carries no tangent")
                                     : c10::str("pass its primal, torch.autograd.forward_ad"
                                                ".unpack_dual(", arg, ").primal")));
  }
  const c10::SmallVector<at::Tensor, 1> written = written_tensors(op, *stack);
  op.redispatchBoxed(keys & c10::after_autograd_keyset, stack);
  bump_versions(written);
}

/// The ops that return new tensors (every op with tensors but the _out ones below).
constexpr const char* kFunctionalOps[] = {
    "f8f8bf16_rowwise", "f8f8f16_rowwise", "_rowwise_batched", "f8f8bf16_rowwise_preshuffled",
    "f8f8f16_rowwise_preshuffled", "f8f8bf16_rowwise_preshuffle", "f8f8f16_rowwise_preshuffle",
    "f8f8bf16_rowwise_silu_mul", "f8f8bf16_rowwise_preshuffled_silu_mul", "preshuffle",
    "unshuffle", "quantize_fp8_row", "silu_mul_quantize_fp8_row",
    "f8f8bf16_rowwise_grouped_stacked", "f8f8bf16_rowwise_grouped_stacked_preshuffled",
    "f8f8bf16_rowwise_grouped_dynamic", "f8f8bf16_rowwise_grouped_dynamic_preshuffled"};

constexpr const char* kOutOps[] = {
    "f8f8bf16_rowwise_out", "f8f8bf16_rowwise_preshuffled_out", "_rowwise_batched_out",
    "f8f8bf16_rowwise_grouped_stacked_out", "f8f8bf16_rowwise_grouped_stacked_preshuffled_out"};

}  // namespace
}  // namespace f8gemm_torch

TORCH_LIBRARY_IMPL(f8gemm, Autograd, m) {
  for (const char* name : f8gemm_torch::kFunctionalOps) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&f8gemm_torch::no_derivative>());
  }
  for (const char* name : f8gemm_torch::kOutOps) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&f8gemm_torch::refuse_grad_for_out>());
  }
}

// torch's fallback for the calls that need it (no_derivative). A tensor of a backend without an
// autograd key of its own dispatches here directly and gets the fallback, as every tensor did
// before no_derivative.
TORCH_LIBRARY_IMPL(f8gemm, AutogradOther, m) {
  for (const char* name : f8gemm_torch::kFunctionalOps) {
    m.impl(name, torch::autograd::autogradNotImplementedFallback());
  }
}
