/// \brief Benchmark helpers: event/graph timing, copy bandwidth, L2 rotation.
#include "bench_util.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "f8gemm/check.hpp"
#include "hang_guard.hpp"

namespace f8gemm::cli {

int64_t free_device_bytes() {
  size_t free_bytes = 0, total_bytes = 0;
  F8GEMM_CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  return static_cast<int64_t>(std::min<size_t>(free_bytes, INT64_MAX));
}

void require_fits(const Footprint& footprint, const std::string& what,
                  std::optional<int64_t> free_bytes) {
  const std::string why = footprint_refusal(footprint, free_bytes);
  if (!why.empty()) throw UsageError(what + " " + why);
}

void run_for_ms(const StreamFn& fn, double ms, cudaStream_t stream) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  // Batches double until one takes >= 10 ms, so a 10 us call is not throttled by a host sync
  // after each call and a 1 ms call does not overshoot the budget by much.
  int batch = 1;
  for (;;) {
    auto batch_start = Clock::now();
    for (int i = 0; i < batch; ++i) fn(stream);
    F8GEMM_CHECK_CUDA(cudaGetLastError());
    test::sync_stream_or_exit(stream);
    auto now = Clock::now();
    if (std::chrono::duration<double, std::milli>(now - start).count() >= ms) break;
    if (std::chrono::duration<double, std::milli>(now - batch_start).count() < 10.0 &&
        batch < (1 << 16)) {
      batch *= 2;
    }
  }
}

namespace {

/// Owns a pair of events; destroys them even when a timed call throws.
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    F8GEMM_CHECK_CUDA(cudaEventCreate(&start));
    cudaError_t st = cudaEventCreate(&stop);
    if (st != cudaSuccess) {
      (void)cudaEventDestroy(start);
      F8GEMM_CHECK_CUDA(st);
    }
  }
  ~EventPair() {
    (void)cudaEventDestroy(start);
    (void)cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  float elapsed_ms() const {
    float ms = 0.0f;
    test::sync_event_or_exit(stop);
    F8GEMM_CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    return ms;
  }
};

bool is_default_stream(cudaStream_t s) {
  return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread;
}

/// A stream created here when the caller's is the default one (which cannot be captured).
struct OwnedStream {
  cudaStream_t stream = nullptr;
  OwnedStream() { F8GEMM_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)); }
  ~OwnedStream() { (void)cudaStreamDestroy(stream); }
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
};

struct GraphOwner {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~GraphOwner() {
    if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

double time_host_us(const StreamFn& fn, int iters, int warmup, cudaStream_t stream) {
  F8GEMM_REQUIRE(iters > 0, kInvalidArgument, "time_host_us: iters must be > 0, got ", iters);
  for (int i = 0; i < warmup; ++i) fn(stream);
  F8GEMM_CHECK_CUDA(cudaGetLastError());
  test::sync_stream_or_exit(stream);
  EventPair ev;
  F8GEMM_CHECK_CUDA(cudaEventRecord(ev.start, stream));
  for (int i = 0; i < iters; ++i) fn(stream);
  F8GEMM_CHECK_CUDA(cudaEventRecord(ev.stop, stream));
  F8GEMM_CHECK_CUDA(cudaGetLastError());
  double ms = ev.elapsed_ms();
  test::sync_stream_or_exit(stream);
  return ms * 1000.0 / iters;
}

double time_graph_us(const StreamFn& fn, int iters, cudaStream_t stream, int calls_per_graph) {
  F8GEMM_REQUIRE(iters > 0, kInvalidArgument, "time_graph_us: iters must be > 0, got ", iters);
  F8GEMM_REQUIRE(calls_per_graph > 0, kInvalidArgument,
                 "time_graph_us: calls_per_graph must be > 0, got ", calls_per_graph);
  std::unique_ptr<OwnedStream> owned;
  if (is_default_stream(stream)) {
    owned = std::make_unique<OwnedStream>();
    stream = owned->stream;
  }
  test::sync_stream_or_exit(stream);

  GraphOwner g;
  F8GEMM_CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    for (int i = 0; i < calls_per_graph; ++i) fn(stream);
  } catch (...) {
    // Leave the stream usable: end the broken capture and drop what it recorded.
    cudaGraph_t broken = nullptr;
    (void)cudaStreamEndCapture(stream, &broken);
    if (broken != nullptr) (void)cudaGraphDestroy(broken);
    (void)cudaGetLastError();
    throw;
  }
  F8GEMM_CHECK_CUDA(cudaStreamEndCapture(stream, &g.graph));
  size_t nodes = 0;
  F8GEMM_CHECK_CUDA(cudaGraphGetNodes(g.graph, nullptr, &nodes));
  // An empty graph replays in ~2 us and would report an impossible time: fn launched elsewhere.
  F8GEMM_REQUIRE(nodes >= static_cast<size_t>(calls_per_graph), kInternal, "time_graph_us: ",
                 calls_per_graph, " calls captured only ", nodes,
                 " graph nodes; the work did not go to the capture stream");
  F8GEMM_CHECK_CUDA(cudaGraphInstantiate(&g.exec, g.graph, 0));
  F8GEMM_CHECK_CUDA(cudaGraphUpload(g.exec, stream));

  for (int i = 0; i < 2; ++i) F8GEMM_CHECK_CUDA(cudaGraphLaunch(g.exec, stream));
  test::sync_stream_or_exit(stream);

  int replays = std::max(3, (iters + calls_per_graph - 1) / calls_per_graph);
  std::vector<std::unique_ptr<EventPair>> events;
  events.reserve(replays);
  for (int r = 0; r < replays; ++r) {
    events.push_back(std::make_unique<EventPair>());
    F8GEMM_CHECK_CUDA(cudaEventRecord(events.back()->start, stream));
    F8GEMM_CHECK_CUDA(cudaGraphLaunch(g.exec, stream));
    F8GEMM_CHECK_CUDA(cudaEventRecord(events.back()->stop, stream));
  }
  test::sync_stream_or_exit(stream);
  std::vector<double> per_call_us;
  per_call_us.reserve(replays);
  for (const auto& ev : events) per_call_us.push_back(ev->elapsed_ms() * 1000.0 / calls_per_graph);
  F8GEMM_CHECK_CUDA(cudaGetLastError());
  return median(per_call_us);
}

double measure_copy_bw_tbps(cudaStream_t stream) {
  // The size that `bench`'s memory check counts at its smallest (ceilings_footprint).
  const size_t bytes = static_cast<size_t>(copy_buffer_bytes(free_device_bytes()));
  DeviceBuffer src(bytes), dst(bytes);
  // Non-zero contents: never time on zeros.
  F8GEMM_CHECK_CUDA(cudaMemsetAsync(src.get(), 0x5A, bytes, stream));
  F8GEMM_CHECK_CUDA(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, stream));
  test::sync_stream_or_exit(stream);
  std::vector<double> tbps;
  for (int i = 0; i < 5; ++i) {
    EventPair ev;
    F8GEMM_CHECK_CUDA(cudaEventRecord(ev.start, stream));
    F8GEMM_CHECK_CUDA(
        cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, stream));
    F8GEMM_CHECK_CUDA(cudaEventRecord(ev.stop, stream));
    double ms = ev.elapsed_ms();
    F8GEMM_REQUIRE(ms > 0.0, kInternal, "measure_copy_bw_tbps: zero elapsed time");
    tbps.push_back(2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e12);
  }
  test::sync_stream_or_exit(stream);
  return median(tbps);
}

size_t l2_cache_bytes() {
  int device = 0, l2 = 0;
  F8GEMM_CHECK_CUDA(cudaGetDevice(&device));
  F8GEMM_CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  return static_cast<size_t>(std::max(l2, 0));
}

int rotation_sets(size_t input_bytes_per_set, size_t l2_bytes, double l2_span, int max_sets) {
  if (input_bytes_per_set == 0) return 1;
  const size_t span = static_cast<size_t>(std::ceil(l2_span * static_cast<double>(l2_bytes)));
  size_t want = (span + input_bytes_per_set - 1) / input_bytes_per_set;
  return static_cast<int>(std::clamp<size_t>(want, 1, static_cast<size_t>(std::max(1, max_sets))));
}

int calls_per_graph(int sets, int at_least) {
  sets = std::max(sets, 1);
  return sets <= at_least ? (at_least + sets - 1) / sets * sets : sets;
}

}  // namespace f8gemm::cli
