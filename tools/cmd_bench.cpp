/// \brief `f8gemm bench`: ours (preshuffled, plain W) against cuBLASLt, with ceilings from one run.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench_options.hpp"
#include "bench_report.hpp"
#include "bench_util.hpp"
#include "commands.hpp"
#include "cublaslt_peer.hpp"
#include "f8gemm/check.hpp"
#include "f8gemm/f8gemm.hpp"
#include "f8gemm/tuning.hpp"
#include "hang_guard.hpp"
#include "output_path.hpp"
#include "shapes.hpp"

namespace f8gemm::cli {
namespace {

/// The PEAK that --no-peak (or a failed cuBLASLt call) falls back on: cuBLASLt tensorwise FP8
/// 8192^3 with fast accumulation, as measured on the H200 during setup on 2026-11-30. That run is
/// not a committed log; the bench runs that measured PEAK themselves logged 1297 TFLOP/s
/// (docs/logs/2026-11-30-bench-large.log), so ratios against this fallback err on the strict side.
constexpr double kAssumedPeakTflops = 1464.0;
constexpr int kWarmupCalls = 10;
constexpr int kCallsPerGraph = 20;
/// The SM clock idles at 345 MHz; a few hundred ms of load bring it to 1980 MHz.
constexpr double kClockWarmMs = 300.0;
/// Per-row quantised randn puts each row's amax (~3.5 to 4 sigma over K = 1024..8192) at 448, so
/// real e4m3 codes have sigma ~ 100; about 2e-5 of the codes then round to +-448.
constexpr float kCodeStddev = 100.0f;
/// Scales ~1e-3 each give outputs ~ 1e-6 * 100^2 * sqrt(K) = O(1): well inside bf16's range.
constexpr float kScaleLo = 0.5e-3f, kScaleHi = 1.5e-3f;

/// The problem that ours is timed on (preshuffled W, bf16 output, no bias).
ProblemShape bench_problem(const Shape& s, const BenchOptions& o) {
  ProblemShape p = problem_of(s);
  p.fast_accum = !o.precise;
  return p;
}

/// The rotation's input sets of a shape: the bytes a call reads from DRAM (X, W and the scales)
/// span o.rotate_l2 x the L2. Every set also holds W preshuffled (bench_footprint counts it).
int input_sets(const OperandBytes& b, const BenchOptions& o) {
  const Bytes read = plus(plus(b.x, b.w), plus(b.x_scale, b.w_scale));
  return rotation_sets(static_cast<size_t>(read.value()), l2_cache_bytes(), o.rotate_l2);
}

/// 2^20 per dimension keeps every size cuBLASLt's int32 leading dimensions can describe; an
/// empty dimension has nothing to time.
void check_bench_limits(const Shape& s) {
  constexpr int64_t kMaxDim = int64_t{1} << 20;
  const std::pair<const char*, int64_t> dims[] = {{"B", s.b}, {"M", s.m}, {"N", s.n}, {"K", s.k}};
  for (const auto& [name, value] : dims) {
    if (value < 1 || value > kMaxDim) {
      throw UsageError(detail::concat("bench: shape ", s.label(), ": ", name,
                                      " must be an integer in [1, ", kMaxDim, "]"));
    }
  }
}

/// Copies Y[0] and Y[B-1] back: the first batch shows a wrong result, the last one a wrong batch
/// stride or an unwritten tail, at M*N*2 bytes each instead of the whole output.
void copy_back(const DeviceBuffer& y, const Shape& s, cudaStream_t stream,
               std::vector<uint16_t>& first, std::vector<uint16_t>& last) {
  size_t per_batch = static_cast<size_t>(s.m * s.n);
  first.assign(per_batch, 0);
  last.assign(per_batch, 0);
  const auto* base = y.as<const uint16_t>();
  F8GEMM_CHECK_CUDA(cudaMemcpyAsync(first.data(), base, per_batch * 2, cudaMemcpyDeviceToHost,
                                    stream));
  F8GEMM_CHECK_CUDA(cudaMemcpyAsync(last.data(), base + (s.b - 1) * per_batch, per_batch * 2,
                                    cudaMemcpyDeviceToHost, stream));
  F8GEMM_CHECK_CUDA(cudaStreamSynchronize(stream));
}

/// One call of an implementation on input set `set`: "" or "unsupported: ...".
using ImplCall = std::function<std::string(cudaStream_t, int set)>;

/// Poisons Y, runs one checked call, keeps its output, warms the clock, then times host and graph.
Result measure(const std::string& impl, const ImplCall& call, const Shape& s, int sets,
               const DeviceBuffer& y, const BenchOptions& o, cudaStream_t stream) {
  Result r;
  r.impl = impl;
  // A call that never finishes ends the run naming it (hang_guard.hpp).
  const test::HangLabel label("bench " + s.label() + " " + impl);
  // 0xFFFF is a bf16 NaN: any element the call leaves unwritten shows up in the comparison.
  F8GEMM_CHECK_CUDA(cudaMemsetAsync(y.get(), 0xFF, y.bytes(), stream));
  std::string status = call(stream, 0);
  F8GEMM_CHECK_CUDA(cudaGetLastError());
  test::sync_stream_or_exit(stream);
  if (!status.empty()) {
    r.status = status;
    return r;
  }
  copy_back(y, s, stream, r.first, r.last);

  int counter = 0;
  StreamFn fn = [&](cudaStream_t st) {
    std::string again = call(st, counter++ % sets);
    if (!again.empty()) {
      throw Error(ErrorCode::kInternal,
                  impl + ": a later call failed after the first one worked: " + again);
    }
  };
  run_for_ms(fn, kImplWarmMs, stream);
  r.host_us = time_host_us(fn, o.iters, kWarmupCalls, stream);
  // A graph covers whole rotation cycles so that every input set is read in each replay.
  r.graph_us = time_graph_us(fn, o.iters, stream, calls_per_graph(sets, kCallsPerGraph));

  // Hundreds of calls later the output must be the same bits: a moving result is a race.
  Result after;
  copy_back(y, s, stream, after.first, after.last);
  if (size_t diff = count_different(r, after)) {
    std::printf("warning: %s at %s: %zu of %zu sampled outputs changed between the first call and "
                "the timed calls\n",
                impl.c_str(), s.label().c_str(), diff, r.first.size() + r.last.size());
  }
  return r;
}

/// The inputs of one rotation set: identical copies, so every set gives the same output.
struct InputSet {
  DeviceBuffer x, w, w_shuffled, xs, ws;
  TensorView xv, wv, w_shuffled_v, xsv, wsv;
  /// W as ours reads it in `layout`.
  const TensorView& w_in(WeightLayout layout) const {
    return layout == WeightLayout::kPreshuffled ? w_shuffled_v : wv;
  }
};

/// Runs one shape: ours preshuffled, ours plain, cuBLASLt; writes three CSV rows.
ShapeSummary bench_shape(const Shape& s, int index, double bw_tbps, double peak_tflops,
                         const BenchOptions& o, CublasLtPeer& peer, CsvWriter& csv,
                         cudaStream_t stream) {
  int device = 0;
  F8GEMM_CHECK_CUDA(cudaGetDevice(&device));
  const ShapeCost cost = shape_cost(s, bw_tbps, peak_tflops);
  const std::vector<int64_t> shuffled_shape = preshuffled_shape(s.b, s.n, s.k);
  // The sizes that cmd_bench checked against the GPU's memory (bench_footprint).
  const OperandBytes bytes = operand_bytes(bench_problem(s, o));
  const size_t x_bytes = static_cast<size_t>(bytes.x.value());
  const size_t w_bytes = static_cast<size_t>(bytes.w.value());
  const size_t shuffled_bytes = static_cast<size_t>(bytes.w_preshuffled.value());
  const size_t xs_bytes = static_cast<size_t>(bytes.x_scale.value());
  const size_t ws_bytes = static_cast<size_t>(bytes.w_scale.value());
  const size_t y_bytes = static_cast<size_t>(bytes.y.value());
  const int sets = input_sets(bytes, o);

  std::printf("[%d] %s: floor %.2f us (%s-bound), %d input set%s (rotation over %g x the L2)\n",
              index, s.label().c_str(), cost.floor_us,
              cost.bytes / (bw_tbps * 1e12) >= cost.flops / (peak_tflops * 1e12) ? "memory"
                                                                                    : "compute",
              sets, sets == 1 ? "" : "s", o.rotate_l2);
  std::fflush(stdout);

  std::vector<InputSet> in(static_cast<size_t>(sets));
  for (int i = 0; i < sets; ++i) {
    InputSet& set = in[static_cast<size_t>(i)];
    set.x = DeviceBuffer(x_bytes);
    set.w = DeviceBuffer(w_bytes);
    set.w_shuffled = DeviceBuffer(shuffled_bytes);
    set.xs = DeviceBuffer(xs_bytes);
    set.ws = DeviceBuffer(ws_bytes);
    set.xv = make_view(set.x.get(), DType::kE4M3, {s.b, s.m, s.k}, device);
    set.wv = make_view(set.w.get(), DType::kE4M3, {s.b, s.n, s.k}, device);
    set.w_shuffled_v = make_view(set.w_shuffled.get(), DType::kE4M3, shuffled_shape, device);
    set.xsv = make_view(set.xs.get(), DType::kF32, {s.b, s.m}, device);
    set.wsv = make_view(set.ws.get(), DType::kF32, {s.b, s.n}, device);
  }
  const uint64_t seed = 0xF8A0000ull + 16ull * static_cast<uint64_t>(index);
  InputSet& first = in[0];
  fill_random_e4m3(first.x.get(), x_bytes, seed + 1, kCodeStddev);
  fill_random_e4m3(first.w.get(), w_bytes, seed + 2, kCodeStddev);
  fill_random_f32(first.xs.as<float>(), xs_bytes / sizeof(float), seed + 3, kScaleLo, kScaleHi);
  fill_random_f32(first.ws.as<float>(), ws_bytes / sizeof(float), seed + 4, kScaleLo, kScaleHi);
  // Preshuffled once, on the GPU, as a server would at load time; not part of any timing.
  preshuffle(first.wv, first.w_shuffled_v, stream);
  F8GEMM_CHECK_CUDA(cudaStreamSynchronize(stream));
  for (int i = 1; i < sets; ++i) {
    InputSet& set = in[static_cast<size_t>(i)];
    const std::pair<const DeviceBuffer*, const DeviceBuffer*> copies[] = {
        {&first.x, &set.x}, {&first.w, &set.w}, {&first.w_shuffled, &set.w_shuffled},
        {&first.xs, &set.xs}, {&first.ws, &set.ws}};
    for (const auto& [src, dst] : copies) {
      F8GEMM_CHECK_CUDA(cudaMemcpyAsync(dst->get(), src->get(), src->bytes(),
                                        cudaMemcpyDeviceToDevice, stream));
    }
  }
  F8GEMM_CHECK_CUDA(cudaStreamSynchronize(stream));

  DeviceBuffer y(y_bytes);
  const TensorView yv = make_view(y.get(), DType::kBF16, {s.b, s.m, s.n}, device);
  GemmOptions gemm_options;
  gemm_options.fast_accum = !o.precise;
  gemm_options.prefetch_w = o.prefetch_w;

  auto ours = [&](WeightLayout layout) -> ImplCall {
    return [&, layout](cudaStream_t st, int i) {
      const InputSet& set = in[static_cast<size_t>(i)];
      GemmOptions opt = gemm_options;
      opt.stream = st;
      batched_gemm(set.xv, set.w_in(layout), layout, set.xsv, set.wsv, yv, opt);
      return std::string();
    };
  };
  ImplCall cublas = [&](cudaStream_t st, int i) {
    const InputSet& set = in[static_cast<size_t>(i)];
    return peer.rowwise(s.b, s.m, s.n, s.k, set.x.get(), set.w.get(), set.xs.as<const float>(),
                        set.ws.as<const float>(), y.get(), !o.precise, st);
  };

  ShapeSummary summary;
  summary.shape = s;
  summary.floor_us = cost.floor_us;
  // f8gemm errors propagate: a failure of ours is what this bench exists to show.
  summary.results.push_back(
      measure("f8gemm_preshuffled", ours(WeightLayout::kPreshuffled), s, sets, y, o, stream));
  summary.results.push_back(
      measure("f8gemm_plain", ours(WeightLayout::kPlain), s, sets, y, o, stream));
  Result peer_result;
  try {
    peer_result = measure("cublaslt_rowwise", cublas, s, sets, y, o, stream);
  } catch (const Error& e) {
    // A failing peer (a cuBLASLt status, a refused capture) costs only its row while the
    // context stays usable; a broken context ends the run.
    cudaError_t health = cudaDeviceSynchronize();
    (void)cudaGetLastError();
    if (health != cudaSuccess) throw;
    peer_result = Result();
    peer_result.impl = "cublaslt_rowwise";
    peer_result.status = std::string("error: ") + e.what();
    std::printf("warning: cublaslt_rowwise at %s: %s\n", s.label().c_str(), e.what());
  }
  summary.results.push_back(std::move(peer_result));

  const Result& ref = summary.results[0];
  for (Result& r : summary.results) {
    if (r.status != "ok") continue;
    if (!ref.first.empty()) r.rel_err = rel_err(r, ref);
    if (size_t bad = count_nonfinite(r)) {
      std::printf("warning: %s at %s: %zu non-finite outputs in batches 0 and B-1 (poison 0xFFFF "
                  "left unwritten?)\n",
                  r.impl.c_str(), s.label().c_str(), bad);
    }
  }
  const Result& plain = summary.results[1];
  if (ref.status == "ok" && plain.status == "ok") {
    if (size_t diff = count_different(ref, plain)) {
      // The tables may give the two layouts different configurations (a split of K at one, not
      // at the other): bits are owed only where both ran the same one.
      auto config_of = [&](WeightLayout l) {
        return choose_config(batched_gemm_problem(first.xv, first.w_in(l), l, first.xsv,
                                                   first.wsv, yv, gemm_options));
      };
      const Config a = config_of(WeightLayout::kPreshuffled), b = config_of(WeightLayout::kPlain);
      const bool same = a == b;
      std::printf("%s: %s: f8gemm_preshuffled (%s) and f8gemm_plain (%s) differ in %zu of %zu "
                  "sampled outputs (%s)\n",
                  same ? "warning" : "note", s.label().c_str(), a.name().c_str(),
                  b.name().c_str(), diff, ref.first.size() + ref.last.size(),
                  same ? "one configuration: they should be bit-identical"
                  : a.split_k != b.split_k ? "different configurations that split K differently"
                                           : "different configurations");
    }
  }
  for (const Result& r : summary.results) {
    write_result(csv, s, cost, r);
    std::printf("    %-20s %s", r.impl.c_str(), r.status.c_str());
    if (r.graph_us) {
      std::printf("  host %.2f us  graph %.2f us (%.2fx floor)  rel_err %s", *r.host_us,
                  *r.graph_us, *r.graph_us / cost.floor_us, fmt(r.rel_err, "%.2e").c_str());
    }
    std::printf("\n");
  }
  std::fflush(stdout);
  // Drop the host copies: 11 shapes x 3 impls x up to 128 MB would otherwise pile up.
  for (Result& r : summary.results) {
    r.first = {};
    r.last = {};
  }
  return summary;
}

}  // namespace

int cmd_bench(const Args& args) {
  const BenchOptions o = parse_bench_options(args);
  // The CSV would truncate the shapes file it was read from (as tune refuses for --out).
  if (!o.shapes_file.empty() && same_file(o.csv, o.shapes_file)) {
    throw UsageError("bench: --csv " + detail::quoted(o.csv) + " is the --shapes file; give another file");
  }
  const std::vector<Shape> shapes =
      o.shapes_file.empty() ? default_shapes() : read_shapes_file(o.shapes_file);
  // Every shape is checked before the GPU is touched, the ceilings measured or a CSV row
  // written: the library's problem check (`tune`'s and a call's messages), the bench's own
  // limits, and buffers past 2^63 bytes; once the GPU is found, buffers beyond its free memory.
  for (const Shape& shape : shapes) {
    const ProblemShape p = bench_problem(shape, o);
    validate_problem(p);
    check_forced_config(p);  // F8GEMM_CONFIG, as ours would judge it at the shape's first call
    check_bench_limits(shape);
    require_fits(bench_footprint(p, 1), "bench: B,M,N,K " + shape.label(), std::nullopt);
  }
  // The CSV opens after the GPU is set up: a path it cannot write is refused before (as tune's).
  if (const std::string why = unwritable_reason(o.csv); !why.empty()) {
    throw UsageError("bench: cannot write --csv " + detail::quoted(o.csv) + ": " + why);
  }
  int device_count = 0;
  F8GEMM_CHECK_CUDA(cudaGetDeviceCount(&device_count));
  F8GEMM_REQUIRE(device_count > 0, kNoDevice, "bench: no CUDA device");
  int device = 0;
  F8GEMM_CHECK_CUDA(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  F8GEMM_CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  // Measured before the peer's workspace and the ceilings' buffers exist: both footprints
  // count them.
  const int64_t free_bytes = free_device_bytes();
  require_fits(ceilings_footprint(), "bench: the ceilings (PEAK at 8192^3, copy bandwidth)",
               free_bytes);
  for (const Shape& shape : shapes) {
    const ProblemShape p = bench_problem(shape, o);
    require_fits(bench_footprint(p, input_sets(operand_bytes(p), o)),
                 "bench: B,M,N,K " + shape.label(), free_bytes);
  }
  std::printf("device %d: %s, sm_%d%d, %d SMs, L2 %zu bytes; fast_accum %s; prefetch_w %s; "
              "%d iters\n", device, prop.name, prop.major, prop.minor,
              prop.multiProcessorCount, l2_cache_bytes(), o.precise ? "off" : "on",
              o.prefetch_w ? "on" : "off", o.iters);

  CsvWriter csv(o.csv);  // before any timing: a bad path must not cost a run

  cudaStream_t stream = nullptr;
  F8GEMM_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  struct StreamGuard {
    cudaStream_t s;
    ~StreamGuard() { (void)cudaStreamDestroy(s); }
  } stream_guard{stream};

  CublasLtPeer peer;
  double bw = 0, peak = kAssumedPeakTflops;
  bool peak_measured = false;
  {
    // The 8192^3 tensorwise GEMM both warms the clock (~0.8 ms of full-chip work per call) and,
    // unless --no-peak, measures PEAK.
    // The sizes that ceilings_footprint() checked.
    const PeakBytes sizes = peak_bytes();
    DeviceBuffer px(size_t(sizes.x)), pw(size_t(sizes.w)), py(size_t(sizes.y)),
        pscale(size_t(sizes.scales));
    fill_random_e4m3(px.get(), px.bytes(), 0xBEEF1, kCodeStddev);
    fill_random_e4m3(pw.get(), pw.bytes(), 0xBEEF2, kCodeStddev);
    fill_random_f32(pscale.as<float>(), pscale.bytes() / sizeof(float), 0xBEEF3, kScaleLo,
                    kScaleHi);
    const float* x_scale = pscale.as<const float>();
    const float* w_scale = x_scale + kPeakScaleGap;
    StreamFn peak_fn = [&](cudaStream_t st) {
      std::string status = peer.tensorwise(kPeakSize, kPeakSize, kPeakSize, px.get(), pw.get(),
                                           x_scale, w_scale, py.get(), true, st);
      if (!status.empty()) throw Error(ErrorCode::kUnsupported, "cuBLASLt tensorwise: " + status);
    };
    std::string status;
    try {
      status = peer.tensorwise(kPeakSize, kPeakSize, kPeakSize, px.get(), pw.get(), x_scale,
                               w_scale, py.get(), true, stream);
      F8GEMM_CHECK_CUDA(cudaGetLastError());
      F8GEMM_CHECK_CUDA(cudaStreamSynchronize(stream));
    } catch (const Error& e) {
      // A cuBLASLt status error leaves the GPU usable: fall back to the assumed PEAK.
      cudaError_t health = cudaDeviceSynchronize();
      (void)cudaGetLastError();
      if (e.code() != ErrorCode::kCuda || health != cudaSuccess) throw;
      status = std::string("error: ") + e.what();
    }
    // The ceilings' waits, named in a hang report (hang_guard.hpp).
    std::optional<test::HangLabel> label(std::in_place, "bench clock warm-up");
    if (status.empty()) {
      run_for_ms(peak_fn, kClockWarmMs, stream);
    } else {
      std::printf("warning: cuBLASLt tensorwise FP8 8192^3: %s; warming with copies instead\n",
                  status.c_str());
      DeviceBuffer scratch(py.bytes());
      run_for_ms([&](cudaStream_t st) {
        F8GEMM_CHECK_CUDA(cudaMemcpyAsync(scratch.get(), py.get(), py.bytes(),
                                          cudaMemcpyDeviceToDevice, st));
      }, kClockWarmMs, stream);
    }
    label.emplace("bench copy bandwidth");
    bw = measure_copy_bw_tbps(stream);
    if (o.peak && status.empty()) {
      label.emplace("bench PEAK (cuBLASLt tensorwise FP8 8192^3)");
      double us = time_graph_us(peak_fn, o.iters, stream, kCallsPerGraph);
      peak = 2.0 * std::pow(static_cast<double>(kPeakSize), 3) / (us * 1e-6) / 1e12;
      peak_measured = true;
    } else {
      std::printf("PEAK not measured (%s): using the assumed %.0f TFLOP/s\n",
                  o.peak ? "cuBLASLt tensorwise failed" : "--no-peak", kAssumedPeakTflops);
    }
  }
  std::printf("BW %.3f TB/s (device-to-device copy, read + write); PEAK %.1f TFLOP/s%s\n", bw,
              peak, peak_measured ? " (cuBLASLt FP8 tensorwise 8192^3, fast accum, graph)" : "");
  csv.write({"ceiling_bw", "", "", "", "", "", "", "", "", "", "", "", fmt(bw, "%.3f"), ""});
  csv.write({"ceiling_peak", "", "", "", "", peak_measured ? "" : "assumed", "", "", "", "", "",
             fmt(peak, "%.1f"), "", ""});

  std::vector<ShapeSummary> summaries;
  summaries.reserve(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    summaries.push_back(
        bench_shape(shapes[i], static_cast<int>(i), bw, peak, o, peer, csv, stream));
  }
  print_table(summaries, bw, peak, peak_measured);
  std::printf("csv: %s\n", o.csv.c_str());
  return 0;
}

}  // namespace f8gemm::cli
