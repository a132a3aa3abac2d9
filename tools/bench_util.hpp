/// \brief Benchmark helpers for the CLI: device buffers, event and graph timing, the
/// copy-bandwidth ceiling, clock warm-up and L2 rotation. Random operands come from the testing/
/// target (random.hpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "buffer_bytes.hpp"
#include "device_buffer.hpp"
#include "random.hpp"

namespace f8gemm::cli {

using DeviceBuffer = ::f8gemm::detail::DeviceBuffer;
using test::fill_random_e4m3;
using test::fill_random_f32;
using test::fill_random_normal_f32;

/// A unit of work enqueued on the given stream (it must launch only on that stream, so that a
/// graph capture sees all of it).
using StreamFn = std::function<void(cudaStream_t)>;

/// The current GPU's free memory in bytes (cudaMemGetInfo), for footprint_refusal().
int64_t free_device_bytes();

/// A UsageError "`what` <footprint_refusal()>" when `footprint` cannot be allocated: without
/// `free_bytes` only a count past INT64_MAX (before a GPU is looked for), with it a total above
/// the GPU's free memory (before the first allocation).
void require_fits(const Footprint& footprint, const std::string& what,
                  std::optional<int64_t> free_bytes);

/// Load before each implementation or configuration is timed (bench and tune alike): a first
/// call's JIT compile idles the GPU and clocks drop, and a compute-bound kernel's sustained clock
/// (under the power limit) settles only after tens of ms; timed after 20 ms, compute-bound configs
/// read up to 14% faster than the bench then measures.
constexpr double kImplWarmMs = 100.0;

/// Calls fn back to back for at least `ms` milliseconds of wall time, synchronising in batches.
/// The H200's SM clock idles at 345 MHz and reaches 1980 MHz only after a few hundred ms of load.
void run_for_ms(const StreamFn& fn, double ms, cudaStream_t stream);

/// Microseconds per call as the host issues calls back to back: `warmup` calls, then CUDA events
/// around `iters` calls. Launch overhead and gaps between launches are included.
double time_host_us(const StreamFn& fn, int iters, int warmup, cudaStream_t stream);

/// Microseconds per call of kernel time: `calls_per_graph` calls are captured into one CUDA graph
/// (thread-local capture on a non-default stream; a private one is made if `stream` is the default
/// stream), replayed twice to warm up, then ceil(iters / calls_per_graph) replays (at least 3) are
/// each timed with events; the median replay over calls_per_graph is returned.
double time_graph_us(const StreamFn& fn, int iters, cudaStream_t stream, int calls_per_graph = 20);

/// Device-to-device copy bandwidth in TB/s, counting bytes read plus bytes written: one 4 GiB
/// cudaMemcpyAsync (smaller if memory is short) warmed up once, then the median of 5 timed copies.
double measure_copy_bw_tbps(cudaStream_t stream = nullptr);

/// The current device's L2 size in bytes (cudaDevAttrL2CacheSize; 62914560 on the H200).
size_t l2_cache_bytes();

/// The L2 spans that the rotation's input sets cover by default (`bench --rotate-l2` sets it).
constexpr double kDefaultL2Span = 2.0;

/// How many copies of a call's inputs to rotate among so that consecutive calls never find their
/// inputs in L2: enough copies that they span l2_span x the L2 (at 2 or more, an LRU-like cache
/// holding 60 MB then keeps none of the next call's inputs), between 1 and max_sets. l2_span
/// must be positive and finite (`bench --rotate-l2` checks (0, 64]).
///
/// Rotation, not flushing: a flush (writing a 128 MB buffer between calls) would have to sit inside
/// the timed region of back-to-back and graph timing and add ~30 us of memset per call, polluting
/// exactly the small-M times that matter. Rotation costs only memory.
int rotation_sets(size_t input_bytes_per_set, size_t l2_bytes, double l2_span = kDefaultL2Span,
                  int max_sets = 64);

/// Calls per captured graph when calls rotate among `sets` input copies: whole rotation cycles
/// of at least `at_least` calls, so that every copy is read in each replay.
int calls_per_graph(int sets, int at_least = 20);

}  // namespace f8gemm::cli
