/// \brief The preshuffled weight layout's host side: preshuffle() and unshuffle() with their
/// checks, on the host (numerics::preshuffle_host) or on the GPU (kernels/preshuffle.cuh).
#include <algorithm>

#include "check.hpp"
#include "codegen.hpp"
#include "device.hpp"
#include "numerics.hpp"
#include "validate.hpp"

namespace f8gemm {

namespace {

/// Grid-stride launch of a utility kernel on `stream`.
void launch_util(int device, const char* name, int64_t work, void** args, cudaStream_t stream) {
  const auto& props = detail::require_sm90(device);
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((work + threads - 1) / threads, props.sm_count * 8LL);
  if (blocks == 0) return;
  detail::DeviceGuard guard(device);  // before the kernel lookup, a runtime call (launch.cpp)
  auto instance = detail::util_instance();
  cudaKernel_t kernel = instance->kernel(name);
  F8GEMM_CHECK_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(unsigned(blocks)),
                                     dim3(threads), args, 0, stream));
  F8GEMM_CHECK_CUDA(cudaGetLastError());
}

/// The default name of the preshuffled operand of preshuffle() and unshuffle().
constexpr const char* kShuffledName = "the preshuffled weight";

struct ShuffleDims {
  int64_t batch, n, k;
};

/// Checks a plain [B,N,K]/[N,K] and a preshuffled [B,KB,N/8,1024]/[KB,N/8,1024] pair.
ShuffleDims check_shuffle_pair(const TensorView& plain, const char* plain_name,
                               const TensorView& shuffled, const char* shuffled_name) {
  const std::string pn = plain_name;
  const std::string sn = shuffled_name;
  F8GEMM_REQUIRE(plain.dtype == DType::kE4M3 || plain.dtype == DType::kU8, kInvalidArgument,
                 pn, " must be float8_e4m3fn (or uint8), got ", to_string(plain.dtype));
  F8GEMM_REQUIRE(shuffled.dtype == DType::kE4M3 || shuffled.dtype == DType::kU8, kInvalidArgument,
                 sn, " must be float8_e4m3fn (or uint8), got ",
                 to_string(shuffled.dtype));
  detail::require_view(plain, plain_name);
  detail::require_view(shuffled, shuffled_name);
  F8GEMM_REQUIRE(plain.rank == 2 || plain.rank == 3, kInvalidArgument,
                 pn, " must be [N, K] or [B, N, K], got rank ", plain.rank);
  ShuffleDims d;
  const bool batched = plain.rank == 3;
  d.batch = batched ? plain.shape[0] : 1;
  d.n = plain.shape[plain.rank - 2];
  d.k = plain.shape[plain.rank - 1];
  F8GEMM_REQUIRE(d.n > 0 && d.n % 8 == 0, kInvalidArgument,
                 "N (", pn, "'s rows) must be a positive multiple of 8, got ", d.n);
  F8GEMM_REQUIRE(d.k > 0 && d.k % 16 == 0, kInvalidArgument, "K (", pn,
                 "'s last dimension) must be a positive multiple of 16, got ", d.k);
  const auto want = preshuffled_shape(d.batch, d.n, d.k);
  bool ok = shuffled.rank == (batched ? 4 : 3);
  for (int i = 0; ok && i < shuffled.rank; ++i) ok = shuffled.shape[i] == want[i + (batched ? 0 : 1)];
  F8GEMM_REQUIRE(ok, kInvalidArgument, sn, " must have shape ",
                 batched ? "[B, " : "[", (d.k + 127) / 128, ", ", d.n / 8, ", 1024] for ", pn, " of N=",
                 d.n, " K=", d.k);
  detail::require_contiguous(plain, plain_name, 16);
  detail::require_contiguous(shuffled, shuffled_name, 16);
  detail::require_same_place(plain, plain_name, shuffled, shuffled_name);
  return d;
}

}  // namespace

std::vector<int64_t> preshuffled_shape(int64_t batch, int64_t n, int64_t k) {
  F8GEMM_REQUIRE(batch >= 0, kInvalidArgument, "preshuffled_shape: batch must be >= 0, got ",
                 batch);
  F8GEMM_REQUIRE(n >= 0, kInvalidArgument, "preshuffled_shape: n must be >= 0, got ", n);
  F8GEMM_REQUIRE(k >= 0, kInvalidArgument, "preshuffled_shape: k must be >= 0, got ", k);
  // ceil(K/128) without K + 127, which passes int64 for K near 2^63.
  return {batch, detail::known_ceil_div(k, kShuffleBlockK), n / kShuffleSlabRows,
          kShuffleSlabBytes};
}

namespace {

ShuffleDims checked_preshuffle(const TensorView& w, const TensorView& out,
                               const ShuffleArgNames& names) {
  const char* plain_name = names.plain ? names.plain : "w";
  const char* shuffled_name = names.shuffled ? names.shuffled : kShuffledName;
  ShuffleDims d = check_shuffle_pair(w, plain_name, out, shuffled_name);
  detail::require_disjoint(out, shuffled_name, w, plain_name);
  return d;
}

ShuffleDims checked_unshuffle(const TensorView& shuffled, const TensorView& out,
                              const ShuffleArgNames& names) {
  const char* plain_name = names.plain ? names.plain : "out";
  const char* shuffled_name = names.shuffled ? names.shuffled : kShuffledName;
  ShuffleDims d = check_shuffle_pair(out, plain_name, shuffled, shuffled_name);
  detail::require_disjoint(out, plain_name, shuffled, shuffled_name);
  return d;
}

}  // namespace

void check_preshuffle(const TensorView& w, const TensorView& out, const ShuffleArgNames& names) {
  (void)checked_preshuffle(w, out, names);
}

void check_unshuffle(const TensorView& shuffled, const TensorView& out,
                     const ShuffleArgNames& names) {
  (void)checked_unshuffle(shuffled, out, names);
}

void preshuffle(const TensorView& w, const TensorView& out, cudaStream_t stream,
                const ShuffleArgNames& names) {
  ShuffleDims d = checked_preshuffle(w, out, names);
  if (w.device == kHost) {
    numerics::preshuffle_host(static_cast<const uint8_t*>(w.data), d.batch, d.n, d.k,
                              static_cast<uint8_t*>(out.data));
    return;
  }
  const void* src = w.data;
  void* dst = out.data;
  void* args[] = {&src, &dst, &d.batch, &d.n, &d.k};
  launch_util(w.device, "f8gemm_preshuffle", out.numel() / 16, args, stream);
}

void unshuffle(const TensorView& shuffled, const TensorView& out, cudaStream_t stream,
               const ShuffleArgNames& names) {
  ShuffleDims d = checked_unshuffle(shuffled, out, names);
  if (out.device == kHost) {
    numerics::unshuffle_host(static_cast<const uint8_t*>(shuffled.data), d.batch, d.n, d.k,
                             static_cast<uint8_t*>(out.data));
    return;
  }
  const void* src = shuffled.data;
  void* dst = out.data;
  void* args[] = {&src, &dst, &d.batch, &d.n, &d.k};
  launch_util(out.device, "f8gemm_unshuffle", shuffled.numel() / 16, args, stream);
}

}  // namespace f8gemm
