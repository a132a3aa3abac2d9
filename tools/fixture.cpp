/// \brief The GPU problem fixture of `run` and `demo` (see fixture.hpp).
#include "fixture.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "f8gemm/check.hpp"
#include "reference.hpp"
#include "test_support.hpp"

namespace f8gemm::cli {

namespace {

/// Uniform fp32 values in [-range, range), or normal(0, range) ones, quantised per row on the GPU
/// into `q` and `scale`.
void random_quantised(int64_t rows, int64_t cols, float range, bool normal, uint64_t seed,
                      const TensorView& q, const TensorView& scale) {
  DeviceBuffer source(size_t(rows * cols) * sizeof(float));
  if (normal) fill_random_normal_f32(source.as<float>(), size_t(rows * cols), seed, range);
  else fill_random_f32(source.as<float>(), size_t(rows * cols), seed, -range, range);
  TensorView in = make_view(source.get(), DType::kF32, {rows, cols}, q.device);
  TensorView qv = make_view(q.data, DType::kE4M3, {rows, cols}, q.device);
  TensorView sv = make_view(scale.data, DType::kF32, {rows}, q.device);
  quantize_rows(in, qv, sv);
  F8GEMM_CHECK_CUDA(cudaDeviceSynchronize());
}
/// A count that require_fits() has admitted; an uncounted one here is a missed check.
size_t counted(Bytes bytes) {
  F8GEMM_REQUIRE(bytes.has_value(), kInternal,
                 "Fixture: a buffer of more than 2^63 bytes (require_fits was not called)");
  return static_cast<size_t>(*bytes);
}
/// The output's columns of a spec (Fixture::out_cols).
int64_t out_cols_of(const FixtureSpec& s) {
  return s.epilogue == EpilogueOp::kSiluMul ? s.n / 2 : s.n;
}
}  // namespace

FixtureSpec fixture_spec(const Shape& shape) {
  FixtureSpec spec;
  static_cast<Shape&>(spec) = shape;
  return spec;
}

bool have_gpu(std::string& reason) {
  const DeviceInfo info = device_info();
  reason = info.reason;
  return info.has_device && info.reason.empty();
}

Fixture::Fixture(const FixtureSpec& s) : Fixture(s, operand_bytes(problem_of(s, false, true))) {}

// The buffers are the ones fixture_footprint() counts, so that what was checked is allocated.
Fixture::Fixture(const FixtureSpec& s, const OperandBytes& bytes)
    : spec_(s),
      x_(counted(bytes.x)),
      w_(counted(bytes.w)),
      w_shuffled_(counted(bytes.w_preshuffled)),
      xs_(counted(bytes.x_scale)),
      ws_(counted(bytes.w_scale)),
      bias_(counted(bytes.bias)),
      y_(counted(bytes.y)) {
  (void)counted(bytes.staging);  // random_quantised()'s fp32 values, allocated below
  int device = 0;
  F8GEMM_CHECK_CUDA(cudaGetDevice(&device));
  xv_ = make_view(x_.get(), DType::kE4M3, {s.b, s.m, s.k}, device);
  wv_ = make_view(w_.get(), DType::kE4M3, {s.b, s.n, s.k}, device);
  wsv_ = make_view(w_shuffled_.get(), DType::kE4M3, preshuffled_shape(s.b, s.n, s.k), device);
  xsv_ = make_view(xs_.get(), DType::kF32, {s.b, s.m}, device);
  wscale_v_ = make_view(ws_.get(), DType::kF32, {s.b, s.n}, device);
  yv_ = make_view(y_.get(), s.out_dtype, {s.b, s.m, out_cols_of(s)}, device);
  // Activations of order 1 and weights of order 0.01, as in a trained linear layer.
  if (s.m > 0) random_quantised(s.b * s.m, s.k, 1.0f, s.normal, s.seed, xv_, xsv_);
  random_quantised(s.b * s.n, s.k, 0.02f, s.normal, s.seed + 1, wv_, wscale_v_);
  preshuffle(wv_, wsv_);
  if (s.bias) {
    biasv_ = make_view(bias_.get(), s.bias_dtype, {s.b, s.n}, device);
    DeviceBuffer values(size_t(s.b * s.n) * 4);
    fill_random_f32(values.as<float>(), size_t(s.b * s.n), s.seed + 2, -0.5f, 0.5f);
    if (s.bias_dtype == DType::kF32) {
      F8GEMM_CHECK_CUDA(cudaMemcpy(bias_.get(), values.get(), values.bytes(), cudaMemcpyDeviceToDevice));
    } else {
      std::vector<float> host(size_t(s.b * s.n));
      F8GEMM_CHECK_CUDA(cudaMemcpy(host.data(), values.get(), values.bytes(), cudaMemcpyDeviceToHost));
      const std::vector<double> wide(host.begin(), host.end());
      std::vector<uint16_t> bits(host.size());
      numerics::round_output(wide.data(), wide.size(), DType::kBF16, bits.data());
      F8GEMM_CHECK_CUDA(cudaMemcpy(bias_.get(), bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
    }
  }
  F8GEMM_CHECK_CUDA(cudaDeviceSynchronize());
}

ProblemShape problem_of(const FixtureSpec& spec, bool plain_w, bool fast_accum) {
  ProblemShape p = problem_of(static_cast<const Shape&>(spec));
  p.w_layout = plain_w ? WeightLayout::kPlain : WeightLayout::kPreshuffled;
  p.out_dtype = spec.out_dtype;
  p.has_bias = spec.bias;
  p.bias_dtype = spec.bias_dtype;
  p.fast_accum = fast_accum;
  p.epilogue_op = spec.epilogue;
  return p;
}

ProblemShape Fixture::problem(bool plain_w, bool fast_accum) const {
  // What run() solves, as the library sees it (ProblemShape::chained included).
  return batched_gemm_problem(xv_, plain_w ? wv_ : wsv_,
                              plain_w ? WeightLayout::kPlain : WeightLayout::kPreshuffled, xsv_,
                              wscale_v_, yv_, options(fast_accum, nullptr, nullptr));
}

GemmOptions Fixture::options(bool fast_accum, const Config* config, cudaStream_t stream) const {
  GemmOptions opt;
  opt.bias = spec_.bias ? &biasv_ : nullptr;
  opt.fast_accum = fast_accum;
  opt.stream = stream;
  opt.config = config;
  opt.prefetch_w = spec_.prefetch_w;
  opt.epilogue_op = spec_.epilogue;
  return opt;
}

double Fixture::input_bytes() const {
  const FixtureSpec& s = spec_;
  return double(s.b) * (s.m * s.k + s.n * s.k + 4.0 * (s.m + s.n) +
                        (s.bias ? dtype_size(s.bias_dtype) * double(s.n) : 0.0));
}

int64_t Fixture::out_cols() const { return out_cols_of(spec_); }

double Fixture::bytes() const {
  return input_bytes() + 2.0 * double(spec_.b) * spec_.m * double(out_cols());
}

void Fixture::run(bool plain_w, bool fast_accum, const Config* config, cudaStream_t stream,
                  const GemmTrace* trace) const {
  GemmOptions opt = options(fast_accum, config, stream);
  opt.trace = trace;
  batched_gemm(xv_, plain_w ? wv_ : wsv_, plain_w ? WeightLayout::kPlain : WeightLayout::kPreshuffled,
               xsv_, wscale_v_, yv_, opt);
}

uint64_t Fixture::output_hash(cudaStream_t stream) const {
  F8GEMM_CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<unsigned char> host(y_.bytes());
  y_.download(host.data(), host.size());
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : host) h = (h ^ c) * 1099511628211ull;
  return h;
}

void Fixture::poison(cudaStream_t stream) const {
  F8GEMM_CHECK_CUDA(cudaMemsetAsync(y_.get(), 0xFF, y_.bytes(), stream));
}

detail::CheckResult Fixture::verify(bool fast_accum, cudaStream_t stream) const {
  if (spec_.epilogue == EpilogueOp::kSiluMul) {
    F8GEMM_CHECK_CUDA(cudaStreamSynchronize(stream));
    std::vector<uint16_t> y(y_.bytes() / 2);
    y_.download(y.data(), y_.bytes());
    // Inf or NaN: every exponent bit set (bf16: 8 bits at 0x7F80, fp16: 5 bits at 0x7C00).
    const uint16_t exponent = spec_.out_dtype == DType::kF16 ? 0x7C00 : 0x7F80;
    int64_t nonfinite = 0;
    for (uint16_t bits : y) nonfinite += (bits & exponent) == exponent ? 1 : 0;
    detail::CheckResult r = verify_cpu_sample(fast_accum, kSiluMulSampleRows, 0);
    if (spec_.b > 1) {
      const detail::CheckResult last = verify_cpu_sample(fast_accum, kSiluMulSampleRows, spec_.b - 1);
      r.rel_rms = std::max(r.rel_rms, last.rel_rms);
      r.max_ratio = std::max(r.max_ratio, last.max_ratio);
      r.count += last.count;
    }
    r.nonfinite = nonfinite;
    return r;
  }
  return detail::reference_check(xv_, wv_, xsv_, wscale_v_, spec_.bias ? &biasv_ : nullptr, yv_,
                                 numerics::accumulation_gamma(spec_.k, fast_accum), stream);
}

detail::CheckResult Fixture::verify_cpu_sample(bool fast_accum, int64_t rows, int64_t batch) const {
  const FixtureSpec& s = spec_;
  rows = std::min(rows, s.m);
  detail::CheckResult r;
  if (rows <= 0) return r;
  F8GEMM_REQUIRE(batch >= 0 && batch < s.b, kInvalidArgument, "verify_cpu_sample: batch ", batch,
                 " of ", s.b);
  const int64_t cols = out_cols();
  // Rows 0 and M - 1 and others evenly between them: every part of M's tiles is sampled.
  std::vector<int64_t> picked(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) picked[size_t(i)] = rows == 1 ? 0 : i * (s.m - 1) / (rows - 1);
  std::vector<uint8_t> x(size_t(rows * s.k)), w(size_t(s.n * s.k));
  std::vector<float> xs(static_cast<size_t>(rows)), ws(static_cast<size_t>(s.n));
  std::vector<uint8_t> bias(s.bias ? size_t(s.n) * dtype_size(s.bias_dtype) : 0);
  std::vector<uint16_t> y(size_t(rows * cols));
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t row = batch * s.m + picked[size_t(i)];  // a row of the [B * M, ...] operands
    F8GEMM_CHECK_CUDA(cudaMemcpy(x.data() + i * s.k, x_.as<uint8_t>() + row * s.k, size_t(s.k),
                                 cudaMemcpyDeviceToHost));
    F8GEMM_CHECK_CUDA(cudaMemcpy(&xs[size_t(i)], xs_.as<float>() + row, 4, cudaMemcpyDeviceToHost));
    F8GEMM_CHECK_CUDA(cudaMemcpy(y.data() + i * cols, y_.as<uint16_t>() + row * cols,
                                 size_t(cols) * 2, cudaMemcpyDeviceToHost));
  }
  F8GEMM_CHECK_CUDA(cudaMemcpy(w.data(), w_.as<uint8_t>() + batch * s.n * s.k, w.size(),
                               cudaMemcpyDeviceToHost));
  F8GEMM_CHECK_CUDA(cudaMemcpy(ws.data(), ws_.as<float>() + batch * s.n, ws.size() * 4,
                               cudaMemcpyDeviceToHost));
  if (s.bias) {
    F8GEMM_CHECK_CUDA(cudaMemcpy(bias.data(), bias_.as<uint8_t>() + batch * bias.size(),
                                 bias.size(), cudaMemcpyDeviceToHost));
  }
  const double gamma = numerics::accumulation_gamma(s.k, fast_accum);
  test::CheckStats stats;
  if (s.epilogue == EpilogueOp::kSiluMul) {
    std::vector<double> ref(size_t(rows * s.n)), abs_ref(size_t(rows * s.n));
    numerics::reference_gemm(1, rows, s.n, s.k, x.data(), w.data(), xs.data(), ws.data(),
                             s.bias ? bias.data() : nullptr, s.bias_dtype, ref.data(), abs_ref.data());
    stats = test::compare_silu_mul_to_reference(ref, abs_ref, rows, cols, y.data(), s.out_dtype, gamma);
  } else {
    stats = test::check_against_reference(1, rows, s.n, s.k, x.data(), w.data(), xs.data(), ws.data(),
                                          s.bias ? bias.data() : nullptr, s.bias_dtype, y.data(),
                                          s.out_dtype, gamma);
  }
  r.rel_rms = stats.rel_rms;
  r.max_ratio = stats.max_ratio;
  r.nonfinite = stats.nonfinite;
  r.count = rows * cols;
  return r;
}

bool Fixture::passes(const detail::CheckResult& r, bool fast_accum) const {
  if (spec_.epilogue == EpilogueOp::kSiluMul) return r.nonfinite == 0 && r.max_ratio <= 1.0;
  return numerics::within_bounds(r.rel_rms, r.max_ratio, r.nonfinite, r.count, spec_.k, fast_accum,
                                 spec_.out_dtype);
}

}  // namespace f8gemm::cli
