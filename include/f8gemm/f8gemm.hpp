/// \brief The public C++ API of f8gemm: FP8 (e4m3) rowwise-scaled GEMMs for Hopper (sm_90a).
///
/// Y[b,m,n] = out( xs[b,m] * ws[b,n] * sum_k X[b,m,k] * W[b,n,k] (+ bias[b,n]) )
///
/// Nothing here depends on torch. Tensors are passed as non-owning TensorView values; every
/// argument is validated before any launch and a bad one throws f8gemm::Error naming it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace f8gemm {

/// Library version; it is part of every tuning-table key and of the JIT cache hash.
inline constexpr const char* kVersion = "0.1.0";

/// Version of the preshuffled weight layout (README "Preshuffled layout"). Bumped on any change.
inline constexpr int kPreshuffleLayoutVersion = 1;

/// Bytes of K in one preshuffled k-block, and rows of N in one 1 KB slab.
inline constexpr int kShuffleBlockK = 128;
inline constexpr int kShuffleSlabRows = 8;
inline constexpr int kShuffleSlabBytes = 1024;

enum class ErrorCode {
  kInvalidArgument,  ///< a bad dtype, rank, shape, stride, alignment, device or size
  kUnsupported,      ///< valid in principle, not supported (e.g. a config that cannot run)
  kNoDevice,         ///< no driver, no GPU, or no sm_90 GPU
  kCuda,             ///< a CUDA runtime call failed
  kCompile,          ///< NVRTC failed to compile an instance
  kIo,               ///< a file could not be read or written
  kInternal,         ///< a bug in f8gemm
};

const char* to_string(ErrorCode code);

/// The one exception type f8gemm throws. what() is a single readable line: "f8gemm: <code>:
/// <message>".
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const noexcept { return code_; }
  /// The message without the "f8gemm: <code>: " prefix, for a caller that adds context to it.
  const std::string& message() const noexcept { return message_; }

 private:
  ErrorCode code_;
  std::string message_;
};

/// Whether F8GEMM_LOG is on now (README "Environment": the library then logs its decisions,
/// plans and compiles, and a caller such as the CLI prints whole compile logs). Throws
/// Error(kInvalidArgument) naming the variable when its value is not a switch value.
bool log_enabled();

/// Checks now every environment variable whose value the library judges (README "Environment"):
/// the switches F8GEMM_LOG, F8GEMM_PDL, F8GEMM_NO_TUNED and F8GEMM_FAIL_ON_SPILL, the name in
/// F8GEMM_CONFIG and the rules its config breaks whatever the problem (tile, ring, cluster,
/// shared memory), and, with `tuned_tables` and unless F8GEMM_NO_TUNED is on, the table in
/// F8GEMM_TUNE_FILE (read and kept, as the first decision would). Throws Error(kInvalidArgument)
/// naming the first bad one. The calls check what they read anyway; a tool calls this first, so
/// that a bad value is reported as such before it looks for a GPU (the CLI does, for every
/// command but `info`; `tune`, which reads no table, passes false).
void check_environment(bool tuned_tables = true);

enum class DType : int { kE4M3 = 0, kBF16 = 1, kF16 = 2, kF32 = 3, kU8 = 4, kI32 = 5, kI64 = 6 };

const char* to_string(DType dtype);
int dtype_size(DType dtype);

inline constexpr int kMaxRank = 4;
/// Where a TensorView's memory lives: kHost, or a CUDA device ordinal >= 0.
inline constexpr int kHost = -1;
/// A size that is not known yet, for check_gemm_shapes() and check_grouped_shapes(): a symbolic
/// size while torch.compile traces a model (the PyTorch extension's Meta kernels).
inline constexpr int64_t kUnknownSize = -1;

/// A non-owning view of a strided tensor (strides in elements).
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kU8;
  int rank = 0;
  int64_t shape[kMaxRank] = {0, 0, 0, 0};
  int64_t stride[kMaxRank] = {0, 0, 0, 0};
  int device = kHost;

  int64_t numel() const;
  bool is_contiguous() const;
  bool defined() const { return rank > 0 || data != nullptr; }
};

/// A contiguous view with the given shape. Leaves stride consistent with row-major.
TensorView make_view(void* data, DType dtype, std::vector<int64_t> shape, int device = kHost);

/// Which form W takes.
enum class WeightLayout : int {
  kPlain = 0,        ///< [B,N,K] (or [N,K]) row-major e4m3
  kPreshuffled = 1,  ///< [B, ceil(K/128), N/8, 1024] e4m3, see preshuffle()
};

/// Which kernel family a Config selects.
enum class KernelPath : int {
  kTiled = 0,    ///< X rows on the wgmma M side, W rows on its N side (large M)
  kSwapAB = 1,   ///< W rows on the wgmma M side, tokens on its N side (small M)
  kPingPong = 2, ///< as kTiled, but two consumer warpgroups own alternate 64-row tiles and take
                 ///< turns in the mainloop, so that one's epilogue overlaps the other's wgmmas
};

/// One kernel configuration. Printable and parseable: name() / Config::parse().
///   sm90_<tiled|pingpong|swap>_<bm>x<bn>x<bk>_s<stages>_c<cluster_m>x<cluster_n>_r<raster>
///   [_k<split>][_e]
/// e.g. sm90_tiled_128x256x128_s3_c1x1_r8, or sm90_swap_64x8x128_s12_c1x1_r0_k4 (K split over
/// a cluster of 4 CTAs).
struct Config {
  KernelPath path = KernelPath::kTiled;
  int bm = 128;          ///< rows per tile on the wgmma M side (X rows, or W rows if swap)
  int bn = 128;          ///< columns per tile on the wgmma N side (W rows, or tokens if swap)
  int bk = 128;          ///< bytes of K per stage (always 128: one 128B swizzle row)
  int stages = 4;        ///< shared-memory ring depth
  int cluster_m = 1;     ///< thread-block cluster shape
  int cluster_n = 1;
  int raster = 8;        ///< tile rasterisation group width along the longer side (0: none)
  int split_k = 1;       ///< CTAs of a cluster that split K for one tile (1: none; name suffix _k<n>)
  /// Where the kernel lets its dependents be scheduled under programmatic dependent launch
  /// (Pdl): 0 once each CTA has issued its last load, 1 (name suffix _e) right after its
  /// grid-dependency wait. Results do not change; without PDL it does nothing. The tune times
  /// both for chained problems (ProblemShape::chained): on the H200 the early trigger helped two
  /// decode GEMMs and cost two others (docs/perf-log.md, card 81; the field: card 96).
  int early_dependents = 0;

  std::string name() const;
  static Config parse(const std::string& name);  ///< throws Error on a bad name
  bool operator==(const Config& o) const;
  bool operator!=(const Config& o) const { return !(*this == o); }
};

/// The names that error messages give the arguments of gemm() and batched_gemm(). A binding
/// passes its own (the torch ops say XQ, WQ and output); the defaults are the C++ API's names,
/// and a null field keeps its default.
struct GemmArgNames {
  const char* x = "x";
  const char* w = "w";
  const char* x_scale = "x_scale";
  const char* w_scale = "w_scale";
  const char* out = "out";
  const char* bias = "bias";
  const char* m_sizes = "m_sizes";  ///< grouped_gemm() only
};

/// Programmatic dependent launch (sm_90): whether a kernel may be scheduled while the kernel
/// before it on the stream still runs. It then waits for that kernel on the device before it
/// reads or writes any memory that kernel may touch, so results do not change; what overlaps is
/// the launch and the prologue (barriers, tensor-map prefetch) with that kernel's tail. A GEMM
/// lets its own dependents launch once it has issued its last load. Measured on the H200
/// (docs/perf-log.md, card 23): short decode GEMMs and the Llama MLP block at small M gain,
/// a few longer decode GEMMs lose 1-9%, so the default stays off.
/// It holds inside CUDA-graph capture (the graph keeps the overlap). A kernel of another
/// library that follows an f8gemm kernel is not affected: it is launched the ordinary way.
enum class Pdl : int {
  kDefault = 0,  ///< the F8GEMM_PDL switch (README "Environment"); off when unset
  kOff = 1,
  kOn = 2,
};

/// What the epilogue computes from the scaled sums before it converts and stores them.
enum class EpilogueOp : int {
  kNone = 0,  ///< Y[b,m,n] as above
  /// The gated MLP's activation in the GEMM of its merged gate|up weight: W has N = 2I rows, gate
  /// in rows [0, I) and up in [I, 2I) (torch.cat([gate, up]), the layout that
  /// silu_mul_quantize_rows() reads from a GEMM's output), and Y is [..., I]:
  ///   Y[b,m,i] = out( SiLU(g) * u ), g = Y_none[b,m,i], u = Y_none[b,m,I+i]
  /// with g and u the fp32 values (scales and bias applied) that kNone would round, and
  /// SiLU(g) = g / (1 + exp(-g)) in fp32 through the special-function unit (2^x and 1/x
  /// approximations, within (2^-20 + 2^-22 |g|) |h| + 2^-119 |u| of the exact value:
  /// kernels/silu_sfu.cuh), then one rounding into Y's dtype: half of kNone's output bytes.
  /// N must be a multiple of 16 (I of 8).
  /// gemm() and batched_gemm() only, on the non-swap paths (tiled and ping-pong tiles with
  /// bn % 64 == 0, no split of K): the choice takes the best such config.
  kSiluMul = 1,
};
const char* to_string(EpilogueOp op);

/// A diagnostic: the moments at which each consumer warpgroup of each CTA began a tile, issued
/// its last wgmmas, had its sum in registers, passed its epilogue's first barrier, had its
/// outputs staged in shared memory and had issued its stores, as SM clock cycles
/// (clock64). A call with GemmOptions::trace set runs an instrumented build of its kernel (its
/// own JIT instance, compiled on first use; same configuration, same results), which the timing
/// loops of `f8gemm run --trace` read to show where a tile's time goes (docs/perf-log.md,
/// card 56). Layout, in 64-bit words, per CTA c at c * (4 + 12 * tiles): [0] the kernel's
/// consumer warpgroups + 1 (0: no CTA c ran), [1] its SM, [2] and [3] the tiles consumer 0 and 1
/// ran; then, for consumer slots 0 and 1, `tiles` records of 6 clocks in TraceEvent order
/// (kernels/gemm_params.cuh: the epilogue's two inner clocks come last). Tiles past `tiles` are
/// counted but not recorded. The kernel writes only what happened, so zero the buffer first:
/// then a 0 header means no CTA ran there, and a 0 clock an event that did not happen (the
/// epilogue of a split-K rank that does not store). For split-K rank 0 the "epilogue" includes
/// its wait for the other ranks' partial sums.
/// gemm() and batched_gemm() only: grouped_gemm() refuses a trace. is_ready() answers for the
/// ordinary instance, not the instrumented one.
struct GemmTrace {
  unsigned long long* data = nullptr;  ///< device memory of `words` 64-bit words
  int64_t words = 0;  ///< at least trace_words(trace_ctas(problem), tiles): every CTA's room
  int tiles = 0;      ///< records per consumer and CTA (>= 1)
};
/// The words a GemmTrace needs for `ctas` CTAs (trace_ctas() gives a call's CTAs).
int64_t trace_words(int ctas, int tiles);

/// Options common to gemm() and batched_gemm().
struct GemmOptions {
  const TensorView* bias = nullptr;  ///< optional fp32 or bf16 [B,N] (or [N] for B == 1)
  bool fast_accum = true;            ///< false: promote to fp32 every 128 of K
  cudaStream_t stream = nullptr;
  const Config* config = nullptr;    ///< force a configuration (else F8GEMM_CONFIG, table, model)
  const GemmArgNames* names = nullptr;  ///< argument names for error messages (null: the defaults)
  Pdl pdl = Pdl::kDefault;              ///< overlap the previous kernel's tail (see Pdl)
  /// W is final before this GEMM may start: with PDL the kernel then loads the first ring slots
  /// of W into shared memory before it waits for the previous kernel, so the weight stream starts
  /// during that kernel's tail (docs/perf-log.md, card 50). Set it only when no kernel that may
  /// still be incomplete when this one starts writes W. Usually that is the kernel just before
  /// it on the stream; if that one was launched with PDL and lets its dependents start before its
  /// own wait, the kernels before it count too, back to one that lets them start only after its
  /// wait (every f8gemm kernel) or was launched the ordinary way. Weights quantised and
  /// preshuffled once and reused by every forward qualify; weights quantised by the kernel just
  /// before the GEMM do not. It acts only with PDL on, on preshuffled W, outside 2x1 pairs
  /// (sm90_*_c2x1) and with K split at most two ways (where it measured faster); elsewhere it
  /// changes nothing.
  bool prefetch_w = false;
  /// Per-tile timestamps of this call into a caller's buffer (see GemmTrace): a diagnostic,
  /// not for serving (the instrumented kernel is a separate instance).
  const GemmTrace* trace = nullptr;
  /// The epilogue's operation (see EpilogueOp); kSiluMul takes out [..., N / 2].
  EpilogueOp epilogue_op = EpilogueOp::kNone;
};

/// Single GEMM: X [..., K] (leading dims flatten into M), W [N,K] or preshuffled [ceil(K/128),N/8,1024],
/// x_scale with X's leading shape (numel M), w_scale [N], out [..., N] bf16 or fp16.
void gemm(const TensorView& x, const TensorView& w, WeightLayout w_layout, const TensorView& x_scale,
          const TensorView& w_scale, const TensorView& out, const GemmOptions& options = {});

/// Strided batch in one launch: X [B,M,K], W [B,N,K] or [B,ceil(K/128),N/8,1024], x_scale [B,M],
/// w_scale [B,N], out [B,M,N].
void batched_gemm(const TensorView& x, const TensorView& w, WeightLayout w_layout,
                  const TensorView& x_scale, const TensorView& w_scale, const TensorView& out,
                  const GemmOptions& options = {});

/// Grouped GEMM for mixture-of-experts: G groups (experts), each with its own weight, over
/// rows whose counts exist only on the device. Group g multiplies its rows of X by W[g]:
///   Y[r,n] = out( xs[r] * ws[g,n] * sum_k X[r,k] * W[g,n,k] (+ bias[g,n]) ) for r in group g.
/// - x [total_M, K] e4m3, rows grouped by group in group order; x_scale [total_M];
/// - w [G,N,K] plain or [G,ceil(K/128),N/8,1024] preshuffled; w_scale [G,N]; bias [G,N] optional;
/// - m_sizes [G] int32 or int64 on x's device: group g owns rows
///   [m_sizes[0] + ... + m_sizes[g-1], ... + m_sizes[g]);
/// - out [total_M, N] bf16 or fp16. Rows past the last group's end are never written.
/// The sizes are read by the kernel alone: no host sync, legal inside CUDA-graph capture, and a
/// replay may see new sizes. Sizes are not checked on the host (they are on the device): the
/// kernel treats a negative size as 0 and clips the groups at total_M, so it never reads or
/// writes out of bounds (README "Grouped GEMM").
void grouped_gemm(const TensorView& x, const TensorView& w, WeightLayout w_layout,
                  const TensorView& x_scale, const TensorView& w_scale, const TensorView& m_sizes,
                  const TensorView& out, const GemmOptions& options = {});

/// The padded form (expert-capacity layouts): x [G, M_max, K], x_scale [G, M_max],
/// out [G, M_max, N]; group g's rows are x[g, 0:m_sizes[g]] (sizes clipped to [0, M_max]).
/// Rows past a group's size are never written.
void grouped_gemm_padded(const TensorView& x, const TensorView& w, WeightLayout w_layout,
                         const TensorView& x_scale, const TensorView& w_scale,
                         const TensorView& m_sizes, const TensorView& out,
                         const GemmOptions& options = {});

/// A grouped call as the host sees it: everything but the group sizes, which stay on the
/// device. rows: total_M (stacked form) or M_max (padded form).
struct GroupedProblem {
  int64_t groups = 1, rows = 1, n = 8, k = 16;
  bool padded = false;
  WeightLayout w_layout = WeightLayout::kPreshuffled;
  DType out_dtype = DType::kBF16;
  bool has_bias = false;
  DType bias_dtype = DType::kF32;
  bool fast_accum = true;
  DType sizes_dtype = DType::kI32;  ///< kI32 or kI64
};

/// The problem of a grouped_gemm() (padded false) or grouped_gemm_padded() (padded true) call
/// with these arguments, after the same validation as the call (the same Error).
GroupedProblem grouped_problem(const TensorView& x, const TensorView& w, WeightLayout w_layout,
                               const TensorView& x_scale, const TensorView& w_scale,
                               const TensorView& m_sizes, const TensorView& out,
                               const GemmOptions& options = {}, bool padded = false);

/// The checks of a grouped_gemm() (padded false) or grouped_gemm_padded() (padded true) call
/// that read only shapes, dtypes and options, as check_gemm_shapes() is for gemm(): the same
/// Error as the call for the same shapes (m_sizes' dtype and shape [G] included), sizes that
/// may be kUnknownSize, and the problem returned. G and N come from the first argument that
/// knows them (w, m_sizes, the padded x, the scales, bias, out).
GroupedProblem check_grouped_shapes(const TensorView& x, const TensorView& w,
                                    WeightLayout w_layout, const TensorView& x_scale,
                                    const TensorView& w_scale, const TensorView& m_sizes,
                                    const TensorView& out, const GemmOptions& options,
                                    bool padded);

/// True when a grouped call with this problem on the current device needs no compilation,
/// loading or attribute setting (any sizes): a CUDA-graph capture may only contain such calls.
/// It answers for calls without options.config (a forced config is a plan of its own), as
/// is_ready(ProblemShape) does.
bool is_ready(const GroupedProblem& problem);

/// Compiles (and on an sm_90 GPU loads) the grouped instances for these problems, as
/// precompile() does for gemm(): afterwards is_ready() holds for each on this GPU. Throws
/// Error(kInvalidArgument) for a problem a call would reject for its sizes or dtypes.
void precompile(const std::vector<GroupedProblem>& problems);

/// Shape of the preshuffled form of a [B,N,K] weight: {B, ceil(K/128), N/8, 1024}. Throws
/// Error(kInvalidArgument) naming a negative size.
std::vector<int64_t> preshuffled_shape(int64_t batch, int64_t n, int64_t k);

/// The names that error messages give the two weights of preshuffle() and unshuffle(); a null
/// field keeps the default (plain: "w" for preshuffle, "out" for unshuffle; shuffled: "the
/// preshuffled weight").
struct ShuffleArgNames {
  const char* plain = nullptr;
  const char* shuffled = nullptr;
};

/// Rearranges W [B,N,K] (or [N,K]) into the preshuffled layout (zero-padded); host or device
/// (both views on the same place). out has preshuffled_shape() (rank 3 for a rank-2 W).
void preshuffle(const TensorView& w, const TensorView& out, cudaStream_t stream = nullptr,
                const ShuffleArgNames& names = {});
/// The exact inverse of preshuffle(); out is [B,N,K] (or [N,K]), k = out's last dim.
void unshuffle(const TensorView& shuffled, const TensorView& out, cudaStream_t stream = nullptr,
               const ShuffleArgNames& names = {});
/// Every check of preshuffle() / unshuffle() and nothing else: a caller that allocates `out`
/// may run them first over a view of the output it will allocate (shape, dtype, place; its
/// memory is not read), so that nothing is allocated for a call they refuse.
void check_preshuffle(const TensorView& w, const TensorView& out, const ShuffleArgNames& names = {});
void check_unshuffle(const TensorView& shuffled, const TensorView& out,
                     const ShuffleArgNames& names = {});

/// The names that error messages give the tensors of quantize_rows() and
/// silu_mul_quantize_rows(); a null field keeps the default (input: "input", or "gate_up").
struct QuantizeArgNames {
  const char* input = nullptr;
  const char* out_q = "out_q";
  const char* out_scale = "out_scale";
};

/// Per-row quantisation of a [..., K] bf16/fp16/fp32 tensor into e4m3 plus fp32 scales:
/// scale = max(amax, eps) / 448 (clamped to scale_ub / 448 when scale_ub > 0), q = sat(x / scale).
/// The scale is the dequantisation multiplier (the layout quantize_fp8_row produces).
struct QuantizeOptions {
  float eps = 1e-12f;
  float scale_ub = 0.0f;  ///< upper bound on amax; <= 0 means none
  /// The upper bound on amax as one fp32 in the input's memory, read by the kernel itself (on a
  /// GPU: no host sync, legal inside CUDA-graph capture); when set, it replaces scale_ub. A value
  /// there that is <= 0 or NaN means no bound.
  const TensorView* scale_ub_tensor = nullptr;
  cudaStream_t stream = nullptr;
  const QuantizeArgNames* names = nullptr;  ///< argument names for error messages (null: defaults)
  Pdl pdl = Pdl::kDefault;                  ///< overlap the previous kernel's tail (see Pdl)
};
void quantize_rows(const TensorView& input, const TensorView& out_q, const TensorView& out_scale,
                   const QuantizeOptions& options = {});

/// The fused activation of a gated MLP, in one kernel: gate_up [..., 2I] (bf16/fp16/fp32, gate in
/// columns [0, I), up in [I, 2I): a merged gate|up GEMM's output) gives h = SiLU(gate) * up in
/// fp32, quantised per row exactly as quantize_rows() quantises: out_q [..., I] e4m3,
/// out_scale [...] fp32. SiLU(g) = g / (1 + exp(-g)) with the library's exp (within 2 ulp); the
/// GPU and the CPU (host views) compute bit-identical results.
void silu_mul_quantize_rows(const TensorView& gate_up, const TensorView& out_q,
                            const TensorView& out_scale, const QuantizeOptions& options = {});
/// Every check of quantize_rows() / silu_mul_quantize_rows() and nothing else (no launch, no
/// read of scale_ub), as check_preshuffle() is to preshuffle().
void check_quantize_rows(const TensorView& input, const TensorView& out_q,
                         const TensorView& out_scale, const QuantizeOptions& options = {});
void check_silu_mul_quantize_rows(const TensorView& gate_up, const TensorView& out_q,
                                  const TensorView& out_scale,
                                  const QuantizeOptions& options = {});

/// A problem for configuration choice and precompilation.
struct ProblemShape {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  WeightLayout w_layout = WeightLayout::kPreshuffled;
  DType out_dtype = DType::kBF16;
  bool has_bias = false;
  DType bias_dtype = DType::kF32;
  bool fast_accum = true;
  /// The call runs with PDL on (GemmOptions::pdl, or F8GEMM_PDL) and GemmOptions::prefetch_w,
  /// as the GEMMs of a decode chain do (FP8Linear, FP8GatedMLP): W streams from before the
  /// previous kernel ends, and another tile shape may be fastest (docs/perf-log.md, card 51).
  /// The choice then takes a table entry keyed for such calls first (table keys end in
  /// "|chained"; `F8GEMM_PDL=1 f8gemm tune --prefetch-w` writes them), else the same choice as
  /// without. The shipped chained entries keep the unchained choice's split of K, so the bits do
  /// not change. gemm_problem() sets it from the options.
  bool chained = false;
  /// GemmOptions::epilogue_op. n stays W's rows (2I for kSiluMul, whose output has n / 2
  /// columns). The choice takes the table entry of the same problem with kNone when that config
  /// can run the operation, else the cost model's best config that can.
  EpilogueOp epilogue_op = EpilogueOp::kNone;
};

/// Throws Error(kInvalidArgument) naming the size at fault when gemm()/batched_gemm() would
/// reject this problem for its sizes, layout or dtypes alone (B, M >= 0; N % 8 == 0; K % 16 == 0;
/// the kernel's int32 index limits). precompile() and choose_config() check it first.
void validate_problem(const ProblemShape& problem);

/// The problem that gemm() (or batched_gemm()) solves for these arguments, after the same
/// validation as the call (the same Error for a bad argument). For is_ready() and choose_config()
/// ahead of a call, e.g. to refuse compiling inside CUDA-graph capture.
ProblemShape gemm_problem(const TensorView& x, const TensorView& w, WeightLayout w_layout,
                          const TensorView& x_scale, const TensorView& w_scale,
                          const TensorView& out, const GemmOptions& options = {});
ProblemShape batched_gemm_problem(const TensorView& x, const TensorView& w, WeightLayout w_layout,
                                  const TensorView& x_scale, const TensorView& w_scale,
                                  const TensorView& out, const GemmOptions& options = {});

/// The checks of a gemm() (batched false) or batched_gemm() (batched true) call that read only
/// shapes, dtypes and options, before any tensor exists: the call runs these very checks first,
/// so for the same shapes, dtypes and options this throws the Error the call would throw
/// (dtypes, ranks, K % 16, N % 8, W's plain or padded preshuffled shape, the scales', output's
/// and bias' shapes, the index limits). Of each view only dtype, rank and shape are read (data,
/// strides and device may be anything), but options.bias counts as the call counts it: where
/// it is defined(), so a 0-dim bias needs a non-null data (any value: it is not read). A
/// dimension may be kUnknownSize: a rule that needs an unknown size is skipped (e.g. x_scale's
/// M against X's while M is symbolic), the others still hold. B and N come from the first
/// argument that knows them (x, w, the scales, bias, out), so that an unknown size in W still
/// leaves the others compared with each other. options.trace is not read (its checks read
/// memory). Returns the problem, whose sizes are kUnknownSize where the shapes leave them
/// unknown and whose `chained` is false.
ProblemShape check_gemm_shapes(const TensorView& x, const TensorView& w, WeightLayout w_layout,
                               const TensorView& x_scale, const TensorView& w_scale,
                               const TensorView& out, const GemmOptions& options, bool batched);

/// The configuration gemm()/batched_gemm() would use for this problem on the current device.
Config choose_config(const ProblemShape& problem);

/// Compiles (and caches on disk) the instances that these problems need and, on an sm_90 GPU,
/// loads them for the current device so that is_ready() holds. Works without a GPU: it then
/// compiles for sm_90a with the H200's SM count assumed for the choice.
void precompile(const std::vector<ProblemShape>& problems);

/// True when a call with this problem on the current device needs no compilation, loading or
/// attribute setting: its plan is built (by an earlier call or by precompile() on this GPU).
/// A CUDA-graph capture may only contain calls for which this holds.
bool is_ready(const ProblemShape& problem);

/// The CTAs of a traced call of `problem` (GemmOptions::trace; with `config` forced, else the
/// chosen configuration) on the current device: the persistent grid. That is at most one CTA
/// per SM for most configurations, and up to two for small swap-AB tiles. Compiles the
/// instrumented instance if needed; 0 for an empty problem.
int trace_ctas(const ProblemShape& problem, const Config* config = nullptr);

/// Device / toolchain facts for `f8gemm info`.
struct DeviceInfo {
  bool has_device = false;
  std::string reason;  ///< why not, when has_device is false
  int device = -1;
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  int driver_version = 0, runtime_version = 0;
  int nvrtc_major = 0, nvrtc_minor = 0;
  /// The loaded NVRTC library as the JIT cache key names it: "NVRTC 13.0, libnvrtc.so.13
  /// build-id 65be0db3..." (a patch update changes the build id)
  std::string nvrtc_library;
  std::string cache_dir;
  std::string cache_problem;  ///< why the disk cache cannot be written; empty when it can
};
DeviceInfo device_info();

}  // namespace f8gemm
