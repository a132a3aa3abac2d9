"""A Mixtral-style mixture-of-experts layer (8 experts, top-2, hidden 4096, intermediate 14336)
in FP8 on f8gemm's grouped GEMMs, against a bf16 reference layer and against the same layer on
torch._scaled_grouped_mm and on FBGEMM's f8f8bf16_rowwise_grouped_stacked.

One forward of T tokens, every step a GPU op (no host sync, so the whole layer is one CUDA
graph; the routing changes with the data and each replay sees its own):
  1. route: router logits (fp32), the top-k experts of each token, softmax weights over them;
     --routing zipf adds a seeded Zipf prior to the logits (a few popular experts), uniform
     does not;
  2. permute: the T*k (token, expert) assignments sorted by expert (a stable argsort), and the
     rows per expert (scatter_add: the group sizes, which stay on the GPU);
  3. quantize_fp8_row(x) once per token, then gather its e4m3 rows into the expert order;
  4. grouped gate_up GEMM: [T*k, H] x W_gate_up [E, 2I, H] -> [T*k, 2I] bf16 (gate and up merged);
  5. silu_mul_quantize_fp8_row: SiLU(gate) * up, quantised per row (one kernel);
  6. grouped down GEMM: [T*k, I] x W_down [E, H, I] -> [T*k, H];
  7. unpermute and weighted sum: each token's k rows back in place, times their router weights.
The three FP8 layers differ only in steps 4 and 6. The bf16 layer (torch._grouped_mm, where this
torch has it) is timed too; the error is ||y - y_ref|| / ||y_ref|| against the reference layer
(bf16 weights, fp32 arithmetic, an expert loop on the host).

Times are CUDA-graph replays of one forward (median of --iters, as examples/llama_mlp.py).

    python3 examples/moe_layer.py [--tokens 1 16 128 1024 4096] [--routing zipf uniform]
        [--hidden 4096] [--intermediate 14336] [--experts 8] [--top-k 2]
"""

import argparse
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
import f8gemm  # noqa: E402,F401  (loads the ops)
from llama_mlp import check_sizes, time_graph_us  # noqa: E402  (examples/llama_mlp.py, beside)

ops = torch.ops.f8gemm


class MoEReference(torch.nn.Module):
    """The bf16 layer: a router and E SwiGLU experts (w1 gate, w3 up: [E, I, H]; w2 down:
    [E, H, I]). forward() is the reference: fp32 arithmetic on the bf16 values, one expert at a
    time (it syncs with the host, so it is not timed)."""

    def __init__(self, hidden, intermediate, experts, top_k, routing, zipf_s, seed,
                 device="cuda"):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.top_k = top_k

        def randn(*shape, fan_in):
            return (torch.randn(*shape, generator=g) / math.sqrt(fan_in)).to(device, torch.bfloat16)

        self.router = randn(experts, hidden, fan_in=hidden)
        self.w1 = randn(experts, intermediate, hidden, fan_in=hidden)
        self.w3 = randn(experts, intermediate, hidden, fan_in=hidden)
        self.w2 = randn(experts, hidden, intermediate, fan_in=intermediate)
        # A Zipf prior on the logits skews the routing towards a seeded order of experts.
        prior = torch.zeros(experts)
        if routing == "zipf":
            ranks = torch.arange(1, experts + 1, dtype=torch.float32)
            prior = (-zipf_s * ranks.log())[torch.randperm(experts, generator=g)]
        self.prior = prior.to(device)

    def route(self, x):
        """(weights [T, k] fp32, experts [T, k] int64): the top-k experts of each token and the
        softmax of their logits."""
        logits = x.float() @ self.router.float().t() + self.prior
        top, experts = torch.topk(logits, self.top_k, dim=-1)
        return torch.softmax(top, dim=-1), experts

    @torch.no_grad()
    def forward(self, x):
        weights, experts = self.route(x)
        y = torch.zeros(x.shape[0], x.shape[1], dtype=torch.float32, device=x.device)
        xf = x.float()
        for e in range(self.w1.shape[0]):
            token, slot = (experts == e).nonzero(as_tuple=True)
            if token.numel() == 0:
                continue
            xe = xf[token]
            h = torch.nn.functional.silu(xe @ self.w1[e].float().t()) * (xe @ self.w3[e].float().t())
            y.index_add_(0, token, (h @ self.w2[e].float().t()) * weights[token, slot, None])
        return y


def permute(experts, num_experts):
    """(order, token_of, sizes) of the top-k assignments [T, k]: order sorts them by expert
    (stable, so each expert's tokens keep their order), token_of[i] is the token of the i-th
    sorted assignment, sizes[e] the rows of expert e (int64, computed on the GPU)."""
    flat = experts.flatten()
    order = torch.argsort(flat, stable=True)
    sizes = torch.zeros(num_experts, dtype=torch.int64, device=flat.device)
    sizes.scatter_add_(0, flat, torch.ones_like(flat))  # bincount would sync for its length
    return order, order // experts.shape[1], sizes


def unpermute(out_sorted, order, weights):
    """y[t] = sum_j weights[t, j] * out[row of (t, j)]: the sorted rows back in (token, slot)
    order, weighted and summed in fp32."""
    tokens, k = weights.shape
    out = torch.empty_like(out_sorted)
    out[order] = out_sorted
    return (out.view(tokens, k, -1).float() * weights.unsqueeze(-1)).sum(1).to(torch.bfloat16)


class FP8MoE(torch.nn.Module):
    """The layer in FP8: weights quantised per row once (gate and up merged into [E, 2I, H]),
    activations per row; the grouped GEMMs of `backend`: "f8gemm" (preshuffled weights),
    "torch" (torch._scaled_grouped_mm with offs) or "fbgemm"."""

    def __init__(self, ref, backend):
        super().__init__()
        self.ref = ref
        self.backend = backend
        self.experts = ref.w1.shape[0]
        w13 = torch.cat([ref.w1, ref.w3], dim=1)  # gate rows [0, I), up rows [I, 2I)
        self.w13, self.w13_scale = ops.quantize_fp8_row(w13)
        self.w2, self.w2_scale = ops.quantize_fp8_row(ref.w2)
        if backend == "f8gemm":
            self.w13 = ops.preshuffle(self.w13)
            self.w2 = ops.preshuffle(self.w2)

    def grouped(self, xq, x_scale, w, w_scale, sizes):
        if self.backend == "f8gemm":
            return ops.f8f8bf16_rowwise_grouped_stacked_preshuffled(xq, w, x_scale, w_scale, sizes)
        if self.backend == "fbgemm":
            return torch.ops.fbgemm.f8f8bf16_rowwise_grouped_stacked(xq, w, x_scale, w_scale, sizes)
        offs = torch.cumsum(sizes, 0, dtype=torch.int32)  # the groups' end rows
        return torch._scaled_grouped_mm(xq, w.transpose(-2, -1), x_scale, w_scale, offs=offs,
                                        out_dtype=torch.bfloat16, use_fast_accum=True)

    def forward(self, x):
        weights, experts = self.ref.route(x)
        order, token_of, sizes = permute(experts, self.experts)
        xq, x_scale = ops.quantize_fp8_row(x)
        # Gather e4m3 rows as bytes (the indexing kernels need not know float8).
        xq = xq.view(torch.uint8)[token_of].view(torch.float8_e4m3fn)
        gate_up = self.grouped(xq, x_scale[token_of], self.w13, self.w13_scale, sizes)
        hq, h_scale = ops.silu_mul_quantize_fp8_row(gate_up)
        out = self.grouped(hq, h_scale, self.w2, self.w2_scale, sizes)
        return unpermute(out, order, weights)


class BF16MoE(torch.nn.Module):
    """The same layer in bf16 on torch._grouped_mm (the speed FP8 has to beat)."""

    def __init__(self, ref):
        super().__init__()
        self.ref = ref
        self.w13 = torch.cat([ref.w1, ref.w3], dim=1)
        self.inter = ref.w1.shape[1]

    def forward(self, x):
        weights, experts = self.ref.route(x)
        order, token_of, sizes = permute(experts, self.ref.w1.shape[0])
        offs = torch.cumsum(sizes, 0, dtype=torch.int32)
        gate_up = torch._grouped_mm(x[token_of], self.w13.transpose(-2, -1), offs=offs)
        h = torch.nn.functional.silu(gate_up[:, :self.inter]) * gate_up[:, self.inter:]
        out = torch._grouped_mm(h, self.ref.w2.transpose(-2, -1), offs=offs)
        return unpermute(out, order, weights)


def fbgemm_status():
    """None when torch.ops.fbgemm.f8f8bf16_rowwise_grouped_stacked is there, else why not."""
    try:
        import fbgemm_gpu.experimental.gen_ai  # noqa: F401  (registers torch.ops.fbgemm.*)
        torch.ops.fbgemm.f8f8bf16_rowwise_grouped_stacked  # noqa: B018  (raises if missing)
        return None
    except Exception as exc:  # noqa: BLE001  (any failure: the peer is skipped)
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tokens", type=int, nargs="+", default=[1, 16, 128, 1024, 4096])
    p.add_argument("--routing", nargs="+", choices=["zipf", "uniform"], default=["zipf", "uniform"])
    p.add_argument("--zipf-s", type=float, default=1.2, help="Zipf exponent of the prior")
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--intermediate", type=int, default=14336)
    p.add_argument("--experts", type=int, default=8)
    p.add_argument("--top-k", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    args = p.parse_args()
    # Sizes the layer cannot take are refused here, in one line, not as a traceback later.
    if min(args.tokens) < 1:
        p.error("--tokens: every token count must be >= 1")
    if args.experts < 1 or not 1 <= args.top_k <= args.experts:
        p.error("--experts must be >= 1 and --top-k between 1 and --experts")
    if not math.isfinite(args.zipf_s) or args.zipf_s < 0:
        p.error("--zipf-s must be a finite number >= 0")
    check_sizes(p, args)
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA GPU (sm_90)")
    missing_fbgemm = fbgemm_status()
    if missing_fbgemm:
        print(f"FBGEMM peer skipped: fbgemm_gpu.experimental.gen_ai is not usable here "
              f"({missing_fbgemm}); pip install fbgemm-gpu-genai to compare with it")
    backends = ["f8gemm", "torch"] + ([] if missing_fbgemm else ["fbgemm"])
    print(f"MoE layer: {args.experts} experts, top-{args.top_k}, hidden {args.hidden}, "
          f"intermediate {args.intermediate} on {torch.cuda.get_device_name()}; CUDA-graph "
          f"replay of one forward in us (median of {args.iters}); err = ||y - y_ref|| / "
          "||y_ref|| against the bf16 weights in fp32")
    cols = ["bf16"] + backends
    print(f"{'routing':>8} | {'tokens':>6} | " + " | ".join(f"{c:>9}" for c in cols)
          + " | " + " | ".join(f"{'vs ' + c:>9}" for c in cols if c != "f8gemm")
          + " | " + " | ".join(f"{'err ' + c:>11}" for c in backends))
    with torch.inference_mode():
        for routing in args.routing:
            ref = MoEReference(args.hidden, args.intermediate, args.experts, args.top_k, routing,
                               args.zipf_s, args.seed)
            layers = {"bf16": BF16MoE(ref) if hasattr(torch, "_grouped_mm") else None}
            layers.update({b: FP8MoE(ref, b) for b in backends})
            for tokens in args.tokens:
                g = torch.Generator(device="cuda").manual_seed(args.seed + tokens)
                x = torch.randn(tokens, args.hidden, device="cuda", dtype=torch.bfloat16,
                                generator=g)
                y_ref = ref(x).double()
                times, errs = {}, {}
                for name, layer in layers.items():
                    if layer is None:
                        continue
                    try:
                        y = layer(x)
                        errs[name] = ((y.double() - y_ref).norm() / y_ref.norm()).item()
                        times[name] = time_graph_us(lambda: layer(x), args.warmup, args.iters)
                    except Exception as exc:  # noqa: BLE001  (a peer's refusal is reported)
                        print(f"    {name} at {tokens} tokens: {type(exc).__name__}: "
                              f"{str(exc).splitlines()[0] if str(exc) else ''}")
                ours = times.get("f8gemm")

                def cell(name):
                    return f"{times[name]:>9.1f}" if name in times else f"{'-':>9}"

                def speedup(name):
                    return f"{times[name] / ours:>8.2f}x" if ours and name in times else f"{'-':>9}"

                def err(name):
                    return f"{errs[name]:>11.3e}" if name in errs else f"{'-':>11}"

                print(f"{routing:>8} | {tokens:>6} | " + " | ".join(cell(c) for c in cols)
                      + " | " + " | ".join(speedup(c) for c in cols if c != "f8gemm")
                      + " | " + " | ".join(err(c) for c in backends), flush=True)
            del layers, ref
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
