/// \brief Config names, legality, the candidates and the decision order (the cost model:
/// cost_model.cpp; the tables: tuned_tables.cpp).
#include "config.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "check.hpp"
#include "codegen.hpp"
#include "env.hpp"
#include "f8gemm/tuning.hpp"
#include "tuned_tables.hpp"

namespace f8gemm {

std::string Config::name() const {
  std::ostringstream os;
  os << "sm90_"
     << (path == KernelPath::kSwapAB ? "swap" : path == KernelPath::kPingPong ? "pingpong" : "tiled")
     << "_" << bm << "x" << bn
     << "x" << bk << "_s" << stages << "_c" << cluster_m << "x" << cluster_n << "_r" << raster;
  if (split_k != 1) os << "_k" << split_k;
  if (early_dependents != 0) os << "_e";
  return os.str();
}

namespace {
/// Reads a config name left to right. Numbers are runs of digits parsed with from_chars, so a
/// value past int is reported as such instead of overflowing (sscanf's %d has undefined
/// behaviour there).
class NameReader {
 public:
  explicit NameReader(const std::string& name) : name_(name) {}
  bool literal(const char* text) {
    const size_t n = std::strlen(text);
    if (name_.compare(pos_, n, text) != 0) return false;
    pos_ += n;
    return true;
  }
  bool number(int* value, const char* field) {
    const char* begin = name_.data() + pos_;
    const char* end = begin;
    while (end < name_.data() + name_.size() && *end >= '0' && *end <= '9') ++end;
    if (end == begin) return false;
    const auto r = std::from_chars(begin, end, *value);
    F8GEMM_REQUIRE(r.ec == std::errc(), kInvalidArgument, "config name ", detail::quoted(name_),
                   ": ", field, " = ", std::string(begin, end), " is out of range");
    pos_ += size_t(end - begin);
    return true;
  }
  bool at_end() const { return pos_ == name_.size(); }

 private:
  const std::string& name_;
  size_t pos_ = 0;
};
}  // namespace

Config Config::parse(const std::string& name) {
  Config c;
  NameReader r(name);
  bool ok = r.literal("sm90_");
  const bool swap = ok && r.literal("swap_");
  const bool pingpong = ok && !swap && r.literal("pingpong_");
  ok = ok && (swap || pingpong || r.literal("tiled_")) && r.number(&c.bm, "bm") && r.literal("x") &&
       r.number(&c.bn, "bn") && r.literal("x") && r.number(&c.bk, "bk") && r.literal("_s") &&
       r.number(&c.stages, "stages") && r.literal("_c") && r.number(&c.cluster_m, "cluster_m") &&
       r.literal("x") && r.number(&c.cluster_n, "cluster_n") && r.literal("_r") &&
       r.number(&c.raster, "raster");
  if (ok && r.literal("_k")) ok = r.number(&c.split_k, "split_k");
  if (ok && r.literal("_e")) c.early_dependents = 1;
  ok = ok && r.at_end();
  F8GEMM_REQUIRE(ok, kInvalidArgument, "config name ", detail::quoted(name),
                 " does not match sm90_<tiled|pingpong|swap>_<bm>x<bn>x<bk>_s<stages>_c<m>x<n>"
                 "_r<raster>[_k<split>][_e]");
  c.path = swap ? KernelPath::kSwapAB : pingpong ? KernelPath::kPingPong : KernelPath::kTiled;
  // Parse is exact: the name must be the canonical one (no leading zeros).
  F8GEMM_REQUIRE(c.name() == name, kInvalidArgument, "config name ", detail::quoted(name),
                 " is not canonical; did you mean '", c.name(), "'?");
  return c;
}

bool Config::operator==(const Config& o) const {
  return detail::config_fields(*this) == detail::config_fields(o);
}

std::string config_unfit_message(const Config& config, const ProblemShape& problem,
                                 const std::string& why) {
  return detail::concat("config ", config.name(), " cannot run B,M,N,K=", problem.batch, ",",
                        problem.m, ",", problem.n, ",", problem.k, ": ", why);
}

namespace detail {

ConfigFields config_fields(const Config& c) {
  // A field added to Config and not listed here breaks this size check first.
  static_assert(sizeof(Config) == 10 * sizeof(int), "config_fields() lists every Config field");
  return {int(c.path) + 1, c.bm, c.bn, c.bk, c.stages, c.cluster_m, c.cluster_n, c.raster,
          c.split_k, c.early_dependents};
}

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

int config_smem_bytes(const Config& c, int groups_cap, EpilogueOp op) {
  // The kernel's own layout function (kernels/gemm_params.cuh): one definition for both sides.
  return dev::gemm_smem_layout(c.bm, c.bn, c.stages, c.path == KernelPath::kSwapAB,
                               c.path == KernelPath::kPingPong, c.split_k, groups_cap,
                               op == EpilogueOp::kSiluMul)
      .total_bytes;
}

std::string config_illegal_reason(const Config& c, const ProblemShape& p) {
  std::ostringstream why;
  if (c.path != KernelPath::kTiled && c.path != KernelPath::kSwapAB &&
      c.path != KernelPath::kPingPong)
    why << "path must be tiled, swap or pingpong (KernelPath 0..2), got " << int(c.path);
  else if (c.bk != 128) why << "bk must be 128 (one 128-byte swizzle row)";
  else if (c.bm != 64 && c.bm != 128) why << "bm must be 64 or 128 (64 rows per consumer warpgroup)";
  else if (c.bn < 8 || c.bn > 256 || c.bn % 8 != 0) why << "bn must be a multiple of 8 in 8..256";
  else if (c.stages < 2 || c.stages > 16) why << "stages must be 2..16";
  else if (c.cluster_n != 1 || (c.cluster_m != 1 && c.cluster_m != 2))
    why << "clusters are 1x1 or 2x1 (two CTAs along M sharing each W tile)";
  else if (c.cluster_m == 2 && c.path == KernelPath::kSwapAB)
    why << "2x1 clusters are for the tiled path (swap-AB tiles share no W tile)";
  else if (c.path == KernelPath::kPingPong && c.bm == 128 && c.bn > dev::kGemmMaxAccumulators)
    why << "a 128-row ping-pong tile keeps bn fp32 accumulators per thread: bn must be <= "
        << dev::kGemmMaxAccumulators;
  else if (c.path == KernelPath::kPingPong && c.bm == 128 && !p.fast_accum && c.bn > 96)
    why << "a 128-row ping-pong tile in precise mode keeps two sets of bn accumulators: bn must "
           "be <= 96";
  else if (c.cluster_m == 2 && c.bn % 16 != 0)
    why << "2x1 clusters split the W tile into two halves of whole 8-row slabs: bn % 16 == 0";
  else if (c.raster < 0 || c.raster > kMaxRaster) why << "raster must be 0.." << kMaxRaster;
  else if (c.split_k < 1 || c.split_k > 8)
    why << "split_k must be 1..8 (a split-K cluster is at most 8 CTAs)";
  else if (c.early_dependents != 0 && c.early_dependents != 1)
    why << "early_dependents must be 0 or 1, got " << c.early_dependents;
  else if (c.split_k > 1 && (c.cluster_m != 1 || c.path == KernelPath::kPingPong))
    why << "split-K clusters are 1x1 in M and cooperative (not ping-pong)";
  else if (c.split_k > 1 && c.bn > 128)
    why << "split-K's rank 0 holds a peer's partial sums beside its own: bn must be <= 128";
  else if (c.split_k > (p.k + 127) / 128)
    why << "split_k = " << c.split_k << " exceeds the " << (p.k + 127) / 128
        << " k-blocks of K = " << p.k << " (each CTA needs at least one)";
  else if (config_smem_bytes(c) > kMaxSmemBytes)
    why << "needs " << config_smem_bytes(c) << " bytes of shared memory, more than " << kMaxSmemBytes;
  else if (!p.fast_accum && c.bn > 192 && (c.path != KernelPath::kTiled || c.bn != 256))
    why << "precise accumulation keeps a second accumulator set: bn must be <= 192, or 256 on the "
           "tiled path (promoted in two 128-column slices that the other consumer overlaps)";
  else if (p.epilogue_op == EpilogueOp::kSiluMul && c.path == KernelPath::kSwapAB)
    why << "the SiLU·mul epilogue pairs gate and up columns of a tile's W side: not on the "
           "swap-AB path";
  else if (p.epilogue_op == EpilogueOp::kSiluMul && c.split_k > 1)
    why << "the SiLU·mul epilogue needs the whole sum of a tile: no split of K";
  else if (p.epilogue_op == EpilogueOp::kSiluMul && c.bn % 64 != 0)
    why << "the SiLU·mul epilogue stores whole 32-column output chunks of bn / 2 columns: "
           "bn % 64 == 0";
  return why.str();
}

std::vector<Config> candidates(const ProblemShape& p, int sm_count, CandidateSet set) {
  const bool tune = set == CandidateSet::kTune;
  std::vector<std::pair<double, Config>> scored;
  auto add = [&](KernelPath path, int bm, int bn, int max_stages, int raster, int cluster_m = 1,
                 int split_k = 1) {
    Config c;
    c.path = path;
    c.bm = bm;
    c.bn = bn;
    c.raster = raster;
    c.cluster_m = cluster_m;
    c.split_k = split_k;
    // The deepest ring that fits: more stages keep more bytes in flight (decode is latency-bound).
    for (c.stages = max_stages; c.stages >= 2; --c.stages) {
      if (config_smem_bytes(c) <= kMaxSmemBytes) break;
    }
    if (!config_illegal_reason(c, p).empty()) return;
    // The model credits a 2x1 cluster with reading each W tile once for two X tiles. Where the
    // pair leaves one of one or three X tiles empty, its partner computes nothing with that read,
    // and 1x1 tiles get part of the sharing from their placement (perf log, card 78: at three X
    // tiles two of every three TPC pairs share a W tile). In the H100's tunes at 32-192 rows every
    // such pair ran 1.01-1.64x its 1x1 twin (card 79; three 128-row X tiles, 257-384 rows, were
    // not measured). The tune still times them.
    const int64_t x_tiles = ceil_div(p.m, bm);
    if (!tune && cluster_m == 2 && x_tiles <= 3 && x_tiles % 2 == 1) return;
    for (const auto& s : scored) {
      if (s.second == c) return;  // a deeper ring asked for that does not fit: already listed
    }
    scored.emplace_back(estimate_us(c, p, sm_count), c);
  };
  for (int bm : {64, 128}) {
    for (int bn : {64, 96, 128, 160, 192, 256}) add(KernelPath::kTiled, bm, bn, 8, 8);
    // 2x1 clusters after their 1x1 twins: on a tie the simpler launch wins, and the tune's
    // measurements decide (docs/perf-log.md, card 10).
    if (bm == 128) {
      for (int bn : {128, 192, 256}) add(KernelPath::kTiled, bm, bn, 8, 8, 2);
    } else {
      // Ping-pong: two 64-row tiles in flight per CTA, the epilogue of one under the other's
      // wgmmas; with and without a pair sharing W (multicast halves the 64-row tiles' W reads).
      for (int bn : {128, 192, 256}) {
        add(KernelPath::kPingPong, 64, bn, 8, 8);
        add(KernelPath::kPingPong, 64, bn, 8, 8, 2);
      }
      // Tune only: 160 and 176 columns, 90 and 82 tiles across N = 14336, whose last wave
      // fills more of the SMs than 128's or 256's (perf log, card 47).
      if (tune) {
        for (int bn : {160, 176}) {
          add(KernelPath::kPingPong, 64, bn, 8, 8);
          add(KernelPath::kPingPong, 64, bn, 8, 8, 2);
        }
      }
    }
    if (bm == 128) {
      // Ping-pong with 128-row tiles (FBGEMM's choice at K <= 4096): each consumer owns a
      // 128 x bn tile, 20% fewer operand bytes per product than 64 x 256. The tune also tries
      // 112, 144 and 160 columns, whose tile counts fit the SMs' waves differently (perf log,
      // card 47: 160 in the shipped table).
      for (int bn : {96, 112, 128, 144, 160}) {
        if (!tune && bn != 96 && bn != 128) continue;
        add(KernelPath::kPingPong, 128, bn, 8, 8);
        add(KernelPath::kPingPong, 128, bn, 8, 8, 2);
      }
    }
    if (p.m <= 256) {
      for (int bn : {8, 16, 24, 32, 48, 64, 96, 128}) {
        const int64_t tiles = p.batch * ceil_div(p.m, bn) * ceil_div(p.n, bm);
        // Tune only: rings of up to 16 stages beside the model's 12 (more W in flight, and
        // with prefetch_w more of it loaded before the wait; perf log, card 53: 1-5% on four
        // chained decode shapes).
        for (int max_stages : {12, 16}) {
          if (max_stages == 16 && !tune) continue;
          add(KernelPath::kSwapAB, bm, bn, max_stages, 0);
          // Thin grids (decode with few W tiles): split K over a cluster so that more SMs
          // stream W, as long as the split tiles still fit in one wave.
          for (int split : {2, 3, 4, 6, 8}) {
            if (tiles * split <= sm_count) add(KernelPath::kSwapAB, bm, bn, max_stages, 0, 1, split);
          }
        }
      }
    }
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return a.second.bm * a.second.bn > b.second.bm * b.second.bn;  // ties: the larger tile
  });
  std::vector<Config> out;
  for (auto& s : scored) {
    out.push_back(s.second);
    // Tune only, for a chained problem (PDL on): each candidate also lets its dependents in
    // right after its grid-dependency wait. On the H200 that was 3-9% faster on two decode GEMMs
    // and 12-18% slower on two others (perf log, card 81), so only a measurement chooses it.
    if (tune && p.chained) {
      out.push_back(s.second);
      out.back().early_dependents = 1;
    }
  }
  return out;
}

Config model_pick(const ProblemShape& p, int sm_count) {
  const std::vector<Config> list = candidates(p, sm_count);
  F8GEMM_REQUIRE(!list.empty(), kInternal, "no legal configuration for B,M,N,K=", p.batch, ",",
                 p.m, ",", p.n, ",", p.k);
  return list.front();
}

std::string env_config_label(const std::string& name) {
  return concat("F8GEMM_CONFIG=", detail::quoted(name), ": ");
}

std::optional<Config> env_forced_config() {
  const std::string name = get_env<std::string>("F8GEMM_CONFIG");
  if (name.empty()) return std::nullopt;
  Config c;
  try {
    c = Config::parse(name);
  } catch (const Error& e) {
    throw Error(e.code(), env_config_label(name) + e.message());
  }
  // What no problem changes (the tile, the ring, the cluster) is judged now, so that a bad value
  // is reported before a GPU is looked for (check_environment); a problem's own limits (its K,
  // precise mode, the epilogue) are judged when one is decided.
  ProblemShape any;
  any.k = int64_t(1) << 20;  // every split of K fits
  const std::string why = config_illegal_reason(c, any);
  F8GEMM_REQUIRE(why.empty(), kInvalidArgument, env_config_label(name), why);
  return c;
}

std::optional<Config> env_forced_config_for(const ProblemShape& p) {
  const std::optional<Config> forced = env_forced_config();
  if (forced) {
    const std::string why = config_illegal_reason(*forced, p);
    F8GEMM_REQUIRE(why.empty(), kUnsupported, env_config_label(forced->name()),
                   config_unfit_message(*forced, p, why));
  }
  return forced;
}

Config decide(const std::string& gpu_name, int sm_count, const ProblemShape& p) {
  const char* source = "model";
  int64_t entry_rows = p.m;
  Config chosen;
  if (const std::optional<Config> forced = env_forced_config_for(p)) {
    chosen = *forced;
    source = "F8GEMM_CONFIG";
  } else if (auto tuned = tuned_entry(gpu_name, sm_count, p)) {
    chosen = tuned->config;
    source = tuned->m == p.m ? "table" : "table, the entry of more rows";
    entry_rows = tuned->m;
  } else {
    chosen = model_pick(p, sm_count);
  }
  if (get_env<bool>("F8GEMM_LOG")) {
    // The key names the epilogue's operation and a chained call.
    const std::string rows = entry_rows == p.m ? "" : concat(" M = ", entry_rows);
    std::fprintf(stderr, "f8gemm: %s -> %s (%s%s, model %.1f us)\n",
                 table_key(gpu_name, sm_count, p).c_str(), chosen.name().c_str(), source,
                 rows.c_str(), estimate_us(chosen, p, sm_count));
  }
  return chosen;
}

}  // namespace detail
}  // namespace f8gemm
