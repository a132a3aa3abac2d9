/// \brief Host numerics: e4m3fn codec, RNE to bf16/fp16, host quantise and preshuffle.
#include "numerics.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "check.hpp"
#include "parallel.hpp"

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
  detail::parallel_units(units, threads, [&](int64_t unit) {
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
