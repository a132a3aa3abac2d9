/// \brief The schemas of every op of the PyTorch extension, in one place: TORCH_LIBRARY(f8gemm)
/// with FBGEMM's and MSLK's names, argument names and defaults, so that switching to f8gemm
/// changes one namespace. The implementations register themselves by dispatch key:
/// gemm_ops.cpp, grouped_ops.cpp, weight_ops.cpp, quantize_ops.cpp and fused_ops.cpp (CUDA and
/// CPU),
/// precompile_ops.cpp (CompositeExplicitAutograd), meta_ops.cpp (Meta), autograd_ops.cpp
/// (Autograd: no op has a derivative, and backward says so).
///
/// Every GEMM op (not the grouped ones), quantize_fp8_row and silu_mul_quantize_fp8_row take
/// our own `bool? pdl=None`, after FBGEMM's arguments so that its call sites keep working:
/// programmatic dependent launch for this call (True), never (False), or the library's default
/// (None: the F8GEMM_PDL switch, off when unset; binding.hpp to_pdl). The grouped ops keep
/// FBGEMM's schemas unchanged: they follow the switch.
///
/// The single preshuffled GEMMs (f8f8bf16_rowwise_preshuffled, its _out form,
/// f8f8f16_rowwise_preshuffled and the two ROCm names) then end with `bool prefetch_w=False`:
/// True vouches that no kernel still running when the GEMM starts writes WQ, so that with PDL
/// the GEMM loads its first ring slots of WQ before it waits for the previous kernel
/// (GemmOptions::prefetch_w says when that holds); without PDL it changes nothing.
///
/// Loaded from Python with torch.ops.load_library (no Python.h here). f8gemm::Error becomes
/// ValueError for ErrorCode::kInvalidArgument and RuntimeError otherwise.
#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include <vector>

TORCH_LIBRARY(f8gemm, m) {
  // Inductor hands these ops contiguous inputs (the library validates, it never copies).
  const std::vector<at::Tag> tags = {at::Tag::needs_contiguous_strides};
  m.def("f8f8bf16_rowwise(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor? bias=None, bool use_fast_accum=True, bool? pdl=None) -> Tensor", tags);
  m.def("f8f8bf16_rowwise_out(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor(a!) output, Tensor? bias=None, bool use_fast_accum=True, bool? pdl=None) -> ()");
  m.def("f8f8f16_rowwise(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor? bias=None, bool use_fast_accum=True, bool? pdl=None) -> Tensor", tags);
  m.def("f8f8bf16_rowwise_batched(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor? bias=None, bool use_fast_accum=True, Tensor(a!)? output=None, "
        "bool? pdl=None) -> Tensor");
  m.def("f8f8bf16_rowwise_preshuffled(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor? bias=None, bool use_fast_accum=True, bool? pdl=None, "
        "bool prefetch_w=False) -> Tensor", tags);
  m.def("f8f8bf16_rowwise_preshuffled_out(Tensor XQ, Tensor WQ, Tensor x_scale, "
        "Tensor w_scale, Tensor(a!) output, Tensor? bias=None, bool use_fast_accum=True, "
        "bool? pdl=None, bool prefetch_w=False) -> ()");
  m.def("f8f8f16_rowwise_preshuffled(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor? bias=None, bool use_fast_accum=True, bool? pdl=None, "
        "bool prefetch_w=False) -> Tensor", tags);
  m.def("f8f8bf16_rowwise_batched_preshuffled(Tensor XQ, Tensor WQ, Tensor x_scale, "
        "Tensor w_scale, Tensor? bias=None, bool use_fast_accum=True, "
        "Tensor(a!)? output=None, bool? pdl=None) -> Tensor");
  m.def("preshuffle(Tensor WQ) -> Tensor", tags);
  m.def("unshuffle(Tensor WQ_shuffled, int K) -> Tensor", tags);
  // Internal: the two forms behind the batched ops (see batched_composite).
  m.def("_rowwise_batched(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, Tensor? bias, "
        "bool use_fast_accum, bool preshuffled, bool? pdl=None) -> Tensor", tags);
  m.def("_rowwise_batched_out(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor(a!) output, Tensor? bias, bool use_fast_accum, bool preshuffled, "
        "bool? pdl=None) -> ()");
  m.def("quantize_fp8_row(Tensor a, Tensor? scale_ub=None, bool use_triton=True, "
        "Tensor(a!)? output=None, bool? pdl=None) -> (Tensor, Tensor)");
  // pdl and prefetch_w as the single GEMM will be called with them: with prefetch_w and PDL
  // on, a call has a plan of its own (f8gemm::ProblemShape::chained).
  m.def("precompile(int[] shape, str layout='preshuffled', bool use_fast_accum=True, "
        "ScalarType? out_dtype=None, ScalarType? bias_dtype=None, Device? device=None, "
        "str epilogue='none', bool? pdl=None, bool prefetch_w=False) -> ()");
  // shape: [G, total_M, N, K] (stacked), or [G, M_max, N, K] with padded=True.
  m.def("precompile_grouped(int[] shape, str layout='preshuffled', bool padded=False, "
        "bool use_fast_accum=True, ScalarType? bias_dtype=None, Device? device=None) -> ()");
  // FBGEMM's ROCm names for its preshuffled GEMMs, same schemas. Only the names are shared: the
  // weight layouts differ between vendors, so WQ must come from torch.ops.f8gemm.preshuffle.
  m.def("f8f8bf16_rowwise_preshuffle(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor? bias=None, bool use_fast_accum=True, bool? pdl=None, "
        "bool prefetch_w=False) -> Tensor", tags);
  m.def("f8f8f16_rowwise_preshuffle(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor? bias=None, bool use_fast_accum=True, bool? pdl=None, "
        "bool prefetch_w=False) -> Tensor", tags);
  // Grouped GEMMs for mixture-of-experts (grouped_ops.cpp), FBGEMM's schemas. The sizes stay on
  // the GPU and are clamped there (negative -> 0, clipped at total_M or M_max): XQ [total_M, K]
  // stacked by group with M_sizes [G], or XQ [G, M_max, K] with zero_start_index_M [G] (the
  // rows in use of each group); WQ [G, N, K], or preshuffle(WQ) for the _preshuffled forms.
  m.def("f8f8bf16_rowwise_grouped_stacked(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor M_sizes) -> Tensor", tags);
  m.def("f8f8bf16_rowwise_grouped_stacked_preshuffled(Tensor XQ, Tensor WQ, Tensor x_scale, "
        "Tensor w_scale, Tensor M_sizes) -> Tensor", tags);
  m.def("f8f8bf16_rowwise_grouped_dynamic(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor zero_start_index_M, bool zeroing_output_tensor=True) -> Tensor", tags);
  m.def("f8f8bf16_rowwise_grouped_dynamic_preshuffled(Tensor XQ, Tensor WQ, Tensor x_scale, "
        "Tensor w_scale, Tensor zero_start_index_M, bool zeroing_output_tensor=True) -> Tensor",
        tags);
  // Ours: the stacked form into a given output (no allocation, e.g. in a CUDA graph), with a
  // bias [G, N] and the accumulation mode.
  m.def("f8f8bf16_rowwise_grouped_stacked_out(Tensor XQ, Tensor WQ, Tensor x_scale, "
        "Tensor w_scale, Tensor M_sizes, Tensor(a!) output, Tensor? bias=None, "
        "bool use_fast_accum=True) -> ()");
  m.def("f8f8bf16_rowwise_grouped_stacked_preshuffled_out(Tensor XQ, Tensor WQ, Tensor x_scale, "
        "Tensor w_scale, Tensor M_sizes, Tensor(a!) output, Tensor? bias=None, "
        "bool use_fast_accum=True) -> ()");
  // The gated MLP's gate|up GEMM with SiLU(gate) * up in its epilogue (gemm_ops.cpp):
  // WQ is [gate; up] (2I rows, plain [2I, K] or preshuffle of it), the output [..., I] bf16
  // (f8gemm::EpilogueOp::kSiluMul). Ours: FBGEMM has no such op.
  m.def("f8f8bf16_rowwise_silu_mul(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
        "Tensor? bias=None, bool use_fast_accum=True, bool? pdl=None) -> Tensor", tags);
  m.def("f8f8bf16_rowwise_preshuffled_silu_mul(Tensor XQ, Tensor WQ, Tensor x_scale, "
        "Tensor w_scale, Tensor? bias=None, bool use_fast_accum=True, bool? pdl=None, "
        "bool prefetch_w=False) -> Tensor", tags);
  // The fused activation of a gated MLP (fused_ops.cpp).
  m.def("silu_mul_quantize_fp8_row(Tensor gate_up, Tensor? scale_ub=None, bool? pdl=None) -> "
        "(Tensor, Tensor)", tags);
  m.def("info() -> str");
  m.def("preshuffle_layout_version() -> int");
}
