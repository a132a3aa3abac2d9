/// \brief The weight-layout ops of the PyTorch extension (schemas in schemas.cpp): preshuffle and
/// unshuffle over f8gemm::preshuffle / f8gemm::unshuffle, on CUDA or CPU tensors, and the shape
/// rules that their Meta kernels (meta_ops.cpp) share with them.
#include <ATen/core/Tensor.h>
#include <c10/core/SymInt.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "binding.hpp"
#include "f8gemm/f8gemm.hpp"
#include "op_rules.hpp"

namespace f8gemm_torch {

namespace {

using f8gemm::TensorView;

[[noreturn]] void invalid(const char* op, const std::string& message) {
  C10_THROW_ERROR(ValueError, c10::str("f8gemm.", op, ": invalid argument: ", message));
}

/// A weight byte is float8_e4m3fn or uint8 (the library's rule; its names, as its messages say).
void require_weight_bytes(const char* op, const char* name, const at::Tensor& t) {
  const at::ScalarType s = t.scalar_type();
  if (s != at::ScalarType::Float8_e4m3fn && s != at::ScalarType::Byte) {
    invalid(op, c10::str(name, " must be float8_e4m3fn (or uint8), got ", bare_dtype_name(s)));
  }
}

/// N and K of a plain weight, as the library requires them (weights.cpp check_shuffle_pair):
/// N a positive multiple of 8 (a slab's rows), K of 16 (TMA moves 16-byte rows).
void require_plain_sizes(const char* op, const std::string& n_what, const c10::SymInt& n,
                         const std::string& k_what, const c10::SymInt& k) {
  if (n <= 0 || n % f8gemm::kShuffleSlabRows != 0) {
    invalid(op, c10::str(n_what, " must be a positive multiple of 8, got ", n));
  }
  if (k <= 0 || k % 16 != 0) {
    invalid(op, c10::str(k_what, " must be a positive multiple of 16, got ", k));
  }
}

/// An output shape of preshuffle or unshuffle whose sizes are all known must count at most 2^63
/// elements (its zero sizes aside, as the library counts a view's): torch's Meta kernel
/// otherwise failed in its own stride arithmetic ("Stride calculation overflowed") or wrapped
/// N, where the real kernel refused the input. Shared by both kernels, through the shape
/// functions below.
void require_output_fits(const char* op, const std::vector<c10::SymInt>& shape) {
  int64_t product = 1;
  for (const c10::SymInt& s : shape) {
    const std::optional<int64_t> size = s.maybe_as_int();
    if (!size) return;  // symbolic: judged where it is known
    if (*size == 0) continue;
    if (__builtin_mul_overflow(product, *size, &product)) {
      invalid(op, c10::str("the output would have more than 2^63 elements: shape ",
                           c10::SymIntArrayRef(shape)));
    }
  }
}

std::vector<int64_t> concrete(const std::vector<c10::SymInt>& shape) {
  std::vector<int64_t> sizes;
  for (const c10::SymInt& s : shape) sizes.push_back(s.expect_int());
  return sizes;
}

}  // namespace

/// preshuffle's output shape after its checks: WQ [N, K] or [B, N, K], float8_e4m3fn or uint8,
/// N % 8 == 0, K % 16 == 0 (else ValueError) gives [ceil(K/128), N/8, 1024] (or [B, ...]). The
/// CPU/CUDA kernel and the Meta kernel both call it (symbolic sizes allowed), so a Meta kernel
/// accepts what the real one accepts: no N that N/8 would round down.
std::vector<c10::SymInt> preshuffle_shape(const at::Tensor& WQ) {
  const char* op = "preshuffle";
  if (WQ.dim() != 2 && WQ.dim() != 3) {
    invalid(op, c10::str("WQ must be [N, K] or [B, N, K], got shape ", WQ.sym_sizes()));
  }
  require_weight_bytes(op, "WQ", WQ);
  const c10::SymInt n = WQ.sym_size(-2);
  const c10::SymInt k = WQ.sym_size(-1);
  require_plain_sizes(op, "N (WQ's rows)", n, "K (WQ's last dimension)", k);
  // ceil(K / 128) as (K - 1) / 128 + 1 (K > 0 here): K + 127 overflows int64 for K near its top.
  std::vector<c10::SymInt> shape = {(k - 1) / f8gemm::kShuffleBlockK + 1,
                                    n / f8gemm::kShuffleSlabRows,
                                    c10::SymInt(f8gemm::kShuffleSlabBytes)};
  if (WQ.dim() == 3) shape.insert(shape.begin(), WQ.sym_size(0));
  require_output_fits(op, shape);
  return shape;
}

/// unshuffle's output shape after its checks, shared with the Meta kernel as preshuffle_shape
/// is: WQ_shuffled [ceil(K/128), N/8, 1024] (or [B, ...]), float8_e4m3fn or uint8, with K a
/// positive multiple of 16 and N > 0, gives [N, K] (or [B, N, K]).
std::vector<c10::SymInt> unshuffle_shape(const at::Tensor& WQ_shuffled, int64_t K) {
  const char* op = "unshuffle";
  const int64_t rank = WQ_shuffled.dim();
  if (rank != 3 && rank != 4) {
    invalid(op, c10::str("WQ_shuffled must be preshuffled [ceil(K/128), N/8, 1024] or "
                         "[B, ceil(K/128), N/8, 1024], got shape ", WQ_shuffled.sym_sizes()));
  }
  require_weight_bytes(op, "WQ_shuffled", WQ_shuffled);
  // N = 8 x the slab count, which must not overflow int64 (a tensor with a 0 dimension may
  // have any other size).
  const c10::SymInt slabs = WQ_shuffled.sym_size(-2);
  if (slabs > std::numeric_limits<int64_t>::max() / f8gemm::kShuffleSlabRows) {
    invalid(op, c10::str("WQ_shuffled's N/8 dimension is ", slabs, ": N = 8 x that is past 2^63"));
  }
  const c10::SymInt n = slabs * f8gemm::kShuffleSlabRows;
  require_plain_sizes(op, "N (8 x WQ_shuffled's N/8 dimension)", n, "K", c10::SymInt(K));
  // The library's ceil(K / 128) (no K + 127, which overflows int64 for K near its top).
  const int64_t k_blocks = f8gemm::preshuffled_shape(1, 0, K)[1];
  if (WQ_shuffled.sym_size(-3) != k_blocks ||
      WQ_shuffled.sym_size(-1) != f8gemm::kShuffleSlabBytes) {
    invalid(op, c10::str("WQ_shuffled must have shape ", rank == 4 ? "[B, " : "[", k_blocks, ", ",
                         WQ_shuffled.sym_size(-2), ", ", f8gemm::kShuffleSlabBytes, "] for K=", K,
                         ", got ", WQ_shuffled.sym_sizes(),
                         " (K must be the plain weight's, as passed to preshuffle)"));
  }
  std::vector<c10::SymInt> shape = {n, c10::SymInt(K)};
  if (rank == 4) shape.insert(shape.begin(), WQ_shuffled.sym_size(0));
  require_output_fits(op, shape);
  return shape;
}

namespace {

at::Tensor preshuffle(const at::Tensor& WQ) {
  const char* op = "preshuffle";
  const std::vector<int64_t> shape = concrete(preshuffle_shape(WQ));
  const TensorView w = view_of(WQ, op, "WQ", "torch.float8_e4m3fn (or torch.uint8)");
  const f8gemm::ShuffleArgNames names{"WQ", "the preshuffled output"};
  try {  // every check before the output exists (an expanded WQ: one as large as its shape)
    f8gemm::check_preshuffle(
        w, unallocated_output_view(c10::fromIntArrayRefSlow(shape), WQ.scalar_type(), w.device),
        names);
  } catch (const f8gemm::Error& e) {
    rethrow(op, e);
  }
  at::Tensor out = new_empty(WQ, shape, WQ.scalar_type());
  const TensorView o = view_of(out, op, "output", "torch.float8_e4m3fn (or torch.uint8)");
  OnDevice on(WQ);
  try {
    f8gemm::preshuffle(w, o, on.stream, names);
  } catch (const f8gemm::Error& e) {
    rethrow(op, e);
  }
  return out;
}

at::Tensor unshuffle(const at::Tensor& WQ_shuffled, int64_t K) {
  const char* op = "unshuffle";
  const std::vector<int64_t> shape = concrete(unshuffle_shape(WQ_shuffled, K));
  const TensorView s = view_of(WQ_shuffled, op, "WQ_shuffled", "torch.float8_e4m3fn (or torch.uint8)");
  const f8gemm::ShuffleArgNames names{"the unshuffled output", "WQ_shuffled"};
  try {  // every check before the output exists
    f8gemm::check_unshuffle(
        s,
        unallocated_output_view(c10::fromIntArrayRefSlow(shape), WQ_shuffled.scalar_type(),
                                s.device),
        names);
  } catch (const f8gemm::Error& e) {
    rethrow(op, e);
  }
  at::Tensor out = new_empty(WQ_shuffled, shape, WQ_shuffled.scalar_type());
  const TensorView o = view_of(out, op, "output", "torch.float8_e4m3fn (or torch.uint8)");
  OnDevice on(WQ_shuffled);
  try {
    f8gemm::unshuffle(s, o, on.stream, names);
  } catch (const f8gemm::Error& e) {
    rethrow(op, e);
  }
  return out;
}

}  // namespace
}  // namespace f8gemm_torch

TORCH_LIBRARY_IMPL(f8gemm, CUDA, m) {
  m.impl("preshuffle", TORCH_FN(f8gemm_torch::preshuffle));
  m.impl("unshuffle", TORCH_FN(f8gemm_torch::unshuffle));
}

TORCH_LIBRARY_IMPL(f8gemm, CPU, m) {
  m.impl("preshuffle", TORCH_FN(f8gemm_torch::preshuffle));
  m.impl("unshuffle", TORCH_FN(f8gemm_torch::unshuffle));
}
