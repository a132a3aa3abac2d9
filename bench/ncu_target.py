"""A target for Nsight Compute: 30 calls of ours (torch.ops.f8gemm), of FBGEMM gen_ai's
f8f8bf16_rowwise_out or of rowwise torch._scaled_mm (cuBLASLt) on the same per-row quantised
randn operands (the bench's distribution),
so that one kernel of each can be profiled side by side (docs/perf-log.md card 21).

Usage (on the H200, with the torch extension built and FBGEMM gen_ai importable):
  ncu --clock-control none --set full -k regex:f8gemm_gemm --launch-skip 10 --launch-count 1 \\
      -o ours python3 bench/ncu_target.py 1,16384,8192,1024 ours
  ncu --clock-control none --set full -k regex:device_kernel --launch-skip 10 --launch-count 1 \\
      -o fbgemm python3 bench/ncu_target.py 1,16384,8192,1024 fbgemm
  ncu --clock-control none --set full -k regex:nvjet --launch-skip 10 --launch-count 1 \\
      -o torch python3 bench/ncu_target.py 1,8192,8192,8192 torch
then `ncu --import ours.ncu-rep --page details` (and `--page source --print-source sass --csv`
for the per-instruction stall samples). B must be 1: one 2-D GEMM per call.
"""
import argparse

import torch


def quantised_randn(rows, cols):
    """Per-row quantised randn: e4m3 codes with each row's amax at 448, and its fp32 scales."""
    v = torch.randn(rows, cols, device="cuda")
    scale = v.abs().amax(dim=1).clamp_min(1e-12) / 448.0
    return (v / scale[:, None]).to(torch.float8_e4m3fn), scale.float()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shape", help="B,M,N,K with B = 1")
    ap.add_argument("impl", choices=["ours", "fbgemm", "torch"])
    ap.add_argument("--calls", type=int, default=30)
    a = ap.parse_args()
    b, m, n, k = (int(v) for v in a.shape.split(","))
    if b != 1:
        ap.error("B must be 1")
    if a.impl == "ours":
        import f8gemm  # noqa: F401 - registers torch.ops.f8gemm.*
        op = torch.ops.f8gemm.f8f8bf16_rowwise_out
    elif a.impl == "fbgemm":
        import fbgemm_gpu.experimental.gen_ai  # noqa: F401 - registers torch.ops.fbgemm.*
        op = torch.ops.fbgemm.f8f8bf16_rowwise_out
    else:
        def op(xq, wq, xs, ws, y):  # y unused: _scaled_mm allocates its output
            torch._scaled_mm(xq, wq.t(), scale_a=xs.unsqueeze(1), scale_b=ws.unsqueeze(0),
                             out_dtype=torch.bfloat16, use_fast_accum=True)
    torch.manual_seed(0)
    xq, xs = quantised_randn(m, k)
    wq, ws = quantised_randn(n, k)
    y = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(a.calls):
        op(xq, wq, xs, ws, y)
    torch.cuda.synchronize()
    print(f"{a.impl}: {a.calls} calls of {a.shape}")


if __name__ == "__main__":
    main()
