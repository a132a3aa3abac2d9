#!/usr/bin/env python3
"""quantize_fp8_row and silu_mul_quantize_fp8_row (bf16 in) over M, against a device copy of
the same input bytes: CUDA-graph replay of 20 back-to-back calls, us per call (median of
--iters replays / 20), and the bytes each call moves (input read, codes and scales written)
per us. Run it once per build (F8GEMM_TORCH_LIB picks the extension) for an A/B.

    python3 bench/rowq_bench.py [--m 1 16 128 2048] [--iters 50] [--csv FILE]
"""
import argparse
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import f8gemm  # noqa: E402,F401  (loads the ops)
from peers import capture, time_graph_us  # noqa: E402  (bench/peers.py: one timer for all)

OPS = torch.ops.f8gemm
CALLS = 20


def time_us(fn, iters):
    """Median replay time of a graph of CALLS calls of fn, per call (peers.py's timer, over
    `iters` replays)."""
    return time_graph_us(capture(fn, CALLS), CALLS, iters * CALLS)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--m", type=int, nargs="+", default=[1, 16, 128, 256, 512, 2048, 8192])
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--csv")
    args = p.parse_args()
    torch.manual_seed(0)
    rows = []
    print(f"{'op':>10} {'M':>6} {'K':>6} {'us':>8} {'copy us':>8} {'GB/s':>7} {'/ copy':>7}")
    for op, ks in (("quantize", (4096, 14336)), ("silu_mul", (14336,))):
        for k in ks:
            for m in args.m:
                width = 2 * k if op == "silu_mul" else k
                x = torch.randn(m, width, device="cuda", dtype=torch.bfloat16)
                dst = torch.empty_like(x)
                fn = (lambda: OPS.quantize_fp8_row(x)) if op == "quantize" else \
                    (lambda: OPS.silu_mul_quantize_fp8_row(x))
                t = time_us(fn, args.iters)
                tc = time_us(lambda: dst.copy_(x), args.iters)
                moved = m * width * 2 + m * k + m * 4
                rows.append((op, m, k, t, tc, moved / t / 1e3))
                print(f"{op:>10} {m:>6} {k:>6} {t:8.2f} {tc:8.2f} {moved / t / 1e3:7.0f} "
                      f"{t / tc:7.2f}", flush=True)
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("op,m,k,us,copy_us,gb_per_s\n")
            for r in rows:
                f.write(",".join(str(v) if not isinstance(v, float) else f"{v:.3f}" for v in r)
                        + "\n")


if __name__ == "__main__":
    main()
