"""A Llama-style MLP block (hidden 4096, intermediate 14336: down(silu(gate(x)) * up(x))) in bf16
against the same block with its three projections swapped for f8gemm FP8Linear (weights
quantised per row and preshuffled once; activations quantised per row on every call).

For each M (tokens) it prints the time of one block forward in bf16 and in FP8 (CUDA events
around each call after a warm-up, median of --iters; with --cuda-graph, the median replay of a
CUDA graph of one forward, which removes host launch overhead) and the relative error of the FP8
block's output against the bf16 block's (||y8 - y16|| / ||y16||).

    python3 examples/llama_mlp.py [--m 1 16 128 2048] [--iters 50] [--cuda-graph]
"""

import argparse
import copy
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
import f8gemm  # noqa: E402,F401  (loads the ops)
from f8gemm.nn import swap_linears  # noqa: E402


class LlamaMLP(torch.nn.Module):
    def __init__(self, hidden=4096, intermediate=14336, device="cuda", dtype=torch.bfloat16):
        super().__init__()
        kw = dict(bias=False, device=device, dtype=dtype)
        self.gate_proj = torch.nn.Linear(hidden, intermediate, **kw)
        self.up_proj = torch.nn.Linear(hidden, intermediate, **kw)
        self.down_proj = torch.nn.Linear(intermediate, hidden, **kw)

    def forward(self, x):
        return self.down_proj(torch.nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


def time_eager_us(fn, warmup, iters):
    """Median of CUDA-event times of single calls (host launch cost included)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    events = []
    for _ in range(iters):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        events.append((start, end))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in events) * 1000.0


def time_graph_us(fn, warmup, iters):
    """Median replay time of a CUDA graph holding one call."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return time_eager_us(g.replay, warmup, iters)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--m", type=int, nargs="+", default=[1, 16, 128, 2048])
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--intermediate", type=int, default=14336)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--cuda-graph", action="store_true", help="time CUDA-graph replays")
    p.add_argument("--precise", action="store_true", help="use_fast_accum=False in FP8Linear")
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA GPU (sm_90)")

    torch.manual_seed(0)
    bf16 = LlamaMLP(args.hidden, args.intermediate).eval()
    fp8 = swap_linears(copy.deepcopy(bf16), use_fast_accum=not args.precise).eval()
    timer = time_graph_us if args.cuda_graph else time_eager_us
    gpu = torch.cuda.get_device_name()
    print(f"Llama MLP block hidden={args.hidden} intermediate={args.intermediate} on {gpu}; "
          f"{'CUDA-graph replay' if args.cuda_graph else 'eager'} times, median of {args.iters}")
    print(f"{'M':>6} | {'bf16 us':>10} | {'fp8 us':>10} | {'speedup':>7} | {'rel err vs bf16':>15}")
    print(f"{'-' * 6}-+-{'-' * 10}-+-{'-' * 10}-+-{'-' * 7}-+-{'-' * 15}")
    with torch.inference_mode():
        for m in args.m:
            x = torch.randn(m, args.hidden, device="cuda", dtype=torch.bfloat16)
            y16 = bf16(x)
            y8 = fp8(x)
            err = ((y8.double() - y16.double()).norm() / y16.double().norm()).item()
            t16 = timer(lambda: bf16(x), args.warmup, args.iters)
            t8 = timer(lambda: fp8(x), args.warmup, args.iters)
            print(f"{m:>6} | {t16:>10.1f} | {t8:>10.1f} | {t16 / t8:>6.2f}x | {err:>15.3e}",
                  flush=True)


if __name__ == "__main__":
    main()
