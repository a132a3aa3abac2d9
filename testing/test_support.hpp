/// \brief Test and benchmark support (the f8gemm_testing target, not part of the library): the
/// sm_90 probe, seeded random operands, poisoning, the host reference checker, the tensor-core
/// emulation, environment overrides and temporary directories. Free of GoogleTest, so that the
/// CLI can link it too; tests/common/test_util.hpp adds the gtest pieces.
///
/// The error bounds and the fp64 reference GEMM are in reference.hpp (one definition that the
/// tests, `f8gemm run --verify`, `demo` and `tune` apply), the random operands in random.hpp.
#pragma once

#include "device_buffer.hpp"
#include "random.hpp"
#include "reference.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "f8gemm/f8gemm.hpp"

namespace f8gemm::test {

/// True when cudaGetDeviceCount succeeds and device 0 has compute capability 9.0 (what the wgmma
/// kernels need). Any CUDA error raised by the probe is cleared. Cached after the first call.
bool have_sm90();
/// Why have_sm90() is false (empty when it is true).
std::string sm90_skip_reason();
/// True when the CUDA runtime reports at least one device of any kind.
bool have_any_device();

using DeviceBuffer = ::f8gemm::detail::DeviceBuffer;

/// Fills the whole buffer with 0xFF bytes on `stream` and waits for it: 0xFFFF is a NaN in bf16
/// and fp16 (and 0xFF a NaN e4m3 code), so an element the kernel fails to write cannot pass a check.
void poison(DeviceBuffer& buffer, cudaStream_t stream = nullptr);
/// True when every byte of the buffer is still 0xFF.
bool still_poisoned(const DeviceBuffer& buffer);

/// random_e4m3 (normal(0, stddev) e4m3 codes): random.hpp.
/// e4m3 codes of integers uniform in [lo, hi] (exact in e4m3 for |v| <= 16).
std::vector<uint8_t> small_int_e4m3(std::mt19937_64& rng, size_t count, int lo, int hi);
/// Positive scales, log-uniform in [lo, hi].
std::vector<float> random_scales(std::mt19937_64& rng, size_t count, float lo = 0.25f,
                                 float hi = 4.0f);
/// Powers of two 2^e with e uniform in [emin, emax] (products with integers stay exact).
std::vector<float> pow2_scales(std::mt19937_64& rng, size_t count, int emin, int emax);
/// normal(0, stddev) values as fp32, or as bf16/fp16 bits (RNE from the double sample).
std::vector<float> random_f32(std::mt19937_64& rng, size_t count, double stddev);
std::vector<uint16_t> random_half_bits(std::mt19937_64& rng, size_t count, double stddev,
                                       DType dtype);

/// The accuracy of an output against the fp64 reference, defined exactly as
/// detail::reference_check (reference_gpu.hpp) defines it on the GPU.
struct CheckStats {
  double rel_rms = 0.0;    ///< ||y - ref|| / ||ref|| over finite y
  double max_ratio = 0.0;  ///< max |y - ref| / numerics::element_bound(ref, abs_ref, out, gamma)
  int64_t nonfinite = 0;   ///< y elements that are NaN or inf
};
std::ostream& operator<<(std::ostream& os, const CheckStats& s);

/// Compares y (count bf16/fp16 bit patterns) with a precomputed reference and abs_ref.
CheckStats compare_to_reference(const std::vector<double>& ref, const std::vector<double>& abs_ref,
                                const uint16_t* y, DType out_dtype, double gamma);

/// Compares y [rows, I] (the SiLU·mul epilogue's output, bf16/fp16 bits) with
/// numerics::silu_mul_reference over the merged GEMM's reference ref and abs_ref [rows, 2I]
/// (gate in columns [0, I), up in [I, 2I)), each element against numerics::silu_mul_bound.
CheckStats compare_silu_mul_to_reference(const std::vector<double>& ref,
                                         const std::vector<double>& abs_ref, int64_t rows,
                                         int64_t i_cols, const uint16_t* y, DType out_dtype,
                                         double gamma);

/// Computes numerics::reference_gemm (with abs_ref) for x [B,M,K], plain w [B,N,K], xs [B,M],
/// ws [B,N], bias null or [B,N] of bias_dtype, and compares y [B,M,N] of out_dtype with it.
CheckStats check_against_reference(int64_t batch, int64_t m, int64_t n, int64_t k,
                                   const uint8_t* x, const uint8_t* w, const float* xs,
                                   const float* ws, const void* bias, DType bias_dtype,
                                   const uint16_t* y, DType out_dtype, double gamma);

/// The output of Hopper's FP8 tensor cores under the accumulation model of README "Accuracy",
/// emulated on the host for x [B,M,K], plain w [B,N,K], xs [B,M], ws [B,N] (no bias): products
/// exact; each k32 step aligns the accumulator and its 32 products to the largest exponent among
/// them, truncates each to 13 bits below it, adds exactly and truncates the sum to fp32. Fast
/// mode chains every step; precise mode restarts every 128 of K and adds the blocks in fp32.
/// The epilogue computes acc * xs * ws in fp32 and rounds to out_dtype. The model reproduces the
/// GPU's measured errors (docs/logs/2026-11-30-gpu-tests.log), so the checker's own tests can
/// run on a result that is wrong the way the hardware is, without a GPU.
std::vector<uint16_t> emulated_tensor_core_gemm(int64_t batch, int64_t m, int64_t n, int64_t k,
                                                const uint8_t* x, const uint8_t* w,
                                                const float* xs, const float* ws,
                                                DType out_dtype, bool fast_accum);

/// Sets or unsets an environment variable for a scope and restores the previous state after.
class ScopedEnv {
 public:
  explicit ScopedEnv(const char* name);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  void set(const std::string& value);
  void unset();

 private:
  std::string name_;
  bool had_ = false;
  std::string old_;
};

/// A fresh directory under /tmp, removed (recursively) on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace f8gemm::test
