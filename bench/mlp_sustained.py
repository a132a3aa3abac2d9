#!/usr/bin/env python3
"""The Llama MLP block (examples/llama_mlp.py's) at the power limit: bf16, the fused FP8 block
with programmatic dependent launch (f8gemm.nn.FP8GatedMLP, pdl=True, the module's default) and
the same block with pdl=False, each replayed for --seconds under a CUDA graph, interleaved, with
the SM clock and the board power sampled (bench/sustained_clock.py's method, card 98).

examples/llama_mlp.py times each variant once, back to back, from a cold or a warm clock: at
M = 2048, where the block is compute-bound and the GPU sits at its power limit, four samples in
session 41 had PDL 1.3-9% behind and session 42's run had it 0.5% ahead (docs/perf-log.md,
"Open now", issue 7). Here every variant runs at the same steady state, in rounds that reverse
their order every other round, and the last lines give each variant's median, the FP8 blocks'
speedup over bf16 and pdl=False over pdl=True.

Usage (on the GPU machine, with the torch extension importable):
  python3 bench/mlp_sustained.py [--m 1 16 128 2048] [--seconds 2] [--rounds 2] [--csv out.csv]
"""

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "python"))

import peers  # noqa: E402  (output-path check)
import sustained_clock  # noqa: E402  (sampling and the sustained replay loop)

VARIANTS = ("bf16", "fp8_pdl", "fp8_no_pdl")
COLUMNS = ["m", "variant", "round", "us_per_block", "sm_mhz", "power_w", "mj_per_block",
           "samples"]
# Forwards per graph replay: enough that a replay is long against its launch (a block takes
# 50-1200 µs), few enough that a window holds many replays.
FORWARDS_PER_GRAPH = 20


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m", type=int, nargs="+", default=[1, 16, 128, 2048], help="rows of x")
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--intermediate", type=int, default=14336)
    p.add_argument("--seconds", type=float, default=2.0, help="sustained run per variant")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--csv", help="output CSV")
    a = p.parse_args(argv)
    if min(a.m) < 1:
        p.error("--m: every row count must be >= 1")
    for name in ("hidden", "intermediate"):
        if getattr(a, name) < 16 or getattr(a, name) % 16:
            p.error(f"--{name} must be a positive multiple of 16 (each is a GEMM's K)")
    if a.seconds <= sustained_clock.SETTLE_S or a.rounds < 1:
        p.error(f"--seconds must exceed {sustained_clock.SETTLE_S} and --rounds must be >= 1")
    return a


def speedup_lines(rows):
    """Per M: each variant's median µs over its rounds, bf16 over each FP8 block, and pdl=False
    over pdl=True (above 1: PDL is faster); rows as main() writes them."""
    lines = []
    for m in dict.fromkeys(r["m"] for r in rows):
        med = {v: statistics.median(float(r["us_per_block"]) for r in rows
                                    if r["m"] == m and r["variant"] == v)
               for v in dict.fromkeys(r["variant"] for r in rows if r["m"] == m)}
        line = f"M={m}: " + ", ".join(f"{v} {us:.2f}" for v, us in med.items())
        if "bf16" in med:
            line += "".join(f"; bf16 / {v} {med['bf16'] / med[v]:.3f}" for v in med if v != "bf16")
        if "fp8_pdl" in med and "fp8_no_pdl" in med:
            line += f"; no pdl / pdl {med['fp8_no_pdl'] / med['fp8_pdl']:.4f}"
        lines.append(line)
    return lines


def main(argv):
    a = parse_args(argv)
    if a.csv:
        peers.check_output(a.csv)  # before any GPU work
    import torch
    import f8gemm  # noqa: F401 - registers torch.ops.f8gemm.*
    from f8gemm.nn import FP8GatedMLP
    from llama_mlp import LlamaMLP, capture

    if not torch.cuda.is_available():
        sys.exit("needs a CUDA GPU (sm_90)")
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    gpu_id = "GPU-" + str(props.uuid)
    torch.manual_seed(0)
    bf16 = LlamaMLP(a.hidden, a.intermediate).eval()
    blocks = {"bf16": bf16,
              "fp8_pdl": FP8GatedMLP.from_module(bf16, pdl=True).eval(),
              "fp8_no_pdl": FP8GatedMLP.from_module(bf16, pdl=False).eval()}
    print(f"device: {props.name}; Llama MLP hidden {a.hidden}, intermediate {a.intermediate}; "
          f"{FORWARDS_PER_GRAPH} forwards a replay, {a.seconds} s a window, {a.rounds} rounds")
    rows = []
    with torch.inference_mode():
        for m in a.m:
            x = torch.randn(m, a.hidden, device="cuda", dtype=torch.bfloat16)

            def forwards(block):
                def run():
                    y = None
                    for _ in range(FORWARDS_PER_GRAPH):
                        y = block(x)
                    return y
                return run
            graphs = {v: capture(forwards(b), 2)[0] for v, b in blocks.items()}
            first = graphs[VARIANTS[0]]
            sustained_clock.sustain(torch, first, FORWARDS_PER_GRAPH)(a.seconds)  # warm-up
            for r in range(1, a.rounds + 1):
                order = list(VARIANTS) if r % 2 else list(reversed(VARIANTS))
                for v in order:
                    us, mhz, watts, samples = sustained_clock.window(
                        gpu_id, a.seconds, sustained_clock.sustain(torch, graphs[v],
                                                                   FORWARDS_PER_GRAPH))
                    rows.append({"m": m, "variant": v, "round": r, "us_per_block": f"{us:.2f}",
                                 "sm_mhz": f"{mhz:.0f}", "power_w": f"{watts:.1f}",
                                 "mj_per_block": f"{us * watts / 1e3:.3f}", "samples": samples})
                    print(f"M={m:<5} round {r} {v:11s} {us:9.2f} us/block  {mhz:6.0f} MHz  "
                          f"{watts:6.1f} W  {us * watts / 1e3:8.3f} mJ/block", flush=True)
            del graphs
    for line in speedup_lines(rows):
        print(line)
    if a.csv:
        sustained_clock.write_csv(a.csv, COLUMNS, rows)


if __name__ == "__main__":
    main(sys.argv[1:])
