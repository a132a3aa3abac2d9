/// \brief Argument validation for every entry point: tensor views (rank, sizes, memory), the
/// GEMM call's tensors, and the problem sizes against the kernel's int32 index limits. The shape
/// rules of the GEMM calls (validate_shapes.cpp, validate_grouped.cpp) come first in each call
/// and also stand alone (check_gemm_shapes, check_grouped_shapes), where a size may be unknown.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "f8gemm/f8gemm.hpp"

namespace f8gemm::detail {

/// The kernel indexes in int32: TMA coordinates, tile counters, and N and K as template
/// constants. These limits leave the margin that each int32 expression of the kernel needs.
/// B: the batch coordinate of every TMA load and store.
inline constexpr int64_t kMaxBatch = INT32_MAX;
/// M and K: a tile reaches up to 255 rows past its first row (M + 255 in int32), and the
/// k-block count is (K + 127) / 128 with kb * 128 up to K + 127.
inline constexpr int64_t kMaxM = (int64_t(1) << 31) - 256;
inline constexpr int64_t kMaxK = (int64_t(1) << 31) - 256;
/// N: the rasterisation group spans raster (at most 64) x ceil(N / 8) tiles in int32, so
/// N <= 8 * ((2^31 - 1) / 64) = 2^28 - 8; 256 less keeps every tile's reach past N in range too.
inline constexpr int64_t kMaxN = (int64_t(1) << 28) - 256;
/// Tiles: B * ceil(M / 8) * ceil(N / 8) bounds the tile count of every configuration (no tile is
/// smaller than 8 x 8). The persistent loop computes t + gridDim.x with gridDim.x <= tiles, so
/// tiles <= 2^30 keeps it below 2^31. That is 2^36 output elements, more than a GPU holds.
inline constexpr int64_t kMaxTiles = int64_t(1) << 30;
/// TMA's limit on a tensor map's strides: the batch stride of X, W and Y in bytes.
inline constexpr int64_t kMaxBatchStrideBytes = int64_t(1) << 40;

/// Whether a size is known. Every size of a call is (require_view refuses a negative one); in a
/// shape-only check (check_gemm_shapes, check_grouped_shapes) a size may be kUnknownSize, and
/// each rule skips what it cannot decide from the known sizes.
inline bool known(int64_t size) { return size != kUnknownSize; }
/// a == b where both are known; true where either is not.
inline bool may_equal(int64_t a, int64_t b) { return !known(a) || !known(b) || a == b; }

/// a * b for sizes a, b >= 0, unknown when either is. A product past int64 throws
/// Error(kInvalidArgument) "sizes exceed int64: <name><what> = a * b": a shape-only check bounds
/// no view's element count, so one known size may be anything up to 2^63 - 1.
int64_t known_mul(int64_t a, int64_t b, const char* name, const char* what);
/// ceil(a / b) for a size a >= 0 (unknown when it is) and b > 0, with no a + b - 1 to overflow.
inline int64_t known_ceil_div(int64_t a, int64_t b) {
  return known(a) ? a / b + (a % b != 0 ? 1 : 0) : a;
}

/// A size that several arguments carry (B of a batched GEMM, G of a grouped one, N): the first
/// of them that knows it gives it, so that a shape-only check whose first source is unknown
/// still compares the others with it. `from` names the argument that gave it, for the messages.
struct SharedSize {
  int64_t value = kUnknownSize;
  const char* from = "";
  /// Takes `size`, which `name` carries, unless the size is known already.
  void offer(int64_t size, const char* name) {
    if (!known(value) && known(size)) {
      value = size;
      from = name;
    }
  }
};

/// A TensorView whose fields may be read: rank 0..kMaxRank, every dimension >= 0 (or
/// kUnknownSize where allow_unknown), and the product of its known nonzero dimensions within
/// int64 (so numel() cannot overflow). Throws kInvalidArgument.
void require_view(const TensorView& t, const char* name, bool allow_unknown = false);

/// "[2, 64, 128]": a view's shape as the messages print it ("?" for an unknown size).
std::string shape_str(const TensorView& t);
/// One size as the messages print it: the number, or "?" when unknown.
std::string size_str(int64_t size);
/// The product of a view's dimensions from `begin` to `end` (exclusive): 0 when one of them is
/// 0, else kUnknownSize when one is unknown. The view has passed require_view, which bounds the
/// product of its nonzero dimensions, so none overflows.
int64_t known_product(const TensorView& t, int begin, int end);

/// The checks of one tensor that every call makes; each throws Error(kInvalidArgument) naming
/// the tensor. require_dtype: dtype a, or b where allow_b. require_rank: rank `rank`, with the
/// layout it stands for in the message. require_shape: exactly `dims`. require_memory:
/// contiguous, non-null unless empty, and `alignment`-byte aligned (with the address in the
/// message).
/// The layout that a rank or shape message names, formatted only when the check fails: up to
/// three pieces ("[N, K] matching ", "XQ", "'s K"), so that a passing check (every call runs
/// these twice from the PyTorch ops: before allocating the output and in the call) builds no
/// string.
struct Layout {
  const char* a;
  const char* b = "";
  const char* c = "";
  Layout(const char* text) : a(text) {}  // NOLINT(google-explicit-constructor): a literal
  Layout(const char* first, const char* second, const char* third = "")
      : a(first), b(second), c(third) {}
};

void require_dtype(const TensorView& t, const char* name, DType a, DType b = DType::kU8,
                   bool allow_b = false);
void require_rank(const TensorView& t, const char* name, int rank, const Layout& layout);
void require_shape(const TensorView& t, const char* name, std::initializer_list<int64_t> dims,
                   const Layout& layout);
void require_memory(const TensorView& t, const char* name, int alignment);

/// The tensors that gemm(), batched_gemm() and grouped_gemm() all take, with the names the
/// messages give them (options.names, else the C++ names).
struct GemmTensors {
  const TensorView& x;
  const TensorView& w;
  const TensorView& x_scale;
  const TensorView& w_scale;
  const TensorView& out;
  const TensorView* bias;  ///< null when the call has none (options.bias null or undefined)
  GemmArgNames names;      ///< options.names with every null field set to the C++ name
};

/// The GEMM tensors of a call, after the checks that need no shape: a valid layout and Pdl;
/// dtypes (x e4m3; w e4m3, or uint8 preshuffled; scales fp32; out bf16 or fp16; bias fp32 or
/// bf16); then require_view of each (allow_unknown: for a shape-only check), so that their
/// shapes may be read.
GemmTensors require_gemm_tensors(const TensorView& x, const TensorView& w, WeightLayout layout,
                                 const TensorView& x_scale, const TensorView& w_scale,
                                 const TensorView& out, const GemmOptions& options,
                                 bool allow_unknown = false);

/// The shape rules of a gemm() (batched false) or batched_gemm() (batched true) call over its
/// checked tensors (validate_shapes.cpp): ranks, K % 16, N % 8 (16 with the SiLU·mul epilogue),
/// W's plain or padded preshuffled shape, the scales', output's and bias' shapes, then the
/// problem's limits (check_problem). Returns the problem without `chained` (which reads
/// F8GEMM_PDL); its sizes may be kUnknownSize when the tensors' are.
ProblemShape gemm_shape_rules(const GemmTensors& t, WeightLayout layout,
                              const GemmOptions& options, bool batched);

/// validate_problem(), where allow_unknown lets B, M, N and K be kUnknownSize (each limit is then
/// checked with the sizes that are known).
void check_problem(const ProblemShape& problem, bool allow_unknown);

/// The memory of the GEMM tensors (x, w and out 16-byte aligned, the scales 4, the bias its
/// element; out disjoint from every input) and their place: all on x's GPU. Returns that device.
int require_gemm_placement(const GemmTensors& t);

/// "the host" or "cuda:N", as the messages name a tensor's place.
std::string place_str(int device);

/// A validated GEMM call: its problem and the device of its tensors.
struct Validated {
  ProblemShape shape;
  int device = 0;
  /// GemmOptions::pdl resolved once (the F8GEMM_PDL switch read for Pdl::kDefault): kOn or kOff.
  /// It decides the launch and ProblemShape::chained alike.
  Pdl pdl = Pdl::kOff;
};

/// Checks every argument of gemm() (batched false) or batched_gemm() (batched true): first the
/// shapes and dtypes (require_gemm_tensors, gemm_shape_rules), then the trace and the memory and
/// place of every tensor. Throws Error(kInvalidArgument) naming the argument as
/// options.names calls it (the C++ names by default).
Validated validate_call(const TensorView& x, const TensorView& w, WeightLayout layout,
                        const TensorView& x_scale, const TensorView& w_scale,
                        const TensorView& out, const GemmOptions& options, bool batched);

/// A view the kernels read or write as flat memory: contiguous, non-null unless empty, and
/// `alignment`-byte aligned.
void require_contiguous(const TensorView& t, const char* name, int alignment);

/// Throws Error(kInvalidArgument) naming both tensors unless `out` and `in` share no byte. A
/// kernel writes `out` while it reads `in`, in no fixed order across CTAs, so an overlap gives a
/// result that depends on the schedule (and the preshuffle kernels take __restrict__ pointers).
/// Both views must have passed require_view and be contiguous: a view's bytes are [data, data +
/// numel * element size). An empty view overlaps nothing. The addresses are compared as they
/// are: with CUDA's unified addressing, equal addresses on two devices cannot occur.
void require_disjoint(const TensorView& out, const char* out_name, const TensorView& in,
                      const char* in_name);

}  // namespace f8gemm::detail
