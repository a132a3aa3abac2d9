"""The benchmark's tools without a GPU (CI runs this module): bench/peer_table.py rebuilds the
perf log's session-31 peer table from the committed CSVs of that run, bench/copy_floor.py's
arithmetic (the copy's bytes, its row and table) on hand-worked figures, the timing tools'
refusal of a bad path before any GPU work, the sustained tools' options and summaries
(sustained_clock.py, mlp_sustained.py), and the grouped Triton peer's arguments."""

import os
import sys
import tempfile

try:
    import pytest
except ImportError:  # run_all.py without pytest
    from _minipytest import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import copy_floor  # noqa: E402
import peer_table  # noqa: E402
import peers  # noqa: E402
import plot  # noqa: E402
import sustained_table  # noqa: E402

# bench/grouped_peers.py, mlp_sustained.py and sustained_clock.py put the checkout's python/ (and
# examples/) first on sys.path (for the f8gemm package they time); kept there, the other modules
# would import that copy, without its extension, instead of the installed package that CI tests
# (F8GEMM_TEST_INSTALLED).
_path = list(sys.path)
import grouped_peers  # noqa: E402
import mlp_sustained  # noqa: E402
import sustained_clock  # noqa: E402
sys.path[:] = _path

BENCH = os.path.join(ROOT, "docs", "bench")


def s31_args(shapes, *extra):
    return peer_table.parse_args(
        ["--shapes", os.path.join(ROOT, "bench", shapes), "--runs",
         os.path.join(BENCH, "s31-h200-bench-1.csv"), os.path.join(BENCH, "s31-h200-bench-2.csv"),
         "--peers", os.path.join(BENCH, "s31-h200-peers.csv"), *extra])


def row(lines, shape):
    found = [line for line in lines if line.startswith(f"| {shape} |")]
    assert len(found) == 1, f"{shape}: {found}"
    return [cell.strip() for cell in found[0].strip("|").split("|")]


def test_the_session_31_table_and_its_geometric_mean():
    lines, geo = peer_table.table(
        s31_args("shapes-large.txt", "--precise", os.path.join(BENCH, "s31-h200-bench-precise.csv")))
    assert f"{geo:.3f}" == "1.055"
    assert lines[-1].startswith("PEAK 1377.2 TFLOP/s, BW 4.230 TB/s")
    cells = row(lines, "1,4096,14336,4096")
    # best peer, best peer / ours, ours / floor, precise / fast
    assert cells[-4:] == ["torch_scaled_mm_graph 365.6", "0.984", "1.06", "1.026"]
    # cuBLASLt's two runs, and the best peer when it is cuBLASLt (the mean of its runs)
    cells = row(lines, "1,8192,8192,8192")
    assert cells[-5:-2] == ["834.5/835.3", "cublaslt_rowwise 834.9", "1.008"]


def test_a_peak_marked_assumed_does_not_set_the_floor():
    # bench-2 ran with --no-peak, which writes an assumed 1464.0 TFLOP/s ceiling. Counted as
    # PEAK it would lower the floor of 1,4096,4096,14336 and put ours at 1.06x of it; the
    # highest measured rate (ours there, 1377.2) puts ours at 1.00x.
    lines, _ = peer_table.table(s31_args("shapes-large.txt"))
    assert row(lines, "1,4096,4096,14336")[-1] == "1.00"


def test_bw_is_the_first_runs_copy_rate():
    # bench-precise measured 4.220 TB/s; named first, its copy rate sets BW, not the others' 4.230.
    args = s31_args("shapes-large.txt")
    args.runs = [os.path.join(BENCH, "s31-h200-bench-precise.csv")] + args.runs
    lines, _ = peer_table.table(args)
    assert lines[-1].startswith("PEAK 1377.2 TFLOP/s, BW 4.220 TB/s")


def test_a_missing_file_is_refused_by_name():
    args = s31_args("shapes-large.txt")
    args.peers = os.path.join(BENCH, "no-such-peers.csv")
    with pytest.raises(SystemExit, match="no-such-peers.csv"):
        peer_table.table(args)


def test_the_chained_column_of_the_decode_shapes():
    lines, geo = peer_table.table(
        s31_args("shapes-decode.txt", "--chained", os.path.join(BENCH, "s31-h200-bench-chained.csv")))
    assert row(lines, "1,1,28672,4096")[-4:] == ["triton 30.3", "1.043", "1.05", "28.89, 1.04, 1.050"]
    assert f"{geo:.3f}" == "1.199"


def test_a_shape_the_run_lacks_is_refused_by_name():
    with tempfile.TemporaryDirectory() as tmp:
        shapes = os.path.join(tmp, "shapes.txt")
        with open(shapes, "w") as f:
            f.write("1,4096,4096,4096\n2,64,512,256\n")
        args = s31_args("shapes-large.txt")
        args.shapes = shapes
        with pytest.raises(SystemExit, match="no f8gemm_preshuffled row that ran for 2,64,512,256"):
            peer_table.table(args)


def test_the_copy_moves_the_gemms_bytes_in_two_halves_of_whole_vectors():
    # 1,1,4096,4096: X 4096 + W 16777216 + Y 8192 + scales 4 + 16384 = 16805892 bytes; half is
    # 8402946, rounded up to 16 bytes.
    assert copy_floor.copy_bytes((1, 1, 4096, 4096)) == (16805892, 8402960)
    nbytes, side = copy_floor.copy_bytes((16, 4096, 8192, 1024))
    assert side % 16 == 0 and 2 * side - nbytes in range(0, 32)


def test_the_copys_row_and_table_from_hand_worked_figures():
    # At 4 TB/s the 16805892 bytes take 4.2015 us; a copy of 6.3 us is 1.50x that, ours at
    # 6.93 us 1.10x the copy.
    r = copy_floor.row_of((1, 1, 4096, 4096), 4.0, 6.3, 6.93)
    assert abs(r["bytes_floor_us"] - 4.201473) < 1e-6
    assert abs(r["copy_over_floor"] - 6.3 / 4.201473) < 1e-6
    assert abs(r["ours_over_copy"] - 1.1) < 1e-12
    assert copy_floor.table([r])[-1] == \
        "| 1,1,4096,4096 | 16.81 | 4.20 | 6.30 | 1.50 | 6.93 | 1.10 |"
    # Without ours (no baseline row for the shape), its cells are dashes.
    bare = copy_floor.row_of((1, 1, 4096, 4096), 4.0, 6.3)
    assert copy_floor.table([bare])[-1].endswith("| 1.50 | - | - |")


def test_the_copy_tools_options_are_checked():
    for bad in (["--iters", "0"], ["--rotate-l2", "nan"], ["--rotate-l2", "65"]):
        with pytest.raises(SystemExit):
            copy_floor.parse_args(bad)


def test_the_timing_tools_refuse_a_bad_path_before_any_gpu_work():
    # Without a GPU (CI) a tool that looked for the device first would say "no CUDA device"; on
    # the GPU machine it would run its warm-up and fail later with a traceback. Each must name
    # the path and why, first (bench/plot.py before importing matplotlib).
    shapes = os.path.join(ROOT, "bench", "shapes-decode.txt")
    baseline = os.path.join(BENCH, "s31-h200-bench-1.csv")
    with tempfile.TemporaryDirectory() as tmp:
        no_dir = os.path.join(tmp, "no-such-dir", "out.csv")
        no_file = os.path.join(tmp, "no-such-file.csv")
        bare = os.path.join(tmp, "bare.csv")  # a bench CSV without its ceiling rows
        with open(bare, "w") as f:
            f.write(",".join(peers.COLUMNS) + "\n")
        out = ["--csv", os.path.join(tmp, "out.csv")]
        cases = []
        for main in (copy_floor.main, peers.main):
            cases += [
                (main, ["--shapes", no_file] + out, "no-such-file.csv: cannot read it"),
                (main, ["--shapes", shapes, "--baseline", no_file] + out,
                 "no-such-file.csv: cannot read it"),
                (main, ["--shapes", shapes, "--baseline", bare] + out, "no ceiling_bw"),
                (main, ["--shapes", shapes, "--baseline", baseline, "--csv", no_dir],
                 "cannot write it: no directory"),
                (main, ["--shapes", shapes, "--csv", tmp], "is a directory"),
            ]
        png = ["--out", os.path.join(tmp, "out.png")]
        cases += [
            (plot.main, [baseline, no_file] + png, "no-such-file.csv: cannot read it"),
            (plot.main, [bare] + png, "no result rows"),
            (plot.main, [baseline, "--out", os.path.join(tmp, "no-such-dir", "x.png")],
             "cannot write it: no directory"),
            (grouped_peers.main, ["--baseline", no_file] + out,
             "no-such-file.csv: cannot read it"),
            (grouped_peers.main, ["--baseline", bare] + out, "no ceiling_bw"),
            (grouped_peers.main, ["--csv", no_dir], "cannot write it: no directory"),
            (sustained_clock.main, ["1,64,64,64", "--csv", no_dir],
             "cannot write it: no directory"),
            (mlp_sustained.main, ["--csv", no_dir], "cannot write it: no directory"),
        ]
        for main, argv, message in cases:
            with pytest.raises(SystemExit, match=message):
                main(argv)
        assert not os.path.exists(os.path.join(tmp, "out.csv"))
        assert not os.path.exists(os.path.join(tmp, "out.png"))


def test_the_sustained_runs_take_a_batch_and_refuse_a_bad_shape():
    a = sustained_clock.parse_args(["16,512,8192,1024", "--seconds", "2"])
    assert (a.b, a.m, a.n, a.k, a.seconds) == (16, 512, 8192, 1024, 2.0)
    assert a.only == [i for i in sustained_clock.IMPLS if i != "f8gemm_precise"]
    assert not a.only_given
    assert sustained_clock.parse_args(["1,2,3,4", "--only", "triton, f8gemm_plain"]).only == [
        "triton", "f8gemm_plain"]
    for bad in (["0,1,2,3"], ["1,2,3"], ["1,a,2,3"], ["1,2,3,4", "--seconds", "0.5"],
                ["1,2,3,4", "--rounds", "0"], ["1,2,3,4", "--only", "cublas"]):
        with pytest.raises(SystemExit):
            sustained_clock.parse_args(bad)


def without_f8gemm_config(test):
    """Runs test with F8GEMM_CONFIG unset, and puts back whatever the environment had."""
    saved = os.environ.pop("F8GEMM_CONFIG", None)
    try:
        test()
    finally:
        os.environ.pop("F8GEMM_CONFIG", None)
        if saved is not None:
            os.environ["F8GEMM_CONFIG"] = saved


def test_the_sustained_runs_force_a_precise_config_only_with_the_precise_mode():
    name = "sm90_tiled_128x256x128_s3_c2x1_r8"

    def test():
        a = sustained_clock.parse_args(["1,16384,8192,1024", "--only",
                                        "f8gemm_preshuffled,f8gemm_precise", "--precise-config",
                                        name])
        assert a.precise_config == name
        assert sustained_clock.parse_args(["1,2,3,4"]).precise_config is None
        # without the precise mode timed; a blank name
        for bad in (["1,2,3,4", "--precise-config", name],
                    ["1,2,3,4", "--only", "f8gemm_precise", "--precise-config", " "]):
            with pytest.raises(SystemExit):
                sustained_clock.parse_args(bad)
        # F8GEMM_CONFIG already set would force every implementation, not only the precise one
        os.environ["F8GEMM_CONFIG"] = name
        with pytest.raises(SystemExit):
            sustained_clock.parse_args(["1,2,3,4", "--only", "f8gemm_precise",
                                        "--precise-config", name])

    without_f8gemm_config(test)


def test_the_sustained_runs_set_the_forced_config_only_inside_and_restore_it():
    def test():
        with sustained_clock.forced_config("sm90_tiled_128x256x128_s3_c2x1_r8"):
            assert os.environ["F8GEMM_CONFIG"] == "sm90_tiled_128x256x128_s3_c2x1_r8"
        assert "F8GEMM_CONFIG" not in os.environ
        with sustained_clock.forced_config(None):  # the other implementations: untouched
            assert "F8GEMM_CONFIG" not in os.environ
        os.environ["F8GEMM_CONFIG"] = ""  # set but empty (the library reads it as unset)
        with pytest.raises(RuntimeError):
            with sustained_clock.forced_config("sm90_tiled_128x192x128_s4_c1x1_r8"):
                raise RuntimeError("the plan's first call failed")
        assert os.environ["F8GEMM_CONFIG"] == ""

    without_f8gemm_config(test)


def test_the_sustained_summary_sets_the_best_peers_median_against_ours():
    def r(impl, us):
        return {"impl": impl, "us_per_call": f"{us:.2f}"}
    rows = [r("f8gemm_preshuffled", 100.0), r("torch_scaled_mm", 104.0), r("fbgemm_rowwise", 120.0),
            r("torch_scaled_mm", 108.0), r("fbgemm_rowwise", 101.0), r("f8gemm_preshuffled", 98.0),
            r("f8gemm_plain", 90.0), r("f8gemm_plain", 92.0)]
    line = sustained_clock.summary_line(rows)
    # Medians of two rounds: ours 99, torch 106, FBGEMM 110.5; ours plain is not a peer.
    assert line == ("median us/call: f8gemm_preshuffled 99.00, torch_scaled_mm 106.00, "
                    "fbgemm_rowwise 110.50, f8gemm_plain 91.00; best peer torch_scaled_mm "
                    "106.00, best peer / ours 1.071")
    # Precise mode beside fast mode: its median over fast mode's (ours 99).
    assert sustained_clock.summary_line(rows + [r("f8gemm_precise", 104.0)]).endswith(
        "; precise / fast 1.051")
    # Without ours, or without a peer, no ratio.
    assert "best peer" not in sustained_clock.summary_line([r("torch_scaled_mm", 1.0)])
    assert "best peer" not in sustained_clock.summary_line([r("f8gemm_preshuffled", 1.0)])


def test_the_triton_grouped_peer_gets_fbgemms_layout():
    # FBGEMM's Triton grouped GEMM takes W as [G * N, K], w_scale as [G * N] and int32 sizes;
    # the target peers stay FBGEMM's CUTLASS op and torch._scaled_grouped_mm.
    torch = pytest.importorskip("torch")
    g, n, k, rows = 3, 16, 32, 10
    x = torch.zeros(rows, k, dtype=torch.float8_e4m3fn)
    w = torch.zeros(g, n, k, dtype=torch.float8_e4m3fn)
    xs, ws = torch.ones(rows), torch.ones(g, n)
    sizes64 = torch.tensor([4, 0, 6])
    offs = torch.cumsum(sizes64, 0).to(torch.int32)
    seen = {}

    def fake(*args, **kw):
        seen["args"], seen["kw"] = args, kw
        return "y"
    calls = grouped_peers.implementations(torch, None, False, x, w, w, xs, ws, sizes64, offs,
                                          fake)
    assert "fbgemm_grouped_stacked" not in calls  # no FBGEMM op library: no CUTLASS peer
    assert calls["fbgemm_triton_grouped"][0]() == "y"
    xa, wa, sa, xsa, wsa = seen["args"]
    assert xa is x and xsa is xs
    assert tuple(wa.shape) == (g * n, k) and tuple(wsa.shape) == (g * n,)
    assert sa.dtype == torch.int32 and sa.tolist() == [4, 0, 6]
    assert seen["kw"] == {"use_fast_accum": False, "_use_warp_specialization": False}
    assert "fbgemm_triton_grouped" not in grouped_peers.implementations(
        torch, None, True, x, w, w, xs, ws, sizes64, offs)
    assert grouped_peers.TARGET_PEERS == ("fbgemm_grouped_stacked", "torch_scaled_grouped_mm")


def test_the_sustained_mlp_block_checks_its_options():
    a = mlp_sustained.parse_args(["--m", "1", "2048", "--seconds", "1.5"])
    assert (a.m, a.seconds, a.rounds, a.hidden) == ([1, 2048], 1.5, 2, 4096)
    for bad in (["--m", "0"], ["--hidden", "100"], ["--intermediate", "0"], ["--seconds", "0.4"],
                ["--rounds", "0"]):
        with pytest.raises(SystemExit):
            mlp_sustained.parse_args(bad)


def test_the_sustained_mlp_lines_set_each_block_against_bf16_and_pdl_off_against_on():
    def r(m, v, us):
        return {"m": m, "variant": v, "us_per_block": f"{us:.2f}"}
    rows = [r(1, "bf16", 100.0), r(1, "fp8_pdl", 50.0), r(1, "fp8_no_pdl", 52.0),
            r(1, "fp8_no_pdl", 54.0), r(1, "fp8_pdl", 52.0), r(1, "bf16", 102.0),
            r(2048, "fp8_pdl", 500.0)]
    lines = mlp_sustained.speedup_lines(rows)
    # Medians: bf16 101, pdl 51, no pdl 53.
    assert lines == ["M=1: bf16 101.00, fp8_pdl 51.00, fp8_no_pdl 53.00; bf16 / fp8_pdl 1.980; "
                     "bf16 / fp8_no_pdl 1.906; no pdl / pdl 1.0392",
                     "M=2048: fp8_pdl 500.00"]


def test_the_sustained_table_rebuilds_card_100_from_its_csv():
    rows = sustained_table.read_rows([os.path.join(BENCH, "s43-h100-sustained-issue6.csv")])
    lines, geo, met, n = sustained_table.table(rows, 1.03)
    assert (round(geo, 3), met, n) == (1.048, 6, 12)
    assert ("| 1,4096,14336,4096 | 368.9 | **363.4** | 371.2 | 399.5 | 408.8 | 0.985 | 256.9 | "
            "253.7 | 1362 / 1305 |") in lines
    assert ("| 16,512,1280,8192 | 137.1 | 357.4 | 233.6 | 203.7 | **166.9** | 1.217 | 94.7 | "
            "115.2 | 1294 / 1522 |") in lines
    assert sustained_table.table(rows, 1.2)[2] == 1
    # A shape where only ours ran stays in the table and out of the mean.
    alone = [dict(r, shape="1,64,64,64") for r in rows
             if r["shape"] == "1,4096,4096,4096" and r["impl"] == "f8gemm_preshuffled"]
    lines2, geo2, _, n2 = sustained_table.table(rows + alone, 1.03)
    assert (round(geo2, 3), n2) == (1.048, 12)
    assert any(line.startswith("| 1,64,64,64 |") and line.endswith("| - | - | - | - |")
               for line in lines2)


def test_the_sustained_table_refuses_a_csv_it_cannot_read():
    with tempfile.TemporaryDirectory() as tmp:
        old = os.path.join(tmp, "old.csv")  # a CSV of the tool before it wrote its shape
        with open(old, "w") as f:
            f.write("impl,round,us_per_call\nf8gemm_preshuffled,1,1.0\n")
        with pytest.raises(SystemExit, match="no rows with a shape column"):
            sustained_table.read_rows([old])
        with pytest.raises(SystemExit, match="cannot read it"):
            sustained_table.read_rows([os.path.join(tmp, "none.csv")])
