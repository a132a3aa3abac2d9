#!/usr/bin/env python3
"""The kernels of f8gemm.nn.FP8GatedMLP (Llama 4096/14336) at M = 1, 16 and 128: the GPU time of
each (torch.profiler over 20 CUDA-graph replays) against the replay time.

With programmatic dependent launch (the module's default) each kernel starts early and waits for
its predecessor, and that wait counts in its duration: the durations then overlap and their sum
exceeds the replay time. Usage (on the GPU machine): python3 bench/mlp_kernels.py
"""
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import f8gemm  # noqa: E402,F401  (loads the ops)
from f8gemm.nn import FP8GatedMLP  # noqa: E402
from llama_mlp import LlamaMLP, capture, time_eager_us  # noqa: E402

REPLAYS = 20  # graph replays under the profiler

torch.manual_seed(0)
bf16 = LlamaMLP().eval()
fused = FP8GatedMLP.from_module(bf16, use_fast_accum=True).eval()
for m in (1, 16, 128):
    x = torch.randn(m, 4096, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        g, _ = capture(lambda: fused(x), 3)
        t = time_eager_us(g.replay, 10, 50)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(REPLAYS):
                g.replay()
            torch.cuda.synchronize()
    ev = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    by = {}
    for e in ev:
        t_us = e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
        by.setdefault(e.name, []).append(t_us)
    print(f"M={m}: replay {t:.1f} us; GPU activities (kernels, copies) per replay:")
    tot = 0.0
    for name, ts in by.items():
        per = sum(ts) / REPLAYS
        tot += per
        print(f"   {per:8.2f} us  x{len(ts) / REPLAYS:.0f}  {name[:110]}")
    print(f"   {tot:8.2f} us  sum of kernel times; gaps {t - tot:.1f} us")
