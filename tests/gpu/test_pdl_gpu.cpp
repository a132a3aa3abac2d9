/// \brief GPU tests of programmatic dependent launch (Pdl, f8gemm.hpp): chains of f8gemm kernels
/// launched to overlap their predecessors give the bits of the same chain launched serially,
/// eagerly and replayed from a CUDA graph, and a captured graph holds programmatic edges between
/// them. Every test skips without an sm_90 GPU.
///
/// The overlapped chains run with GemmOptions::prefetch_w off and on: the weights are written
/// once before any chain, so the GEMMs may load them before they wait, and the bits must not
/// move.
///
/// A missing wait shows here as a wrong bit: each kernel of the chain reads what the one before
/// it wrote (and every buffer starts poisoned), and the last GEMM of a layer overwrites the
/// buffer that the next layer's first kernel reads, so a kernel that ran ahead of its
/// predecessor, or a chain that lost transitivity, reads poison or a stale layer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "check.hpp"
#include "common/test_util.hpp"
#include "config.hpp"
#include "f8gemm/f8gemm.hpp"
#include "f8gemm/tuning.hpp"
#include "jit/embedded.hpp"
#include "numerics.hpp"
#include "random.hpp"
#include "test_support.hpp"
#include "tuned_tables.hpp"

namespace f8gemm {
namespace {

using test::DeviceBuffer;

/// Random e4m3 weights [rows, cols] quantised per row on the host, plain and preshuffled on the
/// device, with a random fp32 bias [rows].
struct DeviceWeight {
  int64_t rows, cols;
  DeviceBuffer plain, shuffled, scale, bias;

  DeviceWeight(int64_t r, int64_t c, uint64_t seed) : rows(r), cols(c) {
    std::vector<float> values(size_t(r * c));
    test::random_normal_f32(values.data(), values.size(), seed, float(1.0 / std::sqrt(double(c))));
    std::vector<uint8_t> q(values.size());
    std::vector<float> s(static_cast<size_t>(r));
    numerics::quantize_rows_host(values.data(), DType::kF32, r, c, 1e-12f, 0.0f, q.data(),
                                 s.data());
    plain = DeviceBuffer::from(q);
    const std::vector<int64_t> shape = preshuffled_shape(1, r, c);
    shuffled = DeviceBuffer(size_t(shape[0] * shape[1] * shape[2] * shape[3]));
    preshuffle(plain.view(DType::kE4M3, {1, r, c}), shuffled.view(DType::kE4M3, shape));
    scale = DeviceBuffer::from(s);
    std::vector<float> b(static_cast<size_t>(r));
    test::random_normal_f32(b.data(), b.size(), seed + 1000, 0.1f);
    bias = DeviceBuffer::from(b);
    F8GEMM_CHECK_CUDA(cudaDeviceSynchronize());
  }
  TensorView view(WeightLayout layout) const {
    return layout == WeightLayout::kPlain
               ? plain.view(DType::kE4M3, {1, rows, cols})
               : shuffled.view(DType::kE4M3, preshuffled_shape(1, rows, cols));
  }
  TensorView scale_view() const { return scale.view(DType::kF32, {1, rows}); }
  TensorView bias_view() const { return bias.view(DType::kF32, {1, rows}); }
};

/// What a chain's kernels read besides the activations: W's layout, the GEMMs' bias, and the
/// quantisers' device scale_ub.
struct Variant {
  WeightLayout layout = WeightLayout::kPreshuffled;
  bool bias = false;
  bool scale_ub = false;
};

/// A gated MLP of `layers` layers that share one set of weights, each layer's output the next
/// one's input: quantize_rows -> gate|up GEMM -> silu_mul_quantize_rows -> down GEMM. Four
/// f8gemm kernels a layer, each reading its predecessor's output.
struct MlpChain {
  int64_t m, hidden, inter;
  DeviceWeight gate_up, down;
  DeviceBuffer x, xq, xs, gu, hq, hs, y;
  DeviceBuffer ub_buf;  // one fp32: the quantisers' scale_ub when a variant asks for it

  MlpChain(int64_t m_, int64_t hidden_, int64_t inter_, uint64_t seed)
      : m(m_),
        hidden(hidden_),
        inter(inter_),
        gate_up(2 * inter_, hidden_, seed + 1),
        down(hidden_, inter_, seed + 2),
        xq(size_t(m_ * hidden_)),
        xs(size_t(m_) * 4),
        gu(size_t(m_ * 2 * inter_) * 2),
        hq(size_t(m_ * inter_)),
        hs(size_t(m_) * 4),
        y(size_t(m_ * hidden_) * 2) {
    std::vector<float> values(size_t(m * hidden));
    test::random_normal_f32(values.data(), values.size(), seed, 1.0f);
    std::vector<uint16_t> bf16(values.size());
    for (size_t i = 0; i < values.size(); ++i) bf16[i] = numerics::double_to_bf16(values[i]);
    x = DeviceBuffer::from(bf16);
    ub_buf = DeviceBuffer::from(std::vector<float>{2.0f});  // clamps the rows whose amax is above
  }

  /// Poisons every activation buffer (0xFF: NaN in e4m3, bf16 and fp32), on `stream`.
  void poison(cudaStream_t stream) {
    for (DeviceBuffer* b : {&xq, &xs, &gu, &hq, &hs, &y}) test::poison(*b, stream);
  }

  /// Enqueues the chain on `stream`; `gemm_config` forces both GEMMs' configuration (null: the
  /// library's choice); `prefetch_w` is the GEMMs' GemmOptions::prefetch_w.
  void enqueue(int layers, Pdl pdl, const Config* gemm_config, const Variant& v,
               cudaStream_t stream, bool prefetch_w = false) {
    const TensorView ub = ub_buf.view(DType::kF32, {1});
    QuantizeOptions qo;
    qo.stream = stream;
    qo.pdl = pdl;
    qo.scale_ub_tensor = v.scale_ub ? &ub : nullptr;
    const TensorView gu_bias = gate_up.bias_view(), d_bias = down.bias_view();
    GemmOptions go;
    go.stream = stream;
    go.pdl = pdl;
    go.config = gemm_config;
    go.prefetch_w = prefetch_w;
    for (int layer = 0; layer < layers; ++layer) {
      const DeviceBuffer& in = layer == 0 ? x : y;
      quantize_rows(in.view(DType::kBF16, {1, m, hidden}), xq.view(DType::kE4M3, {1, m, hidden}),
                    xs.view(DType::kF32, {1, m}), qo);
      go.bias = v.bias ? &gu_bias : nullptr;
      batched_gemm(xq.view(DType::kE4M3, {1, m, hidden}), gate_up.view(v.layout), v.layout,
                   xs.view(DType::kF32, {1, m}), gate_up.scale_view(),
                   gu.view(DType::kBF16, {1, m, 2 * inter}), go);
      silu_mul_quantize_rows(gu.view(DType::kBF16, {1, m, 2 * inter}),
                             hq.view(DType::kE4M3, {1, m, inter}), hs.view(DType::kF32, {1, m}),
                             qo);
      go.bias = v.bias ? &d_bias : nullptr;
      batched_gemm(hq.view(DType::kE4M3, {1, m, inter}), down.view(v.layout), v.layout,
                   hs.view(DType::kF32, {1, m}), down.scale_view(),
                   y.view(DType::kBF16, {1, m, hidden}), go);
    }
  }

  /// Every activation buffer's bytes once `stream` has finished.
  std::vector<std::vector<uint8_t>> snapshot(cudaStream_t stream) const {
    F8GEMM_CHECK_CUDA(cudaStreamSynchronize(stream));
    std::vector<std::vector<uint8_t>> out;
    for (const DeviceBuffer* b : {&xq, &xs, &gu, &hq, &hs, &y}) out.push_back(b->to_host<uint8_t>());
    return out;
  }
};

/// "" when equal, else which buffer differs first and where (buffers in MlpChain::snapshot's
/// order; the grouped chain keeps the same roles).
std::string compare(const std::vector<std::vector<uint8_t>>& got,
                    const std::vector<std::vector<uint8_t>>& want) {
  static const char* names[] = {"xq", "x_scale", "gate_up", "hq", "h_scale", "y"};
  for (size_t b = 0; b < want.size(); ++b) {
    for (size_t i = 0; i < want[b].size(); ++i) {
      if (got[b][i] != want[b][i]) {
        return std::string(names[b]) + " differs first at byte " + std::to_string(i);
      }
    }
  }
  return "";
}

/// The serial chain's output is a real result, not poison or zeros: every y is finite and
/// they are not all equal.
void expect_real_output(const std::vector<uint8_t>& y_bytes) {
  size_t finite = 0, zero = 0;
  for (size_t i = 0; i + 1 < y_bytes.size(); i += 2) {
    const uint16_t bits = uint16_t(y_bytes[i] | (y_bytes[i + 1] << 8));
    finite += (bits & 0x7F80) != 0x7F80;
    zero += (bits & 0x7FFF) == 0;
  }
  EXPECT_EQ(finite, y_bytes.size() / 2);
  EXPECT_LT(zero, y_bytes.size() / 2);
}

/// The forced GEMM configurations the chain also runs with: split-K in a cluster (swap-AB), a
/// 2x1 pair (tiled), and one CTA alone of each schedule (swap-AB, cooperative, ping-pong), each
/// where legal for both of the chain's GEMMs. With prefetch_w and preshuffled W all but the pair
/// load W before they wait, with rings shallower (s4, s6) and deeper (split-K s8) than a tile's
/// k-blocks; with plain W nothing is loaded early, and the bits must not move either way. Two
/// more let their dependents launch right after their wait (Config::early_dependents, "_e"): a
/// split-K cluster and a ping-pong CTA, whose successors are then scheduled while all of their
/// loads and stores are still to come.
constexpr const char* kForcedConfigs[] = {
    "sm90_swap_64x8x128_s8_c1x1_r0_k2",     "sm90_tiled_128x128x128_s5_c2x1_r0",
    "sm90_swap_128x16x128_s4_c1x1_r0",      "sm90_tiled_128x128x128_s5_c1x1_r0",
    "sm90_pingpong_128x128x128_s4_c1x1_r0", "sm90_swap_64x8x128_s8_c1x1_r0_k2_e",
    "sm90_pingpong_128x128x128_s4_c1x1_r0_e"};
std::vector<Config> forced_configs(const MlpChain& c) {
  std::vector<Config> out;
  for (const char* name : kForcedConfigs) {
    const Config cfg = Config::parse(name);
    bool legal = true;
    for (const auto& [n, k] : {std::pair{2 * c.inter, c.hidden}, std::pair{c.hidden, c.inter}}) {
      ProblemShape p;
      p.m = c.m;
      p.n = n;
      p.k = k;
      legal = legal && detail::config_illegal_reason(cfg, p).empty();
    }
    if (legal) out.push_back(cfg);
  }
  return out;
}

/// Runs `chain` serially, then overlapped (eagerly on `stream` and on the legacy default
/// stream, and replayed from a graph), and expects the serial chain's bits each time.
void expect_overlap_matches_serial(MlpChain& chain, const Config* cfg, const Variant& v,
                                   cudaStream_t stream) {
  constexpr int kLayers = 3;
  chain.poison(stream);
  chain.enqueue(kLayers, Pdl::kOff, cfg, v, stream);
  const auto serial = chain.snapshot(stream);
  expect_real_output(serial.back());

  for (bool prefetch_w : {false, true}) {
    SCOPED_TRACE(prefetch_w ? "prefetch_w" : "no prefetch_w");
    for (cudaStream_t s : {stream, stream, cudaStream_t(nullptr)}) {
      chain.poison(s);
      chain.enqueue(kLayers, Pdl::kOn, cfg, v, s, prefetch_w);
      EXPECT_EQ(compare(chain.snapshot(s), serial), "")
          << "eager, " << (s ? "a created stream" : "the legacy default stream");
    }

    cudaGraph_t graph;
    F8GEMM_CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    chain.enqueue(kLayers, Pdl::kOn, cfg, v, stream, prefetch_w);
    F8GEMM_CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec;
    F8GEMM_CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 5; ++replay) {
      chain.poison(stream);
      F8GEMM_CHECK_CUDA(cudaGraphLaunch(exec, stream));
      EXPECT_EQ(compare(chain.snapshot(stream), serial), "") << "graph replay " << replay;
    }
    F8GEMM_CHECK_CUDA(cudaGraphExecDestroy(exec));
    F8GEMM_CHECK_CUDA(cudaGraphDestroy(graph));
  }
}

TEST(PdlGpu, ChainOverlappedGivesTheSerialChainsBitsEagerAndFromAGraph) {
  F8GEMM_SKIP_WITHOUT_SM90();
  cudaStream_t stream;
  F8GEMM_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  struct Dims {
    int64_t hidden, inter;
    std::vector<int64_t> ms;
    std::vector<Variant> variants;
    bool forced;  // also with the forced configurations (forced_configs)
  };
  const std::vector<Dims> dims = {
      // Whole tiles and k-blocks, preshuffled W: the decode layout; decode (swap-AB, thin
      // grids) and prefill-like (tiled) row counts, chosen and forced configurations.
      {1024, 1536, {1, 5, 300}, {Variant{}}, true},
      // Ragged N and K (K must be a multiple of 16: 1040 = 8 k-blocks and 16 bytes, 1552 = 12
      // and 16; N = 3104 and 1040 end inside a tile): plain W (tensor-map prefetches) and
      // preshuffled, with bias and a device scale_ub.
      {1040, 1552, {1, 300},
       {Variant{WeightLayout::kPlain, true, true}, Variant{WeightLayout::kPreshuffled, true, true}},
       false}};
  for (const Dims& d : dims) {
    for (int64_t m : d.ms) {
      MlpChain chain(m, d.hidden, d.inter, 100 + uint64_t(m));
      std::vector<const Config*> choices = {nullptr};
      const std::vector<Config> forced = d.forced ? forced_configs(chain) : std::vector<Config>{};
      for (const Config& cfg : forced) choices.push_back(&cfg);
      ASSERT_EQ(choices.size(), d.forced ? 1 + std::size(kForcedConfigs) : 1u)
          << "a forced configuration is not legal here";
      for (const Variant& v : d.variants) {
        for (const Config* cfg : choices) {
          SCOPED_TRACE(testing::Message()
                       << "M=" << m << " hidden=" << d.hidden << " inter=" << d.inter << " "
                       << (v.layout == WeightLayout::kPlain ? "plain" : "preshuffled")
                       << (v.bias ? " bias" : "") << (v.scale_ub ? " scale_ub" : "")
                       << " config " << (cfg ? cfg->name() : std::string("(chosen)")));
          expect_overlap_matches_serial(chain, cfg, v, stream);
        }
      }
    }
  }
  F8GEMM_CHECK_CUDA(cudaStreamDestroy(stream));
}

/// Grouped weights [G, rows, cols]: DeviceWeight's recipe over G * rows rows.
struct GroupedWeight {
  int64_t groups, rows, cols;
  DeviceWeight all;  // [G * rows, cols]
  DeviceBuffer shuffled;

  GroupedWeight(int64_t g, int64_t r, int64_t c, uint64_t seed)
      : groups(g), rows(r), cols(c), all(g * r, c, seed) {
    const std::vector<int64_t> shape = preshuffled_shape(g, r, c);
    shuffled = DeviceBuffer(size_t(shape[0] * shape[1] * shape[2] * shape[3]));
    preshuffle(all.plain.view(DType::kE4M3, {g, r, c}), shuffled.view(DType::kE4M3, shape));
    F8GEMM_CHECK_CUDA(cudaDeviceSynchronize());
  }
  TensorView view(WeightLayout layout) const {
    return layout == WeightLayout::kPlain
               ? all.plain.view(DType::kE4M3, {groups, rows, cols})
               : shuffled.view(DType::kE4M3, preshuffled_shape(groups, rows, cols));
  }
  TensorView scale_view() const { return all.scale.view(DType::kF32, {groups, rows}); }
};

TEST(PdlGpu, GroupedChainOverlappedGivesTheSerialChainsBits) {
  F8GEMM_SKIP_WITHOUT_SM90();
  cudaStream_t stream;
  F8GEMM_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // Two layers of quantize -> grouped GEMM (K -> N) -> quantize -> grouped GEMM (N -> K), the
  // second layer reading the first one's output; an empty group and a one-row group.
  const int64_t groups = 4, k = 1040, n = 528;  // ragged, multiples of 16
  const std::vector<int32_t> sizes = {3, 0, 60, 1};
  const int64_t rows = 64;
  GroupedWeight w1(groups, n, k, 11), w2(groups, k, n, 12);
  DeviceBuffer m_sizes = DeviceBuffer::from(sizes);
  std::vector<float> values(size_t(rows * k));
  test::random_normal_f32(values.data(), values.size(), 13, 1.0f);
  std::vector<uint16_t> bf16(values.size());
  for (size_t i = 0; i < values.size(); ++i) bf16[i] = numerics::double_to_bf16(values[i]);
  DeviceBuffer x = DeviceBuffer::from(bf16);
  DeviceBuffer xq(size_t(rows * k)), xs(size_t(rows) * 4), h(size_t(rows * n) * 2),
      hq(size_t(rows * n)), hs(size_t(rows) * 4), y(size_t(rows * k) * 2);
  const TensorView sizes_view = m_sizes.view(DType::kI32, {groups});

  auto enqueue = [&](Pdl pdl, WeightLayout layout, cudaStream_t s) {
    QuantizeOptions qo;
    qo.stream = s;
    qo.pdl = pdl;
    GemmOptions go;
    go.stream = s;
    go.pdl = pdl;
    for (int layer = 0; layer < 2; ++layer) {
      quantize_rows((layer == 0 ? x : y).view(DType::kBF16, {rows, k}),
                    xq.view(DType::kE4M3, {rows, k}), xs.view(DType::kF32, {rows}), qo);
      grouped_gemm(xq.view(DType::kE4M3, {rows, k}), w1.view(layout), layout,
                   xs.view(DType::kF32, {rows}), w1.scale_view(), sizes_view,
                   h.view(DType::kBF16, {rows, n}), go);
      quantize_rows(h.view(DType::kBF16, {rows, n}), hq.view(DType::kE4M3, {rows, n}),
                    hs.view(DType::kF32, {rows}), qo);
      grouped_gemm(hq.view(DType::kE4M3, {rows, n}), w2.view(layout), layout,
                   hs.view(DType::kF32, {rows}), w2.scale_view(), sizes_view,
                   y.view(DType::kBF16, {rows, k}), go);
    }
  };
  auto snapshot = [&](cudaStream_t s) {
    F8GEMM_CHECK_CUDA(cudaStreamSynchronize(s));
    std::vector<std::vector<uint8_t>> out;
    for (const DeviceBuffer* b : {&xq, &xs, &h, &hq, &hs, &y}) out.push_back(b->to_host<uint8_t>());
    return out;
  };
  auto poison = [&](cudaStream_t s) {
    for (DeviceBuffer* b : {&xq, &xs, &h, &hq, &hs, &y}) test::poison(*b, s);
  };
  for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
    SCOPED_TRACE(layout == WeightLayout::kPlain ? "plain" : "preshuffled");
    poison(stream);
    enqueue(Pdl::kOff, layout, stream);
    const auto serial = snapshot(stream);
    expect_real_output(serial.back());
    for (int run = 0; run < 3; ++run) {
      poison(stream);
      enqueue(Pdl::kOn, layout, stream);
      EXPECT_EQ(compare(snapshot(stream), serial), "") << "eager run " << run;
    }
    cudaGraph_t graph;
    F8GEMM_CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    enqueue(Pdl::kOn, layout, stream);
    F8GEMM_CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec;
    F8GEMM_CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 3; ++replay) {
      poison(stream);
      F8GEMM_CHECK_CUDA(cudaGraphLaunch(exec, stream));
      EXPECT_EQ(compare(snapshot(stream), serial), "") << "graph replay " << replay;
    }
    F8GEMM_CHECK_CUDA(cudaGraphExecDestroy(exec));
    F8GEMM_CHECK_CUDA(cudaGraphDestroy(graph));
  }
  F8GEMM_CHECK_CUDA(cudaStreamDestroy(stream));
}

/// The number of edges of `graph` of each dependency type: {default, programmatic}.
std::pair<size_t, size_t> edge_types(cudaGraph_t graph) {
  size_t count = 0;
  F8GEMM_CHECK_CUDA(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &count));
  std::vector<cudaGraphNode_t> from(count), to(count);
  std::vector<cudaGraphEdgeData> data(count);
  F8GEMM_CHECK_CUDA(cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &count));
  size_t programmatic = 0;
  for (const cudaGraphEdgeData& e : data) programmatic += e.type == cudaGraphDependencyTypeProgrammatic;
  return {count - programmatic, programmatic};
}

TEST(PdlGpu, CapturedChainHasProgrammaticEdgesOnlyWhenAsked) {
  F8GEMM_SKIP_WITHOUT_SM90();
  cudaStream_t stream;
  F8GEMM_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  MlpChain chain(4, 512, 768, 7);
  chain.enqueue(1, Pdl::kOff, nullptr, Variant{}, stream);  // plans built outside the capture
  F8GEMM_CHECK_CUDA(cudaStreamSynchronize(stream));
  for (Pdl pdl : {Pdl::kOff, Pdl::kOn}) {
    cudaGraph_t graph;
    F8GEMM_CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    chain.enqueue(2, pdl, nullptr, Variant{}, stream);
    F8GEMM_CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    const auto [plain, programmatic] = edge_types(graph);
    // Eight kernels in a line: seven edges, every one programmatic when asked for (the first
    // kernel follows nothing captured).
    EXPECT_EQ(plain + programmatic, 7u);
    EXPECT_EQ(programmatic, pdl == Pdl::kOn ? 7u : 0u);
    F8GEMM_CHECK_CUDA(cudaGraphDestroy(graph));
  }
  F8GEMM_CHECK_CUDA(cudaStreamDestroy(stream));
}

// The shipped tables' chained entries (docs/perf-log.md, card 51) give a call with PDL and
// prefetch_w another configuration than the same call without them. They keep its path and split
// of K (ConfigTable.ShippedChainedEntriesKeepTheUnchainedPathAndSplit), so the bits must not move:
// each entry of this GPU's tables, on its own shape, against the unchained choice.
TEST(PdlGpu, ChainedChoiceGivesTheUnchainedBits) {
  F8GEMM_SKIP_WITHOUT_SM90();
  const TargetGpu gpu = current_gpu();
  cudaStream_t stream;
  F8GEMM_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int checked = 0;
  for (int t = 0; t < jit::kNumEmbeddedTables; ++t) {
    std::vector<std::pair<std::string, Config>> entries;
    detail::parse_table(jit::kEmbeddedTables[t].text, jit::kEmbeddedTables[t].name, entries);
    for (const auto& [key, entry] : entries) {
      detail::TableKeyParts parts;
      // Entries with an epilogue operation would need it run and checked here too: not covered.
      if (!detail::parse_table_key(key, parts) || !parts.problem.chained ||
          parts.problem.epilogue_op != EpilogueOp::kNone || parts.gpu_name != gpu.name ||
          parts.sm_count != gpu.sm_count) {
        continue;
      }
      SCOPED_TRACE(key);
      const ProblemShape& shape = parts.problem;
      ASSERT_EQ(shape.batch, 1);
      const int64_t m = shape.m, n = shape.n, k = shape.k;
      const DeviceWeight w(n, k, 900 + uint64_t(checked));
      std::vector<float> xf(size_t(m * k));
      test::random_normal_f32(xf.data(), xf.size(), 800 + uint64_t(checked), 1.0f);
      std::vector<uint8_t> xq(xf.size());
      std::vector<float> xs(static_cast<size_t>(m));
      numerics::quantize_rows_host(xf.data(), DType::kF32, m, k, 1e-12f, 0.0f, xq.data(), xs.data());
      const DeviceBuffer x = DeviceBuffer::from(xq), x_scale = DeviceBuffer::from(xs);
      DeviceBuffer y(size_t(m * n) * 2);
      auto run = [&](Pdl pdl, bool prefetch_w) {
        GemmOptions o;
        o.stream = stream;
        o.fast_accum = shape.fast_accum;
        o.pdl = pdl;
        o.prefetch_w = prefetch_w;
        const TensorView xv = x.view(DType::kE4M3, {1, m, k}), xsv = x_scale.view(DType::kF32, {1, m});
        const TensorView yv = y.view(shape.out_dtype, {1, m, n});
        const ProblemShape p =
            batched_gemm_problem(xv, w.view(shape.w_layout), shape.w_layout, xsv, w.scale_view(), yv, o);
        test::poison(y, stream);
        batched_gemm(xv, w.view(shape.w_layout), shape.w_layout, xsv, w.scale_view(), yv, o);
        // Twice, so that with PDL the second call overlaps the first.
        batched_gemm(xv, w.view(shape.w_layout), shape.w_layout, xsv, w.scale_view(), yv, o);
        const Config chosen = choose_config(p);
        const test::HangLabel label(test::current_test_name() + " " + key + " " + chosen.name());
        test::sync_stream_or_exit(stream);
        return std::pair{chosen, y.to_host<uint8_t>()};
      };
      const auto [unchained_config, unchained] = run(Pdl::kOff, false);
      const auto [chained_config, chained] = run(Pdl::kOn, true);
      EXPECT_EQ(chained_config, entry);
      EXPECT_NE(chained_config, unchained_config) << "the entry changes nothing: nothing to check";
      expect_real_output(unchained);
      EXPECT_TRUE(chained == unchained) << "the chained choice's bits differ from the unchained one's";
      ++checked;
    }
  }
  F8GEMM_CHECK_CUDA(cudaStreamDestroy(stream));
  if (checked == 0) GTEST_SKIP() << "no chained entry for " << gpu.name << " with " << gpu.sm_count << " SMs";
}

}  // namespace
}  // namespace f8gemm
