#!/usr/bin/env python3
"""Session 45, CPU only (card 107): is the fused Llama MLP block's error at M = 1, 1.007x the
per-linear swap's in one draw of x (sessions 42 and 45, examples/llama_mlp.py), a property of the
fused path or one row's sampling noise?

The two FP8 blocks differ only in how h = SiLU(gate) * up reaches its e4m3 quantisation: below
FP8GatedMLP.FUSED_ACTIVATION_MIN_ROWS rows (M = 1 and 16)
  - swap: gate and up each come out of their GEMM in bf16, torch's SiLU and product run in bf16
    (two more roundings), then quantize_fp8_row(h);
  - fused: gate|up comes out of one GEMM in bf16, then silu_mul_quantize_fp8_row computes the
    product in fp32 and quantises it;
and from 32 rows (M = 128, 2048) the fused block's SiLU * up runs in the GEMM's epilogue on the
fp32 accumulators, rounded once into bf16 before quantize_fp8_row (emulated here with the exact
SiLU, not the kernel's MUFU form: "fused, epilogue").
Every row is computed independently by both blocks (rowwise quantisation), so R rows of one
emulated call are R draws of an M = 1 call. The library's own CPU kernels quantise
(quantize_fp8_row, silu_mul_quantize_fp8_row: the GPU's arithmetic); the GEMMs are fp64 products
of the dequantised operands rounded to bf16 (the GPU's fast accumulation adds about 1e-3
relative RMS, against the 6.4e-2 that the quantisation costs). The weights are
examples/llama_mlp.py's LlamaMLP (nn.Linear's initialisation in bf16, seed 0), built on the CPU;
the bf16 reference is that block's forward as a GPU runs it: each Linear an fp32 product of the
bf16 operands rounded to bf16, SiLU and the product in bf16.

    PYTHONPATH=python python3 docs/experiments/s45-mlp-error-emulation.py [--rows 2048]
"""

import argparse
import math
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import f8gemm  # noqa: E402,F401  (registers the ops)
from llama_mlp import LlamaMLP  # noqa: E402

OPS = torch.ops.f8gemm


def gemm_fp64(aq, a_scale, wq, w_scale):
    """The rowwise-scaled GEMM in fp64 on the dequantised operands (the accumulators)."""
    a = aq.double() * a_scale.double()[:, None]
    w = wq.double() * w_scale.double()[:, None]
    return a @ w.t()


def gemm_bf16(aq, a_scale, wq, w_scale):
    """The same GEMM's output, rounded to bf16."""
    return gemm_fp64(aq, a_scale, wq, w_scale).to(torch.bfloat16)


def quantiles(sorted_values, fractions=(0.05, 0.5, 0.95)):
    """The values at these fractions of a sorted 1-D tensor (the lower index)."""
    n = len(sorted_values) - 1
    return [sorted_values[int(f * n)].item() for f in fractions]


def linear_bf16(x, w):
    """A bf16 nn.Linear as the GPU computes it: fp32 products and sums, the result in bf16."""
    return (x.float() @ w.float().t()).to(torch.bfloat16)


def row_errors(y, ref, rows=1):
    """The error ||y - ref|| / ||ref|| of each run of `rows` consecutive rows (an M = rows call;
    rows divides y's), and the error pooled over all rows."""
    d = (y.double() - ref).square().sum(1)
    r = ref.square().sum(1)
    per = (d.view(-1, rows).sum(1) / r.view(-1, rows).sum(1)).sqrt()
    return per, math.sqrt(d.sum().item() / r.sum().item())


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=2048, help="rows of x (each an M = 1 draw)")
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--intermediate", type=int, default=14336)
    a = p.parse_args()
    if a.rows < 128 or a.rows % 128:
        p.error("--rows must be a positive multiple of 128 (runs of 16 and 128 rows)")
    torch.manual_seed(0)
    block = LlamaMLP(a.hidden, a.intermediate, device="cpu").eval()
    inter = a.intermediate
    with torch.inference_mode():
        gu_q, gu_s = OPS.quantize_fp8_row(torch.cat([block.gate_proj.weight,
                                                     block.up_proj.weight]).contiguous())
        dq, ds = OPS.quantize_fp8_row(block.down_proj.weight.contiguous())
        x = torch.randn(a.rows, a.hidden, dtype=torch.bfloat16)
        ref = linear_bf16(torch.nn.functional.silu(linear_bf16(x, block.gate_proj.weight)) *
                          linear_bf16(x, block.up_proj.weight), block.down_proj.weight).double()
        xq, xs = OPS.quantize_fp8_row(x)
        acc = gemm_fp64(xq, xs, gu_q, gu_s)
        gate_up = acc.to(torch.bfloat16)  # [R, 2I]: gate, then up (one GEMM or two: the same
        gate, up = gate_up[:, :inter], gate_up[:, inter:]  # rows, the same values)
        # swap: torch's SiLU and product in bf16, then quantize_fp8_row
        h_swap = torch.nn.functional.silu(gate) * up
        hq, hs = OPS.quantize_fp8_row(h_swap.contiguous())
        y_swap = gemm_bf16(hq, hs, dq, ds)
        # fused below 32 rows: silu_mul_quantize_fp8_row on the bf16 gate|up
        hq, hs = OPS.silu_mul_quantize_fp8_row(gate_up.contiguous())
        y_fused = gemm_bf16(hq, hs, dq, ds)
        # fused from 32 rows: SiLU * up on the unrounded accumulators, h rounded once to bf16
        g64, u64 = acc[:, :inter], acc[:, inter:]
        h_epi = (g64 / (1 + torch.exp(-g64)) * u64).to(torch.bfloat16)
        hq, hs = OPS.quantize_fp8_row(h_epi.contiguous())
        y_epi = gemm_bf16(hq, hs, dq, ds)
    e_swap, p_swap = row_errors(y_swap, ref)
    print(f"{a.rows} rows (each an M = 1 draw), hidden {a.hidden}, intermediate {inter}; "
          f"error = ||y - y_bf16|| / ||y_bf16|| per row")
    print(f"swap: pooled {p_swap:.4e}, per row {e_swap.min():.4e}-{e_swap.max():.4e}")
    # Each path as the calls that take it: M = 16 below 32 rows, M = 128 from 32.
    for name, y, rows in (("fused (silu_mul_quantize_fp8_row, M < 32)", y_fused, 16),
                          ("fused, epilogue (M >= 32)", y_epi, 128)):
        e, pooled = row_errors(y, ref)
        ratio = (e / e_swap).sort().values
        q = quantiles(ratio)
        print(f"{name}: pooled {pooled:.4e} = {pooled / p_swap:.4f}x the swap's; per row / swap: "
              f"median {q[1]:.4f}, 5-95% {q[0]:.4f}-{q[2]:.4f}, range {ratio[0]:.4f}-"
              f"{ratio[-1]:.4f}; lower than the swap's in {(ratio < 1).sum().item()} of "
              f"{len(ratio)} rows, at least 1.007x in {(ratio >= 1.007).sum().item()}")
        runs = (row_errors(y, ref, rows)[0] / row_errors(y_swap, ref, rows)[0]).sort().values
        q = quantiles(runs)
        spread = f"5-95% {q[0]:.4f}-{q[2]:.4f}, " if len(runs) >= 40 else ""  # too few runs else
        print(f"    as M = {rows} calls ({len(runs)} runs of {rows} rows): median {q[1]:.4f}, "
              f"{spread}range {runs[0]:.4f}-{runs[-1]:.4f}; at least 1.003x in "
              f"{(runs >= 1.003).sum().item()}")


if __name__ == "__main__":
    main()
