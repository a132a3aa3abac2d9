/// \brief The public tuning seam (f8gemm/tuning.hpp) and the enum-valued options check what a
/// caller passes before any arithmetic or compile: an SM count of 0, a config that cannot run
/// the problem, an invalid problem, an out-of-range enum, and a switch variable spelt otherwise
/// than as a switch; and a GPU named for a choice made without it (named_gpu) keys its table.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/test_util.hpp"
#include "config.hpp"
#include "env.hpp"
#include "f8gemm/f8gemm.hpp"
#include "f8gemm/tuning.hpp"
#include "launch.hpp"
#include "test_support.hpp"

namespace f8gemm {
namespace {

using test::expect_error;

ProblemShape problem(int64_t m, int64_t n, int64_t k) {
  ProblemShape p;
  p.m = m;
  p.n = n;
  p.k = k;
  return p;
}

TEST(TuningSeam, AnSmCountOutsideOneTo1024IsRefusedNotDividedBy) {
  const ProblemShape p = problem(128, 4096, 4096);
  // Each of these was killed by SIGFPE (a division by the SM count) before.
  F8GEMM_EXPECT_INVALID(model_config(p, 0), "sm_count must be 1..1024, got 0");
  F8GEMM_EXPECT_INVALID(candidate_configs(p, 0), "sm_count must be 1..1024, got 0");
  F8GEMM_EXPECT_INVALID(model_estimate_us(model_config(p, 132), p, -3), "sm_count must be 1..1024");
  F8GEMM_EXPECT_INVALID(decide_config(TargetGpu{"NVIDIA H200", 0, true}, p),
                        "sm_count must be 1..1024");
  F8GEMM_EXPECT_INVALID(tuning_table_key(TargetGpu{"NVIDIA H200", 5000, true}, p),
                 "sm_count must be 1..1024, got 5000");
  EXPECT_GT(model_estimate_us(model_config(p, 132), p, 132), 0.0);
}

// A name that a table key cannot hold: its key would not parse back, or would read as a comment.
TEST(TuningSeam, AGpuNameATableKeyCannotHoldIsRefused) {
  const ProblemShape p = problem(128, 4096, 4096);
  for (const char* name : {"", "NVIDIA|H200", "NVIDIA\tH200", "NVIDIA H200\n", "#H200"}) {
    SCOPED_TRACE(name);
    F8GEMM_EXPECT_INVALID(tuning_table_key(TargetGpu{name, 132, true}, p),
                          "TargetGpu::name must be non-empty");
    F8GEMM_EXPECT_INVALID(decide_config(TargetGpu{name, 132, true}, p),
                          "TargetGpu::name must be non-empty");
  }
  EXPECT_EQ(tuning_table_key(TargetGpu{"NVIDIA H200", 132, true}, p).rfind("NVIDIA H200|132|", 0),
            0u);
}

// A carriage return is a line break too: the table reader strips one before each line's end (a
// CRLF file), so a key holding one would not read back as written.
TEST(TuningSeam, AGpuNameWithACarriageReturnIsRefused) {
  const ProblemShape p = problem(128, 4096, 4096);
  for (const char* name : {"NVIDIA H200\r", "NVIDIA\rH200"}) {
    SCOPED_TRACE(name);
    F8GEMM_EXPECT_INVALID(tuning_table_key(TargetGpu{name, 132, true}, p),
                          "hold no '|', tab or line break");
    F8GEMM_EXPECT_INVALID(decide_config(TargetGpu{name, 132, true}, p),
                          "hold no '|', tab or line break");
  }
  // The refused name is echoed through detail::quoted, so the line break it holds does not
  // reach the message raw.
  F8GEMM_EXPECT_INVALID(tuning_table_key(TargetGpu{"NVIDIA\nH200", 132, true}, p),
                        "line break (a table key holds it), got 'NVIDIA\\x0aH200'");
}

// The SM-count bound is inclusive at both ends: 1 and 1024 are targets the seam accepts.
TEST(TuningSeam, AnSmCountOfOneOr1024IsAccepted) {
  const ProblemShape p = problem(128, 4096, 4096);
  for (int sm_count : {1, 1024}) {
    SCOPED_TRACE(sm_count);
    const Config c = model_config(p, sm_count);
    EXPECT_GT(model_estimate_us(c, p, sm_count), 0.0);
    EXPECT_FALSE(candidate_configs(p, sm_count).empty());
    EXPECT_EQ(tuning_table_key(TargetGpu{"NVIDIA H200", sm_count, true}, p)
                  .rfind("NVIDIA H200|" + std::to_string(sm_count) + "|", 0),
              0u);
  }
  F8GEMM_EXPECT_INVALID(model_config(p, 1025), "sm_count must be 1..1024, got 1025");
}

// named_gpu() names each GPU as its shipped table keys it (the first field of every entry of
// tables/<short name>.tsv, and 132 SMs), so that a choice for it finds that table's entries:
// 16,4096,1280,8192 has a different entry in each.
TEST(TuningSeam, ANamedGpuChoosesAsItsShippedTable) {
  ProblemShape p = problem(4096, 1280, 8192);
  p.batch = 16;
  std::map<std::string, std::string> picks;
  for (const char* short_name : {"h100", "h200"}) {
    SCOPED_TRACE(short_name);
    const TargetGpu gpu = named_gpu(short_name);
    EXPECT_TRUE(gpu.assumed);
    EXPECT_EQ(gpu.sm_count, 132);
    const std::string path =
        std::string(F8GEMM_SOURCE_DIR) + "/tables/" + short_name + ".tsv";
    std::ifstream in(path);
    ASSERT_TRUE(in.good()) << "cannot read " << path;
    std::string line, want;
    int entries = 0;
    const std::string key = tuning_table_key(gpu, p);
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      ++entries;
      EXPECT_EQ(line.substr(0, line.find('|')), gpu.name) << line;
      if (line.substr(0, line.find('\t')) == key) want = line.substr(line.find('\t') + 1);
    }
    EXPECT_GT(entries, 0);
    ASSERT_FALSE(want.empty()) << "no entry for " << key << " in " << path;
    picks[short_name] = decide_config(gpu, p).name();
    EXPECT_EQ(picks[short_name], want);
  }
  EXPECT_NE(picks["h100"], picks["h200"]) << "the test needs a shape whose entries differ";
  F8GEMM_EXPECT_INVALID(named_gpu("h300"), "unknown GPU 'h300': the GPUs with shipped tables are");
  F8GEMM_EXPECT_INVALID(named_gpu("H100"), "unknown GPU 'H100'");
}

TEST(TuningSeam, AConfigThatCannotRunTheProblemIsRefusedWithItsReason) {
  const ProblemShape p = problem(128, 4096, 4096);
  Config c = model_config(p, 132);
  c.bm = 0;  // a SIGFPE in the estimate before
  F8GEMM_EXPECT_INVALID(model_estimate_us(c, p, 132), "bm must be 64 or 128");
  F8GEMM_EXPECT_INVALID(describe(c, p), "bm must be 64 or 128");
  Config split = model_config(p, 132);
  split.split_k = 0;
  F8GEMM_EXPECT_INVALID(model_estimate_us(split, p, 132), "split_k must be 1..8");
  Config path = model_config(p, 132);
  path.path = KernelPath(7);  // ran as the tiled path before
  EXPECT_EQ(config_unfit_reason(path, p),
            "path must be tiled, swap or pingpong (KernelPath 0..2), got 7");
  F8GEMM_EXPECT_INVALID(describe(path, p), "path must be tiled, swap or pingpong");
}

// The refusal of a config for a problem was written four times, and the seam's said
// "B,M,N,K = " where the others said "B,M,N,K=": one text now, config_unfit_message's, whichever
// function refuses (the CLI's --config: test_cli_refusals.cpp; a call's: test_gemm_gpu.cpp).
TEST(TuningSeam, EveryRefusalOfAConfigForAProblemIsSpeltOneWay) {
  ProblemShape p = problem(1, 128, 128);
  p.batch = 3;
  const Config c = Config::parse("sm90_tiled_128x128x128_s3_c1x1_r8_k8");  // K has 1 k-block
  const std::string why = config_unfit_reason(c, p);
  ASSERT_EQ(why.rfind("split_k = 8 exceeds the 1 k-blocks", 0), 0u) << why;
  const std::string text = "config " + c.name() + " cannot run B,M,N,K=3,1,128,128: " + why;
  EXPECT_EQ(config_unfit_message(c, p, why), text);
  for (const auto& refused : std::vector<std::function<void()>>{
           [&] { (void)model_estimate_us(c, p, 132); }, [&] { (void)describe(c, p); }}) {
    try {
      refused();
      ADD_FAILURE() << "accepted " << c.name();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_EQ(e.message(), text);
    }
  }
  test::ScopedEnv forced("F8GEMM_CONFIG");
  forced.set(c.name());
  try {
    check_forced_config(p);
    ADD_FAILURE() << "F8GEMM_CONFIG=" << c.name() << " accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
    EXPECT_EQ(e.message(), "F8GEMM_CONFIG='" + c.name() + "': " + text);
  }
}

TEST(TuningSeam, AnInvalidProblemIsRefusedAsACallWouldRefuseIt) {
  // N = 12 returned a config, and describe() reached NVRTC with it and failed to compile.
  const ProblemShape bad_n = problem(16, 12, 24);
  F8GEMM_EXPECT_INVALID(decide_config(TargetGpu{"NVIDIA H200", 132, true}, bad_n),
                 "N must be a positive multiple of 8, got 12");
  F8GEMM_EXPECT_INVALID(model_config(problem(16, 0, 4096), 132),
                        "N must be a positive multiple of 8");
  F8GEMM_EXPECT_INVALID(candidate_configs(problem(16, 4096, 24), 132),
                 "K must be a positive multiple of 16");
  F8GEMM_EXPECT_INVALID(config_unfit_reason(Config{}, problem(-1, 4096, 4096)),
                        "must be non-negative");
  Config c;
  F8GEMM_EXPECT_INVALID(describe(c, bad_n), "N must be a positive multiple of 8");
}

TEST(EnumOptions, AnOutOfRangePdlIsRefusedBeforeAnyLaunch) {
  F8GEMM_EXPECT_INVALID(detail::use_pdl(Pdl(7)),
                        "pdl must be Pdl::kDefault, Pdl::kOff or Pdl::kOn, got 7");
  // Through the entry points, before any device access (host buffers; no GPU needed).
  std::vector<float> in(4 * 32, 1.0f), s(4);
  std::vector<uint8_t> q(4 * 32);
  QuantizeOptions o;
  o.pdl = Pdl(-5);
  F8GEMM_EXPECT_INVALID(quantize_rows(make_view(in.data(), DType::kF32, {4, 32}),
                               make_view(q.data(), DType::kE4M3, {4, 32}),
                               make_view(s.data(), DType::kF32, {4}), o),
                 "QuantizeOptions::pdl must be");
  GemmOptions g;
  g.pdl = Pdl(3);
  const TensorView x = test::dev_view(uintptr_t(1) << 40, DType::kE4M3, {16, 64});
  const TensorView w = test::dev_view(uintptr_t(2) << 40, DType::kE4M3, {32, 64});
  const TensorView xs = test::dev_view(uintptr_t(3) << 40, DType::kF32, {16});
  const TensorView ws = test::dev_view(uintptr_t(4) << 40, DType::kF32, {32});
  const TensorView out = test::dev_view(uintptr_t(5) << 40, DType::kBF16, {16, 32});
  F8GEMM_EXPECT_INVALID(gemm(x, w, WeightLayout::kPlain, xs, ws, out, g),
                        "GemmOptions::pdl must be");
}

TEST(EnvSwitches, OnlySwitchValuesAreAcceptedAndAnyOtherNamesTheVariable) {
  test::ScopedEnv env("F8GEMM_LOG");
  for (const char* on : {"1", "true", "TRUE", "yes", "On"}) {
    env.set(on);
    EXPECT_TRUE(detail::get_env<bool>("F8GEMM_LOG")) << on;
  }
  for (const char* off : {"0", "false", "No", "OFF"}) {
    env.set(off);
    EXPECT_FALSE(detail::get_env<bool>("F8GEMM_LOG")) << off;  // "off" turned logging on before
  }
  for (const char* bad : {"2", "of", "enable", " 1", "yes please"}) {
    env.set(bad);
    F8GEMM_EXPECT_INVALID(detail::get_env<bool>("F8GEMM_LOG"),
                   "is not a switch value: use 1, true, yes or on, or 0, false, no or off");
  }
  env.set("off");
  EXPECT_FALSE(log_enabled()) << "the public query follows the same rule";
  env.set("Yes");
  EXPECT_TRUE(log_enabled());
  env.set("verbose");
  F8GEMM_EXPECT_INVALID(log_enabled(), "F8GEMM_LOG='verbose' is not a switch value");
  env.set("");
  EXPECT_TRUE(detail::get_env<bool>("F8GEMM_LOG", true)) << "empty is unset: the fallback";
  env.unset();
  EXPECT_FALSE(detail::get_env<bool>("F8GEMM_LOG"));
  // Through a call: F8GEMM_PDL=off was on before, and changed which table keys were read.
  test::ScopedEnv pdl("F8GEMM_PDL");
  pdl.set("off");
  EXPECT_FALSE(detail::use_pdl(Pdl::kDefault));
  pdl.set("maybe");
  F8GEMM_EXPECT_INVALID(detail::use_pdl(Pdl::kDefault), "F8GEMM_PDL='maybe' is not a switch value");
}

}  // namespace
}  // namespace f8gemm
