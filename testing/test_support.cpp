/// \brief Test and benchmark support (test_support.hpp).
#include "test_support.hpp"

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "check.hpp"
#include "numerics.hpp"
#include "reference.hpp"

namespace f8gemm::test {

namespace {

struct Probe {
  bool any = false;
  bool sm90 = false;
  std::string reason;
};

const Probe& probe() {
  static const Probe p = [] {
    Probe r;
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      cudaGetLastError();  // clear it, so the next runtime call does not report it again
      r.reason = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(status);
      return r;
    }
    if (count == 0) {
      r.reason = "no CUDA device";
      return r;
    }
    r.any = true;
    cudaDeviceProp prop{};
    const cudaError_t ps = cudaGetDeviceProperties(&prop, 0);
    if (ps != cudaSuccess) {
      cudaGetLastError();
      r.reason = std::string("cudaGetDeviceProperties(0) failed: ") + cudaGetErrorString(ps);
      return r;
    }
    if (prop.major != 9 || prop.minor != 0) {
      r.reason = std::string("device 0 (") + prop.name + ") has compute capability " +
                 std::to_string(prop.major) + "." + std::to_string(prop.minor) + ", not 9.0";
      return r;
    }
    r.sm90 = true;
    return r;
  }();
  return p;
}

}  // namespace

bool have_sm90() { return probe().sm90; }
std::string sm90_skip_reason() { return probe().reason; }
bool have_any_device() { return probe().any; }

void poison(DeviceBuffer& buffer, cudaStream_t stream) {
  if (buffer.bytes() == 0) return;
  F8GEMM_CHECK_CUDA(cudaMemsetAsync(buffer.get(), 0xFF, buffer.bytes(), stream));
  F8GEMM_CHECK_CUDA(cudaStreamSynchronize(stream));
}

bool still_poisoned(const DeviceBuffer& buffer) {
  const std::vector<uint8_t> bytes = buffer.to_host<uint8_t>();
  for (uint8_t b : bytes) {
    if (b != 0xFF) return false;
  }
  return true;
}

std::vector<uint8_t> small_int_e4m3(std::mt19937_64& rng, size_t count, int lo, int hi) {
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<uint8_t> out(count);
  for (uint8_t& c : out) c = numerics::float_to_e4m3(float(dist(rng)));
  return out;
}

std::vector<float> random_scales(std::mt19937_64& rng, size_t count, float lo, float hi) {
  std::uniform_real_distribution<double> dist(std::log(double(lo)), std::log(double(hi)));
  std::vector<float> out(count);
  for (float& s : out) s = float(std::exp(dist(rng)));
  return out;
}

std::vector<float> pow2_scales(std::mt19937_64& rng, size_t count, int emin, int emax) {
  std::uniform_int_distribution<int> dist(emin, emax);
  std::vector<float> out(count);
  for (float& s : out) s = std::ldexp(1.0f, dist(rng));
  return out;
}

std::vector<float> random_f32(std::mt19937_64& rng, size_t count, double stddev) {
  std::normal_distribution<double> normal(0.0, stddev);
  std::vector<float> out(count);
  for (float& v : out) v = float(normal(rng));
  return out;
}

std::vector<uint16_t> random_half_bits(std::mt19937_64& rng, size_t count, double stddev,
                                       DType dtype) {
  std::normal_distribution<double> normal(0.0, stddev);
  std::vector<uint16_t> out(count);
  for (uint16_t& v : out) {
    const double x = normal(rng);
    v = dtype == DType::kBF16 ? numerics::double_to_bf16(x) : numerics::double_to_f16(x);
  }
  return out;
}

std::ostream& operator<<(std::ostream& os, const CheckStats& s) {
  return os << "{rel_rms=" << s.rel_rms << ", max_ratio=" << s.max_ratio
            << ", nonfinite=" << s.nonfinite << "}";
}

CheckStats compare_to_reference(const std::vector<double>& ref, const std::vector<double>& abs_ref,
                                const uint16_t* y, DType out_dtype, double gamma) {
  double err2 = 0.0, ref2 = 0.0;
  CheckStats s;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double got = out_dtype == DType::kF16 ? numerics::f16_to_double(y[i])
                                                : numerics::bf16_to_double(y[i]);
    const double err = got - ref[i];
    if (!std::isfinite(got) || std::isnan(err)) {
      ++s.nonfinite;
      continue;
    }
    err2 += err * err;
    ref2 += ref[i] * ref[i];
    const double bound = numerics::element_bound(ref[i], abs_ref[i], out_dtype, gamma);
    s.max_ratio = std::max(s.max_ratio, std::fabs(err) / bound);
  }
  s.rel_rms = ref2 > 0.0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  return s;
}

CheckStats compare_silu_mul_to_reference(const std::vector<double>& ref,
                                         const std::vector<double>& abs_ref, int64_t rows,
                                         int64_t i_cols, const uint16_t* y, DType out_dtype,
                                         double gamma) {
  double err2 = 0.0, ref2 = 0.0;
  CheckStats s;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < i_cols; ++i) {
      const size_t gate = size_t(r * 2 * i_cols + i), up = gate + size_t(i_cols);
      const double want = numerics::silu_mul_reference(ref[gate], ref[up]);
      const uint16_t bits = y[r * i_cols + i];
      const double got = out_dtype == DType::kF16 ? numerics::f16_to_double(bits)
                                                  : numerics::bf16_to_double(bits);
      const double err = got - want;
      if (!std::isfinite(got) || std::isnan(err)) {
        ++s.nonfinite;
        continue;
      }
      err2 += err * err;
      ref2 += want * want;
      const double bound = numerics::silu_mul_bound(ref[gate], ref[up], abs_ref[gate],
                                                    abs_ref[up], out_dtype, gamma);
      s.max_ratio = std::max(s.max_ratio, std::fabs(err) / bound);
    }
  }
  s.rel_rms = ref2 > 0.0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  return s;
}

CheckStats check_against_reference(int64_t batch, int64_t m, int64_t n, int64_t k,
                                   const uint8_t* x, const uint8_t* w, const float* xs,
                                   const float* ws, const void* bias, DType bias_dtype,
                                   const uint16_t* y, DType out_dtype, double gamma) {
  const size_t count = size_t(batch * m * n);
  std::vector<double> ref(count), abs_ref(count);
  numerics::reference_gemm(batch, m, n, k, x, w, xs, ws, bias, bias_dtype, ref.data(),
                           abs_ref.data());
  return compare_to_reference(ref, abs_ref, y, out_dtype, gamma);
}

namespace {

/// v truncated toward zero to a multiple of q (a power of two).
double truncate_to(double v, double q) { return std::trunc(v / q) * q; }

/// v truncated toward zero to fp32's 24 significant bits.
double truncate_to_f32(double v) {
  if (v == 0.0) return 0.0;
  return truncate_to(v, std::ldexp(1.0, std::ilogb(v) - 23));
}

/// One k32 step of the tensor core: c + p[0..count) with every addend truncated to 13 bits below
/// the largest exponent among them.
double tensor_core_step(double c, const double* p, int64_t count) {
  int top = c != 0.0 ? std::ilogb(c) : std::numeric_limits<int>::min();
  for (int64_t i = 0; i < count; ++i) {
    if (p[i] != 0.0) top = std::max(top, std::ilogb(p[i]));
  }
  if (top == std::numeric_limits<int>::min()) return 0.0;
  const double q = std::ldexp(1.0, top - 13);
  double sum = truncate_to(c, q);
  for (int64_t i = 0; i < count; ++i) sum += truncate_to(p[i], q);  // exact: few bits each
  return truncate_to_f32(sum);
}

}  // namespace

std::vector<uint16_t> emulated_tensor_core_gemm(int64_t batch, int64_t m, int64_t n, int64_t k,
                                                const uint8_t* x, const uint8_t* w,
                                                const float* xs, const float* ws,
                                                DType out_dtype, bool fast_accum) {
  constexpr int64_t kStep = 32, kBlock = 128;
  const float* table = numerics::e4m3_table();
  std::vector<uint16_t> y(size_t(batch * m * n));
  std::vector<double> p(static_cast<size_t>(k));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < m; ++i) {
      const uint8_t* xr = x + (b * m + i) * k;
      for (int64_t j = 0; j < n; ++j) {
        const uint8_t* wr = w + (b * n + j) * k;
        for (int64_t kk = 0; kk < k; ++kk) p[kk] = double(table[xr[kk]]) * double(table[wr[kk]]);
        float acc = 0.0f;
        const int64_t chain = fast_accum ? k : kBlock;
        for (int64_t start = 0; start < k; start += chain) {
          const int64_t end = std::min(k, start + chain);
          double c = 0.0;
          for (int64_t s = start; s < end; s += kStep) {
            c = tensor_core_step(c, p.data() + s, std::min(kStep, end - s));
          }
          acc += float(c);  // fast: the one chain; precise: each block promoted into fp32
        }
        const float v = acc * xs[b * m + i] * ws[b * n + j];
        y[size_t((b * m + i) * n + j)] = out_dtype == DType::kF16 ? numerics::double_to_f16(v)
                                                                : numerics::double_to_bf16(v);
      }
    }
  }
  return y;
}

ScopedEnv::ScopedEnv(const char* name) : name_(name) {
  const char* v = getenv(name);
  had_ = v != nullptr;
  if (had_) old_ = v;
}

ScopedEnv::~ScopedEnv() {
  if (had_) {
    setenv(name_.c_str(), old_.c_str(), 1);
  } else {
    unsetenv(name_.c_str());
  }
}

void ScopedEnv::set(const std::string& value) { setenv(name_.c_str(), value.c_str(), 1); }
void ScopedEnv::unset() { unsetenv(name_.c_str()); }

TempDir::TempDir(const std::string& prefix) {
  std::string tmpl = "/tmp/" + prefix + ".XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  F8GEMM_REQUIRE(mkdtemp(buf.data()) != nullptr, kIo, "mkdtemp failed for ", tmpl);
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace f8gemm::test
