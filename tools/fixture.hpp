/// \brief One GEMM problem on the GPU for `run` and `demo`: random activations and weights
/// quantised per row by f8gemm::quantize_rows, W preshuffled once, outputs poisoned.
#pragma once

#include <cstdint>

#include <string>

#include "bench_util.hpp"
#include "buffer_bytes.hpp"
#include "f8gemm/f8gemm.hpp"
#include "reference_gpu.hpp"
#include "shapes.hpp"

namespace f8gemm::cli {

/// A problem's sizes (B,M,N,K) and what else the fixture makes of it.
struct FixtureSpec : Shape {
  DType out_dtype = DType::kBF16;
  bool bias = false;
  DType bias_dtype = DType::kF32;
  uint64_t seed = 1;
  /// Operands drawn as per-row quantised randn, the bench's distribution of e4m3 codes (sigma ~
  /// 100), rather than quantised uniform values (codes crowd the top binades). The tensor cores
  /// draw more power on them: the same config timed 350 us on uniform and 400 us on bench
  /// operands at 1,4096,14336,4096 (docs/perf-log.md card 19). `tune` times on these; `run` and
  /// `demo` keep the uniform operands their committed output hashes come from.
  bool normal = false;
  /// GemmOptions::prefetch_w on every run: the fixture's W is written once, before any run, so
  /// no kernel of a chain of runs writes it (`tune --prefetch-w`, with F8GEMM_PDL=1).
  bool prefetch_w = false;
  /// GemmOptions::epilogue_op on every run (`tune --epilogue`): with kSiluMul, W's N rows are
  /// [gate; up] and the output has N / 2 columns.
  EpilogueOp epilogue = EpilogueOp::kNone;
};

/// A spec of `shape` with the defaults otherwise (bf16 output, no bias, seed 1).
FixtureSpec fixture_spec(const Shape& shape);

/// True when an sm_90 GPU is usable here; else `reason` says why not.
bool have_gpu(std::string& reason);

/// The problem a fixture of this spec runs (no allocation: for checks before one is made).
ProblemShape problem_of(const FixtureSpec& spec, bool plain_w, bool fast_accum);

class Fixture {
 public:
  /// Allocates fixture_footprint(); run and tune check that it fits first (require_fits()).
  explicit Fixture(const FixtureSpec& spec);

  /// One batched_gemm call on `stream` (no synchronisation); with `trace`, the instrumented
  /// kernel records its tiles there (GemmOptions::trace).
  void run(bool plain_w, bool fast_accum, const Config* config, cudaStream_t stream,
           const GemmTrace* trace = nullptr) const;
  /// FNV-1a 64 of the output's bytes after the work on `stream`: equal hashes across runs,
  /// builds or configurations mean bit-identical outputs.
  uint64_t output_hash(cudaStream_t stream) const;
  /// Sets every output element to NaN (0xFFFF), so that an unwritten one fails the check.
  void poison(cudaStream_t stream) const;
  /// Checks the output against the GPU fp64 reference with the mode's element bound. With a
  /// SiLU·mul epilogue, which the GPU reference does not compute: every output element finite
  /// (a poisoned one left unwritten is NaN), and verify_cpu_sample() of kSiluMulSampleRows rows
  /// in the first and in the last batch.
  detail::CheckResult verify(bool fast_accum, cudaStream_t stream) const;
  /// Checks up to `rows` rows of batch `batch`, spread evenly over M (the first and the last
  /// among them), against the CPU fp64 reference (reference.hpp); a SiLU·mul output against
  /// numerics::silu_mul_reference and its bound.
  detail::CheckResult verify_cpu_sample(bool fast_accum, int64_t rows, int64_t batch = 0) const;
  static constexpr int64_t kSiluMulSampleRows = 8;
  /// The acceptance test of `run --verify` and `demo`, numerics::within_bounds for this K and
  /// output type: no non-finite output, every element within its bound, and from
  /// kMinCountForRms outputs on the relative RMS error within the mode's bound (README
  /// "Accuracy"; the same test `tune` applies to its winners). A SiLU·mul output, whose relative
  /// RMS error has no bound of its own, passes on the first two.
  bool passes(const detail::CheckResult& result, bool fast_accum) const;

  const FixtureSpec& spec() const { return spec_; }
  /// The problem a run() with these arguments solves (for configuration choice and tables).
  ProblemShape problem(bool plain_w, bool fast_accum) const;
  double flops() const { return 2.0 * spec_.b * spec_.m * spec_.n * spec_.k; }
  /// The output's columns: N, or N / 2 with the SiLU·mul epilogue.
  int64_t out_cols() const;
  /// Bytes a call must move at least: X + W + Y + scales (+ bias).
  double bytes() const;
  /// The bytes a call reads: X + W + scales (+ bias); what L2 rotation is sized by.
  double input_bytes() const;

 private:
  Fixture(const FixtureSpec& spec, const OperandBytes& bytes);
  GemmOptions options(bool fast_accum, const Config* config, cudaStream_t stream) const;

  FixtureSpec spec_;
  DeviceBuffer x_, w_, w_shuffled_, xs_, ws_, bias_, y_;
  TensorView xv_, wv_, wsv_, xsv_, wscale_v_, biasv_, yv_;
};

}  // namespace f8gemm::cli
