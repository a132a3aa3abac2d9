#!/usr/bin/env python3
"""Grouped (mixture-of-experts) GEMM against its peers on the GPU, on the same inputs.

Cases: the issue's shapes (G, total_M, N, K) x {zipf, uniform} routing. The group sizes come
from a seeded top-k routing (top-2 for G <= 8, as Mixtral; top-8 above, as Qwen3-MoE and
DeepSeek-V3): total_M / top_k tokens each pick top_k distinct experts, uniformly or with
Zipf-skewed expert popularity (p ~ rank^-s over a seeded expert order). Each case prints its
sizes, and the CSV keeps them.

Rows per case, Y[rows of g] = bf16(xs (x) ws[g] * X[rows of g] @ W[g]^T):
  f8gemm_preshuffled       torch.ops.f8gemm.f8f8bf16_rowwise_grouped_stacked_preshuffled
  f8gemm_plain             torch.ops.f8gemm.f8f8bf16_rowwise_grouped_stacked (W [G, N, K])
  fbgemm_grouped_stacked   torch.ops.fbgemm.f8f8bf16_rowwise_grouped_stacked (FBGEMM gen_ai,
                           fbgemm-gpu-genai 1.6.0, the torch 2.11 build; int64 M_sizes; it has
                           no use_fast_accum argument)
  torch_scaled_grouped_mm  torch._scaled_grouped_mm(X [total_M, K], W^T [G, K, N] (a column-major
                           view of W), scale_a [total_M], scale_b [G, N], offs = the int32
                           cumulative end offsets of the groups)
  fbgemm_triton_grouped    FBGEMM gen_ai's Triton grouped GEMM (fbgemm_gpu.experimental.gemm.
                           triton_gemm.grouped_gemm.grouped_gemm_fp8_rowwise: W as [G * N, K],
                           int32 sizes, persistent over the SMs, autotuned on the first call),
                           without warp specialisation, which needs Meta's Triton fork; the
                           issue's "grouped Triton kernel" peer, written by FBGEMM's authors
The issue's target sets ours against the best of fbgemm_grouped_stacked and
torch_scaled_grouped_mm (TARGET_PEERS); the Triton peer gets a column of its own.
Every implementation gets the same X, W, scales and sizes (random data), and each is checked
against an fp64 reference on a subset (the largest and the smallest non-empty group, at most 128
rows and 2048 columns of each). The rounds interleave the implementations case by case.

Timing: peers.py's helpers (clock warm-up, CUDA-graph replay of 20 calls, median over replays);
the reported time is the median over --rounds. floor = max(bytes / BW, flops / PEAK) where the
weight bytes (and w_scale's) count only the experts that received at least one token; BW and
PEAK are measured in the run (a 4 GiB copy; torch._scaled_mm at 8192^3) or taken from the C++
bench's ceiling rows with --baseline.

Usage (on the GPU machine):
  python3 bench/grouped_peers.py --csv grouped.csv [--routing zipf uniform] [--rounds 3]
"""

import argparse
import csv
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import peers  # noqa: E402  (bench/peers.py: timing helpers, ceilings, FBGEMM loading)

# The shapes (G, total_M, N, K): decode-like (total_M <= 1024) and prefill-like.
DEFAULT_SHAPES = [(8, 64, 28672, 4096), (8, 2048, 28672, 4096), (8, 16384, 28672, 4096),
                  (8, 2048, 4096, 14336), (64, 512, 4096, 7168), (64, 8192, 4096, 7168),
                  (128, 1024, 1536, 2048), (128, 16384, 1536, 2048)]
ROUTINGS = ("zipf", "uniform")
IMPLS = ("f8gemm_preshuffled", "f8gemm_plain", "fbgemm_grouped_stacked", "torch_scaled_grouped_mm",
         "fbgemm_triton_grouped")
OURS = ("f8gemm_preshuffled", "f8gemm_plain")
TARGET_PEERS = ("fbgemm_grouped_stacked", "torch_scaled_grouped_mm")  # issue 9's "best peer"
COLUMNS = ["impl", "routing", "g", "total_m", "n", "k", "active_groups", "status", "graph_us",
           "floor_us", "graph_ratio", "tflops", "tbps", "rel_err", "sizes"]
CHECK_ROWS, CHECK_COLS = 128, 2048


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", action="append", metavar="G,TOTAL_M,N,K",
                   help="a case shape (repeatable; default: the issue's eight)")
    p.add_argument("--routing", nargs="+", choices=ROUTINGS, default=list(ROUTINGS))
    p.add_argument("--zipf-s", type=float, default=1.2, help="Zipf exponent (default 1.2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--csv", default="grouped_peers.csv", help="output CSV")
    p.add_argument("--baseline", help="CSV of `f8gemm bench`: take BW and PEAK from its ceilings")
    p.add_argument("--iters", type=int, default=100, help="timed calls per measurement")
    p.add_argument("--rounds", type=int, default=3,
                   help="interleaved rounds over the implementations (median reported)")
    p.add_argument("--precise", action="store_true",
                   help="fast accumulation off (ours, torch, the Triton peer)")
    p.add_argument("--only", help="comma-separated subset of impl names")
    args = p.parse_args(argv)
    shapes = []
    for text in args.shape or []:
        try:
            shape = tuple(int(v) for v in text.split(","))
        except ValueError:
            p.error(f"--shape {text!r}: want G,TOTAL_M,N,K integers")
        if len(shape) != 4 or min(shape) < 1:
            p.error(f"--shape {text!r}: want four positive integers G,TOTAL_M,N,K")
        shapes.append(shape)
    args.shapes = shapes or list(DEFAULT_SHAPES)
    if args.iters < 1 or args.rounds < 1:
        p.error("--iters and --rounds must be >= 1")
    return args


def top_k_for(groups):
    return 2 if groups <= 8 else 8


def routing_sizes(groups, total_m, routing, seed, zipf_s):
    """Rows per expert of a seeded top-k routing of total_M / top_k tokens (a total_M that top_k
    does not divide gets its remainder from extra single picks)."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    top_k = min(top_k_for(groups), groups)
    if routing == "uniform":
        p = torch.ones(groups, dtype=torch.float64)
    else:
        p = torch.arange(1, groups + 1, dtype=torch.float64) ** -zipf_s
        p = p[torch.randperm(groups, generator=gen)]  # the popular experts are any experts
    tokens, extra = divmod(total_m, top_k)
    picks = [torch.multinomial(p.expand(tokens, groups), top_k, replacement=False,
                               generator=gen).flatten()] if tokens else []
    if extra:
        picks.append(torch.multinomial(p, extra, replacement=False, generator=gen))
    chosen = torch.cat(picks) if picks else torch.zeros(0, dtype=torch.int64)
    return torch.bincount(chosen, minlength=groups).tolist()


def grouped_cost(shape, sizes, bw_tbps, peak_tflops):
    """(bytes, flops, floor_us): X, its scales and Y in full; W and w_scale of active experts."""
    g, total_m, n, k = shape
    active = sum(1 for s in sizes if s > 0)
    nbytes = total_m * k + 4 * total_m + 2 * total_m * n + active * (n * k + 4 * n) + 8 * g
    flops = 2.0 * total_m * n * k
    floor_us = max(nbytes / (bw_tbps * 1e12), flops / (peak_tflops * 1e12)) * 1e6
    return nbytes, flops, floor_us


def make_inputs(shape, sizes, seed):
    """Random quantised X [total_M, K], W [G, N, K] (built one expert at a time to bound the
    temporaries), their scales, int64 sizes and int32 end offsets, on the GPU."""
    import torch
    g, total_m, n, k = shape
    torch.manual_seed(seed)
    x, xs = peers.quantize_rows(torch.randn(total_m, k, device="cuda", dtype=torch.bfloat16) * 0.1)
    w = torch.empty(g, n, k, dtype=torch.float8_e4m3fn, device="cuda")
    ws = torch.empty(g, n, dtype=torch.float32, device="cuda")
    for e in range(g):
        w[e], ws[e] = peers.quantize_rows(
            torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.01)
    sizes64 = torch.tensor(sizes, dtype=torch.int64, device="cuda")
    offs = torch.cumsum(sizes64, 0).to(torch.int32)
    return x, w, xs, ws, sizes64, offs


def check_subset(y, x, w, xs, ws, sizes):
    """Relative RMS error against fp64 on the largest and the smallest non-empty group (at most
    CHECK_ROWS rows and CHECK_COLS columns of each)."""
    starts = [0]
    for s in sizes:
        starts.append(starts[-1] + s)
    nonempty = [g for g, s in enumerate(sizes) if s > 0]
    groups = sorted({max(nonempty, key=lambda g: sizes[g]), min(nonempty, key=lambda g: sizes[g])})
    err2 = ref2 = 0.0
    for g in groups:
        rows = slice(starts[g], starts[g] + min(sizes[g], CHECK_ROWS))
        cols = slice(0, min(w.shape[1], CHECK_COLS))
        ref = ((x[rows].double() * xs[rows].double()[:, None])
               @ (w[g, cols].double() * ws[g, cols].double()[:, None]).t())
        err2 += (y[rows, cols].double() - ref).norm().item() ** 2
        ref2 += ref.norm().item() ** 2
    return math.sqrt(err2 / ref2) if ref2 > 0 else float("nan")


def load_triton_grouped():
    """(grouped_gemm_fp8_rowwise, None), or (None, why not): FBGEMM gen_ai's Triton grouped
    GEMM, imported only when a case runs it."""
    try:
        from fbgemm_gpu.experimental.gemm.triton_gemm.grouped_gemm import grouped_gemm_fp8_rowwise
    except Exception as exc:  # noqa: BLE001 - any import failure makes the peer unavailable
        return None, peers.one_line(exc)
    return grouped_gemm_fp8_rowwise, None


def implementations(torch, fbgemm, fast, x, w, wp, xs, ws, sizes64, offs, triton_grouped=None):
    """{impl: [spellings]}: callables returning Y on one case's inputs, tried in order (the first
    that runs is timed). Ours write into one preallocated output (the _out ops take
    use_fast_accum); the peers allocate theirs, which a CUDA graph replays for free."""
    ops = torch.ops.f8gemm
    y = torch.empty(x.shape[0], w.shape[1], dtype=torch.bfloat16, device=x.device)

    def ours_preshuffled():
        ops.f8f8bf16_rowwise_grouped_stacked_preshuffled_out(x, wp, xs, ws, sizes64, y, None, fast)
        return y

    def ours_plain():
        ops.f8f8bf16_rowwise_grouped_stacked_out(x, w, xs, ws, sizes64, y, None, fast)
        return y

    calls = {
        "f8gemm_preshuffled": [ours_preshuffled],
        "f8gemm_plain": [ours_plain],
        "torch_scaled_grouped_mm": [lambda: torch._scaled_grouped_mm(
            x, w.transpose(-2, -1), xs, ws, offs=offs, out_dtype=torch.bfloat16,
            use_fast_accum=fast)],
    }
    if fbgemm is not None:
        # FBGEMM's own benchmark passes x_scale as [total_M, 1]; [total_M] is tried first.
        calls["fbgemm_grouped_stacked"] = [
            lambda: fbgemm.f8f8bf16_rowwise_grouped_stacked(x, w, xs, ws, sizes64),
            lambda: fbgemm.f8f8bf16_rowwise_grouped_stacked(x, w, xs.unsqueeze(-1), ws, sizes64)]
    if triton_grouped is not None:
        g, n, k = w.shape
        w_flat, ws_flat, sizes32 = w.view(g * n, k), ws.view(g * n), sizes64.to(torch.int32)
        calls["fbgemm_triton_grouped"] = [lambda: triton_grouped(
            x, w_flat, sizes32, xs, ws_flat, use_fast_accum=fast, _use_warp_specialization=False)]
    return calls


def fmt(v, spec):
    return "" if v is None else format(v, spec)


def main(argv):
    args = parse_args(argv)
    # The baseline's ceilings and the output, before any GPU work.
    baseline_ceilings = peers.read_ceilings(args.baseline) if args.baseline else None
    peers.check_output(args.csv)
    torch, dev, props, _ = peers.cuda_device("grouped_peers.py")
    import f8gemm  # noqa: F401  (loads torch.ops.f8gemm)

    fast = not args.precise
    only = set(args.only.split(",")) if args.only else set(IMPLS)
    fbgemm, fbgemm_about = peers.load_fbgemm(torch)
    if fbgemm is not None and not hasattr(fbgemm, "f8f8bf16_rowwise_grouped_stacked"):
        fbgemm, fbgemm_about = None, "this build lacks f8f8bf16_rowwise_grouped_stacked"
    print(f"device: {props.name}, {props.multi_processor_count} SMs; torch {torch.__version__}; "
          f"fast_accum {fast}")
    print(f"FBGEMM gen_ai: {fbgemm_about}" if fbgemm is not None
          else f"FBGEMM gen_ai: unavailable ({fbgemm_about})")
    triton_grouped, triton_about = (load_triton_grouped() if "fbgemm_triton_grouped" in only
                                    else (None, "not asked for"))
    if "fbgemm_triton_grouped" in only:
        if triton_grouped is not None:
            import triton
            print(f"FBGEMM Triton grouped GEMM: imported (triton {triton.__version__})")
        else:
            print(f"FBGEMM Triton grouped GEMM: unavailable ({triton_about})")
    bw, peak = peers.ceilings(dev, args.iters, args.baseline, baseline_ceilings)

    with open(args.csv, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        summary = []
        for shape in args.shapes:
            for routing in args.routing:
                g, total_m, n, k = shape
                sizes = routing_sizes(g, total_m, routing, args.seed, args.zipf_s)
                nbytes, flops, floor_us = grouped_cost(shape, sizes, bw, peak)
                active = sum(1 for s in sizes if s > 0)
                label = f"{g},{total_m},{n},{k} {routing}"
                print(f"{label}: top-{min(top_k_for(g), g)}, {active} active experts, "
                      f"max {max(sizes)} rows; floor {floor_us:.2f} us; sizes {sizes}")
                x, w, xs, ws, sizes64, offs = make_inputs(shape, sizes, args.seed + 1)
                wp = torch.ops.f8gemm.preshuffle(w)
                calls = implementations(torch, fbgemm, fast, x, w, wp, xs, ws, sizes64, offs,
                                        triton_grouped)
                status, errors, times, chosen = {}, {}, {}, {}
                for impl in IMPLS:
                    if impl not in only:
                        continue
                    if impl not in calls:
                        status[impl] = "unavailable: " + (
                            triton_about if impl == "fbgemm_triton_grouped" else fbgemm_about)
                        continue
                    first_error = None
                    for call in calls[impl]:
                        try:
                            y = call()
                            peers.sync()
                            chosen[impl] = call
                            break
                        except Exception as exc:  # noqa: BLE001 - the refusal is the answer
                            first_error = first_error or exc
                    if impl not in chosen:
                        status[impl] = "unsupported: " + peers.one_line(first_error)
                        print(f"    {impl}: {status[impl]}")
                        continue
                    errors[impl] = check_subset(y, x, w, xs, ws, sizes)
                    status[impl] = "ok"
                    times[impl] = []
                    print(f"    {impl}: rel RMS error vs fp64 (subset) {errors[impl]:.3e}")
                    del y
                for _ in range(args.rounds):
                    for impl in list(times):
                        try:
                            peers.run_for(chosen[impl], peers.PEER_WARM_S)
                            graph = peers.capture(chosen[impl], peers.CALLS_PER_GRAPH)
                            times[impl].append(peers.time_graph_us(graph, peers.CALLS_PER_GRAPH,
                                                                   args.iters))
                            del graph
                        except Exception as exc:  # noqa: BLE001 - report, do not crash
                            status[impl] = "error: " + peers.one_line(exc)
                            del times[impl]
                            print(f"    {impl}: {status[impl]}")
                results = {impl: statistics.median(t) for impl, t in times.items()}
                for impl in IMPLS:
                    if impl not in status:
                        continue
                    us = results.get(impl)
                    writer.writerow([
                        impl, routing, g, total_m, n, k, active, status[impl].replace(",", ";"),
                        fmt(us, ".2f"), fmt(floor_us, ".2f"),
                        fmt(us / floor_us if us else None, ".3f"),
                        fmt(flops / (us * 1e-6) / 1e12 if us else None, ".1f"),
                        fmt(nbytes / (us * 1e-6) / 1e12 if us else None, ".3f"),
                        fmt(errors.get(impl), ".3e"), ";".join(str(s) for s in sizes)])
                    if us is not None:
                        print(f"    {impl}: graph {us:.2f} us ({us / floor_us:.2f}x floor)")
                f.flush()
                summary.append((label, floor_us, results, status))
                del x, w, wp, xs, ws, sizes64, offs, calls, chosen
                torch.cuda.empty_cache()

    print("\nCUDA-graph replay, us per call (x floor); ours = f8gemm_preshuffled; targets: "
          "ours/best <= 0.909 (1.1x faster; best of " + " and ".join(TARGET_PEERS) + "), "
          "ours/floor <= 1.15 where total_M <= 1024")
    head = f"{'G,total_M,N,K routing':<30} {'floor':>8}"
    head += "".join(f" {impl:>24}" for impl in IMPLS) + f" {'ours/best':>9} {'ours/floor':>10}"
    print(head)
    for label, floor_us, results, status in summary:
        cells = []
        for impl in IMPLS:
            if impl in results:
                cells.append(f"{results[impl]:.1f} ({results[impl] / floor_us:.2f})")
            else:
                cells.append(status.get(impl, "-").split(":", 1)[0])
        peer_times = [us for impl, us in results.items() if impl in TARGET_PEERS]
        ours = results.get(OURS[0])
        ratio_best = f"{ours / min(peer_times):.3f}" if ours and peer_times else "-"
        ratio_floor = f"{ours / floor_us:.2f}" if ours else "-"
        print(f"{label:<30} {floor_us:>8.1f}" + "".join(f" {c:>24}" for c in cells)
              + f" {ratio_best:>9} {ratio_floor:>10}")
    print(f"csv: {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
