/// \brief Host numerics: e4m3fn codec, RNE to bf16/fp16, fp64 reference GEMM, quantise, preshuffle.
#include "numerics.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "check.hpp"

namespace f8gemm::numerics {
namespace {

/// Local dtype names: these messages must not depend on the rest of the library being linked.
const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kE4M3: return "e4m3";
    case DType::kBF16: return "bf16";
    case DType::kF16: return "fp16";
    case DType::kF32: return "fp32";
    case DType::kU8: return "u8";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
  }
  return "unknown dtype";
}

int resolve_threads(int threads) {
  if (threads > 0) return threads;
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

/// Runs body(unit) for every unit in [0, count) on up to `threads` threads. Units are handed out
/// one at a time from an atomic counter, so uneven units (ragged edges) still balance.
template <typename Body>
void parallel_units(int64_t count, int threads, const Body& body) {
  int n = static_cast<int>(std::min<int64_t>(resolve_threads(threads), count));
  if (n <= 1) {
    for (int64_t u = 0; u < count; ++u) body(u);
    return;
  }
  std::atomic<int64_t> next{0};
  auto worker = [&]() {
    for (int64_t u = next.fetch_add(1); u < count; u = next.fetch_add(1)) body(u);
  };
  std::vector<std::thread> pool;
  pool.reserve(n - 1);
  for (int i = 1; i < n; ++i) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint32_t float_to_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

/// RNE of a double into a binary format with exp_bits/mant_bits (IEEE-style: subnormals, inf),
/// done once from the double so no intermediate rounding can turn just-above-half into a tie.
uint16_t round_double(double value, int exp_bits, int mant_bits, uint16_t quiet_nan) {
  const uint16_t sign =
      std::signbit(value) ? static_cast<uint16_t>(1u << (exp_bits + mant_bits)) : 0;
  if (std::isnan(value)) return static_cast<uint16_t>(sign | quiet_nan);
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int emin = 1 - bias;
  const uint32_t inf_bits = ((1u << exp_bits) - 1u) << mant_bits;
  const double a = std::fabs(value);
  if (a == 0.0) return sign;
  int frexp_exp = 0;
  std::frexp(a, &frexp_exp);
  const int e = frexp_exp - 1;  // a in [2^e, 2^(e+1)); +inf gives a huge e here
  if (std::isinf(a) || e > bias) return static_cast<uint16_t>(sign | inf_bits);
  // Quantum of the result: 2^(e - mant_bits) for normals, fixed 2^(emin - mant_bits) below emin.
  const int quantum = std::max(e, emin) - mant_bits;
  const double scaled = std::ldexp(a, -quantum);  // exact: < 2^(mant_bits+1), a power-of-2 shift
  uint32_t i = static_cast<uint32_t>(scaled);
  const double frac = scaled - static_cast<double>(i);  // exact: scaled has few integer bits
  if (frac > 0.5 || (frac == 0.5 && (i & 1u))) ++i;
  uint32_t bits;
  if (e < emin) {
    bits = i;  // i == 2^mant_bits is the smallest normal: the encoding carries naturally
  } else {
    // i in [2^m, 2^(m+1)]; i == 2^(m+1) carries into the exponent field. With e <= bias the
    // largest result is exactly inf_bits: the top binade rounding up is the overflow to inf.
    bits = (static_cast<uint32_t>(e + bias) << mant_bits) + (i - (1u << mant_bits));
  }
  return static_cast<uint16_t>(sign | bits);
}

float input_to_float(const void* in, DType dtype, int64_t index) {
  switch (dtype) {
    case DType::kF32: return static_cast<const float*>(in)[index];
    case DType::kBF16:
      return static_cast<float>(bf16_to_double(static_cast<const uint16_t*>(in)[index]));
    default: return static_cast<float>(f16_to_double(static_cast<const uint16_t*>(in)[index]));
  }
}

}  // namespace

float e4m3_to_float(uint8_t code) {
  if ((code & 0x7f) == 0x7f) return std::numeric_limits<float>::quiet_NaN();
  const int exp_field = (code >> 3) & 0xf;
  const int mant = code & 0x7;
  // Subnormal: mant/8 * 2^(1-7) = mant * 2^-9.
  // Normal: (8+mant)/8 * 2^(exp-7) = (8+mant) * 2^(exp-10).
  const float mag = exp_field == 0 ? std::ldexp(static_cast<float>(mant), -9)
                                   : std::ldexp(static_cast<float>(8 + mant), exp_field - 10);
  return (code & 0x80) ? -mag : mag;
}

const float* e4m3_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int c = 0; c < 256; ++c) t[c] = e4m3_to_float(static_cast<uint8_t>(c));
    return t;
  }();
  return table.data();
}

uint8_t float_to_e4m3(float value) {
  if (std::isnan(value)) return 0x7f;
  const uint32_t fbits = float_to_bits(value);
  const uint8_t sign = static_cast<uint8_t>((fbits >> 24) & 0x80);
  const float a = std::fabs(value);
  // Everything at or above 448 (including the [464, 480) band that RNE would send to the
  // unrepresentable 480, and +-inf) saturates, as cvt.rn.satfinite does.
  if (a >= 448.0f) return static_cast<uint8_t>(sign | 0x7e);
  uint32_t code;
  if (a < 0.015625f) {
    // Below 2^-6 the e4m3 grid is uniform with step 2^-9: round a * 2^9 (exact, < 8) to an
    // integer. 8 is the code of 2^-6 itself, so rounding up across the boundary needs no case.
    const float scaled = a * 512.0f;
    code = static_cast<uint32_t>(scaled);
    const float frac = scaled - static_cast<float>(code);
    if (frac > 0.5f || (frac == 0.5f && (code & 1u))) ++code;
  } else {
    // Normal: keep 3 of fp32's 23 mantissa bits and round on the 20 dropped ones; a carry out of
    // the mantissa bumps the exponent field, and a < 448 keeps the result at or below 0x7e.
    const uint32_t abits = float_to_bits(a);
    const int e = static_cast<int>(abits >> 23) - 127;  // in [-6, 8]
    code = (static_cast<uint32_t>(e + 7) << 3) | ((abits >> 20) & 0x7u);
    const uint32_t dropped = abits & 0xfffffu;
    if (dropped > 0x80000u || (dropped == 0x80000u && (code & 1u))) ++code;
  }
  return static_cast<uint8_t>(sign | code);
}

uint16_t double_to_bf16(double value) { return round_double(value, 8, 7, 0x7fc0); }

uint16_t double_to_f16(double value) { return round_double(value, 5, 10, 0x7e00); }

double bf16_to_double(uint16_t bits) {
  return static_cast<double>(bits_to_float(static_cast<uint32_t>(bits) << 16));
}

double f16_to_double(uint16_t bits) {
  const int exp_field = (bits >> 10) & 0x1f;
  const int mant = bits & 0x3ff;
  double mag;
  if (exp_field == 0x1f) {
    mag = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (exp_field == 0) {
    mag = std::ldexp(static_cast<double>(mant), -24);  // subnormal: mant/1024 * 2^-14
  } else {
    mag = std::ldexp(static_cast<double>(1024 + mant), exp_field - 25);
  }
  return (bits & 0x8000) ? -mag : mag;
}

double unit_roundoff(DType out_dtype) {
  if (out_dtype == DType::kBF16) return std::ldexp(1.0, -8);
  if (out_dtype == DType::kF16) return std::ldexp(1.0, -11);
  throw Error(
      ErrorCode::kInvalidArgument,
      detail::concat("unit_roundoff: out_dtype must be bf16 or fp16, got ", dtype_name(out_dtype)));
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
                 dtype_name(bias_dtype));
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

  parallel_units(units, threads, [&](int64_t unit) {
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
                 "round_output: out_dtype must be bf16 or fp16, got ", dtype_name(out_dtype));
  if (out_dtype == DType::kBF16) {
    for (size_t i = 0; i < count; ++i) out[i] = double_to_bf16(in[i]);
  } else {
    for (size_t i = 0; i < count; ++i) out[i] = double_to_f16(in[i]);
  }
}

namespace {

void check_shuffle_shape(const char* who, int64_t batch, int64_t n, int64_t k) {
  F8GEMM_REQUIRE(batch >= 0, kInvalidArgument, who, ": batch must be >= 0, got ", batch);
  F8GEMM_REQUIRE(n >= 0 && n % kShuffleSlabRows == 0, kInvalidArgument, who,
                 ": n must be a non-negative multiple of ", kShuffleSlabRows, ", got ", n);
  F8GEMM_REQUIRE(k >= 0 && k % 16 == 0, kInvalidArgument, who,
                 ": k must be a non-negative multiple of 16, got ", k);
}

/// Visits every 16-byte chunk of every slab: body(plain_offset or -1 for padding, shuffled_offset).
/// K % 16 == 0, so a chunk is either wholly inside K or wholly padding. Slabs are split across
/// threads once W exceeds 8 MiB, below which thread start-up would dominate.
template <typename Body>
void for_each_chunk(int64_t batch, int64_t n, int64_t k, const Body& body) {
  const int64_t kb_count = (k + kShuffleBlockK - 1) / kShuffleBlockK;
  const int64_t nb_count = n / kShuffleSlabRows;
  const int64_t slabs = batch * kb_count * nb_count;
  const int64_t slabs_per_unit = 256;
  const int64_t units = (slabs + slabs_per_unit - 1) / slabs_per_unit;
  const int threads = batch * n * k > (int64_t{8} << 20) ? 0 : 1;
  parallel_units(units, threads, [&](int64_t unit) {
    const int64_t end = std::min(slabs, (unit + 1) * slabs_per_unit);
    for (int64_t slab = unit * slabs_per_unit; slab < end; ++slab) {
      const int64_t nb = slab % nb_count;
      const int64_t kb = (slab / nb_count) % kb_count;
      const int64_t b = slab / (nb_count * kb_count);
      for (int64_t r = 0; r < kShuffleSlabRows; ++r) {
        for (int64_t chunk = 0; chunk < kShuffleBlockK / 16; ++chunk) {
          const int64_t kk = kb * kShuffleBlockK + chunk * 16;
          const int64_t plain = kk < k ? (b * n + nb * kShuffleSlabRows + r) * k + kk : -1;
          const int64_t shuffled = slab * kShuffleSlabBytes + r * 128 + ((chunk ^ r) * 16);
          body(plain, shuffled);
        }
      }
    }
  });
}

}  // namespace

void preshuffle_host(const uint8_t* w, int64_t batch, int64_t n, int64_t k, uint8_t* out) {
  check_shuffle_shape("preshuffle_host", batch, n, k);
  for_each_chunk(batch, n, k, [&](int64_t plain, int64_t shuffled) {
    if (plain >= 0) {
      std::memcpy(out + shuffled, w + plain, 16);
    } else {
      std::memset(out + shuffled, 0, 16);
    }
  });
}

void unshuffle_host(const uint8_t* shuffled, int64_t batch, int64_t n, int64_t k, uint8_t* w) {
  check_shuffle_shape("unshuffle_host", batch, n, k);
  for_each_chunk(batch, n, k, [&](int64_t plain, int64_t offset) {
    if (plain >= 0) std::memcpy(w + plain, shuffled + offset, 16);
  });
}

void quantize_rows_host(const void* in, DType in_dtype, int64_t rows, int64_t cols, float eps,
                        float scale_ub, uint8_t* q, float* scale) {
  F8GEMM_REQUIRE(in_dtype == DType::kBF16 || in_dtype == DType::kF16 || in_dtype == DType::kF32,
                 kInvalidArgument, "quantize_rows_host: in_dtype must be bf16, fp16 or fp32, got ",
                 dtype_name(in_dtype));
  F8GEMM_REQUIRE(rows >= 0 && cols >= 0, kInvalidArgument,
                 "quantize_rows_host: negative size (rows=", rows, ", cols=", cols, ")");
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t base = row * cols;
    float amax = 0.0f;
    // fmaxf returns the non-NaN operand, so a NaN element does not poison the row's scale.
    for (int64_t c = 0; c < cols; ++c)
      amax = std::fmax(amax, std::fabs(input_to_float(in, in_dtype, base + c)));
    if (scale_ub > 0.0f) amax = std::fmin(amax, scale_ub);
    // The GPU kernel computes exactly these fp32 operations, in this order:
    //   float d = fmaxf(amax, eps); float inv = 448.0f / d; q = e4m3(x * inv); scale = d / 448.0f;
    // Multiplying by a reciprocal (not dividing per element) is one rounding either way, but
    // only this form is what the kernel does, so it is what the bit-exact tests compare against.
    const float d = std::fmax(amax, eps);
    const float inv = 448.0f / d;
    for (int64_t c = 0; c < cols; ++c)
      q[base + c] = float_to_e4m3(input_to_float(in, in_dtype, base + c) * inv);
    scale[row] = d / 448.0f;
  }
}

}  // namespace f8gemm::numerics
