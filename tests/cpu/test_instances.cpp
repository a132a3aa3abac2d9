/// \brief Every instance that the bench and MSLK shapes use compiles with NVRTC for sm_90a with zero spills and no stack frame (no GPU needed).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "codegen.hpp"
#include "common/test_util.hpp"
#include "config.hpp"
#include "f8gemm/f8gemm.hpp"
#include "jit/compiler.hpp"
#include "jit/jit.hpp"

namespace f8gemm {
namespace {

using detail::InstanceSpec;
using test::ScopedEnv;

// What precompile() assumes without a GPU: the H200 that serving runs on.
constexpr const char* kGpu = "NVIDIA H200";
constexpr int kSms = 132;

struct Shape {
  int64_t b, m, n, k;
};

// The 11 bench shapes (B, M, N, K).
const std::vector<Shape> kBenchShapes = {
    {16, 1, 1280, 8192},   {16, 32, 1280, 8192},  {16, 128, 1280, 8192}, {16, 512, 1280, 8192},
    {16, 1024, 1280, 8192}, {16, 4096, 1280, 8192}, {16, 1, 8192, 1024},   {16, 128, 8192, 1024},
    {16, 512, 8192, 1024},  {16, 1024, 8192, 1024}, {16, 4096, 8192, 1024},
};

// The MSLK test shapes (B, M, N, K).
const std::vector<Shape> kMslkShapes = {
    {16, 1, 1280, 8192}, {4, 1, 8192, 1024},    {4, 32, 1280, 8192},   {8, 64, 8192, 1024},
    {2, 128, 7424, 8192}, {2, 1024, 1280, 8192}, {2, 4096, 8192, 1024}, {1, 64, 1280, 8192},
};

// Issue 7's decode GEMMs (bench/shapes-decode.txt): the table splits K for some of them.
const std::vector<Shape> kDecodeShapes = {
    {1, 1, 4096, 4096},  {1, 8, 4096, 4096},   {1, 1, 14336, 4096}, {1, 1, 4096, 14336},
    {1, 16, 4096, 14336}, {1, 1, 28672, 4096}, {1, 32, 6144, 4096}, {1, 1, 1024, 8192},
};

ProblemShape problem(const Shape& s, WeightLayout layout, bool fast, DType out = DType::kBF16,
                     bool bias = false, DType bias_dtype = DType::kF32) {
  ProblemShape p;
  p.batch = s.b;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.w_layout = layout;
  p.fast_accum = fast;
  p.out_dtype = out;
  p.has_bias = bias;
  p.bias_dtype = bias_dtype;
  return p;
}

/// Every instance the shipped shapes need, keyed (and so deduplicated) by label: the spec holds
/// N, K and the config but not B or M, so several shapes share one instance.
std::map<std::string, InstanceSpec> shipped_specs() {
  std::map<std::string, InstanceSpec> specs;
  auto add = [&](const ProblemShape& p) {
    const InstanceSpec s = detail::make_spec(detail::decide(kGpu, kSms, p), p);
    specs.emplace(s.label(), s);
  };
  for (const auto* list : {&kBenchShapes, &kMslkShapes, &kDecodeShapes}) {
    for (const Shape& s : *list) {
      for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
        for (bool fast : {true, false}) {
          add(problem(s, layout, fast));
          // The decode GEMMs as FP8Linear calls them (PDL and prefetch_w: the chained entries).
          if (list == &kDecodeShapes) {
            ProblemShape chained = problem(s, layout, fast);
            chained.chained = true;
            add(chained);
          }
        }
      }
    }
  }
  // Epilogue variants on a prefill shape (tiled) and a decode shape (swap).
  for (const Shape& s : {kBenchShapes[2], kBenchShapes[6]}) {
    for (bool fast : {true, false}) {
      add(problem(s, WeightLayout::kPreshuffled, fast, DType::kBF16, true, DType::kBF16));
      add(problem(s, WeightLayout::kPreshuffled, fast, DType::kBF16, true, DType::kF32));
      add(problem(s, WeightLayout::kPreshuffled, fast, DType::kF16));
    }
  }
  // 128-row ping-pong tiles of the model's widths, alone and paired, both modes.
  for (const char* name : {"sm90_pingpong_128x128x128_s6_c1x1_r8", "sm90_pingpong_128x96x128_s7_c2x1_r8"}) {
    for (bool fast : {true, false}) {
      const ProblemShape p = problem(kBenchShapes[9], WeightLayout::kPreshuffled, fast);
      const Config c = Config::parse(name);
      if (detail::config_illegal_reason(c, p).empty()) {
        const InstanceSpec s = detail::make_spec(c, p);
        specs.emplace(s.label(), s);
      }
    }
  }
  // The SiLU·mul epilogue (EpilogueOp::kSiluMul): the gated MLP's gate|up GEMM (Llama's
  // 4096 -> 2 x 14336) as FP8GatedMLP calls it at the sizes where it fuses the activation, and
  // every store kind and W load it has on its own: tiled whole blocks (128x256, 128x128), tiled
  // 32-column chunks (128x192: 96 output columns), ping-pong 64- and 128-row tiles, 2x1 pairs
  // (one CTA loads the gate half, the other the up half), both layouts, both modes, bias, fp16.
  for (int64_t m : {128, 2048}) {
    for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
      for (bool fast : {true, false}) {
        ProblemShape p = problem({1, m, 28672, 4096}, layout, fast);
        p.epilogue_op = EpilogueOp::kSiluMul;
        add(p);
        p.chained = true;
        add(p);
      }
    }
  }
  for (const char* name :
       {"sm90_tiled_128x256x128_s3_c1x1_r8", "sm90_tiled_128x128x128_s5_c2x1_r8",
        "sm90_tiled_128x192x128_s4_c1x1_r8", "sm90_pingpong_64x128x128_s6_c2x1_r8",
        "sm90_pingpong_128x128x128_s6_c1x1_r8", "sm90_pingpong_64x256x128_s5_c1x1_r8",
        "sm90_tiled_64x64x128_s8_c1x1_r8"}) {
    for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
      for (bool fast : {true, false}) {
        ProblemShape p = problem({1, 200, 1040, 512}, layout, fast);
        p.epilogue_op = EpilogueOp::kSiluMul;
        const Config c = Config::parse(name);
        if (!detail::config_illegal_reason(c, p).empty()) continue;
        specs.emplace(detail::make_spec(c, p).label(), detail::make_spec(c, p));
        if (layout == WeightLayout::kPreshuffled && fast) {
          p.has_bias = true;
          p.bias_dtype = DType::kBF16;
          p.out_dtype = DType::kF16;
          specs.emplace(detail::make_spec(c, p).label(), detail::make_spec(c, p));
        }
      }
    }
  }
  // Grouped GEMM instances (group tables in shared memory, masked stores at group ends) of
  // every kernel family: swap-AB, tiled, ping-pong and a 2x1 pair, both layouts and modes.
  for (const char* name : {"sm90_swap_128x16x128_s10_c1x1_r0", "sm90_tiled_128x192x128_s4_c1x1_r8",
                           "sm90_pingpong_64x192x128_s4_c2x1_r8", "sm90_tiled_128x128x128_s5_c2x1_r8"}) {
    for (WeightLayout layout : {WeightLayout::kPreshuffled, WeightLayout::kPlain}) {
      for (bool fast : {true, false}) {
        ProblemShape p = problem(kBenchShapes[2], layout, fast);
        InstanceSpec s = detail::make_spec(Config::parse(name), p);
        s.groups_cap = fast ? 8 : 128;
        specs.emplace(s.label(), s);
      }
    }
  }
  return specs;
}

/// A fresh disk cache and an empty memory cache, so every compile below is a real NVRTC run;
/// F8GEMM_CONFIG and F8GEMM_NO_TUNED unset, so decide() sees the shipped tables.
class InstanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<test::TempDir>("f8gemm_instances_test");
    cache_.set(dir_->path());
    config_.unset();
    no_tuned_.unset();
    jit::clear_memory_cache();
  }
  void TearDown() override { jit::clear_memory_cache(); }

  /// Checks ptxas's report of one instance (no spills anywhere, no stack frame in any entry,
  /// no wgmma serialised: ptxas's "wgmma.mma_async instructions are serialized due to ..."
  /// notes, such as C7515 (accumulators written by other instructions, which a split-tail
  /// experiment ran into: perf log card 41) or insufficient registers; every wgmma is then
  /// waited for as it issues); returns the entry's register count.
  static int check_resources(const std::string& label, const jit::Instance& inst,
                             const char* entry_name) {
    bool clean = inst.spill_bytes() == 0;
    int registers = -1;
    for (const jit::KernelResources& r : inst.resources()) {
      clean = clean && r.spill_stores + r.spill_loads == 0 && (!r.is_entry || r.stack_frame == 0);
      if (r.is_entry && r.entry == entry_name) registers = r.registers;
    }
    EXPECT_TRUE(clean) << label << " spills or has a stack frame:\n" << inst.log();
    EXPECT_FALSE(jit::reports_wgmma_serialization(inst.log()))
        << label << ": ptxas serialises its wgmmas:\n" << inst.log();
    EXPECT_GT(registers, 0) << label << ": no ptxas report for " << entry_name << "\n"
                            << inst.log();
    return registers;
  }

  std::unique_ptr<test::TempDir> dir_;
  ScopedEnv cache_{"F8GEMM_CACHE_DIR"};
  ScopedEnv config_{"F8GEMM_CONFIG"};
  ScopedEnv no_tuned_{"F8GEMM_NO_TUNED"};
};

TEST_F(InstanceTest, ShippedGemmInstancesCompileWithoutSpills) {
  const std::map<std::string, InstanceSpec> specs = shipped_specs();
  std::vector<std::pair<std::string, InstanceSpec>> items(specs.begin(), specs.end());
  // Compile on every core (the JIT is thread-safe); each compile takes ~0.2-1 s.
  std::vector<std::shared_ptr<const jit::Instance>> instances(items.size());
  std::vector<std::exception_ptr> errors(items.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < items.size(); i = next++) {
      try {
        instances[i] = detail::gemm_instance(items[i].second);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const unsigned threads = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();

  const jit::Stats stats = jit::stats();
  EXPECT_GE(stats.compiles, int64_t(items.size())) << "the cache served instances: not a real compile";
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string& label = items[i].first;
    if (errors[i]) {
      try {
        std::rethrow_exception(errors[i]);
      } catch (const std::exception& e) {
        ADD_FAILURE() << label << ": " << e.what();
      }
      continue;
    }
    ASSERT_NE(instances[i], nullptr) << label;
    const int regs = check_resources(label, *instances[i], "f8gemm_gemm");
    std::cout << "[ instance ] " << label << " regs=" << regs
              << " spill_bytes=" << instances[i]->spill_bytes()
              << " threads=" << detail::instance_threads(items[i].second)
              << " smem=" << detail::instance_smem_bytes(items[i].second) << "\n";
    RecordProperty(label, regs);
  }
  std::cout << "[ instance ] " << items.size() << " distinct instances\n";
}

// GemmOptions::trace's instrumented instances: one per schedule (cooperative in both modes and
// every store kind, 64- and 128-row ping-pong in 2x1 pairs, swap-AB, split-K). Each defines
// F8GEMM_TRACE, is its own instance (label and cache key), and compiles as cleanly as the
// kernels that serve calls; the ordinary instance's source does not define it, so its code is
// what it was.
TEST_F(InstanceTest, InstrumentedInstancesCompileWithoutSpills) {
  struct Case {
    const char* config;
    Shape shape;
    bool fast;
  };
  const Case cases[] = {
      {"sm90_tiled_128x256x128_s3_c1x1_r8", {16, 4096, 8192, 1024}, true},
      {"sm90_tiled_128x192x128_s4_c1x1_r8", {1, 8192, 8192, 8192}, false},
      {"sm90_tiled_128x160x128_s4_c1x1_r8", {1, 8448, 1040, 528}, true},   // 32-column chunks
      {"sm90_tiled_128x112x128_s4_c1x1_r8", {1, 8448, 1040, 528}, false},  // padded rows
      {"sm90_pingpong_64x256x128_s5_c2x1_r8", {1, 16384, 8192, 1024}, true},
      {"sm90_pingpong_128x128x128_s6_c2x1_r8", {1, 8192, 8192, 8192}, true},
      {"sm90_swap_64x8x128_s12_c1x1_r0", {1, 1, 4096, 4096}, true},
      {"sm90_swap_64x8x128_s12_c1x1_r0_k2", {1, 1, 4096, 14336}, true},
  };
  for (const Case& c : cases) {
    const ProblemShape p = problem(c.shape, WeightLayout::kPreshuffled, c.fast);
    InstanceSpec plain = detail::make_spec(Config::parse(c.config), p);
    InstanceSpec traced = plain;
    traced.trace = true;
    EXPECT_EQ(traced.label(), plain.label() + ".trace");
    EXPECT_EQ(plain.label().find("trace"), std::string::npos);
    EXPECT_EQ(detail::instance_source(plain).find("F8GEMM_TRACE"), std::string::npos) << c.config;
    EXPECT_NE(detail::instance_source(traced).find("#define F8GEMM_TRACE 1\n"), std::string::npos)
        << c.config;
    const auto inst = detail::gemm_instance(traced);
    ASSERT_NE(inst, nullptr) << c.config;
    const int regs = check_resources(traced.label(), *inst, "f8gemm_gemm");
    std::cout << "[ instance ] " << traced.label() << " regs=" << regs << "\n";
  }
}

/// Config::early_dependents moves the kernel's one `griddepcontrol.launch_dependents`: with
/// "_e" it follows the grid-dependency wait with no load of an operand between them; without,
/// the producer runs it after its loop, after every load. The results cannot tell the two
/// apart, so the PTX of each twin is read: a swap-AB split-K cluster, a cooperative tile and a
/// 64-row ping-pong pair.
TEST(InstancePtx, EarlyDependentsTriggerRightAfterTheWaitInsteadOfAfterTheLastLoad) {
  struct Case {
    const char* config;
    Shape shape;
  };
  const Case cases[] = {
      {"sm90_swap_64x8x128_s12_c1x1_r0_k2", {1, 1, 4096, 14336}},
      {"sm90_tiled_128x256x128_s3_c1x1_r8", {16, 4096, 8192, 1024}},
      {"sm90_pingpong_64x128x128_s6_c2x1_r8", {1, 4096, 4096, 4096}},
  };
  // Operand loads: bulk copies and tensor loads from global into (cluster) shared memory.
  const auto is_load = [](const std::string& line) {
    return line.find("cp.async.bulk") != std::string::npos &&
           line.find(".shared::cluster.global") != std::string::npos;
  };
  for (const Case& c : cases) {
    for (int early : {0, 1}) {
      Config config = Config::parse(c.config);
      config.early_dependents = early;
      const ProblemShape p = problem(c.shape, WeightLayout::kPreshuffled, true);
      const InstanceSpec spec = detail::make_spec(config, p);
      SCOPED_TRACE(spec.label());
      std::istringstream in(
          jit::compile_ptx(spec.label(), detail::instance_source(spec), jit::default_options()));
      int line_no = 0, wait = -1, trigger = -1, loads_between = 0, loads_after = 0;
      int waits = 0, triggers = 0;
      for (std::string line; std::getline(in, line); ++line_no) {
        if (line.find("griddepcontrol.wait;") != std::string::npos) {
          ++waits;
          wait = line_no;
        } else if (line.find("griddepcontrol.launch_dependents;") != std::string::npos) {
          ++triggers;
          trigger = line_no;
        } else if (is_load(line) && wait >= 0) {
          ++(trigger < 0 ? loads_between : loads_after);
        }
      }
      ASSERT_EQ(waits, 1);
      ASSERT_EQ(triggers, 1);
      EXPECT_GT(trigger, wait);
      if (early) {
        EXPECT_EQ(loads_between, 0) << "a load between the wait and the early trigger";
        EXPECT_GT(loads_after, 0);
      } else {
        EXPECT_GT(loads_between, 0);
        EXPECT_EQ(loads_after, 0) << "a load after the producer's trigger";
      }
    }
  }
}

TEST_F(InstanceTest, UtilityModuleCompilesWithoutSpills) {
  auto inst = detail::util_instance();
  ASSERT_NE(inst, nullptr);
  EXPECT_EQ(inst->spill_bytes(), 0) << inst->log();
  for (const char* entry : {"f8gemm_preshuffle", "f8gemm_unshuffle", "f8gemm_quantize_f32",
                            "f8gemm_quantize_bf16", "f8gemm_quantize_f16",
                            "f8gemm_reference_check", "f8gemm_silu_sfu_check"}) {
    const int regs = check_resources("util", *inst, entry);
    std::cout << "[ instance ] util." << entry << " regs=" << regs << "\n";
    RecordProperty(std::string("util.") + entry, regs);
  }
}

TEST_F(InstanceTest, PrecompileWithoutAGpuFillsTheDiskCache) {
  // precompile() assumes the H200 without a GPU; afterwards the same spec is a memory hit.
  if (test::have_any_device()) GTEST_SKIP() << "a GPU is present: precompile uses its facts";
  ProblemShape p = problem(kBenchShapes[0], WeightLayout::kPreshuffled, true);
  const int64_t before = jit::stats().compiles;
  precompile({p});
  EXPECT_GE(jit::stats().compiles, before + 1);
  const int64_t hits = jit::stats().memory_hits;
  detail::gemm_instance(detail::make_spec(detail::decide(kGpu, kSms, p), p));
  EXPECT_EQ(jit::stats().memory_hits, hits + 1);
  ProblemShape bad = p;
  bad.n = 100;
  try {
    precompile({bad});
    ADD_FAILURE() << "precompile accepted N = 100";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
}

// Every problem of a list is checked before the first compile: a bad one fails fast, with no
// instance of the good ones before it compiled (seconds each) only to be refused after them.
TEST_F(InstanceTest, PrecompileRefusesABadProblemBeforeCompilingAnyOther) {
  if (test::have_any_device()) GTEST_SKIP() << "a GPU is present: precompile uses its facts";
  const ProblemShape good = problem(kDecodeShapes[0], WeightLayout::kPreshuffled, true);
  ProblemShape bad = good;
  bad.k = 24;
  const int64_t before = jit::stats().compiles;
  F8GEMM_EXPECT_INVALID(precompile({good, bad}), "K must be a positive multiple of 16");
  EXPECT_EQ(jit::stats().compiles, before) << "the good problem compiled before the refusal";
}

}  // namespace
}  // namespace f8gemm

namespace f8gemm {
namespace {

/// GemmOptions::prefetch_w acts only where gemm_prefetches_w (kernels/gemm_params.cuh, read by
/// the kernel's producer) says so. The GPU chain tests (test_pdl_gpu.cpp, python/tests/test_pdl.py)
/// cannot see whether W was loaded early (W is final either way, so the bits match): this test
/// pins which of their configurations take the early load, so that a policy change that drops
/// them shows here.
TEST(PrefetchW, TakenByThePdlChainsConfigurationsOnPreshuffledWOnly) {
  auto prefetches = [](const char* name, WeightLayout layout, int groups_cap = 0) {
    ProblemShape p;
    p.m = 300;
    p.n = 3072;  // the chain's gate|up GEMM: 2 x 1536 rows of W, K = 1024
    p.k = 1024;
    p.w_layout = layout;
    detail::InstanceSpec s = detail::make_spec(Config::parse(name), p);
    s.groups_cap = groups_cap;
    return dev::gemm_prefetches_w(s.gemm_spec());
  };
  for (const char* name :
       {"sm90_swap_64x8x128_s8_c1x1_r0_k2", "sm90_swap_128x16x128_s4_c1x1_r0",
        "sm90_tiled_128x128x128_s5_c1x1_r0", "sm90_pingpong_128x128x128_s4_c1x1_r0"}) {
    EXPECT_TRUE(prefetches(name, WeightLayout::kPreshuffled)) << name;
    EXPECT_FALSE(prefetches(name, WeightLayout::kPlain)) << name << " plain";
    EXPECT_FALSE(prefetches(name, WeightLayout::kPreshuffled, 8)) << name << " grouped";
  }
  EXPECT_FALSE(prefetches("sm90_tiled_128x128x128_s5_c2x1_r0", WeightLayout::kPreshuffled));
  EXPECT_FALSE(prefetches("sm90_swap_64x8x128_s8_c1x1_r0_k4", WeightLayout::kPreshuffled));
  // The Llama MLP block's decode GEMMs in the shipped table (card 50's gains).
  EXPECT_TRUE(prefetches("sm90_swap_128x8x128_s12_c1x1_r0", WeightLayout::kPreshuffled));
  EXPECT_TRUE(prefetches("sm90_swap_64x8x128_s12_c1x1_r0_k2", WeightLayout::kPreshuffled));
}

}  // namespace
}  // namespace f8gemm

namespace f8gemm {
namespace {

/// The assignments of a generated instance_spec(), field name to value as written ("128",
/// "true", "4096LL", "f8gemm::dev::BiasKind(2)").
std::map<std::string, std::string> spec_assignments(const std::string& source) {
  std::map<std::string, std::string> fields;
  std::istringstream in(source);
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find(" = ");
    if (line.rfind("  g.", 0) != 0 || eq == std::string::npos || line.back() != ';') continue;
    EXPECT_TRUE(fields.emplace(line.substr(4, eq - 4), line.substr(eq + 3, line.size() - eq - 4))
                    .second)
        << "assigned twice: " << line;
  }
  return fields;
}

/// The instance source is where a spec reaches the kernel, one field assigned by name each. A
/// field dropped or miswired there (or in make_spec / gemm_spec) still compiles, as a zero is a
/// valid value, and only a GPU run would show the wrong kernel (a bf16 bias read as fp32, a
/// pair without its multicast, SiLU·mul without its epilogue). So the source's assignments are
/// read back and compared with what the config and the problem say, on specs that between them
/// set every field away from its zero; and each such spec has a label of its own (the label
/// names dumps and logs).
TEST(InstanceSource, AssignsEveryFieldOfTheSpecFromTheConfigAndTheProblem) {
  struct Case {
    const char* config;
    Shape shape;
    WeightLayout layout;
    bool fast;
    DType out;
    bool bias;
    DType bias_dtype;
    EpilogueOp epilogue;
    int groups_cap;
  };
  const Case cases[] = {
      {"sm90_swap_64x8x128_s12_c1x1_r0_k2_e", {1, 1, 4096, 14336}, WeightLayout::kPreshuffled, true,
       DType::kBF16, false, DType::kF32, EpilogueOp::kNone, 0},
      {"sm90_pingpong_64x128x128_s6_c2x1_r8", {1, 200, 1040, 512}, WeightLayout::kPlain, false,
       DType::kF16, true, DType::kBF16, EpilogueOp::kSiluMul, 0},
      {"sm90_tiled_128x192x128_s4_c1x1_r8", {16, 128, 1280, 8192}, WeightLayout::kPreshuffled,
       false, DType::kBF16, true, DType::kF32, EpilogueOp::kNone, 128},
  };
  std::set<std::string> labels;
  for (const Case& c : cases) {
    ProblemShape p = problem(c.shape, c.layout, c.fast, c.out, c.bias, c.bias_dtype);
    p.epilogue_op = c.epilogue;
    const Config config = Config::parse(c.config);
    InstanceSpec s = detail::make_spec(config, p);
    s.groups_cap = c.groups_cap;
    SCOPED_TRACE(s.label());
    const auto b = [](bool v) { return std::string(v ? "true" : "false"); };
    const int bias_kind = !c.bias ? 0 : c.bias_dtype == DType::kBF16 ? 2 : 1;
    const std::map<std::string, std::string> want = {
        {"n", std::to_string(c.shape.n) + "LL"},
        {"k", std::to_string(c.shape.k) + "LL"},
        {"bm", std::to_string(config.bm)},
        {"bn", std::to_string(config.bn)},
        {"stages", std::to_string(config.stages)},
        {"cluster_m", std::to_string(config.cluster_m)},
        {"raster", std::to_string(config.raster)},
        {"split_k", std::to_string(config.split_k)},
        {"groups_cap", std::to_string(c.groups_cap)},
        {"swap", b(config.path == KernelPath::kSwapAB)},
        {"pingpong", b(config.path == KernelPath::kPingPong)},
        {"plain_w", b(c.layout == WeightLayout::kPlain)},
        {"out_f16", b(c.out == DType::kF16)},
        {"fast_accum", b(c.fast)},
        {"bias", "f8gemm::dev::BiasKind(" + std::to_string(bias_kind) + ")"},
        {"silu_mul", b(c.epilogue == EpilogueOp::kSiluMul)},
        {"early_dependents", b(config.early_dependents != 0)},
    };
    EXPECT_EQ(spec_assignments(detail::instance_source(s)), want);
    EXPECT_TRUE(labels.insert(s.label()).second);
    if (c.groups_cap > 0) {
      EXPECT_NE(s.label().find(".grouped" + std::to_string(c.groups_cap)), std::string::npos);
    }
    if (c.bias) {
      EXPECT_NE(s.label().find(c.bias_dtype == DType::kBF16 ? ".biasbf16." : ".biasf32."),
                std::string::npos);
    }
    if (c.epilogue != EpilogueOp::kNone) {
      EXPECT_NE(s.label().find(std::string(".") + to_string(c.epilogue)), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace f8gemm
