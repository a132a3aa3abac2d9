#!/usr/bin/env python3
"""What fusing the activation quantisation into the GEMMs could buy in f8gemm.nn.FP8GatedMLP
(Llama 4096/14336) at decode sizes: CUDA-graph replay times of the block with parts of it left
out (their inputs made once, outside the graph), in interleaved rounds in one process.

  full      quantize_fp8_row(x), gate_up GEMM, silu_mul_quantize_fp8_row, down GEMM (the module)
  no_xq     x quantised outside the graph: gate_up GEMM, silu_mul_quantize, down GEMM
  no_hq     gate_up GEMM then the down GEMM on an intermediate quantised outside the graph
            (quantize_fp8_row(x) kept): the silu_mul_quantize left out
  gemms     the two GEMMs alone (both quantisations outside): the bound of a fusion of both
  bf16      the torch block

Every variant uses the module's own ops, PDL and prefetch_w as the module does. The numbers
printed are medians of graph replays (one forward per replay), per round, then the mean.

--placement N instead times one GEMM, 1,1,28672,4096 (the gate_up GEMM at M = 1; --impl: ours
preshuffled, ours on plain W, FBGEMM's f8f8bf16_rowwise),
at N places of one large buffer, 64 MiB apart, and offset 0 again at the end: with --place w
its weight moves, with --place out its output (the weight fixed), with --place same nothing
(each is a fresh graph capture), with --place rewrite the same bytes are written again to the
same place (then the L2 flushed on odd rows, a pause of a second on every fourth): what sets
the time's level within one process (perf log, cards 71 and 72). Each capture is also timed
as an eager loop.

    python3 bench/mlp_oracle.py [--m 1 16] [--rounds 3] [--iters 200]
                                [--placement N --place w|out|same|rewrite]
                                [--impl ours|ours_plain|fbgemm]
"""
import argparse
import os
import statistics
import time
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import f8gemm  # noqa: E402,F401  (loads the ops)
from f8gemm.nn import FP8GatedMLP  # noqa: E402
from llama_mlp import LlamaMLP, capture, time_eager_us  # noqa: E402

OPS = torch.ops.f8gemm


def variants(mod, bf16, x):
    """The block's variants at one M (see the module docstring), as closures of one forward."""
    pdl = mod.pdl
    gemm = OPS.f8f8bf16_rowwise_preshuffled
    xq, xs = OPS.quantize_fp8_row(x)
    gate_up = gemm(xq, mod.gate_up_weight, xs, mod.gate_up_scale, None, True)
    hq, hs = OPS.silu_mul_quantize_fp8_row(gate_up)

    def no_xq():
        gu = gemm(xq, mod.gate_up_weight, xs, mod.gate_up_scale, None, True, pdl=pdl,
                  prefetch_w=True)
        q, s = OPS.silu_mul_quantize_fp8_row(gu, None, pdl=pdl)
        return gemm(q, mod.down_weight, s, mod.down_scale, None, True, pdl=pdl, prefetch_w=True)

    def no_hq():
        q, s = OPS.quantize_fp8_row(x, None, pdl=pdl)
        gu = gemm(q, mod.gate_up_weight, s, mod.gate_up_scale, None, True, pdl=pdl,
                  prefetch_w=True)
        y = gemm(hq, mod.down_weight, hs, mod.down_scale, None, True, pdl=pdl, prefetch_w=True)
        return gu, y

    def gemms():
        gu = gemm(xq, mod.gate_up_weight, xs, mod.gate_up_scale, None, True, pdl=pdl,
                  prefetch_w=True)
        y = gemm(hq, mod.down_weight, hs, mod.down_scale, None, True, pdl=pdl, prefetch_w=True)
        return gu, y

    return {"full": lambda: mod(x), "no_xq": no_xq, "no_hq": no_hq, "gemms": gemms,
            "bf16": lambda: bf16(x)}


def oracle(args):
    torch.manual_seed(0)
    bf16 = LlamaMLP().eval()
    mod = FP8GatedMLP.from_module(bf16).eval()
    for m in args.m:
        x = torch.randn(m, 4096, device="cuda", dtype=torch.bfloat16)
        with torch.no_grad():
            fns = variants(mod, bf16, x)
            graphs = {k: capture(f, 3)[0] for k, f in fns.items()}
            times = {k: [] for k in graphs}
            for _ in range(args.rounds):
                for k, g in graphs.items():
                    times[k].append(time_eager_us(g.replay, 20, args.iters))
        print(f"M = {m}: graph replay, median of {args.iters} per round, us")
        for k, ts in times.items():
            mean = statistics.fmean(ts)
            rel = mean / statistics.fmean(times["full"])
            print(f"  {k:6s} {' '.join(f'{t:7.2f}' for t in ts)}   mean {mean:7.2f}"
                  f"   / full {rel:.3f}", flush=True)


def placement(args):
    """1,1,28672,4096 on one weight, its place moved (--place w), its output's place moved with
    the weight fixed (--place out), nothing moved and the graph captured again (--place same),
    or the same bytes written again in place before each capture (--place rewrite)."""
    torch.manual_seed(0)
    n, k = 28672, 4096
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    wq, ws = OPS.quantize_fp8_row(w)
    wsh = OPS.preshuffle(wq) if args.impl == "ours" else wq
    del w
    nbytes = wsh.numel()
    mib = 1 << 20
    span = args.placement * 64 * mib + nbytes
    buf = torch.empty(span, device="cuda", dtype=torch.uint8)
    out_buf = torch.empty(args.placement * 64 * mib // 2 + n, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(1, k, device="cuda", dtype=torch.bfloat16)
    xq, xs = OPS.quantize_fp8_row(x)
    offsets = [i * 64 for i in range(args.placement)] + [0]
    if args.impl == "fbgemm":
        import fbgemm_gpu.experimental.gen_ai  # noqa: F401  (registers torch.ops.fbgemm)
    print(f"1,1,{n},{k} {args.impl}, --place {args.place}: graph of 20 back-to-back calls, "
          f"median of {args.iters} replays / 20, us per call (3 rounds per capture)")
    fixed = buf[:nbytes].view(wsh.dtype).view(wsh.shape)
    fixed.copy_(wsh)
    for off in offsets:
        view = fixed
        if args.place == "w":
            view = buf[off * mib: off * mib + nbytes].view(wsh.dtype).view(wsh.shape)
            view.copy_(wsh)
        elif args.place == "rewrite":
            # The same bytes written again to the same place, then (odd rows) the L2 flushed
            # by a pass over a 512 MiB scratch buffer, or (every fourth) a one-second pause.
            fixed.copy_(wsh)
            if (off // 64) % 2 == 1:
                scratch = torch.empty(512 * mib, device="cuda", dtype=torch.uint8)
                scratch.fill_(1)
                scratch.sum(dtype=torch.int64)
                del scratch
            if (off // 64) % 4 == 2:
                torch.cuda.synchronize()
                time.sleep(1.0)
        out_off = off * mib // 2 if args.place == "out" else 0
        out = out_buf[out_off: out_off + n].view(1, n)

        def calls():
            for _ in range(20):
                if args.impl == "ours":
                    OPS.f8f8bf16_rowwise_preshuffled_out(xq, view, xs, ws, out)
                elif args.impl == "ours_plain":
                    OPS.f8f8bf16_rowwise_out(xq, view, xs, ws, out)
                else:
                    torch.ops.fbgemm.f8f8bf16_rowwise(xq, view, xs, ws)
        with torch.no_grad():
            g, _ = capture(calls, 2)
            ts = [time_eager_us(g.replay, 5, args.iters) / 20 for _ in range(3)]
            eager = time_eager_us(calls, 5, 50) / 20
        print(f"  offset {off:5d} MiB: {' '.join(f'{t:6.2f}' for t in ts)}   eager loop "
              f"{eager:6.2f}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--m", type=int, nargs="+", default=[1, 16])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--placement", type=int, default=0)
    p.add_argument("--place", choices=["w", "out", "same", "rewrite"], default="w")
    p.add_argument("--impl", choices=["ours", "ours_plain", "fbgemm"], default="ours",
                   help="placement: ours preshuffled, ours on plain W, or FBGEMM's "
                        "f8f8bf16_rowwise (plain W)")
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA GPU (sm_90)")
    if args.placement > 0:
        placement(args)
    else:
        oracle(args)


if __name__ == "__main__":
    main()
