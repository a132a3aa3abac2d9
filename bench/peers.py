#!/usr/bin/env python3
"""Peers of f8gemm measured on the GPU, in the CSV columns of `f8gemm bench`.

Rows per shape (B,M,N,K), Y[b] = bf16(xs[b] (x) ws[b] * X[b] @ W[b]^T):
  torch_scaled_mm_loop     torch._scaled_mm rowwise, one call per batch in a Python loop.
                           host_us: the loop called back to back; graph_us: 20 loops in one graph.
  torch_scaled_mm_graph    the same loop captured in a torch.cuda.CUDAGraph.
                           host_us: a one-loop graph replayed back to back; graph_us: as above.
  torch_scaled_grouped_mm  torch._scaled_grouped_mm on the 3-D tensors (one launch).
  triton                   an autotuned Triton FP8 rowwise batched kernel (grid-y over batch).
  fbgemm_rowwise           FBGEMM gen_ai f8f8bf16_rowwise_out (CUTLASS) into y[b], one call per
                           batch in a Python loop (B = 1: one call); times as for the loop above.
  fbgemm_rowwise_batched   FBGEMM gen_ai f8f8bf16_rowwise_batched on the 3-D tensors (one launch).
FBGEMM gen_ai is the pip package fbgemm-gpu-genai (1.6.0 is the build for torch 2.11); where
`fbgemm_gpu.experimental.gen_ai` does not import, its rows say "unavailable: <why>" and the run
goes on. Every peer gets the same inputs and the accumulation mode of --precise.

Timing matches the C++ bench: >= 300 ms of clock warm-up, 100 ms before each peer, CUDA events
around --iters back-to-back calls (host_us), and the median replay of a CUDA graph of 20 calls
(graph_us). Input sets are rotated so that consecutive calls span at least --rotate-l2 x the L2
(default 2, as the C++ bench's --rotate-l2), in at most MAX_SETS sets.
floor = max(bytes / BW, flops / PEAK); with --baseline BW and PEAK come from the C++ bench's
ceiling rows so that both CSVs share one floor, and the last table sets the best peer's graph
time (the baseline's cuBLASLt rows included) against ours (f8gemm_preshuffled).

Usage (on the GPU machine):
  python3 bench/peers.py --baseline bench.csv --csv peers.csv [--shapes bench/shapes.txt]
"""

import argparse
import csv
import math
import os
import statistics
import sys
import time

COLUMNS = ["impl", "b", "m", "n", "k", "status", "host_us", "graph_us", "floor_us", "host_ratio",
           "graph_ratio", "tflops", "tbps", "rel_err_vs_ours"]

# Same list as bench/shapes.txt and the C++ bench's default.
DEFAULT_SHAPES = [(16, 1, 1280, 8192), (16, 32, 1280, 8192), (16, 128, 1280, 8192),
                  (16, 512, 1280, 8192), (16, 1024, 1280, 8192), (16, 4096, 1280, 8192),
                  (16, 1, 8192, 1024), (16, 128, 8192, 1024), (16, 512, 8192, 1024),
                  (16, 1024, 8192, 1024), (16, 4096, 8192, 1024)]

CALLS_PER_GRAPH = 20
WARMUP_CALLS = 10
CLOCK_WARM_S = 0.3   # the SM clock idles at 345 MHz and needs a few hundred ms of load
PEER_WARM_S = 0.1    # autotuning and first-call set-up let the clock drop between peers
E4M3_MAX = 448.0
MAX_SETS = 64
OURS = ("f8gemm_preshuffled", "f8gemm_plain")  # rows of the C++ bench that are not peers


def one_line(exc):
    """The first line of an exception, without commas (it goes into a CSV field)."""
    text = str(exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    return f"{type(exc).__name__}: {first}".replace(",", ";")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", help="file of B,M,N,K lines ('#' comments)")
    p.add_argument("--csv", default="peers.csv", help="output CSV (default peers.csv)")
    p.add_argument("--append", action="store_true",
                   help="append rows to an existing CSV (e.g. bench.csv), no header or ceilings")
    p.add_argument("--baseline",
                   help="CSV of `f8gemm bench`: take BW and PEAK from its ceiling rows")
    p.add_argument("--iters", type=int, default=100,
                   help="timed calls per measurement (default 100)")
    p.add_argument("--precise", action="store_true", help="fast accumulation off")
    p.add_argument("--only", help="comma-separated subset of impl names to run")
    p.add_argument("--rotate-l2", type=float, default=2.0,
                   help="rotate input sets until consecutive calls span this many L2s (default 2)")
    return check_timing_args(p, p.parse_args(argv))


def check_timing_args(parser, args):
    """The ranges of --iters and --rotate-l2, which every bench script here takes."""
    if args.iters < 1:
        parser.error("--iters must be >= 1")
    if not 0.0 < args.rotate_l2 <= 64.0:  # also false for NaN
        parser.error("--rotate-l2 must be in (0, 64]")
    return args


def open_input(path):
    """An input file of a bench tool, or a SystemExit naming it and why it cannot be read."""
    try:
        return open(path, newline="")
    except OSError as e:
        raise SystemExit(f"{path}: cannot read it: {e.strerror or e}")


def check_output(path, kind="CSV"):
    """A SystemExit naming `path` where an output file (a `kind` file) cannot be written there.
    The tools check their inputs and outputs before any GPU work, so that a wrong path costs no
    device time."""
    if os.path.isdir(path):
        raise SystemExit(f"{path}: is a directory, not a {kind} file")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise SystemExit(f"{path}: cannot write it: no directory {folder}")
    target = path if os.path.exists(path) else folder
    if not os.access(target, os.W_OK):
        raise SystemExit(f"{path}: cannot write it: permission denied")


def read_shapes(path):
    shapes = []
    with open_input(path) as f:
        for line_no, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = [x.strip() for x in line.split(",")]
            if len(fields) != 4:
                raise SystemExit(f"{path}:{line_no}: want B,M,N,K, got '{line}'")
            try:
                shape = tuple(int(x) for x in fields)
            except ValueError:
                raise SystemExit(f"{path}:{line_no}: not integers: '{line}'")
            if min(shape) < 1:
                raise SystemExit(f"{path}:{line_no}: every dimension must be >= 1: '{line}'")
            shapes.append(shape)
    if not shapes:
        raise SystemExit(f"no shapes in {path}")
    return shapes


def read_ceilings(path):
    bw = peak = None
    with open_input(path) as f:
        for row in csv.DictReader(f):
            if row.get("impl") == "ceiling_bw" and row.get("tbps"):
                bw = float(row["tbps"])
            elif row.get("impl") == "ceiling_peak" and row.get("tflops"):
                peak = float(row["tflops"])
    if bw is None or peak is None:
        raise SystemExit(f"{path}: no ceiling_bw/ceiling_peak rows with numbers")
    return bw, peak


def read_graph_times(path):
    """{(b, m, n, k): {impl: graph_us}} from the rows of a bench CSV that ran (status "ok")."""
    times = {}
    with open_input(path) as f:
        for row in csv.DictReader(f):
            if (row.get("status") or "").strip() != "ok":
                continue
            try:
                shape = tuple(int(row[c]) for c in ("b", "m", "n", "k"))
                us = float(row["graph_us"])
            except (KeyError, TypeError, ValueError):
                continue
            if math.isfinite(us):
                times.setdefault(shape, {})[(row.get("impl") or "").strip()] = us
    return times


def best_peer(times):
    """(impl, graph_us) of the fastest peer in {impl: graph_us}, or None; ours are no peers."""
    peers = [(us, impl) for impl, us in times.items() if impl not in OURS and us is not None]
    if not peers:
        return None
    us, impl = min(peers)
    return impl, us


def table_cell(result, idx, floor_us):
    """A (host_us, graph_us) result as 'us (x floor)'; a row that did not run as its status word
    ('unsupported', 'unavailable', 'error'); '-' where nothing was measured."""
    if isinstance(result, tuple):
        return f"{result[idx]:.1f} ({result[idx] / floor_us:.2f})"
    if not result:
        return "-"
    return result.split(":", 1)[0]


def load_fbgemm(torch):
    """(torch.ops.fbgemm, version) once FBGEMM gen_ai is imported, else (None, why not). The
    import registers the ops; a missing package, a build for another torch or a missing op all
    end here, so that the FBGEMM rows say "unavailable" and the other peers still run."""
    try:
        import fbgemm_gpu
        import fbgemm_gpu.experimental.gen_ai  # noqa: F401 - registers torch.ops.fbgemm.*
        ops = torch.ops.fbgemm
        for name in ("f8f8bf16_rowwise", "f8f8bf16_rowwise_batched"):
            getattr(ops, name)  # raises where this build lacks the op
        return ops, str(getattr(fbgemm_gpu, "__version__", "unknown version"))
    except Exception as exc:  # noqa: BLE001 - any failure to load means "unavailable"
        return None, one_line(exc)


def shape_cost(shape, bw_tbps, peak_tflops):
    b, m, n, k = shape
    nbytes = b * m * k + b * n * k + 2 * b * m * n + 4 * b * m + 4 * b * n
    flops = 2.0 * b * m * n * k
    floor_us = max(nbytes / (bw_tbps * 1e12), flops / (peak_tflops * 1e12)) * 1e6
    return nbytes, flops, floor_us


def fmt(v, spec):
    if v is None:
        return ""
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return format(v, spec)


class CsvOut:
    """Writes and flushes one row at a time, so a run cut short keeps what it measured."""

    def __init__(self, path, append):
        exists = os.path.exists(path) and os.path.getsize(path) > 0
        self.f = open(path, "a" if append else "w", newline="")
        self.w = csv.writer(self.f)
        self.write_ceilings = not (append and exists)
        if self.write_ceilings:
            self.w.writerow(COLUMNS)
            self.f.flush()

    def row(self, fields):
        assert len(fields) == len(COLUMNS), fields
        self.w.writerow([str(x).replace(",", ";") for x in fields])
        self.f.flush()

    def result(self, impl, shape, status, host_us, graph_us, cost):
        nbytes, flops, floor_us = cost
        host_ratio = host_us / floor_us if host_us is not None else None
        graph_ratio = tflops = tbps = None
        if graph_us is not None:
            graph_ratio = graph_us / floor_us
            tflops = flops / (graph_us * 1e-6) / 1e12
            tbps = nbytes / (graph_us * 1e-6) / 1e12
        if status != "ok":
            floor_us = None  # rows that did not run carry no numbers, the floor included
        self.row([impl, *shape, status, fmt(host_us, ".2f"), fmt(graph_us, ".2f"),
                  fmt(floor_us, ".2f"), fmt(host_ratio, ".3f"), fmt(graph_ratio, ".3f"),
                  fmt(tflops, ".1f"), fmt(tbps, ".3f"), ""])


# ---------------------------------------------------------------- timing helpers
# Module level, so that other benchmarks (bench/grouped_peers.py) time the same way.

_side_stream = None


def sync():
    import torch
    torch.cuda.synchronize()


def run_for(fn, seconds):
    """Calls fn in doubling batches until `seconds` have passed (clock warm-up)."""
    t0 = time.perf_counter()
    batch = 1
    while True:
        b0 = time.perf_counter()
        for _ in range(batch):
            fn()
        sync()
        now = time.perf_counter()
        if now - t0 >= seconds:
            return
        if now - b0 < 0.01 and batch < 65536:
            batch *= 2


def time_host_us(fn, iters):
    """us per call of `iters` back-to-back calls between two CUDA events, after a warm-up."""
    import torch
    for _ in range(WARMUP_CALLS):
        fn()
    sync()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000.0 / iters


def capture(fn, calls):
    """A CUDA graph of `calls` calls of fn, after a side-stream warm-up (as torch.cuda.graphs
    recommends)."""
    import torch
    global _side_stream
    if _side_stream is None:
        _side_stream = torch.cuda.Stream()
    _side_stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side_stream):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(_side_stream)
    sync()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    sync()
    return g


def time_graph_us(g, calls, iters):
    """Median us per call over replays of a graph of `calls` calls (at least 3 replays)."""
    import torch
    for _ in range(2):
        g.replay()
    sync()
    replays = max(3, -(-iters // calls))
    events = []
    for _ in range(replays):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        g.replay()
        e.record()
        events.append((s, e))
    sync()
    return statistics.median(s.elapsed_time(e) * 1000.0 / calls for s, e in events)


def quantize_rows(t):
    """(e4m3 codes, fp32 dequantisation scales [...]) of t [..., K], per row."""
    import torch
    amax = t.abs().amax(dim=-1, keepdim=True).float().clamp_min(1e-12)
    scale = amax / E4M3_MAX
    q = (t / scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
    return q, scale.squeeze(-1).contiguous()


def ceilings(dev, iters, baseline=None, read=None):
    """(BW TB/s, PEAK TFLOP/s) after >= CLOCK_WARM_S of clock warm-up: from the ceiling rows of
    a C++ bench CSV (baseline; `read`: its read_ceilings, where the caller checked it before any
    GPU work), else measured: a 4 GiB device copy (read + write) and torch._scaled_mm
    tensorwise at 8192^3 under a CUDA graph."""
    import torch
    torch.manual_seed(0)
    sq = 8192
    pa, _ = quantize_rows(torch.randn(sq, sq, device=dev) * 0.1)
    pb, _ = quantize_rows(torch.randn(sq, sq, device=dev) * 0.01)
    one = torch.ones((), device=dev, dtype=torch.float32)
    peak_fn = lambda: torch._scaled_mm(pa, pb.t(), scale_a=one, scale_b=one,
                                       out_dtype=torch.bfloat16, use_fast_accum=True)
    run_for(peak_fn, CLOCK_WARM_S)
    if baseline:
        bw, peak = read if read is not None else read_ceilings(baseline)
        print(f"ceilings from {baseline}: BW {bw:.3f} TB/s, PEAK {peak:.1f} TFLOP/s")
    else:
        nbytes = 4 << 30
        src = torch.empty(nbytes, dtype=torch.uint8, device=dev).fill_(0x5A)
        dst = torch.empty_like(src)
        dst.copy_(src)
        rates = []
        for _ in range(5):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            dst.copy_(src)
            e.record()
            e.synchronize()
            rates.append(2 * nbytes / (s.elapsed_time(e) * 1e-3) / 1e12)
        bw = statistics.median(rates)
        del src, dst
        g = capture(peak_fn, CALLS_PER_GRAPH)
        peak_us = time_graph_us(g, CALLS_PER_GRAPH, iters)
        del g
        peak = 2.0 * sq ** 3 / (peak_us * 1e-6) / 1e12
        print(f"ceilings measured: BW {bw:.3f} TB/s (copy), PEAK {peak:.1f} TFLOP/s "
              "(torch._scaled_mm tensorwise 8192^3, fast accum, graph)")
    del pa, pb
    torch.cuda.empty_cache()
    return bw, peak


def cuda_device(tool):
    """(torch, the CUDA device, its properties, its L2 bytes); a SystemExit naming `tool` where
    there is none."""
    import torch
    if not torch.cuda.is_available():
        raise SystemExit(f"{tool}: no CUDA device")
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    return torch, dev, props, int(getattr(props, "L2_cache_size", 60 * 1024 * 1024))


def triton_rowwise_bmm(fast):
    """The Triton peer: an autotuned FP8 rowwise batched kernel (grid-y over the batch), as a
    callable run(x [B;M;K], w [B;N;K], xs [B;M], ws [B;N], y [B;M;N]) with fast accumulation or
    a promotion every BLOCK_K (fast=False). run.kernel is the autotuned kernel (best_config).
    One definition for peers.py and sustained_clock.py."""
    import triton
    import triton.language as tl

    configs = []
    # (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages): large tiles for prefill; 64-row and 32-row
    # tiles with deep K pipelines for decode, where only W's stream matters.
    for bm, bn, bk, warps, stages in [(128, 256, 128, 8, 3), (256, 128, 128, 8, 3),
                                      (128, 128, 128, 8, 4), (128, 64, 128, 4, 4),
                                      (64, 128, 128, 4, 4), (64, 256, 128, 8, 4),
                                      (64, 64, 256, 4, 4), (32, 64, 256, 4, 5)]:
        configs.append(triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                                     num_warps=warps, num_stages=stages))

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.heuristics({"EVEN_K": lambda a: a["K"] % a["BLOCK_K"] == 0})
    @triton.jit
    def fp8_rowwise_bmm(x_ptr, w_ptr, xs_ptr, ws_ptr, y_ptr, M, N, K,
                        stride_xb, stride_xm, stride_wb, stride_wn, stride_yb, stride_ym,
                        FAST_ACCUM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
        pid = tl.program_id(0)
        bat = tl.program_id(1).to(tl.int64)
        num_m = tl.cdiv(M, BLOCK_M)
        num_n = tl.cdiv(N, BLOCK_N)
        # Grouped rasterisation: GROUP_M row-tiles share each W column-tile while it is in L2.
        per_group = GROUP_M * num_n
        first_m = (pid // per_group) * GROUP_M
        group_m = min(num_m - first_m, GROUP_M)
        pid_m = first_m + (pid % per_group) % group_m
        pid_n = (pid % per_group) // group_m
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = x_ptr + bat * stride_xb + offs_m[:, None] * stride_xm + offs_k[None, :]
        # W[b] is [N, K] row-major: read as [BLOCK_K, BLOCK_N] with K contiguous (K-major, the
        # operand layout FP8 wgmma wants).
        b_ptrs = w_ptr + bat * stride_wb + offs_n[None, :] * stride_wn + offs_k[:, None]
        m_ok = offs_m[:, None] < M
        n_ok = offs_n[None, :] < N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kb in range(0, tl.cdiv(K, BLOCK_K)):
            if EVEN_K:
                a = tl.load(a_ptrs, mask=m_ok, other=0.0)
                b = tl.load(b_ptrs, mask=n_ok, other=0.0)
            else:
                k_left = K - kb * BLOCK_K
                a = tl.load(a_ptrs, mask=m_ok & (offs_k[None, :] < k_left), other=0.0)
                b = tl.load(b_ptrs, mask=n_ok & (offs_k[:, None] < k_left), other=0.0)
            if FAST_ACCUM:
                acc = tl.dot(a, b, acc)
            else:
                # Two-level accumulation: each BLOCK_K-deep product is promoted into fp32.
                acc += tl.dot(a, b)
            a_ptrs += BLOCK_K
            b_ptrs += BLOCK_K
        xs = tl.load(xs_ptr + bat * M + offs_m, mask=offs_m < M, other=0.0)
        ws = tl.load(ws_ptr + bat * N + offs_n, mask=offs_n < N, other=0.0)
        out = acc * xs[:, None] * ws[None, :]
        y_ptrs = y_ptr + bat * stride_yb + offs_m[:, None] * stride_ym + offs_n[None, :]
        tl.store(y_ptrs, out.to(tl.bfloat16), mask=m_ok & n_ok)

    def triton_bmm(x, w, xs, ws, y):
        bsz, m, k = x.shape
        n = w.shape[1]
        grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]), bsz)
        fp8_rowwise_bmm[grid](x, w, xs, ws, y, m, n, k, x.stride(0), x.stride(1), w.stride(0),
                              w.stride(1), y.stride(0), y.stride(1), FAST_ACCUM=fast)

    triton_bmm.kernel = fp8_rowwise_bmm
    return triton_bmm


def main(argv):
    args = parse_args(argv)
    # Every input and the output, before any GPU work.
    shapes = read_shapes(args.shapes) if args.shapes else list(DEFAULT_SHAPES)
    baseline_times = read_graph_times(args.baseline) if args.baseline else {}
    baseline_ceilings = read_ceilings(args.baseline) if args.baseline else None
    check_output(args.csv)
    torch, dev, props, l2_bytes = cuda_device("peers.py")
    import triton

    fast = not args.precise
    only = set(args.only.split(",")) if args.only else None
    fbgemm, fbgemm_about = load_fbgemm(torch)
    print(f"device: {props.name}, {props.multi_processor_count} SMs, L2 {l2_bytes} bytes; "
          f"torch {torch.__version__}, triton {triton.__version__}; fast_accum {fast}")
    print(f"FBGEMM gen_ai: {fbgemm_about}" if fbgemm is not None
          else f"FBGEMM gen_ai: unavailable ({fbgemm_about})")
    # Peers whose package is missing: their rows carry this status and nothing is tried.
    unavailable = {}
    if fbgemm is None:
        for impl in ("fbgemm_rowwise", "fbgemm_rowwise_batched"):
            unavailable[impl] = "unavailable: " + fbgemm_about

    triton_bmm = triton_rowwise_bmm(fast)

    bw, peak = ceilings(dev, args.iters, args.baseline, baseline_ceilings)

    out = CsvOut(args.csv, args.append)
    if out.write_ceilings:
        out.row(["ceiling_bw", "", "", "", "", "", "", "", "", "", "", "", fmt(bw, ".3f"), ""])
        out.row(["ceiling_peak", "", "", "", "", "", "", "", "", "", "", fmt(peak, ".1f"), "", ""])

    # ---------------------------------------------------------------- per shape
    summary = []
    for shape in shapes:
        bsz, m, n, k = shape
        cost = shape_cost(shape, bw, peak)
        label = f"{bsz},{m},{n},{k}"
        torch.manual_seed(hash(shape) & 0xFFFFFFFF)
        x, xs = quantize_rows(torch.randn(bsz, m, k, device=dev) * 0.1)
        w, ws = quantize_rows(torch.randn(bsz, n, k, device=dev) * 0.01)
        in_bytes = x.numel() + w.numel() + 4 * (xs.numel() + ws.numel())
        nsets = max(1, min(MAX_SETS, -(-math.ceil(args.rotate_l2 * l2_bytes) // in_bytes)))
        sets = [(x, w, xs, ws)] + [(x.clone(), w.clone(), xs.clone(), ws.clone())
                                   for _ in range(nsets - 1)]
        per_graph = (-(-CALLS_PER_GRAPH // nsets) * nsets if nsets <= CALLS_PER_GRAPH else nsets)
        y = torch.empty(bsz, m, n, dtype=torch.bfloat16, device=dev)
        # fp64 reference of batch 0 from the dequantised inputs.
        ref = ((x[0].double() @ w[0].double().t())
               * xs[0].double()[:, None] * ws[0].double()[None, :])
        ref_norm = ref.norm().item()
        print(f"{label}: floor {cost[2]:.2f} us, {nsets} input set(s) "
              f"(rotation over {args.rotate_l2:g} x the L2)")

        def scaled_mm_loop_out(i):
            xi, wi, xsi, wsi = sets[i]
            for bi in range(bsz):
                torch._scaled_mm(xi[bi], wi[bi].t(), scale_a=xsi[bi].unsqueeze(1),
                                 scale_b=wsi[bi].unsqueeze(0), out_dtype=torch.bfloat16,
                                 use_fast_accum=fast, out=y[bi])
            return y

        def scaled_mm_loop_alloc(i):
            xi, wi, xsi, wsi = sets[i]
            return [torch._scaled_mm(xi[bi], wi[bi].t(), scale_a=xsi[bi].unsqueeze(1),
                                     scale_b=wsi[bi].unsqueeze(0), out_dtype=torch.bfloat16,
                                     use_fast_accum=fast) for bi in range(bsz)]

        def grouped(call):
            def run(i):
                xi, wi, xsi, wsi = sets[i]
                return call(xi, wi.transpose(-2, -1), xsi, wsi)
            return run

        def triton_call(i):
            xi, wi, xsi, wsi = sets[i]
            triton_bmm(xi, wi, xsi, wsi, y)
            return y

        # FBGEMM gen_ai: XQ [M;K] or [B;M;K], WQ [N;K] or [B;N;K] (both K-contiguous, as ours),
        # fp32 scales [M] [N] or [B;M] [B;N]; bf16 out. `fbgemm` is only read when a call runs.
        def fbgemm_loop_out(i):
            xi, wi, xsi, wsi = sets[i]
            for bi in range(bsz):
                fbgemm.f8f8bf16_rowwise_out(xi[bi], wi[bi], xsi[bi], wsi[bi], y[bi],
                                            use_fast_accum=fast)
            return y

        def fbgemm_loop_alloc(i):
            xi, wi, xsi, wsi = sets[i]
            return [fbgemm.f8f8bf16_rowwise(xi[bi], wi[bi], xsi[bi], wsi[bi], use_fast_accum=fast)
                    for bi in range(bsz)]

        def fbgemm_batched_out(i):
            xi, wi, xsi, wsi = sets[i]
            return fbgemm.f8f8bf16_rowwise_batched(xi, wi, xsi, wsi, use_fast_accum=fast,
                                                   output=y)

        def fbgemm_batched_alloc(i):
            xi, wi, xsi, wsi = sets[i]
            return fbgemm.f8f8bf16_rowwise_batched(xi, wi, xsi, wsi, use_fast_accum=fast)

        # Each peer lists spellings to try in order; the first that runs is timed. Keyword names
        # and scale shapes of the private torch ops have moved between releases, so 2.11's
        # spelling comes first and older ones follow.
        peers = [
            ("torch_scaled_mm_loop", [("out=y[b]", scaled_mm_loop_out),
                                      ("allocating", scaled_mm_loop_alloc)]),
            ("torch_scaled_grouped_mm", [
                ("keywords; scales [B;M] [B;N]", grouped(
                    lambda a, b, sa, sb: torch._scaled_grouped_mm(
                        a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast))),
                ("positional; scales [B;M] [B;N]", grouped(
                    lambda a, b, sa, sb: torch._scaled_grouped_mm(
                        a, b, sa, sb, None, None, None, torch.bfloat16, fast))),
                ("keywords; flat scales", grouped(
                    lambda a, b, sa, sb: torch._scaled_grouped_mm(
                        a, b, sa.reshape(-1), sb.reshape(-1), out_dtype=torch.bfloat16,
                        use_fast_accum=fast))),
            ]),
            ("triton", [("grid-y over batch", triton_call)]),
            ("fbgemm_rowwise", [("rowwise_out into y[b]", fbgemm_loop_out),
                                ("rowwise; allocating", fbgemm_loop_alloc)]),
            ("fbgemm_rowwise_batched", [("batched; output=y", fbgemm_batched_out),
                                        ("batched; allocating", fbgemm_batched_alloc)]),
        ]
        # Per impl: (host_us, graph_us), or the status of a row that did not run.
        results = {}
        for impl, variants in peers:
            names = [impl] + (["torch_scaled_mm_graph"] if impl == "torch_scaled_mm_loop" else [])
            if only is not None and not any(nm in only for nm in names):
                continue
            if impl in unavailable:
                print(f"    {impl}: {unavailable[impl]}")
                for nm in names:
                    out.result(nm, shape, unavailable[impl], None, None, cost)
                    results[nm] = unavailable[impl]
                continue
            # First call: a refusal of the input is "unsupported"; a failure later is "error".
            call = None
            errors = []
            for variant, variant_call in variants:
                try:
                    y.fill_(float("nan"))  # poison: an element left unwritten stays NaN
                    res = variant_call(0)
                    sync()
                    call = variant_call
                    break
                except Exception as exc:  # noqa: BLE001 - the op's refusal is the answer
                    errors.append(exc)
            if call is None:
                status = "unsupported: " + one_line(errors[0])
                print(f"    {impl}: {status}")
                for nm in names:
                    out.result(nm, shape, status, None, None, cost)
                    results[nm] = status
                continue
            outs = res if isinstance(res, list) else [res]
            finite = all(bool(torch.isfinite(t).all().item()) for t in outs)
            got = res[0].double()
            err = (got - ref).norm().item() / ref_norm if ref_norm > 0 else float("nan")
            extra = ""
            if impl == "triton":
                extra = f" config {triton_bmm.kernel.best_config}"
            print(f"    {impl} ({variant}): rel RMS error vs fp64 (batch 0) {err:.3e}{extra}"
                  + ("" if finite else "  WARNING: non-finite outputs (unwritten or overflow)"))
            del res, outs, got
            written = set()
            try:
                counter = [0]

                def fn():
                    i = counter[0] % nsets
                    counter[0] += 1
                    call(i)

                run_for(fn, PEER_WARM_S)
                host_us = time_host_us(fn, args.iters)
                g = capture(fn, per_graph)
                graph_us = time_graph_us(g, per_graph, args.iters)
                del g
                out.result(impl, shape, "ok", host_us, graph_us, cost)
                written.add(impl)
                results[impl] = (host_us, graph_us)
                print(f"    {impl}: host {host_us:.2f} us, graph {graph_us:.2f} us "
                      f"({graph_us / cost[2]:.2f}x floor)")
                if impl == "torch_scaled_mm_loop":
                    # What a caller who wraps one loop in a graph sees from the host.
                    g1 = capture(fn, nsets)
                    host_graph_us = time_host_us(g1.replay, args.iters) / nsets
                    del g1
                    out.result("torch_scaled_mm_graph", shape, "ok", host_graph_us, graph_us, cost)
                    written.add("torch_scaled_mm_graph")
                    results["torch_scaled_mm_graph"] = (host_graph_us, graph_us)
                    print(f"    torch_scaled_mm_graph: host {host_graph_us:.2f} us")
            except Exception as exc:  # noqa: BLE001 - report, do not crash the run
                status = "error: " + one_line(exc)
                print(f"    {impl}: {status}")
                try:
                    sync()
                except Exception:  # noqa: BLE001 - a broken context shows in every later row
                    pass
                for nm in names:
                    if nm not in written:
                        out.result(nm, shape, status, None, None, cost)
                        results[nm] = status
            torch.cuda.empty_cache()
        summary.append((shape, label, cost[2], results))
        del sets, x, w, xs, ws, y, ref
        torch.cuda.empty_cache()

    # us per call (x floor): host time for the two loop rows (their kernels are the same graph),
    # graph-replay time for the one-launch peers and for FBGEMM.
    columns = [("scaled_mm loop host", "torch_scaled_mm_loop", 0),
               ("scaled_mm graph host", "torch_scaled_mm_graph", 0),
               ("scaled_mm kernels", "torch_scaled_mm_loop", 1),
               ("grouped_mm graph", "torch_scaled_grouped_mm", 1),
               ("triton graph", "triton", 1),
               ("fbgemm rowwise graph", "fbgemm_rowwise", 1),
               ("fbgemm batched graph", "fbgemm_rowwise_batched", 1)]
    print("\nus per call (x floor)")
    print(f"{'B,M,N,K':<18} {'floor_us':>9}  " + "  ".join(f"{c[0]:>21}" for c in columns))
    for _, label, floor_us, results in summary:
        cells = [table_cell(results.get(impl), idx, floor_us) for _, impl, idx in columns]
        print(f"{label:<18} {floor_us:>9.2f}  " + "  ".join(f"{c:>21}" for c in cells))

    # The fastest peer by graph-replay time: every peer above (FBGEMM included) and, with
    # --baseline, the C++ bench's cuBLASLt rows; ours from the baseline beside it.
    print("\nbest peer, graph replay, us per call (x floor)"
          + ("; ours = f8gemm_preshuffled from " + args.baseline if args.baseline else ""))
    print(f"{'B,M,N,K':<18} {'best peer':<24} {'graph_us':>16}"
          + (f" {'ours':>16} {'ours/best':>9}" if args.baseline else ""))
    for shape, label, floor_us, results in summary:
        times = {impl: v[1] for impl, v in results.items() if isinstance(v, tuple)}
        base = baseline_times.get(shape, {})
        times.update({impl: us for impl, us in base.items() if impl not in times})
        best = best_peer(times)
        name, best_cell = ("-", "-") if best is None else (
            best[0], f"{best[1]:.1f} ({best[1] / floor_us:.2f})")
        line = f"{label:<18} {name:<24} {best_cell:>16}"
        if args.baseline:
            ours = base.get(OURS[0])
            line += f" {table_cell((0.0, ours) if ours else None, 1, floor_us):>16}"
            line += f" {ours / best[1]:>9.2f}" if (ours and best) else f" {'-':>9}"
        print(line)
    print(f"csv: {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
