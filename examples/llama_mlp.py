"""A Llama-style MLP block (hidden 4096, intermediate 14336: down(silu(gate(x)) * up(x))) three
ways, side by side:

- bf16: the torch block;
- swap: its three projections swapped for f8gemm FP8Linear (f8gemm.nn.swap_linears: weights
  quantised per row and preshuffled once; x quantised twice, SiLU and the product in torch, the
  intermediate quantised: eight kernels);
- fused: f8gemm.nn.FP8GatedMLP as a user gets it by default (gate and up merged into one
  N = 2I GEMM, x quantised once, the fused silu_mul_quantize_fp8_row, the down GEMM: four
  kernels, each with programmatic dependent launch: pdl=True, the module's default, so each
  kernel may start while the one before it drains and waits for it on the device).

With --activation-paths, the fused block is also timed with its activation always in the gate|up
GEMM's epilogue ("in gemm": f8f8bf16_rowwise_preshuffled_silu_mul, then quantize_fp8_row of h)
and always apart ("apart": the GEMM's gate_up, then silu_mul_quantize_fp8_row), whatever
FP8GatedMLP.FUSED_ACTIVATION_MIN_ROWS picks for that M: the measurement behind that threshold.

With --pdl, the same block built with pdl=False (every kernel launched the ordinary way,
whatever F8GEMM_PDL says) is also timed, and its output, eager and (with --cuda-graph) from a
graph replay, is checked to be bit-identical to the fused block's ("same", else "DIFFER").

For each M (tokens) it prints the time of one block forward (CUDA events around each call after
a warm-up, median of --iters; with --cuda-graph, the median replay of a CUDA graph of one
forward, which removes host launch overhead), the speedups over bf16 and the relative error of
each FP8 block's output against the bf16 block's (||y8 - y16|| / ||y16||). --quantize also times
quantize_fp8_row on [M, hidden] and [M, intermediate] bf16 against a device copy of the same
bytes (the issue's bound: at most 1.5x for M <= 16). --error-draws D pools the error columns
over D draws of x (M rows each: the root of the summed squared differences over the root of the
summed squares; the "in err" column of --activation-paths too), since one draw at M = 1 is a
single row, and prints per M how the fused block's error compares with the swap's draw by draw.

    python3 examples/llama_mlp.py [--m 1 16 128 2048] [--iters 50] [--cuda-graph] [--quantize]
                                  [--pdl] [--activation-paths] [--error-draws D]
"""

import argparse
import copy
import math
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
import f8gemm  # noqa: E402,F401  (loads the ops)
from f8gemm.nn import FP8GatedMLP, swap_linears  # noqa: E402


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


def capture(fn, warmup):
    """A CUDA graph of one call of fn (after `warmup` calls on a side stream) and its output."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    return g, out


def time_graph_us(fn, warmup, iters):
    """Median replay time of a CUDA graph holding one call."""
    g, _ = capture(fn, warmup)
    return time_eager_us(g.replay, warmup, iters)


def graph_output(fn):
    """The output of fn captured in a CUDA graph and replayed once."""
    g, out = capture(fn, 1)
    g.replay()
    torch.cuda.synchronize()
    return out.clone()


def quantize_table(args, timer):
    """quantize_fp8_row against a device copy of its input bytes, both timed the same way."""
    print(f"\nquantize_fp8_row (bf16 in) against a device copy of the input bytes; "
          f"{'CUDA-graph replay' if args.cuda_graph else 'eager'} times")
    print(f"{'M':>6} | {'K':>6} | {'quantize us':>11} | {'copy us':>8} | {'ratio':>6}")
    print(f"{'-' * 6}-+-{'-' * 6}-+-{'-' * 11}-+-{'-' * 8}-+-{'-' * 6}")
    for m in args.m:
        for k in (args.hidden, args.intermediate):
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            dst = torch.empty_like(x)
            tq = timer(lambda: torch.ops.f8gemm.quantize_fp8_row(x), args.warmup, args.iters)
            tc = timer(lambda: dst.copy_(x), args.warmup, args.iters)
            print(f"{m:>6} | {k:>6} | {tq:>11.2f} | {tc:>8.2f} | {tq / tc:>5.2f}x", flush=True)


def pooled_errors(ref_block, blocks, x, draws, generator=None):
    """||y - y_ref|| / ||y_ref|| of each block, pooled over `draws` draws of x (the first is x
    itself, the others standard normal draws of its shape from `generator`): the root of the
    summed squared differences over the root of the summed squares. Returns the pooled errors
    and, per draw, each block's error."""
    sq_diff = [0.0] * len(blocks)
    sq_ref = 0.0
    per_draw = []
    for d in range(draws):
        xd = x if d == 0 else torch.randn(x.shape, generator=generator, device=x.device,
                                          dtype=x.dtype)
        ref = ref_block(xd).double()
        ref_sq = ref.square().sum().item()
        sq_ref += ref_sq
        diffs = [(b(xd).double() - ref).square().sum().item() for b in blocks]
        for i, v in enumerate(diffs):
            sq_diff[i] += v
        per_draw.append([math.sqrt(v / ref_sq) for v in diffs])
    return [math.sqrt(v / sq_ref) for v in sq_diff], per_draw


def draw_line(m, per_draw):
    """How the second block's error (fused) compares with the first's (swap), draw by draw."""
    ratios = sorted(f / s for s, f, *_ in per_draw)
    lower = sum(r < 1 for r in ratios)
    return (f"M={m}: fused / swap error over {len(ratios)} draws of x: median "
            f"{statistics.median(ratios):.4f}, range {ratios[0]:.4f}-{ratios[-1]:.4f}, fused "
            f"lower in {lower} of {len(ratios)}")


def check_sizes(parser, args):
    """Sizes the FP8 GEMMs cannot take (--hidden, --intermediate) and timing counts (--iters,
    --warmup), refused in one argparse line before any GPU work, not as a traceback later (also
    for examples/moe_layer.py)."""
    for name in ("hidden", "intermediate"):
        if getattr(args, name) < 16 or getattr(args, name) % 16:
            parser.error(f"--{name} must be a positive multiple of 16 (each is a GEMM's K)")
    if args.iters < 1 or args.warmup < 0:
        parser.error("--iters must be >= 1 and --warmup >= 0")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--m", type=int, nargs="+", default=[1, 16, 128, 2048])
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--intermediate", type=int, default=14336)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--cuda-graph", action="store_true", help="time CUDA-graph replays")
    p.add_argument("--precise", action="store_true", help="use_fast_accum=False in the FP8 blocks")
    p.add_argument("--quantize", action="store_true",
                   help="also time quantize_fp8_row against a device copy")
    p.add_argument("--pdl", action="store_true",
                   help="also time the fused block with pdl=False (no programmatic dependent "
                        "launch; the fused column has the module's default, pdl=True)")
    p.add_argument("--activation-paths", action="store_true",
                   help="also time the fused block with its activation always in the gate|up "
                        "GEMM's epilogue and always apart")
    p.add_argument("--error-draws", type=int, default=1,
                   help="pool the error columns over this many draws of x (the timings use "
                        "the first)")
    args = p.parse_args()
    if min(args.m) < 1:
        p.error("--m: every row count must be >= 1")
    if args.error_draws < 1:
        p.error("--error-draws must be >= 1")
    check_sizes(p, args)
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA GPU (sm_90)")

    torch.manual_seed(0)
    bf16 = LlamaMLP(args.hidden, args.intermediate).eval()
    swap = swap_linears(copy.deepcopy(bf16), use_fast_accum=not args.precise).eval()
    fused = FP8GatedMLP.from_module(bf16, use_fast_accum=not args.precise).eval()
    serial = None
    if args.pdl:
        serial = FP8GatedMLP.from_module(bf16, use_fast_accum=not args.precise, pdl=False).eval()
    paths = []
    if args.activation_paths:
        # The same module (shared weights) with the threshold at either end.
        for rows in (0, float("inf")):
            block = copy.copy(fused)
            block.FUSED_ACTIVATION_MIN_ROWS = rows
            paths.append(block)
    timer = time_graph_us if args.cuda_graph else time_eager_us
    gpu = torch.cuda.get_device_name()
    print(f"Llama MLP block hidden={args.hidden} intermediate={args.intermediate} on {gpu}; "
          f"{'CUDA-graph replay' if args.cuda_graph else 'eager'} times in us, median of "
          f"{args.iters}; error = ||y - y_bf16|| / ||y_bf16||; fused: pdl={fused.pdl}"
          f"{', no pdl: pdl=False' if args.pdl else ''}")
    pdl_hdr = f" | {'no pdl':>8} | {'no pdl x':>8} | {'bits':>6}" if args.pdl else ""
    pdl_rule = f"-+-{'-' * 8}-+-{'-' * 8}-+-{'-' * 6}" if args.pdl else ""
    if paths:
        pdl_hdr += f" | {'in gemm':>8} | {'apart':>8} | {'in/apart':>8} | {'in err':>9}"
        pdl_rule += f"-+-{'-' * 8}-+-{'-' * 8}-+-{'-' * 8}-+-{'-' * 9}"
    print(f"{'M':>6} | {'bf16':>8} | {'swap':>8} | {'fused':>8} | {'swap x':>6} | {'fused x':>7} "
          f"| {'swap err':>9} | {'fused err':>9}{pdl_hdr}")
    print(f"{'-' * 6}-+-{'-' * 8}-+-{'-' * 8}-+-{'-' * 8}-+-{'-' * 6}-+-{'-' * 7}-+-{'-' * 9}-+-"
          f"{'-' * 9}{pdl_rule}")
    draw_lines = []
    draws_rng = torch.Generator(device="cuda")
    with torch.inference_mode():
        for m in args.m:
            x = torch.randn(m, args.hidden, device="cuda", dtype=torch.bfloat16)
            # The errors: swap and fused (and the "in gemm" path), pooled over the draws; the
            # extra draws come from their own generator, seeded per M, so that x and the draws
            # at each M are the same whatever --error-draws and --m hold.
            blocks = (swap, fused) + ((paths[0],) if paths else ())
            draws_rng.manual_seed(m)
            errors, per_draw = pooled_errors(bf16, blocks, x, args.error_draws, draws_rng)
            e_swap, e_fused = errors[0], errors[1]
            t16 = timer(lambda: bf16(x), args.warmup, args.iters)
            t_swap = timer(lambda: swap(x), args.warmup, args.iters)
            t_fused = timer(lambda: fused(x), args.warmup, args.iters)
            pdl_cols = ""
            if serial is not None:
                ref = fused(x)
                same = torch.equal(serial(x), ref)
                if args.cuda_graph:
                    same = same and all(torch.equal(graph_output(block), ref) for block in
                                        (lambda: fused(x), lambda: serial(x)))
                t_serial = timer(lambda: serial(x), args.warmup, args.iters)
                pdl_cols = (f" | {t_serial:>8.1f} | {t16 / t_serial:>7.2f}x | "
                            f"{'same' if same else 'DIFFER':>6}")
            if paths:
                t_in, t_apart = (timer(lambda b=b: b(x), args.warmup, args.iters) for b in paths)
                pdl_cols += (f" | {t_in:>8.1f} | {t_apart:>8.1f} | {t_in / t_apart:>8.3f} | "
                             f"{errors[2]:>9.3e}")
            print(f"{m:>6} | {t16:>8.1f} | {t_swap:>8.1f} | {t_fused:>8.1f} | "
                  f"{t16 / t_swap:>5.2f}x | {t16 / t_fused:>6.2f}x | {e_swap:>9.3e} | "
                  f"{e_fused:>9.3e}{pdl_cols}", flush=True)
            if args.error_draws > 1:
                draw_lines.append(draw_line(m, per_draw))
        if draw_lines:
            print(f"\nfused / swap error draw by draw (--error-draws {args.error_draws}):")
        for line in draw_lines:
            print(line)
        if args.quantize:
            quantize_table(args, timer)


if __name__ == "__main__":
    main()
