/// \brief GPU tests of programmatic dependent launch (Pdl, f8gemm.hpp): chains of f8gemm kernels
/// launched to overlap their predecessors give the bits of the same chain launched serially,
/// eagerly and replayed from a CUDA graph, and a captured graph holds programmatic edges between
/// them. Every test skips without an sm_90 GPU.
///
/// A missing wait shows here as a wrong bit: each kernel of the chain reads what the one before
/// it wrote (and every buffer starts poisoned), and the last GEMM of a layer overwrites the
/// buffer that the next layer's first kernel reads, so a kernel that ran ahead of its
/// predecessor, or a chain that lost transitivity, reads poison or a stale layer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "check.hpp"
#include "common/test_util.hpp"
#include "config.hpp"
#include "f8gemm/f8gemm.hpp"
#include "numerics.hpp"
#include "random.hpp"
#include "test_support.hpp"

namespace f8gemm {
namespace {

using test::DeviceBuffer;

/// Random e4m3 weights [rows, cols] quantised per row on the host, preshuffled on the device.
struct DeviceWeight {
  int64_t rows, cols;
  DeviceBuffer w, scale;

  DeviceWeight(int64_t r, int64_t c, uint64_t seed) : rows(r), cols(c) {
    std::vector<float> values(size_t(r * c));
    test::random_normal_f32(values.data(), values.size(), seed, float(1.0 / std::sqrt(double(c))));
    std::vector<uint8_t> q(values.size());
    std::vector<float> s(static_cast<size_t>(r));
    numerics::quantize_rows_host(values.data(), DType::kF32, r, c, 1e-12f, 0.0f, q.data(),
                                 s.data());
    DeviceBuffer plain = DeviceBuffer::from(q);
    const std::vector<int64_t> shape = preshuffled_shape(1, r, c);
    w = DeviceBuffer(size_t(shape[0] * shape[1] * shape[2] * shape[3]));
    preshuffle(plain.view(DType::kE4M3, {1, r, c}), w.view(DType::kE4M3, shape));
    scale = DeviceBuffer::from(s);
    F8GEMM_CHECK_CUDA(cudaDeviceSynchronize());
  }
  TensorView view() const { return w.view(DType::kE4M3, preshuffled_shape(1, rows, cols)); }
  TensorView scale_view() const { return scale.view(DType::kF32, {1, rows}); }
};

/// A gated MLP of `layers` layers that share one set of weights, each layer's output the next
/// one's input: quantize_rows -> gate|up GEMM -> silu_mul_quantize_rows -> down GEMM. Four
/// f8gemm kernels a layer, each reading its predecessor's output.
struct MlpChain {
  int64_t m, hidden, inter;
  DeviceWeight gate_up, down;
  DeviceBuffer x, xq, xs, gu, hq, hs, y;

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
  }

  /// Poisons every activation buffer (0xFF: NaN in e4m3, bf16 and fp32), on `stream`.
  void poison(cudaStream_t stream) {
    for (DeviceBuffer* b : {&xq, &xs, &gu, &hq, &hs, &y}) test::poison(*b, stream);
  }

  /// Enqueues the chain on `stream`; `gemm_config` forces both GEMMs' configuration (null: the
  /// library's choice).
  void enqueue(int layers, Pdl pdl, const Config* gemm_config, cudaStream_t stream) {
    QuantizeOptions qo;
    qo.stream = stream;
    qo.pdl = pdl;
    GemmOptions go;
    go.stream = stream;
    go.pdl = pdl;
    go.config = gemm_config;
    for (int layer = 0; layer < layers; ++layer) {
      const DeviceBuffer& in = layer == 0 ? x : y;
      quantize_rows(in.view(DType::kBF16, {1, m, hidden}), xq.view(DType::kE4M3, {1, m, hidden}),
                    xs.view(DType::kF32, {1, m}), qo);
      batched_gemm(xq.view(DType::kE4M3, {1, m, hidden}), gate_up.view(),
                   WeightLayout::kPreshuffled, xs.view(DType::kF32, {1, m}), gate_up.scale_view(),
                   gu.view(DType::kBF16, {1, m, 2 * inter}), go);
      silu_mul_quantize_rows(gu.view(DType::kBF16, {1, m, 2 * inter}),
                             hq.view(DType::kE4M3, {1, m, inter}), hs.view(DType::kF32, {1, m}),
                             qo);
      batched_gemm(hq.view(DType::kE4M3, {1, m, inter}), down.view(), WeightLayout::kPreshuffled,
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

/// "" when equal, else which buffer differs first and where.
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

/// The forced GEMM configurations the chain also runs with: split-K in a cluster (swap-AB) and
/// a 2x1 pair (tiled), each where legal for both of the chain's GEMMs.
std::vector<Config> forced_configs(const MlpChain& c) {
  auto make = [](KernelPath path, int bm, int bn, int cluster_m, int split) {
    Config cfg;
    cfg.path = path;
    cfg.bm = bm;
    cfg.bn = bn;
    cfg.cluster_m = cluster_m;
    cfg.split_k = split;
    cfg.raster = 0;
    for (cfg.stages = 8; cfg.stages > 2 && detail::config_smem_bytes(cfg) > detail::kMaxSmemBytes;) {
      --cfg.stages;
    }
    return cfg;
  };
  std::vector<Config> out;
  for (const Config& cfg : {make(KernelPath::kSwapAB, 64, 8, 1, 2),
                            make(KernelPath::kTiled, 128, 128, 2, 1)}) {
    bool legal = true;
    for (const auto& [n, k] : {std::pair{2 * c.inter, c.hidden}, std::pair{c.hidden, c.inter}}) {
      ProblemShape p;
      p.batch = 1;
      p.m = c.m;
      p.n = n;
      p.k = k;
      legal = legal && detail::config_illegal_reason(cfg, p).empty();
    }
    if (legal) out.push_back(cfg);
  }
  return out;
}

TEST(PdlGpu, ChainOverlappedGivesTheSerialChainsBitsEagerAndFromAGraph) {
  F8GEMM_SKIP_WITHOUT_SM90();
  cudaStream_t stream;
  F8GEMM_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  constexpr int kLayers = 3;
  // Decode (swap-AB, thin grids) and prefill-like (tiled) row counts.
  for (int64_t m : {1, 5, 300}) {
    MlpChain chain(m, 1024, 1536, 100 + uint64_t(m));
    std::vector<const Config*> choices = {nullptr};
    const std::vector<Config> forced = forced_configs(chain);
    for (const Config& cfg : forced) choices.push_back(&cfg);
    ASSERT_EQ(choices.size(), 3u) << "a forced configuration is not legal here";
    for (const Config* cfg : choices) {
      SCOPED_TRACE(testing::Message() << "M=" << m << " config "
                                      << (cfg ? cfg->name() : std::string("(chosen)")));
      chain.poison(stream);
      chain.enqueue(kLayers, Pdl::kOff, cfg, stream);
      const auto serial = chain.snapshot(stream);
      expect_real_output(serial.back());

      for (int run = 0; run < 3; ++run) {
        chain.poison(stream);
        chain.enqueue(kLayers, Pdl::kOn, cfg, stream);
        const std::string diff = compare(chain.snapshot(stream), serial);
        EXPECT_EQ(diff, "") << "eager run " << run;
      }

      cudaGraph_t graph;
      F8GEMM_CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      chain.enqueue(kLayers, Pdl::kOn, cfg, stream);
      F8GEMM_CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
      cudaGraphExec_t exec;
      F8GEMM_CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
      for (int replay = 0; replay < 5; ++replay) {
        chain.poison(stream);
        F8GEMM_CHECK_CUDA(cudaGraphLaunch(exec, stream));
        const std::string diff = compare(chain.snapshot(stream), serial);
        EXPECT_EQ(diff, "") << "graph replay " << replay;
      }
      F8GEMM_CHECK_CUDA(cudaGraphExecDestroy(exec));
      F8GEMM_CHECK_CUDA(cudaGraphDestroy(graph));
    }
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
  chain.enqueue(1, Pdl::kOff, nullptr, stream);  // plans built outside the capture
  F8GEMM_CHECK_CUDA(cudaStreamSynchronize(stream));
  for (Pdl pdl : {Pdl::kOff, Pdl::kOn}) {
    cudaGraph_t graph;
    F8GEMM_CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    chain.enqueue(2, pdl, nullptr, stream);
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

}  // namespace
}  // namespace f8gemm
