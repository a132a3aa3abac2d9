"""Column-parallel FP8 linear over several GPUs with torch.distributed (NCCL).

Each rank holds rows [r*N/W, (r+1)*N/W) of the weight as an f8gemm FP8Linear (quantised per row,
so the shards' scales are exactly the full weight's), computes its slice of the output, and the
slices are all-gathered along the last dimension. Every rank checks the result against the same
layer on one GPU (the unsharded FP8Linear) and against the fp64 reference.

    torchrun --nproc_per_node 2 examples/tp_linear.py          # or
    python3 examples/tp_linear.py --nproc 2                    # spawns the processes itself

NCCL_NVLS_ENABLE=0 is set before NCCL starts: NVLink multicast must stay off on these machines.
"""

import argparse
import os
import socket
import sys

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
import f8gemm  # noqa: E402,F401
from f8gemm.nn import FP8Linear  # noqa: E402


class ColumnParallelFP8Linear(torch.nn.Module):
    """The rows of `linear` that this rank owns, as an FP8Linear; forward all-gathers the output
    slices so that every rank returns the full [..., out_features] result."""

    def __init__(self, linear, rank, world_size, group=None, **fp8_kwargs):
        super().__init__()
        n = linear.out_features
        if n % (8 * world_size) != 0:
            raise ValueError(f"out_features ({n}) must be a multiple of 8 * world_size")
        rows = n // world_size
        lo, hi = rank * rows, (rank + 1) * rows
        shard = torch.nn.Linear(linear.in_features, rows, bias=linear.bias is not None,
                                device=linear.weight.device, dtype=linear.weight.dtype)
        with torch.no_grad():
            shard.weight.copy_(linear.weight[lo:hi])
            if linear.bias is not None:
                shard.bias.copy_(linear.bias[lo:hi])
        self.local = FP8Linear.from_linear(shard, **fp8_kwargs)
        self.world_size = world_size
        self.group = group

    def forward(self, x):
        y = self.local(x).contiguous()
        parts = [torch.empty_like(y) for _ in range(self.world_size)]
        dist.all_gather(parts, y, group=self.group)
        return torch.cat(parts, dim=-1)


def _make_layer(k, n, seed, device):
    g = torch.Generator().manual_seed(seed)
    lin = torch.nn.Linear(k, n, bias=True)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(n, k, generator=g) / k ** 0.5)
        lin.bias.copy_(torch.randn(n, generator=g) * 0.1)
    return lin.to(device, torch.bfloat16)


def _rel_rms(y, ref):
    ref = ref.double()
    return ((y.double() - ref).norm() / ref.norm()).item()


@torch.no_grad()
def run_worker(rank, world_size, port=None, m=64, k=4096, n=2048, seed=0, verbose=True):
    """One rank: builds the sharded layer, runs it, checks it. Raises AssertionError on a
    mismatch (mp.spawn then reports it)."""
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    if port is not None:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
    device = torch.device("cuda", rank)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", rank=rank, world_size=world_size, device_id=device)
    try:
        full = _make_layer(k, n, seed, device)
        g = torch.Generator().manual_seed(seed + 1)
        x = torch.randn(m, k, generator=g).to(device, torch.bfloat16)  # the same on every rank

        tp = ColumnParallelFP8Linear(full, rank, world_size)
        y_tp = tp(x)
        single = FP8Linear.from_linear(full)  # the unsharded layer on this one GPU
        y_one = single(x)

        ops = torch.ops.f8gemm
        xq, xs = ops.quantize_fp8_row(x)
        wq = ops.unshuffle(single.weight, k)
        ref = (xq.float().double() * xs.double()[:, None]) @ \
            (wq.float().double() * single.weight_scale.double()[:, None]).t() + \
            single.bias.double()
        err_tp, err_one = _rel_rms(y_tp, ref), _rel_rms(y_tp, y_one)
        bitwise = torch.equal(y_tp, y_one)
        if verbose:
            print(f"rank {rank}/{world_size} on cuda:{rank}: y {tuple(y_tp.shape)}, rel RMS vs "
                  f"fp64 {err_tp:.3e}, vs one GPU {err_one:.3e} (bitwise equal: {bitwise})",
                  flush=True)
        assert y_tp.shape == (m, n) and y_tp.device == device
        assert err_tp <= 3.0e-3, f"rank {rank}: rel RMS vs fp64 {err_tp:.3e}"
        assert err_one <= 4.0e-3, f"rank {rank}: rel RMS vs one GPU {err_one:.3e}"
        if rank != 0:
            # nothing of this rank's work went through device 0's allocator
            assert torch.cuda.memory_allocated(0) == 0
        assert torch.cuda.current_device() == rank
        dist.barrier()
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nproc", type=int, default=2, help="processes to spawn without torchrun")
    p.add_argument("--m", type=int, default=64)
    p.add_argument("--k", type=int, default=4096)
    p.add_argument("--n", type=int, default=2048)
    args = p.parse_args()
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # under torchrun
        run_worker(int(os.environ.get("LOCAL_RANK", os.environ["RANK"])),
                   int(os.environ["WORLD_SIZE"]), None, args.m, args.k, args.n)
        return
    if torch.cuda.device_count() < args.nproc:
        sys.exit(f"needs {args.nproc} GPUs, found {torch.cuda.device_count()}")
    import torch.multiprocessing as mp
    mp.spawn(run_worker, args=(args.nproc, free_port(), args.m, args.k, args.n),
             nprocs=args.nproc, join=True)
    print(f"column-parallel FP8 linear on {args.nproc} GPUs matches one GPU")


if __name__ == "__main__":
    main()
