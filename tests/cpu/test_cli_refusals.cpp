/// \brief The CLI refuses what it cannot use before it times anything, with exit 2 and one line
/// on stderr: `f8gemm tune` an `--out` or `--log` it cannot write (issue 8: it used to learn so
/// only after the whole run), `f8gemm bench` a `--rotate-l2` outside (0, 64], a shape the library
/// refuses, buffers that cannot fit (tools/buffer_bytes.hpp), an empty problem to time, and a bad
/// F8GEMM_HANG_SECONDS. Runs the built binary.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "../../tools/buffer_bytes.hpp"
#include "common/test_util.hpp"

namespace fs = std::filesystem;

namespace {

struct Outcome {
  int rc = -1;
  std::string err;
};

/// Runs the f8gemm binary beside this test binary with `args` (shell words) after `env` (shell
/// assignments, or nothing), stdout discarded.
Outcome run_cli(const f8gemm::test::TempDir& dir, const std::string& args,
                const std::string& env = "") {
  std::error_code ec;
  const fs::path cli = fs::read_symlink("/proc/self/exe", ec).parent_path() / "f8gemm";
  Outcome r;
  EXPECT_TRUE(fs::is_regular_file(cli)) << "the f8gemm binary is not built at " << cli;
  const std::string err = dir.path() + "/stderr";
  const std::string command = env + " '" + cli.string() + "' " + args + " >/dev/null 2>'" + err + "'";
  const int status = std::system(command.c_str());
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err);
  r.err.assign(std::istreambuf_iterator<char>(in), {});
  return r;
}

/// Expects exit 2 and one line of stderr that contains `needle`.
void expect_refusal(const f8gemm::test::TempDir& dir, const std::string& args,
                    const std::string& needle, const std::string& env = "") {
  SCOPED_TRACE(env + " f8gemm " + args);
  const Outcome r = run_cli(dir, args, env);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
}

/// A shapes file of `lines` in `dir`.
std::string shapes_file(const f8gemm::test::TempDir& dir, const std::string& lines) {
  const std::string path = dir.path() + "/shapes.txt";
  std::ofstream(path) << lines;
  return path;
}

TEST(TuneCli, UnwritableOutOrLogExitsTwoBeforeTheRun) {
  const f8gemm::test::TempDir dir("f8gemm_tune_cli");
  const std::string shapes = dir.path() + "/shapes.txt";
  std::ofstream(shapes) << "1,16,256,256\n";
  const std::string missing = dir.path() + "/no/such/dir";
  const std::string tune = "tune --shapes '" + shapes + "' ";
  expect_refusal(dir, tune + "--out " + missing + "/t.tsv", "cannot write --out");
  expect_refusal(dir, tune + "--out " + dir.path(), "cannot write --out");
  expect_refusal(dir, tune + "--out " + dir.path() + "/t.tsv --log " + missing + "/t.csv",
                 "cannot write --log");
  EXPECT_FALSE(fs::exists(dir.path() + "/t.tsv")) << "a refused run leaves no table behind";
}

// A bare file name (tune's default --out is tune.tsv) is in the working directory: it passes
// the writable check there rather than reading as a path with no directory. Without a GPU the
// run then stops at the device (exit 1), which shows that the checks let it through.
TEST(TuneCli, ABareOutNameIsInTheWorkingDirectory) {
  // Past the check, tune times candidates on a GPU (seconds of compiles); without one it stops.
  if (f8gemm::test::have_any_device()) GTEST_SKIP() << "a GPU is present: the tune would run";
  const f8gemm::test::TempDir dir("f8gemm_tune_cli_bare");
  const std::string tune = "tune --iters 1 --shapes " + shapes_file(dir, "1,16,256,256\n");
  // The shell runs the CLI in dir (a table written would land there); this process stays put.
  const Outcome r = run_cli(dir, tune + " --out t.tsv --log t.csv", "cd '" + dir.path() + "' &&");
  EXPECT_EQ(r.err.find("cannot write"), std::string::npos) << r.err;
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find("no device"), std::string::npos) << r.err;
}

// tune's --iters is at least 1 (a timing of no launches divides by zero): 0 is a bad argument
// before any GPU work, as bench's and run's bounds are.
TEST(TuneCli, ItersBelowOneExitsTwoBeforeTheRun) {
  const f8gemm::test::TempDir dir("f8gemm_tune_cli_iters");
  const std::string tune = "tune --out " + dir.path() + "/t.tsv --shapes " +
                           shapes_file(dir, "1,16,256,256\n");
  expect_refusal(dir, tune + " --iters 0", "tune: --iters must be in 1..10000, got '0'");
  expect_refusal(dir, tune + " --iters 10001", "tune: --iters must be in 1..10000, got '10001'");
}

// --out and --log on one file interleaved the log's rows with the table, rewritten after every
// shape (a table F8GEMM_TUNE_FILE then refuses), and --out on the --shapes file replaced the
// shapes with the table: both silently.
TEST(TuneCli, OutLogAndShapesNamingOneFileExitTwoBeforeTheRun) {
  const f8gemm::test::TempDir dir("f8gemm_tune_cli");
  const std::string shapes = shapes_file(dir, "1,16,256,256\n");
  const std::string out = dir.path() + "/t.tsv";
  const std::string tune = "tune --shapes '" + shapes + "' ";
  expect_refusal(dir, tune + "--out " + out + " --log " + out,
                 "tune: --out and --log name the same file: '" + out + "'");
  expect_refusal(dir, tune + "--out " + out + " --log " + dir.path() + "/./t.tsv",
                 "tune: --out and --log name the same file");
  expect_refusal(dir, tune + "--out " + shapes, "tune: --out names the --shapes file: '" + shapes + "'");
  // A symbolic link to the --log file that no run has made yet.
  fs::create_symlink(dir.path() + "/new.csv", dir.path() + "/link.csv");
  expect_refusal(dir, tune + "--out " + dir.path() + "/link.csv --log " + dir.path() + "/new.csv",
                 "tune: --out and --log name the same file");
  expect_refusal(dir, tune + "--out " + out + " --log " + shapes,
                 "tune: --log names the --shapes file");
  EXPECT_FALSE(fs::exists(out)) << "a refused run leaves no table behind";
  std::ifstream in(shapes);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), "1,16,256,256\n");
  // Devices take both writers as asked: /dev/null twice, or the streams (which may reach one
  // file) pass this check and go on to the run (here: to the missing GPU, or to the timings).
  for (const std::string pair : {"--out /dev/null --log /dev/null",
                                 "--out /dev/stdout --log /dev/stderr"}) {
    SCOPED_TRACE(pair);
    const std::string err = run_cli(dir, tune + pair).err;
    EXPECT_EQ(err.find("name the same file"), std::string::npos) << err;
  }
}

// A /proc/self/fd/N path is a descriptor, as /dev/stderr is: written as asked even where both
// names reach one regular file (here the captured stderr), not refused as one file.
TEST(TuneCli, OutAndLogOnOneProcDescriptorPassTheSameFileCheck) {
  if (f8gemm::test::have_any_device()) GTEST_SKIP() << "a GPU is present: the tune would run";
  const f8gemm::test::TempDir dir("f8gemm_tune_cli_proc");
  const std::string tune = "tune --iters 1 --shapes " + shapes_file(dir, "1,16,256,256\n") + " ";
  const Outcome r = run_cli(dir, tune + "--out /proc/self/fd/2 --log /proc/self/fd/2");
  EXPECT_EQ(r.err.find("name the same file"), std::string::npos) << r.err;
  EXPECT_EQ(r.rc, 1) << r.err;  // stopped at the device, past every argument check
  EXPECT_NE(r.err.find("no device"), std::string::npos) << r.err;
}

TEST(TuneCli, EpilogueOtherThanNoneOrSiluMulOrAnNTheOperationCannotSplitExitsTwo) {
  const f8gemm::test::TempDir dir("f8gemm_tune_cli");
  const std::string shapes = dir.path() + "/shapes.txt";
  std::ofstream(shapes) << "1,16,256,256\n1,16,264,256\n";
  const std::string tune = "tune --shapes '" + shapes + "' --out " + dir.path() + "/t.tsv ";
  expect_refusal(dir, tune + "--epilogue silu", "--epilogue must be none or silu_mul, got 'silu'");
  // 264 gate|up rows are not 2 x a multiple of 8: the library's refusal, before any shape is
  // timed and before the log is opened (an existing log keeps its text).
  const std::string log = dir.path() + "/t.csv";
  std::ofstream(log) << "an earlier run's log\n";
  expect_refusal(dir, tune + "--log " + log + " --epilogue silu_mul",
                 "with the SiLU·mul epilogue N (gate then up rows, 2I) must be a multiple of 16, "
                 "got 264");
  EXPECT_FALSE(fs::exists(dir.path() + "/t.tsv")) << "a refused run leaves no table behind";
  std::ifstream in(log);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), "an earlier run's log\n");
}

TEST(BenchCli, RotateL2OutsideItsRangeExitsTwoWithOneLine) {
  const f8gemm::test::TempDir dir("f8gemm_bench_cli");
  // Refused before the shapes file is read (it does not exist) or a GPU is looked for.
  for (const std::string value : {"0", "-1", "65", "nan", "inf", "2x", "''"}) {
    expect_refusal(dir, "bench --rotate-l2 " + value + " --shapes /no/such/shapes.txt",
                   "--rotate-l2 must be a number in (0, 64]");
  }
  // Values in range pass the check and reach the shapes file, which then refuses the run.
  for (const std::string arg : {"--rotate-l2 64", "--rotate-l2 0.5", "--rotate-l2=8"}) {
    expect_refusal(dir, "bench " + arg + " --shapes /no/such/shapes.txt",
                   "cannot read shapes file");
  }
}

// The CSV was opened only after the GPU was found (exit 1 "no device" without one, exit 1 and
// kIo with one): a path that cannot be written is a bad argument, refused before the GPU.
TEST(BenchCli, CsvThatCannotBeWrittenExitsTwoBeforeTheGpu) {
  const f8gemm::test::TempDir dir("f8gemm_bench_cli");
  const std::string bench = "bench --shapes " + shapes_file(dir, "1,16,256,256\n") + " --csv ";
  expect_refusal(dir, bench + dir.path() + "/no/such/dir/b.csv",
                 "bench: cannot write --csv '" + dir.path() + "/no/such/dir/b.csv': no directory");
  expect_refusal(dir, bench + dir.path(), "bench: cannot write --csv '" + dir.path() +
                                              "': it is a directory");
}

// An audit found that B up to 2^31 - 1 times a batch of up to 2^40 bytes passed every check:
// 2^64 bytes of X overflowed int64 in the fixture, and 2^55 bytes of W reached cudaMalloc as a
// CUDA error. A count past 2^63 bytes is refused without a GPU; with one, more than it has free.
TEST(RunCli, BuffersThatCannotFitExitTwoBeforeTheFirstAllocation) {
  const f8gemm::test::TempDir dir("f8gemm_run_cli");
  expect_refusal(dir, "run --b 1073741824 --m 8 --n 8 --k 2147483392",
                 "run: --b,--m,--n,--k 1073741824,8,8,2147483392 need more than 2^63 bytes for X "
                 "alone: no GPU holds that");
  // Every buffer below 2^63 bytes, their total above (W, W preshuffled and the fp32 staging).
  expect_refusal(dir, "run --once --b 3000000 --m 0 --n 256 --k 2147483392",
                 "need more than 2^63 bytes in all");
  const std::string tune = "tune --out " + dir.path() + "/t.tsv --shapes ";
  expect_refusal(dir, tune + shapes_file(dir, "1,16,256,256\n1073741824,8,8,2147483392\n"),
                 "tune: B,M,N,K 1073741824,8,8,2147483392 need more than 2^63 bytes for X alone");
  EXPECT_FALSE(fs::exists(dir.path() + "/t.tsv"));
  if (f8gemm::test::have_sm90()) {
    // 32 PiB of W: no device-side allocation, one line naming the GPU's free memory.
    expect_refusal(dir, "run --once --b 2147483647 --m 0 --n 4096 --k 4096",
                   "of GPU memory (W 32.0 PiB, W preshuffled 32.0 PiB, scales 32.0 TiB, fp32 "
                   "staging 128.0 PiB), more than the ");
  }
}

// The arithmetic under those refusals: each buffer as the fixture and the bench allocate it.
TEST(CliFootprint, CountsEveryBufferAndRefusesWhatTheGpuCannotHold) {
  using namespace f8gemm;
  using namespace f8gemm::cli;
  ProblemShape p;
  p.batch = 2;
  p.m = 16;
  p.n = 256;
  p.k = 256;
  p.has_bias = true;
  const OperandBytes o = operand_bytes(p);
  EXPECT_EQ(o.x, 2 * 16 * 256);
  EXPECT_EQ(o.w, 2 * 256 * 256);
  EXPECT_EQ(o.w_preshuffled, 2 * 2 * (256 / 8) * 1024);  // [B, ceil(K/128), N/8, 1024]
  EXPECT_EQ(o.x_scale, 2 * 16 * 4);
  EXPECT_EQ(o.w_scale, 2 * 256 * 4);
  EXPECT_EQ(o.bias, 2 * 256 * 4);
  EXPECT_EQ(o.y, 2 * 16 * 256 * 2);
  EXPECT_EQ(o.staging, 4 * 2 * 256 * 256);
  const Footprint f = fixture_footprint(p);
  EXPECT_EQ(f.total(), 815232);
  EXPECT_EQ(footprint_refusal(f, std::nullopt), "");
  EXPECT_EQ(footprint_refusal(f, 815232), "");
  EXPECT_EQ(footprint_refusal(f, 815231),
            "need 796.1 KiB (815232 bytes) of GPU memory (X 8.0 KiB, W 128.0 KiB, W preshuffled "
            "128.0 KiB, scales 2.1 KiB, bias 2.0 KiB, Y 16.0 KiB, fp32 staging 512.0 KiB), more "
            "than the 796.1 KiB free");
  p.epilogue_op = EpilogueOp::kSiluMul;  // N / 2 output columns
  EXPECT_EQ(operand_bytes(p).y, 2 * 16 * 128 * 2);
  const Footprint bench = bench_footprint(p, 3);
  EXPECT_EQ(bench.total(), 3 * (8192 + 131072 + 131072 + 128 + 2048) + 8192 + (32 << 20));
  EXPECT_NE(footprint_refusal(bench, 1).find(
                "(3 input sets 798.4 KiB, Y 8.0 KiB, cuBLASLt workspace 32.0 MiB)"),
            std::string::npos);

  ProblemShape huge;  // the audit's 2^64 bytes of X
  huge.batch = 1073741824;
  huge.m = 8;
  huge.n = 8;
  huge.k = 2147483392;
  EXPECT_EQ(operand_bytes(huge).x, std::nullopt);
  EXPECT_EQ(footprint_refusal(fixture_footprint(huge), std::nullopt),
            "need more than 2^63 bytes for X alone: no GPU holds that");
  huge.batch = 3000000;  // parts below 2^63 bytes, their sum above
  huge.m = 0;
  huge.n = 256;
  for (const auto& part : fixture_footprint(huge).parts) EXPECT_TRUE(part.bytes) << part.name;
  EXPECT_EQ(fixture_footprint(huge).total(), std::nullopt);
  EXPECT_EQ(footprint_refusal(fixture_footprint(huge), int64_t{1} << 40),
            "need more than 2^63 bytes in all: no GPU holds that");
}

// The bench times cuBLASLt beside ours, and its footprint left out the peer's workspace: a GPU
// that held our buffers but not the peer's 32 MiB passed the check and failed in cudaMalloc
// (exit 1) instead of a refusal (exit 2). The peer reads our input sets and writes our Y, so
// its workspace is all that it adds; CublasLtPeer allocates exactly kCublasLtWorkspaceBytes.
TEST(CliFootprint, BenchCountsTheCublasLtPeerAndTheCeilings) {
  using namespace f8gemm;
  using namespace f8gemm::cli;
  ProblemShape p;
  p.m = 4096;
  p.n = 4096;
  p.k = 4096;
  const OperandBytes o = operand_bytes(p);
  const int64_t ours = 2 * *bench_set_bytes(o) + *o.y;  // two input sets and Y
  const Footprint bench = bench_footprint(p, 2);
  EXPECT_EQ(kCublasLtWorkspaceBytes, int64_t{32} << 20);
  EXPECT_EQ(bench.total(), ours + kCublasLtWorkspaceBytes);
  // Free memory for ours alone, or one byte short of the peer's workspace, is refused.
  EXPECT_NE(footprint_refusal(bench, ours), "");
  EXPECT_NE(footprint_refusal(bench, ours + kCublasLtWorkspaceBytes - 1), "");
  EXPECT_EQ(footprint_refusal(bench, ours + kCublasLtWorkspaceBytes), "");
  EXPECT_NE(footprint_refusal(bench, ours).find("cuBLASLt workspace 32.0 MiB"), std::string::npos)
      << footprint_refusal(bench, ours);

  // Before the shapes: the workspace, PEAK's 8192^3 operands (64 + 64 + 128 MiB and 512 bytes of
  // scales) and the copy-bandwidth pair at its smallest (2 x 256 MiB).
  EXPECT_EQ(copy_buffer_bytes(0), int64_t{256} << 20);
  EXPECT_EQ(copy_buffer_bytes(int64_t{9} << 30), int64_t{4} << 30);  // 2 x 4 GiB + 1 GiB free
  EXPECT_EQ(copy_buffer_bytes((int64_t{9} << 30) - 1), int64_t{2} << 30);
  const Footprint ceilings = ceilings_footprint();
  EXPECT_EQ(ceilings.total(),
            (int64_t{32} << 20) + (int64_t{256} << 20) + 512 + (int64_t{512} << 20));
  EXPECT_EQ(footprint_refusal(ceilings, (int64_t{800} << 20) + 512), "");
  EXPECT_EQ(footprint_refusal(ceilings, (int64_t{800} << 20) + 511),
            "need 800.0 MiB (838861312 bytes) of GPU memory (cuBLASLt workspace 32.0 MiB, PEAK X "
            "64.0 MiB, PEAK W 64.0 MiB, PEAK Y 128.0 MiB, PEAK scales 512 B, copy-bandwidth "
            "buffers 512.0 MiB), more than the 800.0 MiB free");
}

// The fp64 reference's grid (ceil(M/16) and B at most 65535) was checked only after the run, so
// a long run ended in exit 2 at its very end.
TEST(RunCli, VerifyRefusesWhatTheReferenceCannotCheckBeforeTheRun) {
  const f8gemm::test::TempDir dir("f8gemm_run_cli");
  expect_refusal(dir, "run --once --verify --b 70000 --m 1 --n 8 --k 16",
                 "run --verify: the fp64 reference checks at most 65535 batches, got B = 70000");
  expect_refusal(dir, "run --once --verify --m 1048561 --n 8 --k 16",
                 "run --verify: the fp64 reference checks at most 65535 x 16 = 1048560 rows");
  // Without --verify the same problem is not refused for it.
  const Outcome plain = run_cli(dir, "run --once --b 70000 --m 1 --n 8 --k 16");
  EXPECT_EQ(plain.err.find("fp64 reference"), std::string::npos) << plain.err;
  // tune checks every shape's winner against it: refused before any shape is timed.
  expect_refusal(dir, "tune --out " + dir.path() + "/t.tsv --shapes " +
                          shapes_file(dir, "1,16,256,256\n70000,1,8,16\n"),
                 "tune: B,M,N,K 70000,1,8,16: the fp64 reference checks at most 65535 batches");
}

// The trace CSV was opened only after the timing and the traced call (exit 1, kIo): a path that
// cannot be written is a bad argument, refused before the GPU.
TEST(RunCli, TraceCsvThatCannotBeWrittenExitsTwoBeforeTheRun) {
  const f8gemm::test::TempDir dir("f8gemm_run_cli");
  const std::string missing = dir.path() + "/no/such/dir/t.csv";
  for (const std::string once : {"", "--once "}) {
    expect_refusal(dir, "run " + once + "--m 16 --n 256 --k 256 --trace " + missing,
                   "run: cannot write --trace '" + missing + "': no directory");
    expect_refusal(dir, "run " + once + "--m 16 --n 256 --k 256 --trace " + dir.path(),
                   "run: cannot write --trace '" + dir.path() + "': it is a directory");
  }
}

// Without --once, an empty problem reached the graph timing, which captured no kernel and failed
// as an internal error ("captured only 0 graph nodes", exit 1); tune timed it the same way.
TEST(RunCli, AnEmptyProblemIsRunOnceNotTimed) {
  const f8gemm::test::TempDir dir("f8gemm_run_cli");
  expect_refusal(dir, "run --m 0 --n 256 --k 256",
                 "run: --m 0 is an empty problem, with nothing to time; --once runs it");
  expect_refusal(dir, "run --b 0 --m 16 --n 256 --k 256", "run: --b 0 is an empty problem");
  const Outcome once = run_cli(dir, "run --once --m 0 --n 256 --k 256");
  EXPECT_EQ(once.rc, f8gemm::test::have_sm90() ? 0 : 1) << once.err;
  EXPECT_EQ(once.err.find("empty problem"), std::string::npos) << once.err;
  expect_refusal(dir, "tune --out " + dir.path() + "/t.tsv --shapes " +
                          shapes_file(dir, "1,16,256,256\n1,0,256,256\n"),
                 "tune: shape 1,0,256,256 is an empty problem (B or M is 0), with nothing to time");
}

// bench ran no validate_problem: a shape that tune refuses reached the GPU (on one, after the
// ceilings had been measured and written to the CSV). Every shape is now checked first, with
// tune's message.
TEST(BenchCli, EveryShapeIsValidatedBeforeTheGpuWithTunesMessage) {
  const f8gemm::test::TempDir dir("f8gemm_bench_cli");
  const std::string csv = dir.path() + "/b.csv";
  const std::string shapes = shapes_file(dir, "16,1,1280,8192\n1,1,12,16\n");
  expect_refusal(dir, "bench --csv " + csv + " --shapes " + shapes,
                 "N must be a positive multiple of 8, got 12 (B,M,N,K = 1,1,12,16)");
  EXPECT_FALSE(fs::exists(csv)) << "a refused bench writes no CSV";
  const std::string bench_line = run_cli(dir, "bench --csv " + csv + " --shapes " + shapes).err;
  const std::string tune_line =
      run_cli(dir, "tune --out " + dir.path() + "/t.tsv --shapes " + shapes).err;
  EXPECT_EQ(bench_line, tune_line);
  expect_refusal(dir, "bench --csv " + csv + " --shapes " + shapes_file(dir, "1,16,256,40\n"),
                 "K must be a positive multiple of 16");
}

// An empty --shapes (`--shapes "$SHAPES"` with SHAPES unset) was taken as no --shapes at all:
// bench timed its 11 default shapes instead (without a GPU: exit 1, no device). It is refused
// as an empty --csv is.
TEST(BenchCli, AnEmptyShapesFileNameExitsTwo) {
  const f8gemm::test::TempDir dir("f8gemm_bench_cli");
  expect_refusal(dir, "bench --shapes ''", "bench: --shapes needs a file name");
  expect_refusal(dir, "bench --shapes=", "bench: --shapes needs a file name");
}

// An empty --out passed tune's check that the table can be written (a path without a parent is
// in "."), so the table's first write failed after the first shape had been timed (exit 1); an
// empty --log turned the log off. Both are refused before the GPU is looked for, as `run
// --trace ''` is.
TEST(TuneCli, AnEmptyOutOrLogFileNameExitsTwoBeforeTheRun) {
  const f8gemm::test::TempDir dir("f8gemm_tune_cli");
  const std::string tune = "tune --shapes '" + shapes_file(dir, "1,16,256,256\n") + "' ";
  expect_refusal(dir, tune + "--out ''", "tune: --out needs a file name");
  expect_refusal(dir, tune + "--out " + dir.path() + "/t.tsv --log ''",
                 "tune: --log needs a file name");
  EXPECT_FALSE(fs::exists(dir.path() + "/t.tsv"));
}

// F8GEMM_HANG_SECONDS was read at the first wait only: a bad value was reported after kernels
// had launched, and never by `run --once`, which does not wait with the guard.
// An integer option takes the whole word: a number with anything after it is refused, not read
// as its leading digits (run's and tune's parser, and bench's own).
TEST(RunCli, AnIntegerOptionWithTrailingCharactersExitsTwo) {
  const f8gemm::test::TempDir dir("f8gemm_cli_values");
  expect_refusal(dir, "run --once --m 16 --n 256 --k 256abc",
                 "run: --k expects an integer, got '256abc'");
  expect_refusal(dir, "run --once --m 16 --n 256 --k 256 --iters 5x",
                 "run: --iters expects an integer, got '5x'");
  expect_refusal(dir, "bench --iters 10x",
                 "bench: --iters expects an integer, got '10x'");
}

// An integer below its option's range is refused like one above it: --iters 0 would time
// nothing and divide by zero.
TEST(RunCli, AnIntegerBelowItsRangeExitsTwo) {
  const f8gemm::test::TempDir dir("f8gemm_cli_values");
  expect_refusal(dir, "run --once --m 16 --n 256 --k 256 --iters 0",
                 "run: --iters must be in 1..100000, got '0'");
  expect_refusal(dir,
                 "run --once --m 16 --n 256 --k 256 --trace '" + dir.path() +
                     "/t.csv' --trace-tiles 0",
                 "run: --trace-tiles must be in 1..16384, got '0'");
  expect_refusal(dir, "run --once --m 16 --n 256 --k 256 --b -1", "run: --b must be in 0..");
}

// A repeated option takes its last value, as shells and most CLIs do: here the last --k, 40,
// which no call can take.
TEST(RunCli, ARepeatedOptionTakesItsLastValue) {
  const f8gemm::test::TempDir dir("f8gemm_cli_values");
  expect_refusal(dir, "run --once --m 16 --n 256 --k 256 --k 40",
                 "K must be a positive multiple of 16");
}

// run's --out is bf16 or fp16: any other name is refused, not run as bf16.
TEST(RunCli, AnOutputTypeOtherThanBf16OrFp16ExitsTwo) {
  const f8gemm::test::TempDir dir("f8gemm_cli_values");
  expect_refusal(dir, "run --once --m 16 --n 256 --k 256 --out fp8",
                 "run: --out must be bf16 or fp16, got 'fp8'");
}

// --trace-tiles sizes the --trace buffer: alone it would be ignored, so it is refused.
TEST(RunCli, TraceTilesWithoutTraceExitsTwo) {
  const f8gemm::test::TempDir dir("f8gemm_cli_values");
  expect_refusal(dir, "run --once --m 16 --n 256 --k 256 --trace-tiles 64",
                 "run: --trace-tiles needs --trace");
}

TEST(HangSecondsCli, ABadValueExitsTwoBeforeAnyWork) {
  const f8gemm::test::TempDir dir("f8gemm_hang_cli");
  for (const std::string value : {"ten", "0", "-1", "inf", "1e-300"}) {
    expect_refusal(dir, "run --once --m 16 --n 256 --k 256",
                   "F8GEMM_HANG_SECONDS must be a finite number of seconds, at least 0.001, "
                   "got '" + value + "'",
                   "F8GEMM_HANG_SECONDS='" + value + "'");
  }
}

}  // namespace

// Session 41's probe of hostile input. A shapes file that never ends (/dev/zero) or a line of
// megabytes was read whole into memory first (16.9 GB before the error); now a line past 4,096
// bytes and a file past 16 MiB are refused, with at most 16 MiB read.
TEST(ShapesFileCli, AnEndlessOrOverlongFileIsRefusedWithoutReadingItWhole) {
  const f8gemm::test::TempDir dir("f8gemm_cli_hostile");
  if (fs::exists("/dev/zero")) {
    // Read up to the file cap first (session 42: the read no longer blocks on a FIFO), so
    // the cap, not the line's, ends it: 16 MiB read, not gigabytes.
    expect_refusal(dir, "precompile --shapes /dev/zero", "'/dev/zero' is longer than 16 MiB");
  }
  const std::string path = shapes_file(dir, "1,16,256,256\n# " + std::string(5000, 'x') + "\n");
  expect_refusal(dir, "precompile --shapes '" + path + "'", path + ":2: line longer than 4096");
  // Short lines to past 16 MiB: the file's size, not a line's, ends it.
  {
    std::ofstream out(path);
    const std::string comment = "# " + std::string(1000, 'c') + "\n";
    for (int i = 0; i < 17 * 1024; ++i) out << comment;
  }
  expect_refusal(dir, "bench --shapes '" + path + "'", "is longer than 16 MiB");
}

// What the user typed comes back escaped and cut: a terminal escape in a shapes file was echoed
// raw (ESC [2J clears the screen), and a name of 10,000 characters made a line of 10,000.
TEST(ShapesFileCli, EchoedInputIsEscapedAndCut) {
  // A read error is one line naming the file (it escaped as the stream's own exception, exit 1).
  if (fs::exists("/proc/self/mem")) {
    expect_refusal(f8gemm::test::TempDir("f8gemm_cli_hostile"), "precompile --shapes /proc/self/mem",
                   "cannot read shapes file '/proc/self/mem': read error");
  }
  // A path is echoed by the CLI with its control bytes escaped too, and a backslash of the
  // input's own stays distinguishable from an escape.
  {
    const f8gemm::test::TempDir d("f8gemm_cli_hostile");
    const Outcome r = run_cli(d, "precompile --shapes \"$(printf 'no\\033such')\"");
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find("no\\x1bsuch"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << "a raw escape byte on stderr";
    expect_refusal(d, "run --m 16 --n 256 --k 256 --config 'a\\x1b'", "'a\\\\x1b'");
    // With F8GEMM_LOG on the CLI prints a whole message, line by line, each escaped too.
    const Outcome l = run_cli(d, "run --m 16 --n 256 --k 256",
                              "F8GEMM_LOG=1 F8GEMM_TUNE_FILE=\"$(printf 'x\\033y')\"");
    EXPECT_EQ(l.rc, 2) << l.err;
    EXPECT_NE(l.err.find("'x\\x1by' cannot be read"), std::string::npos) << l.err;
    EXPECT_EQ(l.err.find('\x1b'), std::string::npos) << "a raw escape byte on stderr";
  }
  const f8gemm::test::TempDir dir("f8gemm_cli_hostile");
  const std::string path = shapes_file(dir, "1,16,\x1b[2J,256\n");
  expect_refusal(dir, "precompile --shapes '" + path + "'", "'1,16,\\x1b[2J,256'");
  const Outcome r = run_cli(dir, "precompile --shapes '" + path + "'");
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << "a raw escape byte on stderr";
  const std::string long_name(10000, 'q');
  const Outcome c = run_cli(dir, "run --m 16 --n 256 --k 256 --config " + long_name);
  EXPECT_EQ(c.rc, 2) << c.err;
  EXPECT_NE(c.err.find("(and 9880 more bytes)"), std::string::npos) << c.err.substr(0, 300);
  EXPECT_LT(c.err.size(), 600u) << c.err.substr(0, 300);
}

// A table file that never ends: F8GEMM_TUNE_FILE=/dev/zero ran out of memory (std::bad_alloc,
// exit 1, the variable unnamed); now it is refused at 64 MiB, naming the variable.
TEST(TuneFileCli, AnEndlessTableFileIsRefusedNamingTheVariable) {
  const f8gemm::test::TempDir dir("f8gemm_cli_hostile");
  if (!fs::exists("/dev/zero")) GTEST_SKIP() << "no /dev/zero here";
  expect_refusal(dir, "precompile --shape 1,16,256,256",
                 "F8GEMM_TUNE_FILE='/dev/zero' is longer than 64 MiB",
                 "F8GEMM_CACHE_DIR='" + dir.path() + "/cache' F8GEMM_TUNE_FILE=/dev/zero");
}

// A bad F8GEMM_* value is reported as such, exit 2, before a command looks for a GPU: run, bench
// and tune said "no device" first (exit 1 on a machine without one) and left the variable to a
// later run. On a GPU machine the same line comes before any launch.
TEST(EnvironmentCli, EveryCommandReportsABadVariableBeforeLookingForAGpu) {
  const f8gemm::test::TempDir dir("f8gemm_cli_hostile");
  const std::string shapes = shapes_file(dir, "1,16,256,256\n");
  const std::string out = " --out '" + dir.path() + "/t.tsv'";
  const std::string tune = "tune --shapes '" + shapes + "'" + out;
  const std::string none = "F8GEMM_TUNE_FILE='" + dir.path() + "/none.tsv'";
  for (const std::string& args :
       {std::string("run --m 16 --n 256 --k 256"), "bench --shapes '" + shapes + "' --csv '" +
        dir.path() + "/b.csv'", tune, std::string("demo --iters 1")}) {
    expect_refusal(dir, args, "F8GEMM_CONFIG='garbage': config name 'garbage' does not match",
                   "F8GEMM_CONFIG=garbage");
    expect_refusal(dir, args, "F8GEMM_PDL='maybe' is not a switch value", "F8GEMM_PDL=maybe");
    if (args == tune) continue;  // below
    expect_refusal(dir, args, none + " cannot be read", none);
  }
  // tune writes a table and reads none: F8GEMM_TUNE_FILE may name the table it is to rewrite,
  // missing or cut short by a killed tune. And info reports what is here, whatever they say.
  if (f8gemm::test::have_any_device()) GTEST_SKIP() << "a GPU is present: the tune would run";
  {
    const Outcome r = run_cli(dir, tune, none);
    EXPECT_EQ(r.err.find("F8GEMM_TUNE_FILE"), std::string::npos) << r.err;
  }
  const Outcome r = run_cli(dir, "info", none + " F8GEMM_PDL=maybe");
  EXPECT_EQ(r.err.find("F8GEMM_TUNE_FILE"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("F8GEMM_PDL"), std::string::npos) << r.err;
}

// bench --csv naming its own --shapes file would truncate it when the CSV opens (tune refuses
// the same for --out and --log).
TEST(BenchCli, TheCsvCannotBeTheShapesFile) {
  const f8gemm::test::TempDir dir("f8gemm_cli_hostile");
  const std::string shapes = shapes_file(dir, "1,16,256,256\n");
  expect_refusal(dir, "bench --shapes '" + shapes + "' --csv '" + shapes + "'",
                 "is the --shapes file");
  std::ifstream in(shapes);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "1,16,256,256\n");
}

// As root, access(W_OK) passed a new file under /proc (or /sys), where no file can be made, and
// tune found out only when it wrote its table after the first shape. The check now opens or
// creates the file, so the kernel answers, for root as for anyone; and leaves nothing behind.
TEST(TuneCli, AnOutputNoFileSystemTakesIsRefusedBeforeTheRunEvenForRoot) {
  const f8gemm::test::TempDir dir("f8gemm_cli_hostile");
  const std::string shapes = shapes_file(dir, "1,16,256,256\n");
  if (fs::is_directory("/proc")) {
    expect_refusal(dir, "tune --shapes '" + shapes + "' --out /proc/f8gemm-tune-probe.tsv",
                   "tune: cannot write --out '/proc/f8gemm-tune-probe.tsv'");
  }
  // Before the change this half failed only as root (CI runs as root); as anyone else access()
  // refused /proc too. A writable new path passes and is not left behind by the check (the run
  // then stops at the missing GPU).
  if (f8gemm::test::have_any_device()) GTEST_SKIP() << "a GPU is present: the tune would run";
  const std::string out = dir.path() + "/new.tsv";
  const Outcome r = run_cli(dir, "tune --shapes '" + shapes + "' --iters 1 --out '" + out + "'",
                            "F8GEMM_CACHE_DIR='" + dir.path() + "/cache'");
  EXPECT_EQ(r.err.find("cannot write"), std::string::npos) << r.err;
  if (r.rc != 0) EXPECT_FALSE(fs::exists(out)) << "the check left its probe file";
}

// Session 42's probe. A FIFO with no writer, named as a shapes file or as F8GEMM_TUNE_FILE, hung
// the CLI in its open (a timeout's exit 124); it now reads as empty at once. A pipe with a
// writer is still read to its end.
TEST(ShapesFileCli, AFifoWithNoWriterReadsAsEmptyInsteadOfHanging) {
  const f8gemm::test::TempDir dir("f8gemm_cli_hostile");
  const std::string fifo = dir.path() + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  // `timeout` makes a hang fail the test (exit 124) instead of stopping the suite.
  for (const char* command : {"bench", "precompile", "tune"}) {
    const Outcome r =
        run_cli(dir, std::string(command) + " --shapes '" + fifo + "'", "timeout 20");
    EXPECT_EQ(r.rc, 2) << command << ": " << r.err;
    EXPECT_NE(r.err.find("holds no shapes"), std::string::npos) << command << ": " << r.err;
  }
  // As a table it is an empty one: the model chooses, and the command completes.
  const std::string cache = "F8GEMM_CACHE_DIR='" + dir.path() + "/cache'";
  const Outcome t = run_cli(dir, "precompile --gpu h100 --shape 1,16,256,256",
                            "timeout 60 env " + cache + " F8GEMM_TUNE_FILE='" + fifo + "'");
  EXPECT_EQ(t.rc, 0) << t.err;
  // A pipe with a writer: the shapes come through.
  const Outcome p = run_cli(dir, "precompile --gpu h100 --shapes /dev/stdin",
                            "echo 1,16,256,256 | timeout 60 env " + cache);
  EXPECT_EQ(p.rc, 0) << p.err;
}

// An option whose value is missing took the next option for it: `run --m --n 256` said
// "unknown option '256'", and `--trace --once` would trace into a file named --once.
TEST(RunCli, AnOptionWithoutItsValueDoesNotTakeTheNextOption) {
  const f8gemm::test::TempDir dir("f8gemm_cli_values");
  expect_refusal(dir, "run --m --n 256 --k 256", "run: --m needs a value");
  expect_refusal(dir, "run --m 16 --n 256 --k 256 --trace --once", "run: --trace needs a value");
  expect_refusal(dir, "bench --csv --iters 5", "bench: --csv needs a value");
  expect_refusal(dir, "bench --shapes --csv=x.csv", "bench: --shapes needs a value");
}

// precompile exists to keep cubins: with a cache it could not write it compiled everything,
// warned and exited 0. Now it refuses before the first compile.
TEST(PrecompileCli, ACacheThatCannotBeWrittenIsRefusedBeforeAnyCompile) {
  const f8gemm::test::TempDir dir("f8gemm_cli_hostile");
  const std::string file = dir.path() + "/a-file";
  std::ofstream(file) << "x";
  expect_refusal(dir, "precompile --gpu h100 --shape 1,16,256,256",
                 "precompile: the JIT disk cache '" + file + "' cannot be used",
                 "F8GEMM_CACHE_DIR='" + file + "'");
  expect_refusal(dir, "precompile --gpu h100 --candidates --shape 1,16,256,256",
                 "so nothing would be kept", "F8GEMM_CACHE_DIR='" + file + "'");
  // A symbolic link to a missing target: named with its target, not create_directories' EEXIST.
  const std::string link = dir.path() + "/dangling";
  fs::create_symlink(dir.path() + "/missing", link);
  expect_refusal(dir, "precompile --gpu h100 --shape 1,16,256,256",
                 "precompile: the JIT disk cache '" + link + "' cannot be used (it is a symbolic "
                 "link to a missing target '" + dir.path() + "/missing'), so nothing would be kept",
                 "F8GEMM_CACHE_DIR='" + link + "'");
}

// An output path that is a symbolic link to a file in no directory passed the check (the
// create-and-remove probe met the link itself), so tune would have learnt so after its run.
TEST(TuneCli, ALinkToAnUnwritablePlaceIsRefusedBeforeTheRun) {
  const f8gemm::test::TempDir dir("f8gemm_cli_hostile");
  const std::string shapes = shapes_file(dir, "1,16,256,256\n");
  const std::string link = dir.path() + "/dangling";
  fs::create_symlink(dir.path() + "/no/such/dir/t.tsv", link);
  expect_refusal(dir, "tune --shapes '" + shapes + "' --out '" + link + "'",
                 "(where its symbolic link points: '" + dir.path() + "/no/such/dir/t.tsv')");
  expect_refusal(dir, "bench --shapes '" + shapes + "' --csv '" + link + "'",
                 "(where its symbolic link points: '" + dir.path() + "/no/such/dir/t.tsv')");
  // A cycle of three links is refused, and the check ends.
  fs::create_symlink(dir.path() + "/l2", dir.path() + "/l1");
  fs::create_symlink(dir.path() + "/l3", dir.path() + "/l2");
  fs::create_symlink(dir.path() + "/l1", dir.path() + "/l3");
  expect_refusal(dir, "bench --shapes '" + shapes + "' --csv '" + dir.path() + "/l1'",
                 "Too many levels of symbolic links", "timeout 20");
}

// An editor's UTF-8 byte-order mark before a table's first line made that line an error
// ("expected '<key><TAB><config>'"); it is not part of the text.
TEST(InputFilesCli, AByteOrderMarkBeforeTheFirstLineIsIgnored) {
  const f8gemm::test::TempDir dir("f8gemm_cli_hostile");
  const std::string table = dir.path() + "/bom.tsv";
  std::ofstream(table) << "\xEF\xBB\xBF# a comment line\n";
  const Outcome r = run_cli(dir, "precompile --gpu h100 --shape 1,16,256,256",
                            "F8GEMM_CACHE_DIR='" + dir.path() + "/cache' F8GEMM_TUNE_FILE='" +
                                table + "'");
  EXPECT_EQ(r.rc, 0) << r.err;
  // And before a shapes file's first shape (the review of session 42: only tables took it).
  const std::string shapes = shapes_file(dir, "\xEF\xBB\xBF" "1,16,256,256\n");
  const Outcome s = run_cli(dir, "precompile --gpu h100 --shapes '" + shapes + "'",
                            "F8GEMM_CACHE_DIR='" + dir.path() + "/cache'");
  EXPECT_EQ(s.rc, 0) << s.err;
}

// `--both --precise` was taken as --both without a word: the two ask for different sets of modes.
TEST(TuneCli, BothAndPreciseTogetherAreRefused) {
  const f8gemm::test::TempDir dir("f8gemm_cli_values");
  const std::string shapes = shapes_file(dir, "1,16,256,256\n");
  expect_refusal(dir, "tune --shapes '" + shapes + "' --both --precise",
                 "tune: --both times fast and precise mode; give it or --precise, not both");
}

// F8GEMM_CONFIG that cannot run a problem was judged only at the call: `run` allocated and
// filled its fixture, `bench` measured its ceilings, before the refusal (session 46's probe);
// --config was already judged up front. Both say it in the library's one spelling
// (config_unfit_message), F8GEMM_CONFIG's after the variable and its value.
TEST(EnvironmentCli, AForcedConfigThatCannotRunTheProblemExitsTwoBeforeTheGpu) {
  const f8gemm::test::TempDir dir("f8gemm_cli_forced");
  const std::string env = "F8GEMM_CONFIG=sm90_tiled_128x128x128_s3_c1x1_r8_k8";
  const std::string why = "F8GEMM_CONFIG='sm90_tiled_128x128x128_s3_c1x1_r8_k8': config "
                          "sm90_tiled_128x128x128_s3_c1x1_r8_k8 cannot run "
                          "B,M,N,K=1,1,128,128: split_k = 8 exceeds the 1 k-blocks";
  expect_refusal(dir, "run --m 1 --n 128 --k 128", why, env);
  expect_refusal(dir, "run --once --m 1 --n 128 --k 128", why, env);
  expect_refusal(dir, "bench --shapes " + shapes_file(dir, "1,1,128,128\n") + " --csv " +
                          dir.path() + "/b.csv",
                 why, env);
  EXPECT_FALSE(fs::exists(dir.path() + "/b.csv")) << "a refused bench writes no CSV";
  // --config overrides F8GEMM_CONFIG and is judged itself.
  expect_refusal(dir, "run --m 1 --n 128 --k 128 --config sm90_tiled_128x128x128_s3_c1x1_r8_k8",
                 "unsupported: config sm90_tiled_128x128x128_s3_c1x1_r8_k8 cannot run "
                 "B,M,N,K=1,1,128,128: split_k = 8 exceeds the 1 k-blocks");
  // An empty problem decides no config and launches nothing (as the library's call): neither
  // F8GEMM_CONFIG nor --config is judged against it.
  for (const Outcome& empty :
       {run_cli(dir, "run --once --m 0 --n 128 --k 128", env),
        run_cli(dir, "run --once --m 0 --n 128 --k 128 --config "
                     "sm90_tiled_128x128x128_s3_c1x1_r8_k8")}) {
    EXPECT_NE(empty.rc, 2) << empty.err;
  }
  // A config that fits passes the check: the command goes on to look for a GPU (exit 1 here, or
  // the run on an sm_90 GPU), never exit 2.
  const Outcome ok = run_cli(dir, "run --once --m 1 --n 128 --k 128",
                             "F8GEMM_CONFIG=sm90_tiled_128x128x128_s3_c1x1_r8");
  EXPECT_NE(ok.rc, 2) << ok.err;
}

// Values the CLI echoes went through quoted() in most places, but --out, --epilogue and --gpu
// were quoted by hand and output paths not at all: a literal backslash read as an escape, and a
// long value pushed the rest of the line past its cap (session 46's probe).
TEST(RunCli, EveryEchoedValueIsQuotedEscapedAndCut) {
  const f8gemm::test::TempDir dir("f8gemm_cli_echo");
  // A literal backslash is shown doubled; a real escape byte as \x1b.
  expect_refusal(dir, "run --m 1 --n 128 --k 128 --out 'a\\x1b'", "got 'a\\\\x1b'");
  expect_refusal(dir, "run --m 1 --n 128 --k 128 --out \"$(printf 'a\\033')\"", "got 'a\\x1b'");
  expect_refusal(dir, "run --m 1 --n 128 --k 128 --bias-dtype f16",
                 "run: --bias-dtype must be f32 or bf16, got 'f16'");
  expect_refusal(dir, "precompile --shape 1,1,8,16 --out fp32",
                 "precompile: --out must be bf16 or fp16, got 'fp32'");
  const std::string long_gpu(300, 'A');
  const Outcome g = run_cli(dir, "precompile --shape 1,1,8,16 --gpu " + long_gpu);
  EXPECT_EQ(g.rc, 2) << g.err;
  EXPECT_NE(g.err.find("(and 180 more bytes): the GPUs with shipped tables are h100 and h200"),
            std::string::npos)
      << g.err;
  const std::string tune = "tune --shapes " + shapes_file(dir, "1,16,256,256\n") + " ";
  expect_refusal(dir, tune + "--epilogue 'x\\y'", "got 'x\\\\y'");
  const std::string long_dir = dir.path() + "/" + std::string(200, 'd');
  const Outcome b = run_cli(dir, "bench --shapes " + shapes_file(dir, "1,16,256,256\n") +
                                     " --csv " + long_dir + "/b.csv");
  EXPECT_EQ(b.rc, 2) << b.err;
  EXPECT_NE(b.err.find("more bytes): no directory"), std::string::npos) << b.err;
}

// Integers and numbers read one way everywhere (session 46's probe): " 128" was taken and
// "128 " refused, 0x10 taken by F8GEMM_HANG_SECONDS and --rotate-l2 (strtod) but refused by
// --n, and 2^63 called "not an integer".
TEST(RunCli, NumbersReadOneWayWithoutSpacesSignsOrHex) {
  const f8gemm::test::TempDir dir("f8gemm_cli_numbers");
  for (const std::string text : {"' 128'", "'128 '", "0x80", "+128", "1e2", "''"}) {
    expect_refusal(dir, "run --m 1 --k 128 --n " + text, "run: --n expects an integer, got '");
  }
  expect_refusal(dir, "run --m 1 --k 128 --n 9223372036854775808",
                 "run: --n must be in 1..2147483647, got '9223372036854775808'");
  expect_refusal(dir, "run --m 1 --k 128 --n -9223372036854775809",
                 "run: --n must be in 1..2147483647, got '-9223372036854775809'");
  expect_refusal(dir, "bench --iters 99999999999999999999",
                 "bench: --iters must be in 1..100000, got '99999999999999999999'");
  expect_refusal(dir, "bench --iters ' 5'", "bench: --iters expects an integer, got ' 5'");
  for (const std::string text : {"0x1p2", "' 2'", "'2 '", "+2", "inf", "nan"}) {
    expect_refusal(dir, "bench --rotate-l2 " + text, "bench: --rotate-l2 must be a number in (0, 64]");
  }
  for (const std::string text : {"0x10", "' 5'", "'5 '", "+5", "inf", "1e309"}) {
    expect_refusal(dir, "help", "F8GEMM_HANG_SECONDS must be a finite number of seconds",
                   "F8GEMM_HANG_SECONDS=" + text);
  }
  // Shapes too (--shape and shapes files): no '+' or hex; 2^63 is a size past int64.
  for (const std::string text : {"+1,1,8,16", "1,1,8,0x10", "1,1,8,1e2"}) {
    expect_refusal(dir, "precompile --shape " + text, "expected B,M,N,K of non-negative integers");
  }
  expect_refusal(dir, "precompile --shape 1,1,8,9223372036854775808",
                 "--shape: a size past int64 in '1,1,8,9223372036854775808'");
  // What stays accepted: a plain decimal, with a fraction or an exponent where a number is read.
  EXPECT_EQ(run_cli(dir, "help", "F8GEMM_HANG_SECONDS=2.5e1").rc, 0);
}

// Outputs that open but can never be written were found out only after the run: /dev/full
// (ENOSPC) and, as root, an existing file of procfs or sysfs (session 46's probe).
TEST(RunCli, AnOutputThatOpensButTakesNoBytesIsRefusedBeforeTheRun) {
  const f8gemm::test::TempDir dir("f8gemm_cli_full");
  const std::string shapes = shapes_file(dir, "1,16,256,256\n");
  if (fs::exists("/dev/full")) {
    expect_refusal(dir, "run --once --m 16 --n 256 --k 256 --trace /dev/full",
                   "run: cannot write --trace '/dev/full': it is /dev/full, which takes no bytes");
    expect_refusal(dir, "bench --shapes " + shapes + " --csv /dev/full",
                   "bench: cannot write --csv '/dev/full': it is /dev/full");
  }
  if (fs::exists("/proc/version")) {
    // As root the file opens for writing, as anyone else it does not: the kernel's file system
    // is named before any open, on every machine.
    expect_refusal(dir, "tune --shapes " + shapes + " --out /proc/version",
                   "tune: cannot write --out '/proc/version': it is a file of the kernel (procfs, sysfs, cgroup, debugfs, tracefs, securityfs or bpffs)");
    expect_refusal(dir, "bench --shapes " + shapes + " --csv /proc/version",
                   "bench: cannot write --csv '/proc/version': it is a file of the kernel (procfs, sysfs, cgroup, debugfs, tracefs, securityfs or bpffs)");
  }
  // cgroup files too (cgroup v2 at the top, v1 in a controller's folder), whichever is here.
  for (const std::string cg : {"/sys/fs/cgroup/cgroup.procs", "/sys/fs/cgroup/cpu/cgroup.procs"}) {
    if (fs::exists(cg)) {
      expect_refusal(dir, "bench --shapes " + shapes + " --csv " + cg,
                     "bench: cannot write --csv '" + cg + "': it is a file of the kernel (procfs, sysfs, cgroup, debugfs, tracefs, securityfs or bpffs)");
    }
  }
  // /dev/null takes every byte: still an output.
  const Outcome ok = run_cli(dir, "bench --shapes " + shapes + " --csv /dev/null");
  EXPECT_NE(ok.rc, 2) << ok.err;
}
