/// \brief Launches the fp64 reference check kernel (kernels/reference_check.cuh).
#include "reference_gpu.hpp"

#include <climits>
#include <cmath>

#include "check.hpp"
#include "codegen.hpp"
#include "device.hpp"

namespace f8gemm::detail {

std::string reference_check_unfit(int64_t b, int64_t m, int64_t n) {
  if (b > 65535) return concat("the fp64 reference checks at most 65535 batches, got B = ", b);
  if ((m + 15) / 16 > 65535) {
    return concat("the fp64 reference checks at most 65535 x 16 = 1048560 rows, got M = ", m);
  }
  if ((n + 15) / 16 > INT32_MAX) return concat("the fp64 reference cannot check N = ", n);
  return {};
}

CheckResult reference_check(const TensorView& x, const TensorView& w, const TensorView& xs,
                            const TensorView& ws, const TensorView* bias, const TensorView& y,
                            double gamma, cudaStream_t stream) {
  F8GEMM_REQUIRE(x.rank == 3 && w.rank == 3 && y.rank == 3, kInvalidArgument,
                 "reference_check takes x [B,M,K], w [B,N,K] and y [B,M,N]");
  const int64_t b = x.shape[0], m = x.shape[1], k = x.shape[2], n = w.shape[1];
  F8GEMM_REQUIRE(w.shape[0] == b && w.shape[2] == k && y.shape[0] == b && y.shape[1] == m &&
                     y.shape[2] == n && xs.numel() == b * m && ws.numel() == b * n,
                 kInvalidArgument, "reference_check: shapes do not match");
  const std::string unfit = reference_check_unfit(b, m, n);
  F8GEMM_REQUIRE(unfit.empty(), kInvalidArgument, "reference_check: ", unfit);
  CheckResult result;
  result.count = b * m * n;
  if (result.count == 0) return result;
  require_sm90(x.device);
  DeviceGuard guard(x.device);  // before the kernel lookup, as the library's launches
  auto instance = util_instance();
  cudaKernel_t kernel = instance->kernel("f8gemm_reference_check");
  double* stats = nullptr;
  F8GEMM_CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&stats), 4 * sizeof(double), stream));
  F8GEMM_CHECK_CUDA(cudaMemsetAsync(stats, 0, 4 * sizeof(double), stream));
  const void* xp = x.data;
  const void* wp = w.data;
  const void* xsp = xs.data;
  const void* wsp = ws.data;
  const void* biasp = bias ? bias->data : nullptr;
  int bias_kind = bias ? (bias->dtype == DType::kBF16 ? 2 : 1) : 0;
  const void* yp = y.data;
  int out_f16 = y.dtype == DType::kF16 ? 1 : 0;
  int64_t mm = m, nn = n, kk = k;
  double unit = numerics::unit_roundoff(y.dtype);
  double tiny = numerics::subnormal_slack(y.dtype);
  void* args[] = {&xp, &wp,  &xsp, &wsp, &biasp, &bias_kind, &yp,   &out_f16,
                  &mm, &nn, &kk,  &unit, &gamma, &tiny,      &stats};
  dim3 grid(unsigned((n + 15) / 16), unsigned((m + 15) / 16), unsigned(b));
  F8GEMM_CHECK_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, dim3(16, 16),
                                     args, 0, stream));
  F8GEMM_CHECK_CUDA(cudaGetLastError());
  double host[4] = {0, 0, 0, 0};
  F8GEMM_CHECK_CUDA(cudaMemcpyAsync(host, stats, sizeof(host), cudaMemcpyDeviceToHost, stream));
  F8GEMM_CHECK_CUDA(cudaFreeAsync(stats, stream));
  F8GEMM_CHECK_CUDA(cudaStreamSynchronize(stream));
  result.rel_rms = host[1] > 0 ? std::sqrt(host[0] / host[1]) : std::sqrt(host[0]);
  result.max_ratio = host[2];
  result.nonfinite = int64_t(host[3]);
  return result;
}

SiluSfuCheck silu_sfu_check(uint64_t first, uint64_t count, int device) {
  require_sm90(device);
  DeviceGuard guard(device);
  auto instance = util_instance();
  cudaKernel_t kernel = instance->kernel("f8gemm_silu_sfu_check");
  double* stats = nullptr;
  F8GEMM_CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&stats), 3 * sizeof(double)));
  F8GEMM_CHECK_CUDA(cudaMemset(stats, 0, 3 * sizeof(double)));
  unsigned long long f = first, c = count;
  void* args[] = {&f, &c, &stats};
  F8GEMM_CHECK_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(132 * 16),
                                     dim3(256), args, 0, nullptr));
  F8GEMM_CHECK_CUDA(cudaGetLastError());
  double host[3] = {0, 0, 0};
  F8GEMM_CHECK_CUDA(cudaMemcpy(host, stats, sizeof(host), cudaMemcpyDeviceToHost));
  F8GEMM_CHECK_CUDA(cudaFree(stats));
  return SiluSfuCheck{host[0], host[1], int64_t(host[2])};
}

}  // namespace f8gemm::detail
