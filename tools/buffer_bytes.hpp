/// \brief The device memory that `run`, `tune` and `bench` allocate for a problem (and `bench`
/// for its ceilings and its cuBLASLt peer), counted with overflow-checked arithmetic, so that a
/// problem that cannot fit is refused (exit 2, one line) before the first allocation. The
/// allocating code takes its sizes from here, so that what is checked is what is allocated. validate_problem() bounds each batch (below 2^40 bytes) and B
/// (below 2^31) but not their product: B = 2^30 batches of 2^34 bytes is 2^64 bytes, a signed
/// overflow in int64, and 2^55 bytes is a cudaMalloc failure, a CUDA error. Pure and header-only,
/// on public types, so that the CPU tests call it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "f8gemm/f8gemm.hpp"

namespace f8gemm::cli {

/// A byte count; empty once it would pass INT64_MAX. The CLI's own arithmetic on sizes (size_t
/// and int64 products, the views' shapes) stays below that bound when the total does, and no GPU
/// holds 2^63 bytes.
using Bytes = std::optional<int64_t>;

inline Bytes times(Bytes a, int64_t b) {
  int64_t r = 0;
  if (!a || b < 0 || __builtin_mul_overflow(*a, b, &r)) return std::nullopt;
  return r;
}

inline Bytes plus(Bytes a, Bytes b) {
  int64_t r = 0;
  if (!a || !b || __builtin_add_overflow(*a, *b, &r)) return std::nullopt;
  return r;
}

/// The device buffers of one problem's operands (sizes as validate_problem() admits them).
struct OperandBytes {
  Bytes x, w, w_preshuffled, x_scale, w_scale, bias, y;
  /// The fp32 values of the larger operand while the CLI's fixture quantises it (one operand at
  /// a time, freed after): 4 bytes an element.
  Bytes staging;
};

inline OperandBytes operand_bytes(const ProblemShape& p) {
  OperandBytes o;
  o.x = times(times(p.batch, p.m), p.k);
  o.w = times(times(p.batch, p.n), p.k);
  o.w_preshuffled = 1;
  for (int64_t d : preshuffled_shape(p.batch, p.n, p.k)) o.w_preshuffled = times(o.w_preshuffled, d);
  o.x_scale = times(times(p.batch, p.m), 4);
  o.w_scale = times(times(p.batch, p.n), 4);
  o.bias = p.has_bias ? times(times(p.batch, p.n), dtype_size(p.bias_dtype)) : Bytes(0);
  // The SiLU·mul epilogue writes N / 2 columns (gate and up rows are merged in W).
  const int64_t out_cols = p.epilogue_op == EpilogueOp::kSiluMul ? p.n / 2 : p.n;
  o.y = times(times(times(p.batch, p.m), out_cols), dtype_size(p.out_dtype));
  o.staging = o.x && o.w ? times(std::max(*o.x, *o.w), 4) : std::nullopt;
  return o;
}

/// What a command allocates at once, buffer by buffer.
struct Footprint {
  struct Part {
    std::string name;
    Bytes bytes;
  };
  std::vector<Part> parts;

  Bytes total() const {
    Bytes sum = 0;
    for (const Part& part : parts) sum = plus(sum, part.bytes);
    return sum;
  }
};

/// `run` and `tune` (the Fixture): every operand buffer, with the fp32 staging on top.
inline Footprint fixture_footprint(const ProblemShape& p) {
  const OperandBytes o = operand_bytes(p);
  Footprint f{{{"X", o.x}, {"W", o.w}, {"W preshuffled", o.w_preshuffled},
               {"scales", plus(o.x_scale, o.w_scale)}, {"bias", o.bias}, {"Y", o.y},
               {"fp32 staging", o.staging}}};
  return f;
}

/// The inputs of one rotation set of `bench` (X, W, W preshuffled and the scales).
inline Bytes bench_set_bytes(const OperandBytes& o) {
  return plus(plus(plus(o.x, o.w), o.w_preshuffled), plus(o.x_scale, o.w_scale));
}

/// The cuBLASLt peer's workspace, which CublasLtPeer allocates when it is made (before the
/// ceilings) and holds until the bench ends. 32 MiB is the workspace the cuBLAS documentation
/// recommends on Hopper; owning it also keeps cuBLASLt from allocating during graph capture.
inline constexpr int64_t kCublasLtWorkspaceBytes = int64_t{32} << 20;

/// `bench` while it times a shape: `sets` copies of the inputs (its L2 rotation), one Y, and the
/// cuBLASLt peer's workspace. The peer reads the same input sets and writes the same Y as ours
/// (cmd_bench.cpp), so the workspace is all that it adds.
inline Footprint bench_footprint(const ProblemShape& p, int sets) {
  const OperandBytes o = operand_bytes(p);
  Footprint f{{{sets == 1 ? std::string("inputs") : std::to_string(sets) + " input sets",
                times(bench_set_bytes(o), sets)},
               {"Y", o.y},
               {"cuBLASLt workspace", kCublasLtWorkspaceBytes}}};
  return f;
}

/// PEAK is cuBLASLt tensorwise FP8 at kPeakSize^3 (`bench`'s ceilings).
inline constexpr int64_t kPeakSize = 8192;
/// PEAK's two scalar scales sit this many floats (256 bytes) apart in one buffer: cuBLASLt
/// refuses scale pointers that are not 16-byte aligned (CUBLAS_STATUS_NOT_SUPPORTED).
inline constexpr int64_t kPeakScaleGap = 64;

/// The buffers of PEAK's GEMM: X and W e4m3 [8192, 8192], Y bf16, the two scales.
struct PeakBytes {
  int64_t x, w, y, scales;
};
inline constexpr PeakBytes peak_bytes() {
  return {kPeakSize * kPeakSize, kPeakSize * kPeakSize, 2 * kPeakSize * kPeakSize,
          2 * kPeakScaleGap * 4};
}

/// Each of the copy-bandwidth ceiling's two buffers: 4 GiB (~70x the L2, so the copy runs at
/// HBM speed, ~2 ms at 4.2 TB/s), halved while the pair would leave less than 1 GiB of
/// `free_bytes`, down to 256 MiB.
inline int64_t copy_buffer_bytes(int64_t free_bytes) {
  int64_t bytes = int64_t{4} << 30;
  while (bytes > (int64_t{256} << 20) && 2 * bytes + (int64_t{1} << 30) > free_bytes) bytes /= 2;
  return bytes;
}

/// `bench` before its shapes: the peer's workspace and PEAK's buffers, and while they are held,
/// either the clock warm-up's copy scratch (PEAK's Y size, only when cuBLASLt fails; freed before
/// the copies) or the copy-bandwidth pair at its smallest (it grows only where 1 GiB stays free).
inline Footprint ceilings_footprint() {
  const PeakBytes b = peak_bytes();
  Footprint f{{{"cuBLASLt workspace", kCublasLtWorkspaceBytes},
               {"PEAK X", b.x},
               {"PEAK W", b.w},
               {"PEAK Y", b.y},
               {"PEAK scales", b.scales},
               {"copy-bandwidth buffers", std::max(b.y, 2 * copy_buffer_bytes(0))}}};
  return f;
}

/// "1.5 GiB": binary units, one decimal.
inline std::string format_bytes(int64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 6) {
    v /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), unit == 0 ? "%.0f %s" : "%.1f %s", v, kUnits[unit]);
  return text;
}

/// Why `f` cannot be allocated, "" when it can: a count past INT64_MAX always (the first buffer
/// that passes it, or the total); with `free_bytes` (the GPU's free memory), a total above it.
/// The text follows the sizes it is about: "need 2.0 GiB of GPU memory (X 1.0 GiB, ...), more
/// than the 1.0 GiB free".
inline std::string footprint_refusal(const Footprint& f, std::optional<int64_t> free_bytes) {
  for (const Footprint::Part& part : f.parts) {
    if (!part.bytes) return "need more than 2^63 bytes for " + part.name + " alone: no GPU holds that";
  }
  const Bytes total = f.total();
  if (!total) return "need more than 2^63 bytes in all: no GPU holds that";
  if (!free_bytes || *total <= *free_bytes) return "";
  std::string parts;
  for (const Footprint::Part& part : f.parts) {
    if (*part.bytes == 0) continue;
    parts += (parts.empty() ? "" : ", ") + part.name + " " + format_bytes(*part.bytes);
  }
  return "need " + format_bytes(*total) + " (" + std::to_string(*total) + " bytes) of GPU memory (" +
         parts + "), more than the " + format_bytes(*free_bytes) + " free";
}

/// B or M is 0: a call launches nothing, so there is nothing to time (a CUDA graph of it is
/// empty) and nothing to tune; `run --once` still runs it.
inline bool is_empty_problem(const ProblemShape& p) { return p.batch == 0 || p.m == 0; }

}  // namespace f8gemm::cli
