"""Several GPUs: the ops on cuda:1 tensors while the current device is 0 (right results, the
current device unchanged, nothing allocated on device 0), and a column-parallel FP8 linear over
2 GPUs with torch.distributed (NCCL) matching one GPU. Skips with fewer than 2 sm_90 GPUs."""

import gc
import os
import sys

import helpers
from helpers import bound, make_batched, make_single, pytest, reference, rel_rms

helpers.require_device(min_gpus=2)

os.environ["NCCL_NVLS_ENABLE"] = "0"  # before any NCCL use: NVLink multicast stays off

import torch  # noqa: E402

import f8gemm  # noqa: E402
from f8gemm.nn import FP8Linear  # noqa: E402

ops = torch.ops.f8gemm
EXAMPLES = os.path.join(helpers.REPO, "examples")


def test_ops_on_cuda1_leave_device0_alone():
    torch.cuda.set_device(0)
    torch.cuda.synchronize(0)
    gc.collect()  # so that no earlier garbage is freed on device 0 during the test
    before0 = torch.cuda.memory_allocated(0)
    dev = torch.device("cuda", 1)

    xq, wq, xs, ws, bias = make_single(80, 512, 1024, seed=1, device=dev, bias_dtype=torch.float32)
    assert torch.cuda.current_device() == 0
    wp = ops.preshuffle(wq)
    assert wp.device == dev and torch.cuda.current_device() == 0
    ref = reference(xq, wq, xs, ws, bias)
    for fast in (True, False):
        for y in (ops.f8f8bf16_rowwise(xq, wq, xs, ws, bias, fast),
                  ops.f8f8bf16_rowwise_preshuffled(xq, wp, xs, ws, bias, fast)):
            assert y.device == dev and torch.cuda.current_device() == 0
            assert rel_rms(y, ref) <= bound(fast)
    out = torch.empty(80, 512, dtype=torch.bfloat16, device=dev)
    ops.f8f8bf16_rowwise_out(xq, wq, xs, ws, out, bias)
    assert torch.equal(out, ops.f8f8bf16_rowwise(xq, wq, xs, ws, bias))
    assert torch.equal(ops.unshuffle(wp, 1024).view(torch.uint8), wq.view(torch.uint8))

    xb, wb, xsb, wsb, _ = make_batched(3, 40, 256, 512, seed=2, device=dev)
    yb = ops.f8f8bf16_rowwise_batched_preshuffled(xb, ops.preshuffle(wb), xsb, wsb)
    assert yb.device == dev and rel_rms(yb, reference(xb, wb, xsb, wsb)) <= bound(True)

    fp8 = FP8Linear.from_linear(torch.nn.Linear(512, 256).to(dev, torch.bfloat16))
    with torch.no_grad():
        assert fp8(torch.randn(4, 512, device=dev, dtype=torch.bfloat16)).device == dev

    torch.cuda.synchronize(1)
    assert torch.cuda.current_device() == 0
    assert torch.cuda.memory_allocated(0) <= before0  # nothing allocated on device 0

    # The same problem on cuda:0 gives the same bits (same GPU model, same kernel).
    y1 = ops.f8f8bf16_rowwise(xq, wq, xs, ws, bias)
    y0 = ops.f8f8bf16_rowwise(xq.to(0), wq.to(0), xs.to(0), ws.to(0), bias.to(0))
    assert torch.equal(y0.cpu(), y1.cpu())


def test_cuda1_current_stream_is_used():
    dev = torch.device("cuda", 1)
    xq, wq, xs, ws, _ = make_single(256, 1024, 2048, seed=3, device=dev)
    want = ops.f8f8bf16_rowwise(xq, wq, xs, ws)
    torch.cuda.synchronize(1)
    s = torch.cuda.Stream(device=dev)
    with torch.cuda.stream(s):
        y = ops.f8f8bf16_rowwise(xq, wq, xs, ws)
    s.synchronize()
    assert torch.equal(y, want)


def test_column_parallel_two_gpus():
    if EXAMPLES not in sys.path:
        sys.path.insert(0, EXAMPLES)
    import torch.multiprocessing as mp

    import tp_linear
    # Raises (with the worker's traceback) if a rank's result differs from one GPU's.
    mp.spawn(tp_linear.run_worker, args=(2, tp_linear.free_port(), 64, 4096, 2048, 0, True),
             nprocs=2, join=True)
