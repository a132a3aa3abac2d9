/// \brief The weight-layout ops of the PyTorch extension (schemas in schemas.cpp): preshuffle and
/// unshuffle over f8gemm::preshuffle / f8gemm::unshuffle, on CUDA or CPU tensors.
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "binding.hpp"
#include "f8gemm/f8gemm.hpp"

namespace f8gemm_torch {
namespace {

using f8gemm::TensorView;

at::Tensor preshuffle(const at::Tensor& WQ) {
  const char* op = "preshuffle";
  if (WQ.dim() != 2 && WQ.dim() != 3) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.preshuffle: invalid argument: WQ must be [N, K] "
                                         "or [B, N, K], got shape ", WQ.sizes()));
  }
  const bool batched = WQ.dim() == 3;
  std::vector<int64_t> shape =
      f8gemm::preshuffled_shape(batched ? WQ.size(0) : 1, WQ.size(-2), WQ.size(-1));
  if (!batched) shape.erase(shape.begin());
  const TensorView w = view_of(WQ, op, "WQ", "torch.float8_e4m3fn (or torch.uint8)");
  at::Tensor out = new_empty(WQ, shape, WQ.scalar_type());
  const TensorView o = view_of(out, op, "output", "torch.float8_e4m3fn (or torch.uint8)");
  OnDevice on(WQ);
  try {
    f8gemm::preshuffle(w, o, on.stream, {"WQ", "the preshuffled output"});
  } catch (const f8gemm::Error& e) {
    rethrow(op, e);
  }
  return out;
}

at::Tensor unshuffle(const at::Tensor& WQ_shuffled, int64_t K) {
  const char* op = "unshuffle";
  if (WQ_shuffled.dim() != 3 && WQ_shuffled.dim() != 4) {
    C10_THROW_ERROR(ValueError,
                    c10::str("f8gemm.unshuffle: invalid argument: WQ_shuffled must be preshuffled "
                             "[ceil(K/128), N/8, 1024] or [B, ceil(K/128), N/8, 1024], got shape ",
                             WQ_shuffled.sizes()));
  }
  if (K <= 0 || K % 16 != 0) {
    C10_THROW_ERROR(ValueError, c10::str("f8gemm.unshuffle: invalid argument: K must be a "
                                         "positive multiple of 16, got ", K));
  }
  const bool batched = WQ_shuffled.dim() == 4;
  const int64_t n = WQ_shuffled.size(-2) * f8gemm::kShuffleSlabRows;
  std::vector<int64_t> shape = {n, K};
  if (batched) shape.insert(shape.begin(), WQ_shuffled.size(0));
  const TensorView s = view_of(WQ_shuffled, op, "WQ_shuffled", "torch.float8_e4m3fn (or torch.uint8)");
  at::Tensor out = new_empty(WQ_shuffled, shape, WQ_shuffled.scalar_type());
  const TensorView o = view_of(out, op, "output", "torch.float8_e4m3fn (or torch.uint8)");
  OnDevice on(WQ_shuffled);
  try {
    f8gemm::unshuffle(s, o, on.stream, {"the unshuffled output", "WQ_shuffled"});
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
