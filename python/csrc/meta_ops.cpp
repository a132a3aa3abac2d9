/// \brief The Meta (fake) implementations of the PyTorch extension's ops (schemas in
/// schemas.cpp): output shapes and dtypes only, symbolic sizes allowed, for torch.compile,
/// torch.export and opcheck. They check what the shape inference itself needs (ranks), with the
/// same error types as the CUDA implementations. The trailing `pdl` of the GEMM and quantisation
/// ops and `prefetch_w` of the single preshuffled GEMMs only say how a kernel is launched and
/// loads its weight: they change no shape, and are ignored here.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/SymInt.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "f8gemm/f8gemm.hpp"

namespace f8gemm_torch {

const char* batched_name(bool preshuffled);  // gemm_ops.cpp

namespace {

using f8gemm::WeightLayout;

c10::SymInt meta_weight_rows(const char* op, const at::Tensor& WQ, WeightLayout layout,
                             bool batched) {
  const int64_t lead = batched ? 1 : 0;
  if (layout == WeightLayout::kPlain) {
    if (WQ.dim() != 2 + lead) {
      C10_THROW_ERROR(ValueError,
                      c10::str("f8gemm.", op, ": invalid argument: WQ must be ", 2 + lead, "-D ",
                               batched ? "[B, N, K]" : "[N, K]", " (a plain weight), got ",
                               WQ.dim(), "-D",
                               WQ.dim() == 3 + lead ? " (use the _preshuffled op)" : ""));
    }
    return WQ.sym_size(lead);
  }
  if (WQ.dim() != 3 + lead) {
    C10_THROW_ERROR(ValueError,
                    c10::str("f8gemm.", op, ": invalid argument: WQ must be ", 3 + lead,
                             "-D preshuffled ",
                             batched ? "[B, ceil(K/128), N/8, 1024]" : "[ceil(K/128), N/8, 1024]",
                             ", got ", WQ.dim(), "-D",
                             WQ.dim() == 2 + lead ? " (WQ looks like a plain weight: pass "
                                                    "torch.ops.f8gemm.preshuffle(WQ))"
                                                  : ""));
  }
  return WQ.sym_size(lead + 1) * f8gemm::kShuffleSlabRows;
}

/// silu_mul: the _silu_mul ops (f8gemm::EpilogueOp::kSiluMul), whose output has N / 2 columns.
at::Tensor meta_gemm(const char* op, const at::Tensor& XQ, const at::Tensor& WQ,
                     WeightLayout layout, bool batched, at::ScalarType out_dtype,
                     bool silu_mul = false) {
  c10::SymInt n = meta_weight_rows(op, WQ, layout, batched);
  if (silu_mul) n = n / 2;
  std::vector<c10::SymInt> shape;
  if (batched) {
    if (XQ.dim() != 3) {
      C10_THROW_ERROR(ValueError, c10::str("f8gemm.", op, ": invalid argument: XQ must be 3-D "
                                           "[B, M, K], got ", XQ.dim(), "-D"));
    }
    shape = {XQ.sym_size(0), XQ.sym_size(1), n};
  } else {
    if (XQ.dim() < 1) {
      C10_THROW_ERROR(ValueError, c10::str("f8gemm.", op, ": invalid argument: XQ must be "
                                           "[..., K] with at least 1 dimension"));
    }
    const auto sizes = XQ.sym_sizes();
    shape.assign(sizes.begin(), sizes.end() - 1);
    shape.push_back(n);
  }
  return at::empty_symint(shape, XQ.options().dtype(out_dtype));
}

at::Tensor f8f8bf16_rowwise_meta(const at::Tensor& XQ, const at::Tensor& WQ, const at::Tensor&,
                                 const at::Tensor&, const std::optional<at::Tensor>&, bool,
                                 std::optional<bool>) {
  return meta_gemm("f8f8bf16_rowwise", XQ, WQ, WeightLayout::kPlain, false,
                   at::ScalarType::BFloat16);
}

at::Tensor f8f8f16_rowwise_meta(const at::Tensor& XQ, const at::Tensor& WQ, const at::Tensor&,
                                const at::Tensor&, const std::optional<at::Tensor>&, bool,
                                std::optional<bool>) {
  return meta_gemm("f8f8f16_rowwise", XQ, WQ, WeightLayout::kPlain, false, at::ScalarType::Half);
}

void f8f8bf16_rowwise_out_meta(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                               const at::Tensor&, const at::Tensor&,
                               const std::optional<at::Tensor>&, bool, std::optional<bool>) {}

at::Tensor rowwise_batched_meta(const at::Tensor& XQ, const at::Tensor& WQ, const at::Tensor&,
                                const at::Tensor&, const std::optional<at::Tensor>&, bool,
                                bool preshuffled, std::optional<bool>) {
  return meta_gemm(batched_name(preshuffled), XQ, WQ,
                   preshuffled ? WeightLayout::kPreshuffled : WeightLayout::kPlain, true,
                   at::ScalarType::BFloat16);
}

void rowwise_batched_out_meta(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                              const at::Tensor&, const at::Tensor&,
                              const std::optional<at::Tensor>&, bool, bool, std::optional<bool>) {}

at::Tensor f8f8bf16_rowwise_preshuffled_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                             const at::Tensor&, const at::Tensor&,
                                             const std::optional<at::Tensor>&, bool,
                                             std::optional<bool>, bool) {
  return meta_gemm("f8f8bf16_rowwise_preshuffled", XQ, WQ, WeightLayout::kPreshuffled, false,
                   at::ScalarType::BFloat16);
}

at::Tensor f8f8f16_rowwise_preshuffled_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                            const at::Tensor&, const at::Tensor&,
                                            const std::optional<at::Tensor>&, bool,
                                            std::optional<bool>, bool) {
  return meta_gemm("f8f8f16_rowwise_preshuffled", XQ, WQ, WeightLayout::kPreshuffled, false,
                   at::ScalarType::Half);
}

at::Tensor f8f8bf16_rowwise_silu_mul_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                          const at::Tensor&, const at::Tensor&,
                                          const std::optional<at::Tensor>&, bool,
                                          std::optional<bool>) {
  return meta_gemm("f8f8bf16_rowwise_silu_mul", XQ, WQ, WeightLayout::kPlain, false,
                   at::ScalarType::BFloat16, true);
}

at::Tensor f8f8bf16_rowwise_preshuffled_silu_mul_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                                      const at::Tensor&, const at::Tensor&,
                                                      const std::optional<at::Tensor>&, bool,
                                                      std::optional<bool>, bool) {
  return meta_gemm("f8f8bf16_rowwise_preshuffled_silu_mul", XQ, WQ, WeightLayout::kPreshuffled,
                   false, at::ScalarType::BFloat16, true);
}

void f8f8bf16_rowwise_preshuffled_out_meta(const at::Tensor&, const at::Tensor&,
                                           const at::Tensor&, const at::Tensor&,
                                           const at::Tensor&, const std::optional<at::Tensor>&,
                                           bool, std::optional<bool>, bool) {}

at::Tensor preshuffle_meta(const at::Tensor& WQ) {
  if (WQ.dim() != 2 && WQ.dim() != 3) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.preshuffle: invalid argument: WQ must be [N, K] "
                                         "or [B, N, K], got ", WQ.dim(), "-D"));
  }
  const c10::SymInt k = WQ.sym_size(-1);
  std::vector<c10::SymInt> shape = {(k + (f8gemm::kShuffleBlockK - 1)) / f8gemm::kShuffleBlockK,
                                    WQ.sym_size(-2) / f8gemm::kShuffleSlabRows,
                                    c10::SymInt(f8gemm::kShuffleSlabBytes)};
  if (WQ.dim() == 3) shape.insert(shape.begin(), WQ.sym_size(0));
  return at::empty_symint(shape, WQ.options());
}

at::Tensor unshuffle_meta(const at::Tensor& WQ_shuffled, int64_t K) {
  if (WQ_shuffled.dim() != 3 && WQ_shuffled.dim() != 4) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.unshuffle: invalid argument: WQ_shuffled must "
                                         "be 3-D or 4-D preshuffled, got ", WQ_shuffled.dim(),
                                         "-D"));
  }
  std::vector<c10::SymInt> shape = {WQ_shuffled.sym_size(-2) * f8gemm::kShuffleSlabRows,
                                    c10::SymInt(K)};
  if (WQ_shuffled.dim() == 4) shape.insert(shape.begin(), WQ_shuffled.sym_size(0));
  return at::empty_symint(shape, WQ_shuffled.options());
}

std::tuple<at::Tensor, at::Tensor> quantize_fp8_row_meta(const at::Tensor& a,
                                                         const std::optional<at::Tensor>&, bool,
                                                         const std::optional<at::Tensor>& output,
                                                         std::optional<bool>) {
  if (a.dim() < 1) {
    C10_THROW_ERROR(ValueError, "f8gemm.quantize_fp8_row: invalid argument: a must have at least "
                                "1 dimension ([..., K]), got a 0-dimensional tensor");
  }
  at::Tensor q = output.has_value() && output->defined()
                     ? *output
                     : at::empty_symint(a.sym_sizes(), a.options().dtype(at::ScalarType::Float8_e4m3fn));
  const auto sizes = a.sym_sizes();
  at::Tensor scale = at::empty_symint(sizes.slice(0, sizes.size() - 1),
                                      a.options().dtype(at::ScalarType::Float));
  return std::make_tuple(q, scale);
}

/// The grouped ops' output: [total_M, N] (stacked, XQ [total_M, K]) or [G, M_max, N] (padded,
/// XQ [G, M_max, K]), with N from WQ [G, N, K] or preshuffled [G, ceil(K/128), N/8, 1024].
at::Tensor meta_grouped(const char* op, const at::Tensor& XQ, const at::Tensor& WQ,
                        WeightLayout layout, bool padded) {
  const int64_t w_rank = layout == WeightLayout::kPlain ? 3 : 4;
  if (WQ.dim() != w_rank) {
    C10_THROW_ERROR(ValueError,
                    c10::str("f8gemm.", op, ": invalid argument: WQ must be ", w_rank, "-D ",
                             layout == WeightLayout::kPlain
                                 ? "[G, N, K] (a plain weight)"
                                 : "preshuffled [G, ceil(K/128), N/8, 1024]",
                             ", got ", WQ.dim(), "-D",
                             layout == WeightLayout::kPlain && WQ.dim() == 4
                                 ? " (use the _preshuffled op)"
                             : layout == WeightLayout::kPreshuffled && WQ.dim() == 3
                                 ? " (WQ looks like a plain weight: pass "
                                   "torch.ops.f8gemm.preshuffle(WQ))"
                                 : ""));
  }
  const c10::SymInt n = layout == WeightLayout::kPlain
                            ? WQ.sym_size(1)
                            : WQ.sym_size(2) * f8gemm::kShuffleSlabRows;
  const int64_t x_rank = padded ? 3 : 2;
  if (XQ.dim() != x_rank) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.", op, ": invalid argument: XQ must be ", x_rank,
                                         "-D ", padded ? "[G, M_max, K]" : "[total_M, K]",
                                         ", got ", XQ.dim(), "-D"));
  }
  std::vector<c10::SymInt> shape = {XQ.sym_size(0)};
  if (padded) shape.push_back(XQ.sym_size(1));
  shape.push_back(n);
  return at::empty_symint(shape, XQ.options().dtype(at::ScalarType::BFloat16));
}

at::Tensor grouped_stacked_meta(const at::Tensor& XQ, const at::Tensor& WQ, const at::Tensor&,
                                const at::Tensor&, const at::Tensor&) {
  return meta_grouped("f8f8bf16_rowwise_grouped_stacked", XQ, WQ, WeightLayout::kPlain, false);
}

at::Tensor grouped_stacked_preshuffled_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                            const at::Tensor&, const at::Tensor&,
                                            const at::Tensor&) {
  return meta_grouped("f8f8bf16_rowwise_grouped_stacked_preshuffled", XQ, WQ,
                      WeightLayout::kPreshuffled, false);
}

void grouped_stacked_out_meta(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                              const at::Tensor&, const at::Tensor&, const at::Tensor&,
                              const std::optional<at::Tensor>&, bool) {}

at::Tensor grouped_dynamic_meta(const at::Tensor& XQ, const at::Tensor& WQ, const at::Tensor&,
                                const at::Tensor&, const at::Tensor&, bool) {
  return meta_grouped("f8f8bf16_rowwise_grouped_dynamic", XQ, WQ, WeightLayout::kPlain, true);
}

at::Tensor grouped_dynamic_preshuffled_meta(const at::Tensor& XQ, const at::Tensor& WQ,
                                            const at::Tensor&, const at::Tensor&,
                                            const at::Tensor&, bool) {
  return meta_grouped("f8f8bf16_rowwise_grouped_dynamic_preshuffled", XQ, WQ,
                      WeightLayout::kPreshuffled, true);
}

}  // namespace
}  // namespace f8gemm_torch

TORCH_LIBRARY_IMPL(f8gemm, Meta, m) {
  m.impl("f8f8bf16_rowwise_grouped_stacked", TORCH_FN(f8gemm_torch::grouped_stacked_meta));
  m.impl("f8f8bf16_rowwise_grouped_stacked_preshuffled",
         TORCH_FN(f8gemm_torch::grouped_stacked_preshuffled_meta));
  m.impl("f8f8bf16_rowwise_grouped_stacked_out", TORCH_FN(f8gemm_torch::grouped_stacked_out_meta));
  m.impl("f8f8bf16_rowwise_grouped_stacked_preshuffled_out",
         TORCH_FN(f8gemm_torch::grouped_stacked_out_meta));
  m.impl("f8f8bf16_rowwise_grouped_dynamic", TORCH_FN(f8gemm_torch::grouped_dynamic_meta));
  m.impl("f8f8bf16_rowwise_grouped_dynamic_preshuffled",
         TORCH_FN(f8gemm_torch::grouped_dynamic_preshuffled_meta));
  m.impl("f8f8bf16_rowwise", TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_meta));
  m.impl("f8f8bf16_rowwise_out", TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_out_meta));
  m.impl("f8f8f16_rowwise", TORCH_FN(f8gemm_torch::f8f8f16_rowwise_meta));
  m.impl("_rowwise_batched", TORCH_FN(f8gemm_torch::rowwise_batched_meta));
  m.impl("_rowwise_batched_out", TORCH_FN(f8gemm_torch::rowwise_batched_out_meta));
  m.impl("f8f8bf16_rowwise_preshuffled",
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_preshuffled_meta));
  m.impl("f8f8bf16_rowwise_preshuffled_out",
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_preshuffled_out_meta));
  m.impl("f8f8f16_rowwise_preshuffled", TORCH_FN(f8gemm_torch::f8f8f16_rowwise_preshuffled_meta));
  m.impl("f8f8bf16_rowwise_silu_mul", TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_silu_mul_meta));
  m.impl("f8f8bf16_rowwise_preshuffled_silu_mul",
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_preshuffled_silu_mul_meta));
  m.impl("preshuffle", TORCH_FN(f8gemm_torch::preshuffle_meta));
  m.impl("unshuffle", TORCH_FN(f8gemm_torch::unshuffle_meta));
  m.impl("quantize_fp8_row", TORCH_FN(f8gemm_torch::quantize_fp8_row_meta));
  m.impl("f8f8bf16_rowwise_preshuffle",
         TORCH_FN(f8gemm_torch::f8f8bf16_rowwise_preshuffled_meta));
  m.impl("f8f8f16_rowwise_preshuffle", TORCH_FN(f8gemm_torch::f8f8f16_rowwise_preshuffled_meta));
}
