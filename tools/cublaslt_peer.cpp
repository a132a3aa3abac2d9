/// \brief cuBLASLt FP8 peer: rowwise (outer-vector) scaled GEMM per batch, and tensorwise for PEAK.
#include "cublaslt_peer.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "buffer_bytes.hpp"
#include "f8gemm/check.hpp"

namespace f8gemm::cli {
namespace {

[[noreturn]] void throw_cublas(cublasStatus_t status, const char* expr, int line) {
  throw Error(ErrorCode::kCuda,
              detail::concat("cuBLASLt ", cublasLtGetStatusName(status), " (",
                             cublasLtGetStatusString(status), ") in ", expr,
                             " at cublaslt_peer.cpp:", line));
}

/// Runs a cuBLASLt call; NOT_SUPPORTED is returned to the caller, every other failure throws.
#define F8GEMM_CUBLAS_TRY(expr)                                                   \
  [&]() -> cublasStatus_t {                                                       \
    cublasStatus_t f8gemm_st_ = (expr);                                           \
    if (f8gemm_st_ != CUBLAS_STATUS_SUCCESS && f8gemm_st_ != CUBLAS_STATUS_NOT_SUPPORTED) { \
      throw_cublas(f8gemm_st_, #expr, __LINE__);                                  \
    }                                                                             \
    return f8gemm_st_;                                                            \
  }()

/// The largest power of two (up to 256, cuBLASLt's default assumption) dividing every pointer
/// base + i * stride_bytes for i < count.
uint32_t min_alignment(const void* base, int64_t stride_bytes, int64_t count) {
  uint64_t bits = reinterpret_cast<uintptr_t>(base) | 256u;
  if (count > 1) bits |= static_cast<uint64_t>(stride_bytes);
  return static_cast<uint32_t>(bits & (~bits + 1));
}

enum class ScaleKind : int { kRowwise = 0, kTensorwise = 1 };

}  // namespace

struct CublasLtPeer::Impl {
  /// Descriptors and the chosen algorithm for one problem; reason is set when it cannot run.
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    std::string reason;  // "" when runnable

    Plan() = default;
    Plan(const Plan&) = delete;
    Plan& operator=(const Plan&) = delete;
    ~Plan() {
      if (d != nullptr) (void)cublasLtMatrixLayoutDestroy(d);
      if (b != nullptr) (void)cublasLtMatrixLayoutDestroy(b);
      if (a != nullptr) (void)cublasLtMatrixLayoutDestroy(a);
      if (desc != nullptr) (void)cublasLtMatmulDescDestroy(desc);
    }
  };

  // The one size that `bench`'s memory check counts (buffer_bytes.hpp).
  static constexpr size_t kWorkspaceBytes = static_cast<size_t>(kCublasLtWorkspaceBytes);

  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  using Key = std::tuple<int, int64_t, int64_t, int64_t, bool, uint32_t, uint32_t, uint32_t>;
  std::map<Key, std::unique_ptr<Plan>> plans;

  ~Impl() {
    plans.clear();
    if (workspace != nullptr) (void)cudaFree(workspace);
    if (handle != nullptr) (void)cublasLtDestroy(handle);
  }

  /// Builds (once) the plan for a row-major Y[M,N] = X[M,K] W[N,K]^T, i.e. the column-major
  /// D[N,M] = op(A) op(B) with A = W (K x N col-major, transposed: the TN form FP8 on Hopper
  /// requires) and B = X (K x M col-major). So cuBLASLt's m is our N and its n is our M.
  Plan& plan(ScaleKind kind, int64_t m, int64_t n, int64_t k, bool fast_accum, uint32_t align_a,
             uint32_t align_b, uint32_t align_d, const float* a_scale, const float* b_scale) {
    Key key{static_cast<int>(kind), m, n, k, fast_accum, align_a, align_b, align_d};
    auto it = plans.find(key);
    if (it != plans.end()) return *it->second;
    auto p = std::make_unique<Plan>();
    Plan& pl = *p;
    plans.emplace(key, std::move(p));

    auto unsupported = [&](const std::string& why) -> Plan& {
      pl.reason = "unsupported: " + why;
      return pl;
    };
    auto set_desc = [&](cublasLtMatmulDescAttributes_t attr, const void* value, size_t size) {
      return F8GEMM_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(pl.desc, attr, value, size));
    };

    if (F8GEMM_CUBLAS_TRY(cublasLtMatmulDescCreate(&pl.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F)) !=
        CUBLAS_STATUS_SUCCESS) {
      return unsupported("cublasLtMatmulDescCreate returned CUBLAS_STATUS_NOT_SUPPORTED");
    }
    const int32_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
    const int8_t fast = fast_accum ? 1 : 0;
    bool ok = set_desc(CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)) ==
                  CUBLAS_STATUS_SUCCESS &&
              set_desc(CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)) ==
                  CUBLAS_STATUS_SUCCESS &&
              set_desc(CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)) ==
                  CUBLAS_STATUS_SUCCESS;
    if (ok && kind == ScaleKind::kRowwise) {
      const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
      ok = set_desc(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof(mode)) ==
               CUBLAS_STATUS_SUCCESS &&
           set_desc(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof(mode)) ==
               CUBLAS_STATUS_SUCCESS;
    }
    // The heuristic sees the scale pointers too (torch sets them before asking), so set the first
    // call's now; each call sets its own before cublasLtMatmul.
    ok = ok &&
         set_desc(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale, sizeof(a_scale)) ==
             CUBLAS_STATUS_SUCCESS &&
         set_desc(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale, sizeof(b_scale)) ==
             CUBLAS_STATUS_SUCCESS;
    if (!ok) return unsupported("a descriptor attribute returned CUBLAS_STATUS_NOT_SUPPORTED");

    const uint64_t um = static_cast<uint64_t>(m), un = static_cast<uint64_t>(n),
                   uk = static_cast<uint64_t>(k);
    ok = F8GEMM_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&pl.a, CUDA_R_8F_E4M3, uk, un, k)) ==
             CUBLAS_STATUS_SUCCESS &&
         F8GEMM_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&pl.b, CUDA_R_8F_E4M3, uk, um, k)) ==
             CUBLAS_STATUS_SUCCESS &&
         F8GEMM_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&pl.d, CUDA_R_16BF, un, um, n)) ==
             CUBLAS_STATUS_SUCCESS;
    if (!ok) return unsupported("cublasLtMatrixLayoutCreate returned CUBLAS_STATUS_NOT_SUPPORTED");

    cublasLtMatmulPreference_t pref = nullptr;
    F8GEMM_CUBLAS_TRY(cublasLtMatmulPreferenceCreate(&pref));
    struct PrefGuard {
      cublasLtMatmulPreference_t p;
      ~PrefGuard() { (void)cublasLtMatmulPreferenceDestroy(p); }
    } guard{pref};
    const uint64_t ws_bytes = kWorkspaceBytes;
    F8GEMM_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof(ws_bytes)));
    F8GEMM_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof(align_a)));
    F8GEMM_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof(align_b)));
    F8GEMM_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_d, sizeof(align_d)));
    F8GEMM_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d, sizeof(align_d)));

    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    cublasStatus_t st = F8GEMM_CUBLAS_TRY(cublasLtMatmulAlgoGetHeuristic(
        handle, pl.desc, pl.a, pl.b, pl.d, pl.d, pref, 1, &result, &found));
    if (st != CUBLAS_STATUS_SUCCESS || found == 0 || result.state != CUBLAS_STATUS_SUCCESS) {
      return unsupported(detail::concat("no cuBLASLt algorithm for M=", m, " N=", n, " K=", k,
                                        st == CUBLAS_STATUS_NOT_SUPPORTED
                                            ? " (CUBLAS_STATUS_NOT_SUPPORTED)"
                                            : ""));
    }
    pl.algo = result.algo;
    return pl;
  }

  /// One matmul with the plan's algorithm; "" or "unsupported: ...".
  std::string matmul(Plan& pl, const void* a, const void* b, void* d, const float* a_scale,
                     const float* b_scale, cudaStream_t stream) {
    F8GEMM_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(pl.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                                     &a_scale, sizeof(a_scale)));
    F8GEMM_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(pl.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                                     &b_scale, sizeof(b_scale)));
    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t st = F8GEMM_CUBLAS_TRY(cublasLtMatmul(handle, pl.desc, &alpha, a, pl.a, b, pl.b,
                                                         &beta, d, pl.d, d, pl.d, &pl.algo,
                                                         workspace, kWorkspaceBytes, stream));
    if (st == CUBLAS_STATUS_NOT_SUPPORTED) {
      // Not cached in the plan: the refusal can depend on the pointers, not only the shape.
      return "unsupported: cublasLtMatmul returned CUBLAS_STATUS_NOT_SUPPORTED";
    }
    F8GEMM_CHECK_CUDA(cudaGetLastError());
    return "";
  }
};

#undef F8GEMM_CUBLAS_TRY

CublasLtPeer::CublasLtPeer() : impl_(std::make_unique<Impl>()) {
  cublasStatus_t st = cublasLtCreate(&impl_->handle);
  if (st != CUBLAS_STATUS_SUCCESS) throw_cublas(st, "cublasLtCreate(&handle)", __LINE__);
  F8GEMM_CHECK_CUDA(cudaMalloc(&impl_->workspace, Impl::kWorkspaceBytes));
}

CublasLtPeer::~CublasLtPeer() = default;

std::string CublasLtPeer::rowwise(int64_t batch, int64_t m, int64_t n, int64_t k, const void* x,
                                  const void* w, const float* xs, const float* ws, void* y,
                                  bool fast_accum, cudaStream_t stream) {
  F8GEMM_REQUIRE(batch >= 1 && m >= 1 && n >= 1 && k >= 1, kInvalidArgument,
                 "cuBLASLt rowwise: bad shape B=", batch, " M=", m, " N=", n, " K=", k);
  F8GEMM_REQUIRE(x != nullptr && w != nullptr && xs != nullptr && ws != nullptr && y != nullptr,
                 kInvalidArgument, "cuBLASLt rowwise: null pointer");
  // torch 2.11's rowwise _scaled_mm, which is this same cuBLASLt call, answers
  // CUBLAS_STATUS_NOT_SUPPORTED at M = 1 (docs/bench/peers.csv, torch_scaled_mm rows at M = 1).
  if (m == 1) return "unsupported: cuBLASLt rowwise FP8 refuses M = 1";
  // cuBLASLt answers NOT_SUPPORTED for scale vectors not 16-byte aligned (seen on the H200 with
  // cuBLASLt 13.1: M = 2, 3, 5, 17 at B = 2 fail, M = 4, 8, 16 pass). Refuse up front rather than
  // after launching some batches.
  if (min_alignment(xs, m * 4, batch) < 16 || min_alignment(ws, n * 4, batch) < 16) {
    return "unsupported: cuBLASLt needs 16-byte-aligned scale vectors (M and N multiples of 4 "
           "when B > 1)";
  }
  const uint32_t align_a = min_alignment(w, n * k, batch);
  const uint32_t align_b = min_alignment(x, m * k, batch);
  const uint32_t align_d = min_alignment(y, m * n * 2, batch);
  Impl::Plan& pl = impl_->plan(ScaleKind::kRowwise, m, n, k, fast_accum, align_a, align_b,
                               align_d, ws, xs);
  if (!pl.reason.empty()) return pl.reason;
  const auto* xb = static_cast<const uint8_t*>(x);
  const auto* wb = static_cast<const uint8_t*>(w);
  auto* yb = static_cast<uint8_t*>(y);
  for (int64_t b = 0; b < batch; ++b) {
    // A = W[b] with its N-vector ws[b], B = X[b] with its M-vector xs[b].
    std::string st = impl_->matmul(pl, wb + b * n * k, xb + b * m * k, yb + b * m * n * 2,
                                   ws + b * n, xs + b * m, stream);
    if (!st.empty()) return st;
  }
  return "";
}

std::string CublasLtPeer::tensorwise(int64_t m, int64_t n, int64_t k, const void* x, const void* w,
                                     const float* x_scale_scalar_dev,
                                     const float* w_scale_scalar_dev, void* y, bool fast_accum,
                                     cudaStream_t stream) {
  F8GEMM_REQUIRE(m >= 1 && n >= 1 && k >= 1, kInvalidArgument,
                 "cuBLASLt tensorwise: bad shape M=", m, " N=", n, " K=", k);
  F8GEMM_REQUIRE(x != nullptr && w != nullptr && x_scale_scalar_dev != nullptr &&
                     w_scale_scalar_dev != nullptr && y != nullptr,
                 kInvalidArgument, "cuBLASLt tensorwise: null pointer");
  if (min_alignment(x_scale_scalar_dev, 0, 1) < 16 ||
      min_alignment(w_scale_scalar_dev, 0, 1) < 16) {
    return "unsupported: cuBLASLt needs 16-byte-aligned scale pointers";
  }
  const uint32_t align_a = min_alignment(w, 0, 1);
  const uint32_t align_b = min_alignment(x, 0, 1);
  const uint32_t align_d = min_alignment(y, 0, 1);
  Impl::Plan& pl = impl_->plan(ScaleKind::kTensorwise, m, n, k, fast_accum, align_a, align_b,
                               align_d, w_scale_scalar_dev, x_scale_scalar_dev);
  if (!pl.reason.empty()) return pl.reason;
  return impl_->matmul(pl, w, x, y, w_scale_scalar_dev, x_scale_scalar_dev, stream);
}

}  // namespace f8gemm::cli
