/// \brief The fp64 CPU reference GEMM and the accuracy bounds (see reference.hpp).
#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "check.hpp"
#include "numerics.hpp"
#include "parallel.hpp"
#include "../kernels/silu_sfu.cuh"

namespace f8gemm::numerics {

double unit_roundoff(DType out_dtype) {
  if (out_dtype == DType::kBF16) return std::ldexp(1.0, -8);
  if (out_dtype == DType::kF16) return std::ldexp(1.0, -11);
  throw Error(
      ErrorCode::kInvalidArgument,
      detail::concat("unit_roundoff: out_dtype must be bf16 or fp16, got ", to_string(out_dtype)));
}

double accumulation_gamma(int64_t k, bool fast_accum) {
  // Fast mode's step term (README "Accuracy"), in units of 2^-13 * abs_ref: at least the 4 steps
  // of a precise block (up to K = 128 both modes do the same arithmetic) and at most 14, twice the
  // largest error measured or emulated for random operands at any K.
  constexpr double kFastStepsMin = 4.0, kFastStepsMax = 14.0;
  const double steps = double((k + 31) / 32);
  const double blocks = double((k + 127) / 128);
  if (fast_accum) {
    return std::clamp(steps, kFastStepsMin, kFastStepsMax) * 0x1p-13 + steps * 0x1p-23;
  }
  return 4.0 * 0x1p-13 + 4.0 * 0x1p-23 + blocks * 0x1p-24;
}

double subnormal_slack(DType out_dtype) {
  return out_dtype == DType::kF16 ? 0x1p-25 : 0x1p-133;
}

double element_bound(double ref, double abs_ref, DType out_dtype, double gamma) {
  const double u = unit_roundoff(out_dtype);
  return u * std::fabs(ref) + (1.0 + u) * gamma * abs_ref + subnormal_slack(out_dtype);
}

double silu_mul_reference(double g, double u) { return g / (1.0 + std::exp(-g)) * u; }

namespace {

double silu(double x) { return x / (1.0 + std::exp(-x)); }
double silu_slope(double x) {
  const double s = 1.0 / (1.0 + std::exp(-x));
  return s * (1.0 + x * (1.0 - s));
}
/// The largest |f| over [a, b] for a smooth f whose extrema are at `points`: at an end or there.
template <class F>
double max_abs_over(F f, double a, double b, std::initializer_list<double> points) {
  double m = std::max(std::fabs(f(a)), std::fabs(f(b)));
  for (double x : points) {
    if (a < x && x < b) m = std::max(m, std::fabs(f(x)));
  }
  return m;
}

}  // namespace

double silu_mul_bound(double g, double u, double abs_g, double abs_u, DType out_dtype,
                      double gamma) {
  const double r = unit_roundoff(out_dtype);
  const double h = std::fabs(silu_mul_reference(g, u));
  const double e_g = gamma * abs_g, e_u = gamma * abs_u;
  // SiLU' = 0 at -1.278464542761074 (SiLU's minimum); SiLU'' = 0 at -+2.399357280515467.
  const double s_max = max_abs_over(silu, g - e_g, g + e_g, {-1.278464542761074});
  const double l_max =
      max_abs_over(silu_slope, g - e_g, g + e_g, {-2.399357280515467, 2.399357280515467});
  const double d = s_max * e_u + l_max * std::fabs(u) * e_g;
  const double sfu = (dev::kSiluSfuRel + dev::kSiluSfuRelPerG * (std::fabs(g) + e_g)) * (h + d) +
                     dev::kSiluSfuAbs * (std::fabs(u) + e_u);
  return r * h + (1.0 + r) * (d + sfu) + subnormal_slack(out_dtype);
}

double rel_rms_bound(int64_t k, bool fast_accum, DType out_dtype) {
  const double rounding = 0.46 * unit_roundoff(out_dtype);
  // Fast mode drifts with every k32 step along K. Precise mode does the same arithmetic inside
  // each 128-deep block (at most 4 steps) and adds independent blocks in fp32, so its relative
  // drift stays that of one block: negligible beside bf16 rounding, but not beside fp16's
  // (measured 2.39-2.43e-4 against 0.46u = 2.25e-4 for fp16 on the H200,
  // docs/logs/2026-11-30-gpu-tests-fp16-precise.log).
  const int64_t steps = fast_accum ? (k + 31) / 32 : (std::min<int64_t>(k, 128) + 31) / 32;
  const double drift = 1.5 * 0x1p-13 * std::sqrt(double(steps));
  return std::sqrt(rounding * rounding + drift * drift);
}

bool within_bounds(double rel_rms, double max_ratio, int64_t nonfinite, int64_t count, int64_t k,
                   bool fast_accum, DType out_dtype) {
  if (nonfinite != 0 || !(max_ratio <= 1.0)) return false;
  return count < kMinCountForRms || rel_rms <= rel_rms_bound(k, fast_accum, out_dtype);
}

// GCC/Clang vector extensions: two doubles per value, lowered to SSE2 on x86-64 and NEON on
// aarch64, so the micro-kernel's accumulators stay in registers without intrinsics.
typedef double Vec2 __attribute__((vector_size(16)));
typedef int64_t Mask2 __attribute__((vector_size(16)));

namespace {

/// Tile geometry of the reference: 2 rows x 4 columns of accumulators (8 Vec2 registers for the
/// sum and the sum of magnitudes, which with the operands fit x86-64's 16 without spilling).
constexpr int kTileRows = 2;
constexpr int kTileCols = 4;
constexpr int64_t kBlockRows = 32;  // rows of X per work unit
constexpr int64_t kBlockCols = 64;  // columns (rows of W) per work unit
constexpr int64_t kSliceK = 256;    // k per slice: packed operands of 2 x 128 KB stay in L2

inline Vec2 load2(const double* p) {
  Vec2 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store2(double* p, Vec2 v) { std::memcpy(p, &v, sizeof v); }

/// acc/mag[2][4] (row stride ld) += x pair times w quad over len values of k; xp holds
/// {x0, x0, x1, x1} per k (pre-broadcast, so no shuffles) and wp 4 columns per k.
inline void micro_kernel(const double* xp, const double* wp, int64_t len, double* acc, double* mag,
                         int64_t ld) {
  const Mask2 abs_mask = {INT64_MAX, INT64_MAX};
  Vec2 a00 = load2(acc), a01 = load2(acc + 2), a10 = load2(acc + ld), a11 = load2(acc + ld + 2);
  Vec2 m00 = load2(mag), m01 = load2(mag + 2), m10 = load2(mag + ld), m11 = load2(mag + ld + 2);
  for (int64_t kk = 0; kk < len; ++kk) {
    const Vec2 x0 = load2(xp + kk * 4), x1 = load2(xp + kk * 4 + 2);
    const Vec2 w0 = load2(wp + kk * 4), w1 = load2(wp + kk * 4 + 2);
    const Vec2 p00 = x0 * w0, p01 = x0 * w1, p10 = x1 * w0, p11 = x1 * w1;
    a00 += p00;
    a01 += p01;
    a10 += p10;
    a11 += p11;
    m00 += (Vec2)((Mask2)p00 & abs_mask);
    m01 += (Vec2)((Mask2)p01 & abs_mask);
    m10 += (Vec2)((Mask2)p10 & abs_mask);
    m11 += (Vec2)((Mask2)p11 & abs_mask);
  }
  store2(acc, a00);
  store2(acc + 2, a01);
  store2(acc + ld, a10);
  store2(acc + ld + 2, a11);
  store2(mag, m00);
  store2(mag + 2, m01);
  store2(mag + ld, m10);
  store2(mag + ld + 2, m11);
}

}  // namespace

void reference_gemm(int64_t batch, int64_t m, int64_t n, int64_t k, const uint8_t* x,
                    const uint8_t* w, const float* xs, const float* ws, const void* bias,
                    DType bias_dtype, double* ref, double* abs_ref, int threads) {
  F8GEMM_REQUIRE(batch >= 0 && m >= 0 && n >= 0 && k >= 0, kInvalidArgument,
                 "reference_gemm: negative size (batch=", batch, ", m=", m, ", n=", n, ", k=", k,
                 ")");
  F8GEMM_REQUIRE(bias == nullptr || bias_dtype == DType::kF32 || bias_dtype == DType::kBF16,
                 kInvalidArgument, "reference_gemm: bias_dtype must be fp32 or bf16, got ",
                 to_string(bias_dtype));
  if (batch == 0 || m == 0 || n == 0) return;
  F8GEMM_REQUIRE(xs && ws && ref && (k == 0 || (x && w)), kInvalidArgument,
                 "reference_gemm: null x, w, xs, ws or ref");

  // Every e4m3 product is exact in double and a multiple of 2^-18 below 2^18, so for K <= 2^16
  // every partial sum fits in 53 bits: the accumulation is exact and its order does not matter.
  // A work unit is (b, kBlockCols columns, kBlockRows rows); per k slice it decodes its operands
  // once into packed double panels, so decoding costs ~1/kBlockRows of the multiply-adds.
  const float* table = e4m3_table();
  const int64_t col_blocks = (n + kBlockCols - 1) / kBlockCols;
  const int64_t row_blocks = (m + kBlockRows - 1) / kBlockRows;
  const int64_t units = batch * col_blocks * row_blocks;

  detail::parallel_units(units, threads, [&](int64_t unit) {
    const int64_t rb = unit % row_blocks;
    const int64_t cb = (unit / row_blocks) % col_blocks;
    const int64_t b = unit / (row_blocks * col_blocks);
    const int64_t m0 = rb * kBlockRows, n0 = cb * kBlockCols;
    const int64_t nrows = std::min(kBlockRows, m - m0), ncols = std::min(kBlockCols, n - n0);
    constexpr int64_t kPairs = kBlockRows / kTileRows, kQuads = kBlockCols / kTileCols;
    // xp[pair][k][4] = {x0, x0, x1, x1}; wp[quad][k][4]: rows and columns past the edge are 0.
    thread_local std::vector<double> xp, wp;
    xp.resize(kPairs * kSliceK * 4);
    wp.resize(kQuads * kSliceK * 4);
    double acc[kBlockRows][kBlockCols] = {};
    double mag[kBlockRows][kBlockCols] = {};
    for (int64_t k0 = 0; k0 < k; k0 += kSliceK) {
      const int64_t len = std::min(kSliceK, k - k0);
      for (int64_t r = 0; r < kBlockRows; ++r) {
        double* dst = xp.data() + (r / 2) * kSliceK * 4 + (r % 2) * 2;
        const uint8_t* src = r < nrows ? x + ((b * m) + m0 + r) * k + k0 : nullptr;
        for (int64_t kk = 0; kk < len; ++kk) {
          const double v = src ? static_cast<double>(table[src[kk]]) : 0.0;
          dst[kk * 4] = v;
          dst[kk * 4 + 1] = v;
        }
      }
      for (int64_t c = 0; c < kBlockCols; ++c) {
        double* dst = wp.data() + (c / 4) * kSliceK * 4 + (c % 4);
        const uint8_t* src = c < ncols ? w + ((b * n) + n0 + c) * k + k0 : nullptr;
        for (int64_t kk = 0; kk < len; ++kk) {
          dst[kk * 4] = src ? static_cast<double>(table[src[kk]]) : 0.0;
        }
      }
      for (int64_t pair = 0; pair < kPairs; ++pair) {
        if (pair * kTileRows >= nrows) break;
        for (int64_t quad = 0; quad < kQuads; ++quad) {
          if (quad * kTileCols >= ncols) break;
          micro_kernel(xp.data() + pair * kSliceK * 4, wp.data() + quad * kSliceK * 4, len,
                       &acc[pair * kTileRows][quad * kTileCols],
                       &mag[pair * kTileRows][quad * kTileCols], kBlockCols);
        }
      }
    }
    for (int64_t r = 0; r < nrows; ++r) {
      const int64_t row = b * m + m0 + r;
      const double sx = static_cast<double>(xs[row]);
      for (int64_t j = 0; j < ncols; ++j) {
        const int64_t col = b * n + n0 + j;
        double bv = 0.0;
        if (bias != nullptr) {
          bv = bias_dtype == DType::kF32 ? static_cast<double>(static_cast<const float*>(bias)[col])
                                         : bf16_to_double(static_cast<const uint16_t*>(bias)[col]);
        }
        // xs*ws is exact in double (24+24 significant bits); only the last two operations round.
        const double s = sx * static_cast<double>(ws[col]);
        ref[row * n + n0 + j] = s * acc[r][j] + bv;
        if (abs_ref) abs_ref[row * n + n0 + j] = std::fabs(s) * mag[r][j] + std::fabs(bv);
      }
    }
  });
}

void round_output(const double* in, size_t count, DType out_dtype, uint16_t* out) {
  F8GEMM_REQUIRE(out_dtype == DType::kBF16 || out_dtype == DType::kF16, kInvalidArgument,
                 "round_output: out_dtype must be bf16 or fp16, got ", to_string(out_dtype));
  if (out_dtype == DType::kBF16) {
    for (size_t i = 0; i < count; ++i) out[i] = double_to_bf16(in[i]);
  } else {
    for (size_t i = 0; i < count; ++i) out[i] = double_to_f16(in[i]);
  }
}

}  // namespace f8gemm::numerics
