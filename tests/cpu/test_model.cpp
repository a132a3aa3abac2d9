/// \brief The cost model against measurements: on the recorded H200 tune run (every legal
/// configuration of the 11 benchmark shapes, both accumulation modes, timed on the GPU), the
/// model's pick must be within 10% of the fastest configuration of each problem.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "config.hpp"

namespace f8gemm {
namespace {

struct Measured {
  Config config;
  double us = 0.0;
};

TEST(CostModel, PicksNearTheFastestMeasuredConfig) {
  const std::string path = std::string(F8GEMM_SOURCE_DIR) + "/docs/logs/2026-11-30-tune-4.csv";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "cannot read " << path;
  std::string line;
  std::getline(in, line);  // header: b,m,n,k,accum,config,graph_us,model_us
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, bool>, std::vector<Measured>> runs;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string f[8];
    for (auto& field : f) std::getline(ss, field, ',');
    const auto key = std::make_tuple(std::stoll(f[0]), std::stoll(f[1]), std::stoll(f[2]),
                                     std::stoll(f[3]), f[4] == "fast");
    runs[key].push_back({Config::parse(f[5]), std::stod(f[6])});
  }
  ASSERT_EQ(runs.size(), 22u) << "11 shapes x 2 accumulation modes";
  double sum = 0.0;
  for (const auto& [key, measured] : runs) {
    ProblemShape p;
    std::tie(p.batch, p.m, p.n, p.k, p.fast_accum) = key;
    const Measured* best = &measured.front();
    const Measured* pick = &measured.front();
    for (const Measured& r : measured) {
      if (r.us < best->us) best = &r;
      if (detail::estimate_us(r.config, p, 132) < detail::estimate_us(pick->config, p, 132)) {
        pick = &r;
      }
    }
    const double regret = pick->us / best->us;
    sum += regret;
    EXPECT_LE(regret, 1.10) << p.batch << "," << p.m << "," << p.n << "," << p.k
                            << (p.fast_accum ? " fast" : " precise") << ": the model picks "
                            << pick->config.name() << " (" << pick->us << " us), the fastest is "
                            << best->config.name() << " (" << best->us << " us)";
  }
  EXPECT_LE(sum / runs.size(), 1.03) << "mean regret over the 22 problems";
}

}  // namespace
}  // namespace f8gemm
