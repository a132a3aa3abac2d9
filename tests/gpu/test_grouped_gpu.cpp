/// \brief GPU tests of grouped_gemm()/grouped_gemm_padded() on an sm_90 GPU: each group against the host fp64 reference of its rows, rows outside every group still poisoned, sizes clamped on the device; every test skips without one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/test_util.hpp"
#include "config.hpp"
#include "f8gemm/check.hpp"
#include "f8gemm/f8gemm.hpp"
#include "numerics.hpp"

namespace f8gemm {
namespace {

using test::CheckStats;
using test::DeviceBuffer;

/// The problem of one grouped call and its operands on the host. Stacked: x [rows, K] with
/// rows = total_M; padded: x [G, rows, K] with rows = M_max. sizes are what m_sizes holds,
/// on purpose negative or summing past the rows in some tests.
struct HostGrouped {
  int64_t groups = 0, rows = 0, n = 0, k = 0;
  bool padded = false;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> x, w;  // [total_rows, K], plain [G, N, K]
  std::vector<float> xs, ws;  // [total_rows], [G, N]
  bool has_bias = false;
  DType bias_dtype = DType::kF32;
  std::vector<float> bias_f32;
  std::vector<uint16_t> bias_bf16;

  int64_t total_rows() const { return padded ? groups * rows : rows; }
  int64_t out_count() const { return total_rows() * n; }

  /// The rows [begin, end) that group g owns once the kernel has clamped the sizes: a negative
  /// size counts as 0; stacked groups are clipped at total_M, padded ones at M_max.
  std::pair<int64_t, int64_t> group_rows(int64_t g) const {
    const auto clamped = [&](int64_t i) { return std::min(std::max(sizes[size_t(i)], int64_t(0)), rows); };
    if (padded) return {g * rows, g * rows + clamped(g)};
    int64_t begin = 0;
    for (int64_t i = 0; i < g; ++i) begin = std::min(begin + clamped(i), rows);
    return {begin, std::min(begin + clamped(g), rows)};
  }

  const void* bias_of(int64_t g) const {
    if (!has_bias) return nullptr;
    return bias_dtype == DType::kF32 ? static_cast<const void*>(bias_f32.data() + g * n)
                                     : static_cast<const void*>(bias_bf16.data() + g * n);
  }
};

/// Random normal e4m3 operands (never zeros), log-uniform scales, optional bias of ~|y| size.
HostGrouped random_grouped(std::mt19937_64& rng, std::vector<int64_t> sizes, int64_t rows,
                           int64_t n, int64_t k, bool padded = false, bool has_bias = false,
                           DType bias_dtype = DType::kF32) {
  HostGrouped h;
  h.groups = int64_t(sizes.size());
  h.rows = rows;
  h.n = n;
  h.k = k;
  h.padded = padded;
  h.sizes = std::move(sizes);
  h.x = test::random_e4m3(rng, size_t(h.total_rows() * k));
  h.w = test::random_e4m3(rng, size_t(h.groups * n * k));
  h.xs = test::random_scales(rng, size_t(h.total_rows()));
  h.ws = test::random_scales(rng, size_t(h.groups * n));
  h.has_bias = has_bias;
  h.bias_dtype = bias_dtype;
  if (has_bias) {
    // |sum| ~ sqrt(K) for unit-variance operands: a bias of that size moves the result visibly.
    const double sd = std::sqrt(double(k));
    if (bias_dtype == DType::kF32) {
      h.bias_f32 = test::random_f32(rng, size_t(h.groups * n), sd);
    } else {
      h.bias_bf16 = test::random_half_bits(rng, size_t(h.groups * n), sd, DType::kBF16);
    }
  }
  return h;
}

/// `count` group sizes, uniform in [0, max_size].
std::vector<int64_t> random_sizes(std::mt19937_64& rng, size_t count, int64_t max_size) {
  std::uniform_int_distribution<int64_t> size(0, max_size);
  std::vector<int64_t> sizes(count);
  for (int64_t& s : sizes) s = size(rng);
  return sizes;
}

/// Stacked sizes: the sum of `sizes`, for a stacked x that holds exactly every group's rows.
int64_t sum_of(const std::vector<int64_t>& sizes) {
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  return total;
}

/// The fp64 reference of every row inside a group (each group is one GEMM of its rows with its
/// weight), and which rows those are.
struct GroupedReference {
  std::vector<double> ref, abs_ref;  // [total_rows, N]; zero outside the groups
  std::vector<bool> in_group;        // [total_rows]

  explicit GroupedReference(const HostGrouped& h)
      : ref(size_t(h.out_count())), abs_ref(size_t(h.out_count())),
        in_group(size_t(h.total_rows()), false) {
    for (int64_t g = 0; g < h.groups; ++g) {
      const auto [begin, end] = h.group_rows(g);
      if (end <= begin) continue;
      numerics::reference_gemm(1, end - begin, h.n, h.k, h.x.data() + begin * h.k,
                               h.w.data() + g * h.n * h.k, h.xs.data() + begin,
                               h.ws.data() + g * h.n, h.bias_of(g), h.bias_dtype,
                               ref.data() + begin * h.n, abs_ref.data() + begin * h.n);
      std::fill(in_group.begin() + begin, in_group.begin() + end, true);
    }
  }
};

/// Device copies of a HostGrouped: plain W and W preshuffled on the GPU, m_sizes as int32 and
/// as int64, out with a guard tail.
struct DeviceGrouped {
  const HostGrouped& host;  // declared first: it is initialised first
  DeviceBuffer x, w, w_shuffled, xs, ws, sizes32, sizes64, bias, out;

  explicit DeviceGrouped(const HostGrouped& h)
      : host(h),
        x(DeviceBuffer::from(h.x)),
        w(DeviceBuffer::from(h.w)),
        xs(DeviceBuffer::from(h.xs)),
        ws(DeviceBuffer::from(h.ws)),
        sizes32(size_t(std::max<int64_t>(h.groups, 1)) * 4),
        sizes64(size_t(std::max<int64_t>(h.groups, 1)) * 8),
        out(size_t(h.out_count()) * 2 + test::kGuardBytes) {
    const auto shape = preshuffled_shape(h.groups, h.n, h.k);
    w_shuffled = DeviceBuffer(size_t(std::max<int64_t>(shape[0] * shape[1] * shape[2] * shape[3], 1)));
    if (h.groups > 0) preshuffle(w_view(), w_shuffled.view(DType::kE4M3, shape));
    if (h.has_bias) {
      bias = h.bias_dtype == DType::kF32 ? DeviceBuffer::from(h.bias_f32)
                                         : DeviceBuffer::from(h.bias_bf16);
    }
    upload_sizes(h.sizes);
    F8GEMM_CHECK_CUDA(cudaDeviceSynchronize());
  }

  /// Writes new sizes into the same m_sizes buffers (as a MoE router does between replays).
  /// int32 values outside its range are saturated.
  void upload_sizes(const std::vector<int64_t>& s) {
    std::vector<int32_t> s32(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
      s32[i] = int32_t(std::clamp<int64_t>(s[i], std::numeric_limits<int32_t>::min(),
                                           std::numeric_limits<int32_t>::max()));
    }
    if (!s.empty()) {
      sizes32.upload(s32.data(), s32.size() * 4);
      sizes64.upload(s.data(), s.size() * 8);
    }
  }

  TensorView x_view() const {
    return host.padded ? x.view(DType::kE4M3, {host.groups, host.rows, host.k})
                       : x.view(DType::kE4M3, {host.rows, host.k});
  }
  TensorView w_view() const { return w.view(DType::kE4M3, {host.groups, host.n, host.k}); }
  TensorView w_for(WeightLayout layout) const {
    return layout == WeightLayout::kPlain
               ? w_view()
               : w_shuffled.view(DType::kE4M3, preshuffled_shape(host.groups, host.n, host.k));
  }
  TensorView xs_view() const {
    return host.padded ? xs.view(DType::kF32, {host.groups, host.rows})
                       : xs.view(DType::kF32, {host.rows});
  }
  TensorView ws_view() const { return ws.view(DType::kF32, {host.groups, host.n}); }
  TensorView sizes_view(DType dtype) const {
    return (dtype == DType::kI32 ? sizes32 : sizes64).view(dtype, {host.groups});
  }
  TensorView out_view(DType dtype) const {
    return host.padded ? out.view(dtype, {host.groups, host.rows, host.n})
                       : out.view(dtype, {host.rows, host.n});
  }
  TensorView bias_view() const { return bias.view(host.bias_dtype, {host.groups, host.n}); }

  /// Enqueues the grouped call on `stream` without poisoning or waiting.
  void enqueue(WeightLayout layout, DType out_dtype, bool fast, DType sizes_dtype,
               cudaStream_t stream, const Config* config = nullptr) {
    const TensorView b = host.has_bias ? bias_view() : TensorView{};
    GemmOptions o;
    o.config = config;
    o.bias = host.has_bias ? &b : nullptr;
    o.fast_accum = fast;
    o.stream = stream;
    const auto call = host.padded ? grouped_gemm_padded : grouped_gemm;
    call(x_view(), w_for(layout), layout, xs_view(), ws_view(), sizes_view(sizes_dtype),
         out_view(out_dtype), o);
  }

  /// The output's bits ([total_rows, N]); checks that the guard tail is untouched.
  std::vector<uint16_t> result(cudaStream_t stream) {
    return test::output_bits(out, size_t(host.out_count()), stream);
  }

  /// Poisons the output, runs the grouped call and returns the output's bits.
  std::vector<uint16_t> run(WeightLayout layout, DType out_dtype, bool fast,
                            DType sizes_dtype = DType::kI32, cudaStream_t stream = nullptr,
                            const Config* config = nullptr) {
    F8GEMM_CHECK_CUDA(cudaMemsetAsync(out.get(), 0xFF, out.bytes(), stream));
    enqueue(layout, out_dtype, fast, sizes_dtype, stream, config);
    return result(stream);
  }
};

std::string describe(const HostGrouped& h, WeightLayout layout, bool fast, DType out,
                     DType sizes_dtype = DType::kI32) {
  std::ostringstream os;
  os << (h.padded ? "padded G,M_max,N,K=" : "stacked G,total_M,N,K=") << h.groups << ","
     << h.rows << "," << h.n << "," << h.k << " sizes={";
  for (size_t i = 0; i < h.sizes.size() && i < 16; ++i) os << (i ? "," : "") << h.sizes[i];
  os << (h.sizes.size() > 16 ? ",...}" : "}") << " "
     << (layout == WeightLayout::kPlain ? "plain" : "preshuffled") << " "
     << (fast ? "fast" : "precise") << " " << to_string(out) << " sizes " << to_string(sizes_dtype);
  if (h.has_bias) os << " bias " << to_string(h.bias_dtype);
  return os.str();
}

/// Every row inside a group within README "Accuracy"'s bounds against the fp64 reference, and
/// every row outside all groups still poisoned (0xFFFF: never written).
void expect_grouped_correct(const HostGrouped& h, const GroupedReference& r,
                            const std::vector<uint16_t>& y, DType out, bool fast,
                            const std::string& what) {
  std::vector<double> ref, abs_ref;
  std::vector<uint16_t> got;
  int64_t written_outside = -1;
  for (int64_t row = 0; row < h.total_rows(); ++row) {
    const size_t first = size_t(row * h.n), last = first + size_t(h.n);
    if (r.in_group[size_t(row)]) {
      ref.insert(ref.end(), r.ref.begin() + first, r.ref.begin() + last);
      abs_ref.insert(abs_ref.end(), r.abs_ref.begin() + first, r.abs_ref.begin() + last);
      got.insert(got.end(), y.begin() + first, y.begin() + last);
    } else if (written_outside < 0 &&
               std::any_of(y.begin() + first, y.begin() + last, [](uint16_t v) { return v != 0xFFFF; })) {
      written_outside = row;
    }
  }
  EXPECT_LT(written_outside, 0) << what << ": row " << written_outside
                                << " is outside every group and was written";
  if (ref.empty()) return;
  const CheckStats s = test::compare_to_reference(ref, abs_ref, got.data(), out,
                                                  numerics::accumulation_gamma(h.k, fast));
  EXPECT_EQ(s.nonfinite, 0) << what << " " << s;
  EXPECT_LE(s.max_ratio, 1.0) << what << " " << s;
  if (int64_t(ref.size()) >= numerics::kMinCountForRms) {
    EXPECT_LE(s.rel_rms, numerics::rel_rms_bound(h.k, fast, out)) << what << " " << s;
  }
}

/// Runs h in both layouts and both accumulation modes (bf16 out, int32 sizes) and checks each.
/// Both layouts and both modes against the reference, with the automatic choice or `config`;
/// returns the number of calls checked.
int check_layouts_and_modes(const HostGrouped& h, const GroupedReference& r, DeviceGrouped& d,
                            const Config* config = nullptr) {
  int ran = 0;
  for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
    for (bool fast : {true, false}) {
      const std::string what =
          (config ? config->name() + " " : std::string()) + describe(h, layout, fast, DType::kBF16);
      SCOPED_TRACE(what);
      expect_grouped_correct(h, r, d.run(layout, DType::kBF16, fast, DType::kI32, nullptr, config),
                             DType::kBF16, fast, what);
      ++ran;
    }
  }
  return ran;
}

void check_layouts_and_modes(const HostGrouped& h) {
  const GroupedReference r(h);
  DeviceGrouped d(h);
  check_layouts_and_modes(h, r, d);
}

// ---- sizes with zeros, one group, ragged edges -----------------------------------------------

TEST(GroupedGpu, SizesWithZerosAndRaggedEdges) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(9001);
  // N = 136 and K = 272: neither a multiple of 128 (partial tiles on both sides).
  const std::vector<std::vector<int64_t>> cases = {
      {0, 37, 0, 0, 130, 0},                // leading, inner and trailing empty groups
      {0, 0, 77, 0},                        // a single non-empty group in the middle
      {300, 0, 0, 0, 0},                    // every token in the first group
      {0, 0, 0, 0, 300},                    // every token in the last group
      {1, 7, 9, 63, 65, 127, 129, 200},     // no size a multiple of 8, 64 or 128 but 200
      {8, 64, 128, 256},                    // exact tile multiples
  };
  for (const auto& sizes : cases) check_layouts_and_modes(random_grouped(rng, sizes, sum_of(sizes), 136, 272));
  // Other ragged N and K: N = 8 (the smallest), K = 16 (one 16-byte row), K = 1040.
  check_layouts_and_modes(random_grouped(rng, {5, 0, 60}, 65, 8, 16));
  check_layouts_and_modes(random_grouped(rng, {33, 1, 95}, 129, 264, 1040));
}

TEST(GroupedGpu, DecodeLikeAndPrefillLikeGroups) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(9002);
  // A few tokens per expert (the swap-AB path) and a few large groups (at N = 264 the model's pick:
  // a tiled config).
  const std::vector<int64_t> decode = {1, 0, 3, 2, 0, 1, 4, 1};
  check_layouts_and_modes(random_grouped(rng, decode, sum_of(decode), 1024, 512));
  const std::vector<int64_t> prefill = {700, 3, 0, 530};
  check_layouts_and_modes(random_grouped(rng, prefill, sum_of(prefill), 264, 384));
}

// Every kernel family that the grouped choice can pick, forced on ragged groups: the cooperative
// tiles (alone and in 2x1 pairs, whose second tile is empty at a group's odd edge), both ping-pong
// widths (alone and paired) and swap-AB. Sizes: empty groups, a single row, tile multiples and
// sizes one past them; N and K are multiples of no tile.
TEST(GroupedGpu, EveryConfigFamilyForcedOnRaggedGroups) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(9010);
  const std::vector<int64_t> sizes = {0, 37, 130, 1, 0, 200, 64, 129};
  const HostGrouped h = random_grouped(rng, sizes, sum_of(sizes), 264, 400);
  const GroupedReference r(h);
  DeviceGrouped d(h);
  const char* names[] = {
      "sm90_tiled_64x128x128_s8_c1x1_r8",     "sm90_tiled_128x256x128_s3_c1x1_r8",
      "sm90_tiled_128x128x128_s5_c2x1_r8",    "sm90_tiled_128x256x128_s3_c2x1_r0",
      "sm90_pingpong_64x128x128_s6_c1x1_r1",  "sm90_pingpong_64x256x128_s5_c1x1_r8",
      "sm90_pingpong_64x256x128_s5_c2x1_r8",  "sm90_pingpong_128x128x128_s6_c1x1_r3",
      "sm90_pingpong_128x96x128_s7_c2x1_r8",  "sm90_swap_64x16x128_s12_c1x1_r0",
      "sm90_swap_128x96x128_s7_c1x1_r0"};
  int ran = 0;
  for (const char* name : names) {
    const Config c = Config::parse(name);
    for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
      for (bool fast : {true, false}) {
        ProblemShape p;
        p.batch = h.groups;
        p.m = 64;
        p.n = h.n;
        p.k = h.k;
        p.w_layout = layout;
        p.fast_accum = fast;
        // e.g. a 128x128 ping-pong in precise mode
        if (!detail::config_illegal_reason(c, p).empty()) continue;
        const std::string what = std::string(name) + " " + describe(h, layout, fast, DType::kBF16);
        SCOPED_TRACE(what);
        expect_grouped_correct(h, r, d.run(layout, DType::kBF16, fast, DType::kI32, nullptr, &c),
                               DType::kBF16, fast, what);
        ++ran;
      }
    }
  }
  EXPECT_EQ(ran, 38) << "11 families x 2 layouts x 2 modes, less 6 precise ones that cannot run";
}

// Card 59: a tiled block ends inside a group here and there, so one CTA's consecutive tiles mix
// the threads' copies of a partial block with tensor stores of whole ones from the same staging
// boxes (each store's reads are waited for a tile later). 48 groups of 0-300 rows, N = 1024:
// about 600 tiles of 128 x 128 on 132 CTAs, several per CTA.
TEST(GroupedGpu, TiledWholeBlockStoresMixWithPartialBlocksAcrossTilesOfOneCta) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(9013);
  const std::vector<int64_t> sizes = random_sizes(rng, 48, 300);
  const HostGrouped h = random_grouped(rng, sizes, sum_of(sizes), 1024, 144);
  const GroupedReference r(h);
  DeviceGrouped d(h);
  int ran = 0;
  for (const char* name : {"sm90_tiled_128x128x128_s5_c1x1_r8", "sm90_tiled_128x256x128_s3_c2x1_r8"}) {
    const Config c = Config::parse(name);
    ran += check_layouts_and_modes(h, r, d, &c);
  }
  EXPECT_EQ(ran, 8);
}

// Card 61: with 32-column chunks (ping-pong tiles whose width is a multiple of 32, and tiled
// ones 96 or 160 wide) each warp stores its own 16 rows, and only the warp whose rows a group's
// end falls in copies them by hand. The groups end inside each of a 64-row block's four warps
// (3, 20, 40 and 60 rows into it, and 1 and 63), on the warps' edges (16, 32, 48 and 64), and,
// for the 128-row tiles, at the same places of their second block (80 to 127, 128). N = 424
// leaves a partial chunk at the right edge. Stacked, every row belongs to a group; padded
// (M_max = 128, groups at multiples of 128), the rows past each size stay poisoned, so a warp
// that stored past its group's end fails there. Six chunk-store families: ping-pong 64x128,
// 64x160 (an odd chunk count, so the two buffers alternate unevenly) in a 2x1 pair and 128x96
// in a 2x1 pair, and the tiled 128x160, 128x96 and 64x96.
TEST(GroupedGpu, PerWarpChunkStoresStopAtTheGroupsEndInsideEveryWarp) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(9014);
  const std::vector<int64_t> stacked = {3, 84, 104, 60, 16, 32, 48, 64, 0, 65, 127, 1};
  const std::vector<int64_t> padded = {3, 20, 40, 60, 16, 32, 48, 64, 0, 65, 127, 1,
                                       80, 96, 112, 128, 84, 104, 124};
  const HostGrouped hs = random_grouped(rng, stacked, sum_of(stacked), 424, 272);
  const HostGrouped hp = random_grouped(rng, padded, 128, 424, 272, true);
  const GroupedReference rs(hs), rp(hp);
  DeviceGrouped ds(hs), dp(hp);
  int ran = 0;
  for (const char* name :
       {"sm90_pingpong_64x128x128_s6_c1x1_r8", "sm90_pingpong_64x160x128_s6_c2x1_r8",
        "sm90_pingpong_128x96x128_s7_c2x1_r8", "sm90_tiled_128x160x128_s4_c1x1_r8",
        "sm90_tiled_128x96x128_s6_c1x1_r8", "sm90_tiled_64x96x128_s7_c1x1_r8"}) {
    const Config c = Config::parse(name);
    ProblemShape p;
    p.batch = hs.groups;
    p.m = 64;
    p.n = hs.n;
    p.k = hs.k;
    for (bool fast : {true, false}) {
      p.fast_accum = fast;
      ASSERT_EQ(detail::config_illegal_reason(c, p), "") << name << (fast ? " fast" : " precise");
    }
    ran += check_layouts_and_modes(hs, rs, ds, &c);
    ran += check_layouts_and_modes(hp, rp, dp, &c);
  }
  EXPECT_EQ(ran, 48) << "6 families x 2 forms x 2 layouts x 2 modes";
}

// Card 44: the grouped choice widens the raster band of its 64-row ping-pong up to 64 X tiles;
// card 110 gives its swap-AB picks bands of 64, where they had none. Wide bands on groups of
// more than one band (4100 rows: 65 X tiles of 64, so a band of 64 and one of 1; with swap-AB
// 129 token tiles of 32 (64, 64 and 1) or 86 of 48 (64 and 22)), next to small and empty
// groups, alone and in 2x1 clusters (a band of 32 cluster tiles), against fp64 and bit for bit
// against the same config with bands of 8 (swap-AB: no band): the band only orders the tiles.
TEST(GroupedGpu, WideRasterBandsGiveTheNarrowBandsBits) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(9044);
  const std::vector<int64_t> sizes = {0, 4100, 7, 700, 1, 0, 129};
  const HostGrouped h = random_grouped(rng, sizes, sum_of(sizes), 264, 400);
  const GroupedReference r(h);
  DeviceGrouped d(h);
  const char* pairs[][2] = {
      {"sm90_pingpong_64x256x128_s5_c1x1_r64", "sm90_pingpong_64x256x128_s5_c1x1_r8"},
      {"sm90_pingpong_64x256x128_s5_c1x1_r16", "sm90_pingpong_64x256x128_s5_c1x1_r8"},
      {"sm90_pingpong_64x256x128_s5_c2x1_r64", "sm90_pingpong_64x256x128_s5_c2x1_r8"},
      {"sm90_tiled_128x128x128_s5_c1x1_r64", "sm90_tiled_128x128x128_s5_c1x1_r8"},
      {"sm90_swap_128x32x128_s10_c1x1_r64", "sm90_swap_128x32x128_s10_c1x1_r0"},
      {"sm90_swap_64x48x128_s8_c1x1_r64", "sm90_swap_64x48x128_s8_c1x1_r0"}};
  for (const auto& pair : pairs) {
    const Config wide = Config::parse(pair[0]), narrow = Config::parse(pair[1]);
    for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
      const std::string what = std::string(pair[0]) + " " + describe(h, layout, true, DType::kBF16);
      SCOPED_TRACE(what);
      const auto y_wide = d.run(layout, DType::kBF16, true, DType::kI32, nullptr, &wide);
      const auto y_narrow = d.run(layout, DType::kBF16, true, DType::kI32, nullptr, &narrow);
      expect_grouped_correct(h, r, y_wide, DType::kBF16, true, what);
      EXPECT_TRUE(y_wide == y_narrow) << what << ": not the bits of " << pair[1];
    }
  }
}

// ---- bias, fp16, int64 sizes ---------------------------------------------------------------

TEST(GroupedGpu, BiasAndFp16OutputAgainstTheReference) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(9003);
  const std::vector<int64_t> sizes = {40, 0, 3, 91};
  for (DType bias_dtype : {DType::kF32, DType::kBF16}) {
    for (bool padded : {false, true}) {
      const HostGrouped h = random_grouped(rng, sizes, padded ? 96 : sum_of(sizes), 264, 400,
                                           padded, true, bias_dtype);
      const GroupedReference r(h);
      DeviceGrouped d(h);
      for (DType out : {DType::kBF16, DType::kF16}) {
        for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
          for (bool fast : {true, false}) {
            const std::string what = describe(h, layout, fast, out);
            SCOPED_TRACE(what);
            expect_grouped_correct(h, r, d.run(layout, out, fast), out, fast, what);
          }
        }
      }
    }
  }
  // fp16 without bias.
  const HostGrouped h = random_grouped(rng, {17, 120}, 137, 136, 1040);
  const GroupedReference r(h);
  DeviceGrouped d(h);
  for (bool fast : {true, false}) {
    const std::string what = describe(h, WeightLayout::kPreshuffled, fast, DType::kF16);
    expect_grouped_correct(h, r, d.run(WeightLayout::kPreshuffled, DType::kF16, fast), DType::kF16,
                           fast, what);
  }
}

TEST(GroupedGpu, Int32AndInt64SizesGiveTheSameBits) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(9004);
  for (bool padded : {false, true}) {
    const std::vector<int64_t> sizes = {12, 0, 77, 5, 0, 31};
    const HostGrouped h = random_grouped(rng, sizes, padded ? 80 : sum_of(sizes), 136, 272, padded);
    const GroupedReference r(h);
    DeviceGrouped d(h);
    for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
      const auto y32 = d.run(layout, DType::kBF16, true, DType::kI32);
      const auto y64 = d.run(layout, DType::kBF16, true, DType::kI64);
      const std::string what = describe(h, layout, true, DType::kBF16, DType::kI64);
      expect_grouped_correct(h, r, y64, DType::kBF16, true, what);
      EXPECT_TRUE(y32 == y64) << what;
    }
  }
}

// ---- the padded form -----------------------------------------------------------------------

TEST(GroupedGpu, PaddedFormWritesOnlyEachGroupsRows) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(9005);
  // M_max = 100 with full, empty, one-row and ragged groups; rows past each size stay poisoned.
  check_layouts_and_modes(random_grouped(rng, {100, 0, 37, 1, 64}, 100, 136, 272, true));
  // A decode-like capacity: M_max = 8.
  check_layouts_and_modes(random_grouped(rng, {8, 2, 0, 5, 1, 0, 3, 7}, 8, 512, 256, true));
}

// ---- bad sizes are clamped on the device ----------------------------------------------------

TEST(GroupedGpu, SizesSummingPastTotalMAreClippedAtTheEnd) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(9006);
  // total_M = 100: group 0 owns [0, 40), group 1 [40, 90), group 2 [90, 100) (clipped from 30),
  // group 3 nothing. The rows that fit are still correct, and nothing past total_M is touched.
  check_layouts_and_modes(random_grouped(rng, {40, 50, 30, 20}, 100, 136, 272));
  // The first group alone overflows.
  check_layouts_and_modes(random_grouped(rng, {500, 3}, 70, 264, 144));
  // Padded: sizes past M_max are clipped to M_max.
  check_layouts_and_modes(random_grouped(rng, {1000, 33, 65}, 64, 136, 272, true));
}

TEST(GroupedGpu, NegativeSizesCountAsZero) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(9007);
  // Group 1 owns [0, 30), group 3 [30, 50); rows 50..59 belong to no group.
  check_layouts_and_modes(random_grouped(rng, {-5, 30, -1000, 20}, 60, 136, 272));
  check_layouts_and_modes(random_grouped(rng, {-1, 9, -7}, 16, 136, 272, true));
}

TEST(GroupedGpu, ExtremeSizesNeitherOverflowNorReachPastTheTensors) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(9008);
  // Sizes at the ends of int32 and int64: a kernel that summed them unclamped would overflow.
  const int64_t i32_max = std::numeric_limits<int32_t>::max();
  const int64_t i32_min = std::numeric_limits<int32_t>::min();
  const int64_t i64_max = std::numeric_limits<int64_t>::max();
  const int64_t i64_min = std::numeric_limits<int64_t>::min();
  for (bool padded : {false, true}) {
    {
      // int32: group 0 takes every row (stacked) or M_max rows (padded).
      const HostGrouped h = random_grouped(rng, {i32_max, i32_max, i32_min, 5}, 48, 136, 272, padded);
      const GroupedReference r(h);
      DeviceGrouped d(h);
      const std::string what = describe(h, WeightLayout::kPreshuffled, true, DType::kBF16);
      expect_grouped_correct(h, r, d.run(WeightLayout::kPreshuffled, DType::kBF16, true, DType::kI32),
                             DType::kBF16, true, what);
    }
    {
      const HostGrouped h = random_grouped(rng, {i64_min, 7, i64_max, i64_max, 3}, 40, 136, 272, padded);
      const GroupedReference r(h);
      DeviceGrouped d(h);
      const std::string what = describe(h, WeightLayout::kPlain, true, DType::kBF16, DType::kI64);
      expect_grouped_correct(h, r, d.run(WeightLayout::kPlain, DType::kBF16, true, DType::kI64),
                             DType::kBF16, true, what);
    }
  }
}

TEST(GroupedGpu, AllSizesZeroWritesNothing) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(9009);
  for (bool padded : {false, true}) {
    const HostGrouped h = random_grouped(rng, {0, 0, 0}, 50, 136, 272, padded);
    DeviceGrouped d(h);
    for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
      d.run(layout, DType::kBF16, true);
      EXPECT_TRUE(test::still_poisoned(d.out)) << describe(h, layout, true, DType::kBF16);
    }
  }
}

TEST(GroupedGpu, EmptyProblemsLaunchNothing) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(9010);
  // total_M = 0, and G = 0 with rows (no group owns them: they stay poisoned).
  for (const HostGrouped& h : {random_grouped(rng, {0, 0}, 0, 136, 272),
                               random_grouped(rng, {}, 30, 136, 272),
                               random_grouped(rng, {}, 30, 136, 272, true)}) {
    DeviceGrouped d(h);
    d.run(WeightLayout::kPlain, DType::kBF16, true);
    EXPECT_TRUE(test::still_poisoned(d.out)) << describe(h, WeightLayout::kPlain, true, DType::kBF16);
  }
}

// ---- many groups ------------------------------------------------------------------------------

TEST(GroupedGpu, ManySmallGroups) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(9011);
  const std::vector<int64_t> sizes = random_sizes(rng, 128, 9);
  check_layouts_and_modes(random_grouped(rng, sizes, sum_of(sizes), 264, 144));
  // Padded, 128 groups of capacity 9.
  check_layouts_and_modes(random_grouped(rng, sizes, 9, 136, 272, true));
}

TEST(GroupedGpu, MoreGroupsThanThreadsInTheTables) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(9012);
  // 256 or 384 threads build the group tables: G = 257, 385 and 1000 give some threads several
  // groups and leave G off any multiple of the thread count; G = 4096 is the limit (48 KB of
  // tables, the ring shortened to fit). Empty first and last groups, most others 0..3 rows.
  for (int64_t groups : {257, 385, 1000, 4096}) {
    SCOPED_TRACE(groups);
    std::uniform_int_distribution<int64_t> size(0, 3);
    std::vector<int64_t> sizes(size_t(groups), 0);
    for (size_t g = 1; g + 1 < sizes.size(); ++g) sizes[g] = size(rng);
    sizes[size_t(groups) / 2] = 70;  // one group spanning two 64-row tiles
    check_layouts_and_modes(random_grouped(rng, sizes, sum_of(sizes), 72, 144));
  }
}

// ---- determinism and new sizes in the same buffer --------------------------------------------

TEST(GroupedGpu, RepeatedRunsAreBitwiseIdentical) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(9012);
  const std::vector<int64_t> sizes = {3, 250, 0, 17, 129, 1};
  const HostGrouped h = random_grouped(rng, sizes, sum_of(sizes), 1032, 1040);
  DeviceGrouped d(h);
  for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
    for (bool fast : {true, false}) {
      const auto first = d.run(layout, DType::kBF16, fast);
      for (int i = 0; i < 3; ++i) {
        EXPECT_TRUE(d.run(layout, DType::kBF16, fast) == first) << describe(h, layout, fast, DType::kBF16);
      }
    }
  }
}

TEST(GroupedGpu, CapturedGraphReadsNewSizesAtEachReplay) {
  F8GEMM_SKIP_WITHOUT_SM90();
  std::mt19937_64 rng(9013);
  // One x of total_M = 120 rows; the routing changes between replays, the graph does not.
  HostGrouped h = random_grouped(rng, {30, 30, 30, 30}, 120, 264, 272);
  const std::vector<std::vector<int64_t>> routings = {
      {30, 30, 30, 30}, {0, 120, 0, 0}, {1, 0, 118, 0}, {60, 0, 0, 40}, {-3, 200, 5, 5}};
  DeviceGrouped d(h);
  cudaStream_t stream;
  F8GEMM_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
    d.run(layout, DType::kBF16, true, DType::kI64, stream);  // builds the plan outside the capture
    cudaGraph_t graph;
    F8GEMM_CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    F8GEMM_CHECK_CUDA(cudaMemsetAsync(d.out.get(), 0xFF, d.out.bytes(), stream));
    d.enqueue(layout, DType::kBF16, true, DType::kI64, stream);
    F8GEMM_CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec;
    F8GEMM_CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (const auto& sizes : routings) {
      h.sizes = sizes;
      d.upload_sizes(sizes);
      F8GEMM_CHECK_CUDA(cudaGraphLaunch(exec, stream));
      const std::string what = describe(h, layout, true, DType::kBF16, DType::kI64) + " (replay)";
      expect_grouped_correct(h, GroupedReference(h), d.result(stream), DType::kBF16, true, what);
    }
    F8GEMM_CHECK_CUDA(cudaGraphExecDestroy(exec));
    F8GEMM_CHECK_CUDA(cudaGraphDestroy(graph));
  }
  F8GEMM_CHECK_CUDA(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace f8gemm
