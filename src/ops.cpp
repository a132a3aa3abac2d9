/// \brief preshuffle / unshuffle / quantize_rows (host or device), choose_config, precompile
/// and device_info.
#include <cstdlib>

#include "check.hpp"
#include "codegen.hpp"
#include "config.hpp"
#include "device.hpp"
#include "numerics.hpp"
#include "quantize.hpp"
#include "validate.hpp"

namespace f8gemm {

namespace detail {
void prepare(const ProblemShape& problem, int device);  // gemm.cpp
}

namespace {

/// The H200's SM count: the choice that precompile() assumes on a machine without a GPU.
constexpr int kAssumedSmCount = 132;
constexpr const char* kAssumedGpu = "NVIDIA H200";


void require_same_place(const TensorView& a, const char* an, const TensorView& b, const char* bn) {
  F8GEMM_REQUIRE(a.device == b.device, kInvalidArgument, an, " and ", bn,
                 " must be in the same memory (host or one GPU)");
}

/// Grid-stride launch of a utility kernel on `stream`.
void launch_util(int device, const char* name, int64_t work, void** args, cudaStream_t stream) {
  const auto& props = detail::require_sm90(device);
  auto instance = detail::util_instance();
  cudaKernel_t kernel = instance->kernel(name);
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((work + threads - 1) / threads, props.sm_count * 8LL);
  if (blocks == 0) return;
  detail::DeviceGuard guard(device);
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
  require_same_place(plain, plain_name, shuffled, shuffled_name);
  return d;
}

}  // namespace

std::vector<int64_t> preshuffled_shape(int64_t batch, int64_t n, int64_t k) {
  return {batch, (k + kShuffleBlockK - 1) / kShuffleBlockK, n / kShuffleSlabRows,
          kShuffleSlabBytes};
}

void preshuffle(const TensorView& w, const TensorView& out, cudaStream_t stream,
                const ShuffleArgNames& names) {
  ShuffleDims d = check_shuffle_pair(w, names.plain ? names.plain : "w", out,
                                     names.shuffled ? names.shuffled : kShuffledName);
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
  ShuffleDims d = check_shuffle_pair(out, names.plain ? names.plain : "out", shuffled,
                                     names.shuffled ? names.shuffled : kShuffledName);
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

void quantize_rows(const TensorView& input, const TensorView& out_q, const TensorView& out_scale,
                   const QuantizeOptions& opt) {
  static const QuantizeArgNames kDefaultNames;
  const QuantizeArgNames& names = opt.names ? *opt.names : kDefaultNames;
  const char* in = names.input ? names.input : "input";
  const char* q = names.out_q;
  const char* s = names.out_scale;
  F8GEMM_REQUIRE(input.dtype == DType::kBF16 || input.dtype == DType::kF16 ||
                     input.dtype == DType::kF32,
                 kInvalidArgument, in, " must be bfloat16, float16 or float32, got ",
                 to_string(input.dtype));
  F8GEMM_REQUIRE(input.rank >= 1, kInvalidArgument, in, " must be [..., K]");
  F8GEMM_REQUIRE(out_q.dtype == DType::kE4M3, kInvalidArgument,
                 q, " must be float8_e4m3fn, got ", to_string(out_q.dtype));
  F8GEMM_REQUIRE(out_scale.dtype == DType::kF32, kInvalidArgument,
                 s, " must be float32, got ", to_string(out_scale.dtype));
  detail::require_view(input, in);
  detail::require_view(out_q, q);
  detail::require_view(out_scale, s);
  bool q_ok = out_q.rank == input.rank;
  for (int i = 0; q_ok && i < input.rank; ++i) q_ok = out_q.shape[i] == input.shape[i];
  // The C++ default reads "the input's shape"; a caller's name reads "a's shape".
  F8GEMM_REQUIRE(q_ok, kInvalidArgument, q, " must have ",
                 names.input ? detail::concat(names.input, "'s") : std::string("the input's"),
                 " shape");
  const int64_t cols = input.shape[input.rank - 1];
  const int64_t rows = cols ? input.numel() / cols : 0;
  F8GEMM_REQUIRE(out_scale.numel() == rows || (cols == 0 && out_scale.numel() == 0) ||
                     (cols == 0 && out_scale.rank == input.rank - 1),
                 kInvalidArgument, s, " must hold one value per row (", rows, "), got ",
                 out_scale.numel());
  F8GEMM_REQUIRE(opt.eps > 0.0f, kInvalidArgument, "eps must be positive, got ", opt.eps);
  F8GEMM_REQUIRE(rows <= INT32_MAX, kInvalidArgument, "too many rows: ", rows);
  detail::require_contiguous(input, in, dtype_size(input.dtype));
  detail::require_contiguous(out_q, q, 1);
  detail::require_contiguous(out_scale, s, 4);
  require_same_place(input, in, out_q, q);
  require_same_place(input, in, out_scale, s);
  if (rows == 0 || cols == 0) return;
  detail::quantize_rows_checked(input, rows, cols, out_q, out_scale, opt);
}

Config choose_config(const ProblemShape& problem) {
  validate_problem(problem);
  int device = 0;
  F8GEMM_CHECK_CUDA(cudaGetDevice(&device));
  const auto& props = detail::require_sm90(device);
  return detail::decide(props.name, props.sm_count, problem);
}

void precompile(const std::vector<ProblemShape>& problems) {
  // Every problem is checked before the first compile: a bad one in a list fails fast, and
  // sizes past the kernel's int32 limits never reach the cost model or NVRTC.
  for (const ProblemShape& p : problems) validate_problem(p);
  std::string gpu = kAssumedGpu;
  int sms = kAssumedSmCount;
  int device = -1;
  try {
    int current = 0;
    if (cudaGetDevice(&current) == cudaSuccess) {
      const auto& props = detail::require_sm90(current);
      gpu = props.name;
      sms = props.sm_count;
      device = current;
    }
  } catch (const Error&) {
    // No usable sm_90 GPU here: compile for the H200 that serving will run on.
  }
  cudaGetLastError();
  for (const ProblemShape& p : problems) {
    if (device >= 0) {
      detail::prepare(p, device);  // compiled, loaded and attributes set: is_ready() holds
    } else {
      detail::gemm_instance(detail::make_spec(detail::decide(gpu, sms, p), p));
    }
  }
  auto util = detail::util_instance();
  if (device >= 0) util->kernel("f8gemm_quantize_bf16");
}

DeviceInfo device_info() {
  DeviceInfo info;
  nvrtcVersion(&info.nvrtc_major, &info.nvrtc_minor);
  info.cache_dir = jit::cache_dir();
  info.cache_problem = jit::cache_problem();
  cudaRuntimeGetVersion(&info.runtime_version);
  cudaDriverGetVersion(&info.driver_version);
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    cudaGetLastError();
    info.reason = status != cudaSuccess ? cudaGetErrorString(status) : "no CUDA device found";
    return info;
  }
  int device = 0;
  cudaGetDevice(&device);
  const auto& props = detail::device_props(device);
  info.has_device = true;
  info.device = device;
  info.name = props.name;
  info.sm_count = props.sm_count;
  info.cc_major = props.cc_major;
  info.cc_minor = props.cc_minor;
  if (props.cc_major != 9 || props.cc_minor != 0) {
    info.reason = "not an sm_90 GPU: f8gemm's kernels will not run here";
  }
  return info;
}

}  // namespace f8gemm
