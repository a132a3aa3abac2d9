/// \brief Counter-based random operands (see random.hpp).
#include "random.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>

#include "check.hpp"
#include "numerics.hpp"
#include "parallel.hpp"

namespace f8gemm::test {

namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

/// splitmix64's output function applied to a counter: a counter-based generator, so element i's
/// value does not depend on how the range is split among threads.
inline uint64_t splitmix64(uint64_t x) {
  x += kGolden;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Runs body(begin, end) over [0, count) in slices of 1 Mi items (~10 ms of Box-Muller), so that
/// thread start-up stays negligible; one slice runs on the calling thread.
template <typename Body>
void for_slices(size_t count, const Body& body) {
  constexpr size_t kSlice = size_t{1} << 20;
  const int64_t slices = int64_t((count + kSlice - 1) / kSlice);
  detail::parallel_units(slices, 0, [&](int64_t s) {
    const size_t begin = size_t(s) * kSlice;
    body(begin, std::min(count, begin + kSlice));
  });
}

/// Two uniforms from one 64-bit draw: u1 in (0, 1] (safe for log), u2 in [0, 1).
inline void two_uniforms(uint64_t r, float& u1, float& u2) {
  constexpr float kInv2p32 = 1.0f / 4294967296.0f;
  u1 = (static_cast<float>(static_cast<uint32_t>(r >> 32)) + 1.0f) * kInv2p32;
  u2 = static_cast<float>(static_cast<uint32_t>(r)) * kInv2p32;
  u1 = std::min(u1, 1.0f);
}

}  // namespace

namespace {
/// Normal(0, stddev) samples by Box-Muller on splitmix64 counters: pair p gives elements 2p and
/// 2p + 1, each passed to put(i, value).
template <typename Put>
void normal_pairs(size_t count, uint64_t seed, float stddev, const Put& put) {
  const uint64_t base = splitmix64(seed);
  const size_t pairs = (count + 1) / 2;
  for_slices(pairs, [&](size_t begin, size_t end) {
    constexpr float kTwoPi = 6.283185307179586f;
    for (size_t p = begin; p < end; ++p) {
      float u1, u2;
      two_uniforms(splitmix64(base + p * kGolden), u1, u2);
      const float r = std::sqrt(-2.0f * std::log(u1)) * stddev;
      const float angle = kTwoPi * u2;
      const size_t i = 2 * p;
      put(i, r * std::cos(angle));
      if (i + 1 < count) put(i + 1, r * std::sin(angle));
    }
  });
}
}  // namespace

void random_e4m3_codes(uint8_t* out, size_t count, uint64_t seed, float stddev) {
  if (count == 0) return;
  F8GEMM_REQUIRE(out != nullptr, kInvalidArgument, "random_e4m3_codes: null output");
  normal_pairs(count, seed, stddev, [&](size_t i, float v) { out[i] = numerics::float_to_e4m3(v); });
}

void random_normal_f32(float* out, size_t count, uint64_t seed, float stddev) {
  if (count == 0) return;
  F8GEMM_REQUIRE(out != nullptr, kInvalidArgument, "random_normal_f32: null output");
  normal_pairs(count, seed, stddev, [&](size_t i, float v) { out[i] = v; });
}

void random_uniform_f32(float* out, size_t count, uint64_t seed, float lo, float hi) {
  if (count == 0) return;
  F8GEMM_REQUIRE(out != nullptr, kInvalidArgument, "random_uniform_f32: null output");
  F8GEMM_REQUIRE(lo <= hi, kInvalidArgument, "random_uniform_f32: lo ", lo, " > hi ", hi);
  const uint64_t base = splitmix64(seed ^ 0x5CA1Eull);
  for_slices(count, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      // 24 random bits: exactly representable steps of 2^-24 in [0, 1).
      const float u = static_cast<float>(splitmix64(base + i * kGolden) >> 40) * (1.0f / 16777216.0f);
      out[i] = lo + (hi - lo) * u;
    }
  });
}

void fill_random_e4m3(void* dev, size_t count, uint64_t seed, float stddev) {
  if (count == 0) return;
  F8GEMM_REQUIRE(dev != nullptr, kInvalidArgument, "fill_random_e4m3: null device pointer");
  std::vector<uint8_t> host(count);
  random_e4m3_codes(host.data(), count, seed, stddev);
  F8GEMM_CHECK_CUDA(cudaMemcpy(dev, host.data(), count, cudaMemcpyHostToDevice));
}

void fill_random_normal_f32(float* dev, size_t count, uint64_t seed, float stddev) {
  if (count == 0) return;
  F8GEMM_REQUIRE(dev != nullptr, kInvalidArgument, "fill_random_normal_f32: null device pointer");
  std::vector<float> host(count);
  random_normal_f32(host.data(), count, seed, stddev);
  F8GEMM_CHECK_CUDA(cudaMemcpy(dev, host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
}

void fill_random_f32(float* dev, size_t count, uint64_t seed, float lo, float hi) {
  if (count == 0) return;
  F8GEMM_REQUIRE(dev != nullptr, kInvalidArgument, "fill_random_f32: null device pointer");
  std::vector<float> host(count);
  random_uniform_f32(host.data(), count, seed, lo, hi);
  F8GEMM_CHECK_CUDA(cudaMemcpy(dev, host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
}

std::vector<uint8_t> random_e4m3(std::mt19937_64& rng, size_t count, double stddev) {
  std::vector<uint8_t> out(count);
  random_e4m3_codes(out.data(), count, rng(), float(stddev));
  return out;
}

}  // namespace f8gemm::test
