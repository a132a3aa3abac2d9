#!/usr/bin/env python3
"""Which neighbour of the Llama MLP block's gate|up GEMM (hidden 4096, intermediate 14336) slows
it under programmatic dependent launch: the kernels of one CUDA-graph replay of variants of the
block's chain, each kernel's start (µs after the replay's first kernel) and duration, from
torch.profiler (CUPTI). Pin the configs under test with F8GEMM_TUNE_FILE (keys of the gate|up
GEMM with and without "|silu_mul"); F8GEMM_LOG=1 shows what each call took.

  block pdl prefetch          FP8GatedMLP's chain from 32 rows: quantize x, the SiLU·mul GEMM,
                              quantize h, the down GEMM; pdl=True and prefetch_w=True
  block pdl no-prefetch       the same with prefetch_w=False
  block no-pdl                every kernel launched the ordinary way
  qx>silu (pdl, [no] prefetch) quantize x, then the SiLU·mul GEMM launched with PDL
  silu>qh (only qh pdl)       the SiLU·mul GEMM launched the ordinary way, quantize h with PDL
  apart pdl [no-]prefetch     the path below 32 rows: quantize x, the plain gate|up GEMM,
                              silu_mul_quantize_fp8_row, the down GEMM

The durations of kernels launched with PDL include the time they wait for the kernel before
them; the start offsets show the overlap. Perf log, card 76 (an unpaired ping-pong GEMM up to
1.6x slower right after the row quantisation on an H100) and card 77 (which removed that from
129 rows on: on the current tree the probe should show it at 512 and 2048 rows no more).

    F8GEMM_TUNE_FILE=table.tsv python3 bench/pdl_chain_probe.py [--m 2048 512] [--replays 6]
"""
import argparse
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import f8gemm  # noqa: E402,F401  (loads the ops)
from llama_mlp import capture  # noqa: E402

OPS = torch.ops.f8gemm
HIDDEN, INTERMEDIATE = 4096, 14336


def weights():
    """The merged [gate; up] and the down weight, quantised per row and preshuffled."""
    torch.manual_seed(0)
    wgu = (torch.randn(2 * INTERMEDIATE, HIDDEN, device="cuda") * 0.02).to(torch.bfloat16)
    wd = (torch.randn(HIDDEN, INTERMEDIATE, device="cuda") * 0.02).to(torch.bfloat16)
    gq, gs = OPS.quantize_fp8_row(wgu)
    dq, ds = OPS.quantize_fp8_row(wd)
    return OPS.preshuffle(gq), gs, OPS.preshuffle(dq), ds


def variants(x, gate_up, gate_up_scale, down, down_scale):
    silu = OPS.f8f8bf16_rowwise_preshuffled_silu_mul
    gemm = OPS.f8f8bf16_rowwise_preshuffled

    def block(prefetch, pdl):
        xq, xs = OPS.quantize_fp8_row(x, None, pdl=pdl)
        h = silu(xq, gate_up, xs, gate_up_scale, None, True, pdl=pdl, prefetch_w=prefetch)
        hq, hs = OPS.quantize_fp8_row(h, None, pdl=pdl)
        return gemm(hq, down, hs, down_scale, None, True, pdl=pdl, prefetch_w=prefetch)

    def quantize_then_silu(prefetch):
        xq, xs = OPS.quantize_fp8_row(x, None, pdl=True)
        return silu(xq, gate_up, xs, gate_up_scale, None, True, pdl=True, prefetch_w=prefetch)

    def silu_then_quantize():
        xq, xs = OPS.quantize_fp8_row(x, None, pdl=False)
        h = silu(xq, gate_up, xs, gate_up_scale, None, True, pdl=False, prefetch_w=True)
        return OPS.quantize_fp8_row(h, None, pdl=True)

    def apart(prefetch):
        xq, xs = OPS.quantize_fp8_row(x, None, pdl=True)
        gu = gemm(xq, gate_up, xs, gate_up_scale, None, True, pdl=True, prefetch_w=prefetch)
        hq, hs = OPS.silu_mul_quantize_fp8_row(gu, None, pdl=True)
        return gemm(hq, down, hs, down_scale, None, True, pdl=True, prefetch_w=prefetch)

    return {
        "block pdl prefetch": lambda: block(True, True),
        "block pdl no-prefetch": lambda: block(False, True),
        "block no-pdl": lambda: block(False, False),
        "qx>silu (pdl, prefetch)": lambda: quantize_then_silu(True),
        "qx>silu (pdl, no prefetch)": lambda: quantize_then_silu(False),
        "silu>qh (only qh pdl)": silu_then_quantize,
        "apart pdl prefetch": lambda: apart(True),
        "apart pdl no-prefetch": lambda: apart(False),
    }


def last_replay(g, replays):
    """The kernels of the last of `replays` profiled replays (after 20 unprofiled ones)."""
    for _ in range(20):
        g.replay()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            g.replay()
        torch.cuda.synchronize()
    kernels = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                     key=lambda e: e.time_range.start)
    if not kernels or len(kernels) % replays:
        sys.exit(f"expected a whole number of kernels per replay, got {len(kernels)} in {replays}")
    return kernels[-(len(kernels) // replays):]


def main():
    p = argparse.ArgumentParser(description="Kernel timeline of the Llama MLP block's gate|up "
                                "chain variants under PDL (see the module docstring).")
    p.add_argument("--m", type=int, nargs="+", default=[2048, 512])
    p.add_argument("--replays", type=int, default=6)
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA GPU (sm_90)")
    w = weights()
    print(f"gate|up chain on {torch.cuda.get_device_name()}; per kernel: +start µs, duration µs")
    with torch.inference_mode():
        for m in args.m:
            x = torch.randn(m, HIDDEN, device="cuda", dtype=torch.bfloat16)
            for name, fn in variants(x, *w).items():
                kernels = last_replay(capture(fn, 3)[0], args.replays)
                t0 = kernels[0].time_range.start
                span = kernels[-1].time_range.end - t0
                parts = "  ".join(f"{k.name.replace('f8gemm_', '')[:22]} +{k.time_range.start - t0:.0f} "
                                  f"{k.time_range.elapsed_us():.1f}" for k in kernels)
                print(f"M={m:5d} {name:28s} span {span:7.1f} | {parts}", flush=True)


if __name__ == "__main__":
    main()
