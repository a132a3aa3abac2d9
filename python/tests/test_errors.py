"""Every bad input raises a Python exception naming the argument: ValueError for an invalid
argument (dtype, shape, layout, device, alignment, K % 16, ...), RuntimeError otherwise."""

import helpers
from helpers import DEVICE, make_batched, make_single, pytest

helpers.require_device()

import torch  # noqa: E402

import f8gemm  # noqa: E402

ops = torch.ops.f8gemm
M, N, K = 32, 256, 512


def _ok():
    xq, wq, xs, ws, _ = make_single(M, N, K, seed=1)
    return xq, wq, xs, ws


def _misaligned(t):
    """t's values at an address one element past a 16-byte boundary."""
    flat = torch.empty(t.numel() + 16, dtype=t.dtype, device=t.device)
    view = flat[1:1 + t.numel()].view(t.shape)
    view.copy_(t)
    return view


def _noncontiguous(t):
    """t's values with a row stride twice the row length."""
    wide = torch.empty(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype, device=t.device)
    view = wide[..., : t.shape[-1]]
    view.copy_(t)
    return view


def _fp8(*shape):
    return torch.randn(*shape, generator=helpers.gen(0)).to(torch.float8_e4m3fn).to(DEVICE)


def _f32(*shape):
    return torch.ones(*shape, dtype=torch.float32, device=DEVICE)


# (name, callable, regex the message must match); all ValueError.
def _single_cases():
    xq, wq, xs, ws = _ok()
    wp = ops.preshuffle(wq)
    bf = torch.bfloat16
    return [
        ("XQ dtype bf16", lambda: ops.f8f8bf16_rowwise(xq.to(bf), wq, xs, ws),
         r"XQ must have dtype float8_e4m3fn, got bfloat16"),
        ("XQ dtype float64", lambda: ops.f8f8bf16_rowwise(xq.double(), wq, xs, ws),
         r"XQ must have dtype torch.float8_e4m3fn, got torch.float64"),
        ("XQ dtype e5m2", lambda: ops.f8f8bf16_rowwise(xq.to(torch.float8_e5m2), wq, xs, ws),
         r"XQ must have dtype .*float8_e5m2"),
        ("WQ dtype", lambda: ops.f8f8bf16_rowwise(xq, wq.to(bf), xs, ws),
         r"WQ must have dtype float8_e4m3fn"),
        ("WQ uint8 plain", lambda: ops.f8f8bf16_rowwise(xq, wq.view(torch.uint8), xs, ws),
         r"WQ must have dtype float8_e4m3fn, got uint8"),
        ("x_scale dtype", lambda: ops.f8f8bf16_rowwise(xq, wq, xs.to(bf), ws),
         r"x_scale must have dtype float32, got bfloat16"),
        ("w_scale dtype", lambda: ops.f8f8bf16_rowwise(xq, wq, xs, ws.double()),
         r"w_scale must have dtype torch.float32, got torch.float64"),
        ("bias dtype", lambda: ops.f8f8bf16_rowwise(xq, wq, xs, ws, _f32(N).half()),
         r"bias must have dtype float32 or bfloat16, got float16"),
        ("K % 16", lambda: ops.f8f8bf16_rowwise(_fp8(M, 40), _fp8(N, 40), xs, ws),
         r"K \(XQ's last dimension\) must be a positive multiple of 16.*got 40"),
        ("N % 8", lambda: ops.f8f8bf16_rowwise(xq, _fp8(20, K), xs, _f32(20)),
         r"N \(WQ's rows\) must be a positive multiple of 8, got 20"),
        ("WQ K mismatch", lambda: ops.f8f8bf16_rowwise(xq, _fp8(N, K + 16), xs, ws),
         r"WQ must have shape \[256, 512\]"),
        ("WQ rank", lambda: ops.f8f8bf16_rowwise(xq, wq.reshape(-1), xs, ws),
         r"WQ must be 2-D"),
        ("x_scale shape", lambda: ops.f8f8bf16_rowwise(xq, wq, xs[:-1], ws),
         r"x_scale must have XQ's leading shape"),
        # [M, 1] is accepted (keepdim scales, test_interop.py); [M, 2] is not.
        ("x_scale 2-D", lambda: ops.f8f8bf16_rowwise(xq, wq, _f32(M, 2), ws),
         r"x_scale must have XQ's leading shape"),
        ("w_scale shape", lambda: ops.f8f8bf16_rowwise(xq, wq, xs, ws[:-8]),
         r"w_scale must have shape \[256\]"),
        ("bias shape", lambda: ops.f8f8bf16_rowwise(xq, wq, xs, ws, _f32(N + 8)),
         r"bias must have shape \[256\]"),
        ("XQ 0-d", lambda: ops.f8f8bf16_rowwise(xq[0, 0], wq, xs, ws),
         r"XQ must be \[\.\.\., K\]"),
        ("XQ rank 5", lambda: ops.f8f8bf16_rowwise(xq.reshape(2, 2, 2, 4, K), wq,
                                                   xs.reshape(2, 2, 2, 4), ws),
         r"XQ has 5 dimensions"),
        ("XQ non-contiguous", lambda: ops.f8f8bf16_rowwise(_noncontiguous(xq), wq, xs, ws),
         r"XQ must be contiguous"),
        ("WQ non-contiguous", lambda: ops.f8f8bf16_rowwise(xq, _noncontiguous(wq), xs, ws),
         r"WQ must be contiguous"),
        ("WQ transposed", lambda: ops.f8f8bf16_rowwise(xq, _fp8(K, N).t(), xs, ws),
         r"WQ must be contiguous"),
        ("x_scale non-contiguous", lambda: ops.f8f8bf16_rowwise(xq, wq, _f32(2 * M)[::2], ws),
         r"x_scale must be contiguous"),
        ("XQ misaligned", lambda: ops.f8f8bf16_rowwise(_misaligned(xq), wq, xs, ws),
         r"XQ must be 16-byte aligned"),
        ("WQ misaligned", lambda: ops.f8f8bf16_rowwise(xq, _misaligned(wq), xs, ws),
         r"WQ must be 16-byte aligned"),
        ("plain weight to preshuffled op", lambda: ops.f8f8bf16_rowwise_preshuffled(xq, wq, xs, ws),
         r"WQ must be 3-D preshuffled.*plain weight.*preshuffle\(WQ\)"),
        ("plain weight to preshuffled fp16 op",
         lambda: ops.f8f8f16_rowwise_preshuffled(xq, wq, xs, ws),
         r"WQ must be 3-D preshuffled"),
        ("plain weight to preshuffled _out op",
         lambda: ops.f8f8bf16_rowwise_preshuffled_out(xq, wq, xs, ws, torch.empty(M, N, dtype=bf, device=DEVICE)),
         r"WQ must be 3-D preshuffled"),
        ("preshuffled weight to plain op", lambda: ops.f8f8bf16_rowwise(xq, wp, xs, ws),
         r"WQ must be 2-D \[N, K\] \(a plain weight\).*_preshuffled op"),
        ("preshuffled weight of another K",
         lambda: ops.f8f8bf16_rowwise_preshuffled(xq, ops.preshuffle(_fp8(N, K + 128)), xs, ws),
         r"WQ must have shape \[4, 32, 1024\]"),
        ("preshuffled weight dtype",
         lambda: ops.f8f8bf16_rowwise_preshuffled(xq, wp.view(torch.int8), xs, ws),
         r"WQ must have dtype .*torch.int8"),
        ("output dtype", lambda: ops.f8f8bf16_rowwise_out(xq, wq, xs, ws, torch.empty(M, N, dtype=torch.float16, device=DEVICE)),
         r"output must have dtype torch.bfloat16, got torch.float16"),
        ("output shape", lambda: ops.f8f8bf16_rowwise_out(xq, wq, xs, ws, torch.empty(M, N + 8, dtype=bf, device=DEVICE)),
         r"output must have shape"),
        ("output non-contiguous", lambda: ops.f8f8bf16_rowwise_out(xq, wq, xs, ws, torch.empty(N, M, dtype=bf, device=DEVICE).t()),
         r"output must be contiguous"),
    ]


def _batched_cases():
    b, m, n, k = 3, 16, 128, 256
    xq, wq, xs, ws, _ = make_batched(b, m, n, k, seed=2)
    wp = ops.preshuffle(wq)
    return [
        ("batched XQ rank", lambda: ops.f8f8bf16_rowwise_batched(xq[0], wq, xs, ws),
         r"XQ must be 3-D \[B, M, K\]"),
        ("batched WQ batch", lambda: ops.f8f8bf16_rowwise_batched(xq, wq[:2], xs, ws),
         r"WQ must have shape \[3, 128, 256\]"),
        ("batched x_scale", lambda: ops.f8f8bf16_rowwise_batched(xq, wq, xs.reshape(-1), ws),
         r"x_scale must have shape \[3, 16\]"),
        ("batched w_scale", lambda: ops.f8f8bf16_rowwise_batched(xq, wq, xs, ws[0]),
         r"w_scale must have shape \[3, 128\]"),
        ("batched bias", lambda: ops.f8f8bf16_rowwise_batched(xq, wq, xs, ws, _f32(n)),
         r"bias must have shape \[3, 128\]"),
        ("batched K % 16", lambda: ops.f8f8bf16_rowwise_batched(_fp8(b, m, 24), _fp8(b, n, 24), xs, ws),
         r"K \(XQ's last dimension\) must be a positive multiple of 16"),
        ("batched output dtype", lambda: ops.f8f8bf16_rowwise_batched(xq, wq, xs, ws, None, True, torch.empty(b, m, n, device=DEVICE)),
         r"output must have dtype torch.bfloat16, got torch.float32"),
        ("batched output shape", lambda: ops.f8f8bf16_rowwise_batched(xq, wq, xs, ws, None, True, torch.empty(b, m, n + 8, dtype=torch.bfloat16, device=DEVICE)),
         r"output must have shape \[3, 16, 128\]"),
        ("batched plain weight to preshuffled op",
         lambda: ops.f8f8bf16_rowwise_batched_preshuffled(xq, wq, xs, ws),
         r"WQ must be 4-D preshuffled.*preshuffle\(WQ\)"),
        ("batched preshuffled weight to plain op",
         lambda: ops.f8f8bf16_rowwise_batched(xq, wp, xs, ws),
         r"WQ must be 3-D \[B, N, K\] \(a plain weight\)"),
        ("batched 2-D preshuffled weight",
         lambda: ops.f8f8bf16_rowwise_batched_preshuffled(xq, wp[0], xs, ws),
         r"WQ must be 4-D preshuffled"),
    ]


def _other_cases():
    a = torch.randn(8, 64, generator=helpers.gen(3)).to(DEVICE, torch.bfloat16)
    w = _fp8(64, 256)
    return [
        ("quantize a dtype", lambda: ops.quantize_fp8_row(a.double()),
         r"a must have dtype torch.bfloat16, torch.float16 or torch.float32, got torch.float64"),
        ("quantize a 0-d", lambda: ops.quantize_fp8_row(a[0, 0]),
         r"a must have at least 1 dimension"),
        ("quantize output dtype", lambda: ops.quantize_fp8_row(a, None, True, torch.empty_like(a)),
         r"output must be float8_e4m3fn, got bfloat16"),
        ("quantize output shape", lambda: ops.quantize_fp8_row(a, None, True, _fp8(8, 32)),
         r"output must have a's shape"),
        ("quantize a non-contiguous", lambda: ops.quantize_fp8_row(a.t()),
         r"a must be contiguous"),
        ("quantize scale_ub numel", lambda: ops.quantize_fp8_row(a, torch.ones(2)),
         r"scale_ub must be a 1-element torch.float32 tensor"),
        ("quantize scale_ub dtype", lambda: ops.quantize_fp8_row(a, torch.ones(1, dtype=torch.float64)),
         r"scale_ub must be a 1-element torch.float32 tensor"),
        ("quantize scale_ub negative", lambda: ops.quantize_fp8_row(a, torch.tensor([-1.0])),
         r"scale_ub must be positive and finite"),
        ("preshuffle rank", lambda: ops.preshuffle(w.reshape(-1)),
         r"WQ must be \[N, K\] or \[B, N, K\]"),
        ("preshuffle dtype", lambda: ops.preshuffle(w.to(torch.bfloat16)),
         r"WQ must be float8_e4m3fn \(or uint8\), got bfloat16"),
        ("preshuffle N % 8", lambda: ops.preshuffle(_fp8(20, 256)),
         r"N \(WQ's rows\) must be a positive multiple of 8, got 20"),
        ("preshuffle K % 16", lambda: ops.preshuffle(_fp8(64, 40)),
         r"K \(WQ's last dimension\) must be a positive multiple of 16, got 40"),
        ("preshuffle non-contiguous", lambda: ops.preshuffle(_noncontiguous(w)),
         r"WQ must be contiguous"),
        ("unshuffle rank", lambda: ops.unshuffle(w, 256),
         r"WQ_shuffled must be preshuffled"),
        ("unshuffle K % 16", lambda: ops.unshuffle(ops.preshuffle(w), 250),
         r"K must be a positive multiple of 16, got 250"),
        ("unshuffle K mismatch", lambda: ops.unshuffle(ops.preshuffle(w), 512),
         r"WQ_shuffled must have shape \[4, 8, 1024\]"),
        ("precompile layout", lambda: f8gemm.precompile([(16, 256, 256)], layout="swizzled"),
         r"layout must be 'preshuffled' or 'plain'"),
        ("precompile shape", lambda: ops.precompile([16, 256], "plain", True, None, None, None),
         r"shape must be \[M, N, K\] or \[B, M, N, K\]"),
        ("precompile out_dtype", lambda: f8gemm.precompile([(16, 256, 256)], out_dtype=torch.float32),
         r"out_dtype must be torch.bfloat16 or torch.float16"),
        ("precompile bias_dtype", lambda: f8gemm.precompile([(16, 256, 256)], bias_dtype=torch.float16),
         r"bias_dtype must be None, torch.float32 or torch.bfloat16"),
        ("precompile N % 8", lambda: f8gemm.precompile([(16, 100, 256)]),
         r"N must be a positive multiple of 8"),
        ("precompile K % 16", lambda: f8gemm.precompile([(16, 256, 250)]),
         r"K must be a positive multiple of 16"),
    ]


CASES = _single_cases() + _batched_cases() + _other_cases()


@pytest.mark.parametrize("case", range(len(CASES)))
def test_value_error_names_the_argument(case):
    name, fn, pattern = CASES[case]
    with pytest.raises(ValueError, match=pattern):
        fn()


def test_error_prefix_names_the_op():
    xq, wq, xs, ws = _ok()
    with pytest.raises(ValueError, match=r"^f8gemm\.f8f8bf16_rowwise_preshuffled: invalid argument: "):
        ops.f8f8bf16_rowwise_preshuffled(xq, wq, xs, ws)


# ------------------------------------------------------------------- device errors (GPU only)


def _gpu_only():
    if DEVICE != "cuda":
        pytest.skip("device placement needs CUDA")


def test_cpu_tensors_are_rejected():
    _gpu_only()
    xq, wq, xs, ws = _ok()
    with pytest.raises(ValueError, match=r"XQ must be in GPU memory, got host memory"):
        ops.f8f8bf16_rowwise(xq.cpu(), wq.cpu(), xs.cpu(), ws.cpu())
    with pytest.raises(ValueError, match=r"XQ must be in GPU memory"):
        ops.f8f8bf16_rowwise(xq.cpu(), wq, xs, ws)
    with pytest.raises(ValueError, match=r"w_scale is on the host but XQ is on cuda:\d"):
        ops.f8f8bf16_rowwise(xq, wq, xs, ws.cpu())
    with pytest.raises(ValueError, match=r"WQ is on the host but XQ is on cuda:\d"):
        ops.f8f8bf16_rowwise_preshuffled(xq, ops.preshuffle(wq).cpu(), xs, ws)
    with pytest.raises(ValueError, match=r"bias is on the host"):
        ops.f8f8bf16_rowwise(xq, wq, xs, ws, torch.zeros(N))
    with pytest.raises(ValueError, match=r"output is on the host"):
        ops.f8f8bf16_rowwise_out(xq, wq, xs, ws, torch.empty(M, N, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match=r"output and|out_q|same memory"):
        ops.quantize_fp8_row(torch.randn(4, 64, device="cuda"), None, True,
                             torch.empty(4, 64, dtype=torch.float8_e4m3fn))


def test_tensors_on_two_gpus_are_rejected():
    _gpu_only()
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    xq, wq, xs, ws = _ok()
    with pytest.raises(ValueError, match=r"WQ is on cuda:1 but XQ is on cuda:0"):
        ops.f8f8bf16_rowwise(xq.to("cuda:0"), wq.to("cuda:1"), xs.to("cuda:0"), ws.to("cuda:0"))


def test_output_overlapping_an_input_is_rejected():
    """The kernel reads its inputs while it writes the output, in no fixed order: an output that
    shares bytes with an input (here XQ's storage) is refused by the library's validation."""
    _gpu_only()
    xq, wq, xs, ws = _ok()
    storage = torch.empty(M * N * 2, dtype=torch.uint8, device=DEVICE)  # the output's bytes
    x_alias = storage[:M * K].view(torch.float8_e4m3fn).view(M, K)
    x_alias.copy_(xq)
    out = storage.view(torch.bfloat16).view(M, N)
    with pytest.raises(ValueError, match=r"output overlaps XQ in memory"):
        ops.f8f8bf16_rowwise_out(x_alias, wq, xs, ws, out)
    with pytest.raises(ValueError, match=r"output overlaps XQ in memory"):
        ops.f8f8bf16_rowwise_preshuffled_out(x_alias, ops.preshuffle(wq), xs, ws, out)


def test_scale_ub_off_the_input_device_and_the_cpu_is_rejected():
    """A scale_ub on another device than a (and not on the CPU) would be read on the host with a
    sync (a capture error on another device's stream): both quantising ops refuse it alike."""
    _gpu_only()
    a = torch.randn(4, 64)
    for op, name in ((ops.quantize_fp8_row, "a"), (ops.silu_mul_quantize_fp8_row, "gate_up")):
        with pytest.raises(ValueError, match=rf"scale_ub must be on {name}'s device \(cpu\) or "
                                             r"on the CPU, got cuda:0"):
            op(a, torch.tensor([4.0], device="cuda:0"))
        if torch.cuda.device_count() > 1:
            with pytest.raises(ValueError, match=rf"scale_ub must be on {name}'s device "
                                                 r"\(cuda:0\) or on the CPU, got cuda:1"):
                op(a.to("cuda:0"), torch.tensor([4.0], device="cuda:1"))


def _graph_nodes(graph):
    """The number of nodes of a cudaGraph_t given as an int (cuGraphGetNodes)."""
    import ctypes
    count = ctypes.c_size_t(0)
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuGraphGetNodes.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.POINTER(ctypes.c_size_t)]
    assert lib.cuGraphGetNodes(graph, None, ctypes.byref(count)) == 0
    return count.value


def test_invalid_dynamic_grouped_call_launches_nothing():
    """The dynamic grouped ops zero their output only once the arguments are valid: a bad call
    captured in a CUDA graph leaves the graph empty (no memset node before the error)."""
    _gpu_only()
    g_, m_max, n, k = 2, 8, 64, 128
    xq = _fp8(g_, m_max, k)
    wq = _fp8(g_, n, k)
    sizes = torch.full((g_,), m_max, dtype=torch.int32, device=DEVICE)
    x_scale, bad_w_scale = _f32(g_, m_max), _f32(g_, n + 8)  # made before the capture
    for op, w in ((ops.f8f8bf16_rowwise_grouped_dynamic, wq),
                  (ops.f8f8bf16_rowwise_grouped_dynamic_preshuffled, ops.preshuffle(wq))):
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph(keep_graph=True)
        with torch.cuda.graph(graph):
            with pytest.raises(ValueError, match=r"w_scale must have shape"):
                op(xq, w, x_scale, bad_w_scale, sizes)
        assert _graph_nodes(graph.raw_cuda_graph()) == 0
