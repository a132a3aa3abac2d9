"""CUDA graphs: the single, _out, preshuffled and batched ops (and quantize_fp8_row) captured and
replayed on new data; no allocation by the _out forms inside capture; a clear error when a
kernel would have to be compiled during capture; torch.compile(mode="reduce-overhead")."""

import gc

import helpers
from helpers import (bound, make_batched, make_single, make_linear, pdl_switch, pytest,
                     reference, rel_rms, same_bits, warm_up)

helpers.require_device()

import torch  # noqa: E402

import f8gemm  # noqa: E402
from f8gemm.nn import FP8GatedMLP, FP8Linear  # noqa: E402

ops = torch.ops.f8gemm


def _refill(static, fresh):
    for dst, src in zip(static, fresh):
        if dst is not None:
            dst.copy_(src)


def _capture(fn):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        result = fn()
    return g, result


@pytest.mark.parametrize("layout", ["plain", "preshuffled"])
@pytest.mark.parametrize("fast", [True, False])
def test_single_ops_capture_and_replay(layout, fast):
    m, n, k = 96, 1024, 768
    static = list(make_single(m, n, k, seed=1, bias_dtype=torch.float32))
    if layout == "preshuffled":
        static[1] = ops.preshuffle(static[1])
    op = ops.f8f8bf16_rowwise if layout == "plain" else ops.f8f8bf16_rowwise_preshuffled
    op16 = ops.f8f8f16_rowwise if layout == "plain" else ops.f8f8f16_rowwise_preshuffled
    out_op = ops.f8f8bf16_rowwise_out if layout == "plain" else ops.f8f8bf16_rowwise_preshuffled_out
    xq, w, xs, ws, bias = static
    out = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")

    def body():
        y = op(xq, w, xs, ws, bias, fast)
        y16 = op16(xq, w, xs, ws, None, fast)
        out_op(xq, w, xs, ws, out, bias, fast)
        return y, y16

    warm_up(body)
    g, (y, y16) = _capture(body)

    fresh = list(make_single(m, n, k, seed=2, bias_dtype=torch.float32))
    wq_fresh = fresh[1]
    if layout == "preshuffled":
        fresh[1] = ops.preshuffle(fresh[1])
    _refill(static, fresh)
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    ref = reference(fresh[0], wq_fresh, fresh[2], fresh[3], fresh[4])
    assert rel_rms(y, ref) <= bound(fast)
    assert torch.equal(y, op(*fresh, fast))  # bitwise equal to an eager call
    assert torch.equal(out, y)
    assert torch.equal(y16, op16(fresh[0], fresh[1], fresh[2], fresh[3], None, fast))


@pytest.mark.parametrize("layout", ["plain", "preshuffled"])
def test_batched_ops_capture_and_replay(layout):
    b, m, n, k = 4, 40, 256, 512
    static = list(make_batched(b, m, n, k, seed=3, bias_dtype=torch.bfloat16))
    if layout == "preshuffled":
        static[1] = ops.preshuffle(static[1])
    op = ops.f8f8bf16_rowwise_batched if layout == "plain" \
        else ops.f8f8bf16_rowwise_batched_preshuffled
    xq, w, xs, ws, bias = static
    out = torch.empty(b, m, n, dtype=torch.bfloat16, device="cuda")

    def body():
        y = op(xq, w, xs, ws, bias)
        op(xq, w, xs, ws, bias, True, out)
        return y

    warm_up(body)
    g, y = _capture(body)
    fresh = list(make_batched(b, m, n, k, seed=4, bias_dtype=torch.bfloat16))
    wq_fresh = fresh[1]
    if layout == "preshuffled":
        fresh[1] = ops.preshuffle(fresh[1])
    _refill(static, fresh)
    g.replay()
    torch.cuda.synchronize()
    assert rel_rms(y, reference(fresh[0], wq_fresh, fresh[2], fresh[3], fresh[4])) <= bound(True)
    assert torch.equal(y, op(*fresh))
    assert torch.equal(out, y)


def test_out_forms_allocate_nothing_in_capture():
    m, n, k = 64, 512, 512
    xq, wq, xs, ws, _ = make_single(m, n, k, seed=5)
    wp = ops.preshuffle(wq)
    xb, wb, xsb, wsb, _ = make_batched(2, m, n, k, seed=6)
    out = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
    outb = torch.empty(2, m, n, dtype=torch.bfloat16, device="cuda")

    def body():
        ops.f8f8bf16_rowwise_out(xq, wq, xs, ws, out)
        ops.f8f8bf16_rowwise_preshuffled_out(xq, wp, xs, ws, out)
        ops.f8f8bf16_rowwise_batched(xb, wb, xsb, wsb, None, True, outb)

    warm_up(body)
    gc.collect()
    torch.cuda.synchronize()
    # torch itself allocates during a capture (1 KB of RNG bookkeeping per graph, seen on torch
    # 2.11): measure an empty capture the same way and allow exactly that much.
    empty = torch.cuda.CUDAGraph()
    before = torch.cuda.memory_allocated()
    with torch.cuda.graph(empty):
        pass
    torch_own = torch.cuda.memory_allocated() - before
    before = torch.cuda.memory_allocated()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        body()
    # nothing allocated by the ops during the capture
    assert torch.cuda.memory_allocated() - before <= torch_own
    out.zero_()
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, ops.f8f8bf16_rowwise(xq, wq, xs, ws))
    assert torch.equal(outb, ops.f8f8bf16_rowwise_batched(xb, wb, xsb, wsb))


def test_fp8linear_capture_and_replay():
    lin = torch.nn.Linear(1024, 768, bias=True).to("cuda", torch.bfloat16)
    fp8 = FP8Linear.from_linear(lin, activation_scale_ub=1200.0)  # a CPU scale_ub: no sync
    x = torch.randn(8, 20, 1024, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        warm_up(lambda: fp8(x))
        g, y = _capture(lambda: fp8(x))
        x.copy_(torch.randn(8, 20, 1024, device="cuda", dtype=torch.bfloat16))
        g.replay()
        torch.cuda.synchronize()
        assert torch.equal(y, fp8(x))


def test_compile_needed_during_capture_is_a_clear_error():
    # A problem no other test uses (its plan cannot be built yet in this process).
    m, n, k = 48, 136, 400
    xq, wq, xs, ws, bias = make_single(m, n, k, seed=7, bias_dtype=torch.bfloat16)
    torch.cuda.synchronize()
    with pytest.raises(RuntimeError, match=r"precompile") as info:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            ops.f8f8f16_rowwise(xq, wq, xs, ws, bias, False)
    msg = str(info.value)
    assert "M,N,K = (48, 136, 400)" in msg and "capturing a CUDA graph" in msg, msg
    torch.cuda.synchronize()
    # After precompile, the same capture works and replays correctly.
    f8gemm.precompile([(m, n, k)], layout="plain", use_fast_accum=False,
                      out_dtype=torch.float16, bias_dtype=torch.bfloat16)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = ops.f8f8f16_rowwise(xq, wq, xs, ws, bias, False)
    g.replay()
    torch.cuda.synchronize()
    assert rel_rms(y, reference(xq, wq, xs, ws, bias)) <= bound(False)
    assert torch.equal(y, ops.f8f8f16_rowwise(xq, wq, xs, ws, bias, False))


def test_batched_compile_needed_during_capture_is_a_clear_error():
    b, m, n, k = 3, 24, 72, 208
    xq, wq, xs, ws, _ = make_batched(b, m, n, k, seed=8)
    wp = ops.preshuffle(wq)
    torch.cuda.synchronize()
    with pytest.raises(RuntimeError, match=r"B,M,N,K = \(3, 24, 72, 208\).*precompile"):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            ops.f8f8bf16_rowwise_batched_preshuffled(xq, wp, xs, ws)
    torch.cuda.synchronize()
    f8gemm.precompile([(b, m, n, k)])
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = ops.f8f8bf16_rowwise_batched_preshuffled(xq, wp, xs, ws)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, ops.f8f8bf16_rowwise_batched_preshuffled(xq, wp, xs, ws))


def test_chained_call_needs_precompile_with_pdl_and_prefetch_w():
    """A call with prefetch_w=True and PDL on has a plan of its own (ProblemShape::chained):
    the ordinary precompile does not ready it, the capture error names the two arguments, and
    precompile with them (pdl=None: both plans, for either F8GEMM_PDL) makes the capture work."""
    for m, pdl, switch in ((40, True, None), (56, None, "1")):  # problems no other test uses
        xq, wq, xs, ws, _ = make_single(m, 264, 336, seed=m)
        wp = ops.preshuffle(wq)

        def call():
            return ops.f8f8bf16_rowwise_preshuffled(xq, wp, xs, ws, None, True, pdl, True)

        with pdl_switch(switch):
            f8gemm.precompile([(m, 264, 336)])  # the unchained plan only
            torch.cuda.synchronize()
            with pytest.raises(RuntimeError, match=r"with PDL and prefetch_w\).*precompile.*"
                                                   r"pdl=True, prefetch_w=True\) or run"):
                _capture(call)
            torch.cuda.synchronize()
            f8gemm.precompile([(m, 264, 336)], pdl=pdl, prefetch_w=True)
            g, y = _capture(call)
            y.fill_(float("nan"))
            g.replay()
            torch.cuda.synchronize()
            assert same_bits(y, call()), (m, pdl)
            assert rel_rms(y, reference(xq, wq, xs, ws)) <= bound(True)


@torch.no_grad()
def test_gated_mlp_with_pdl_captures_after_precompile():
    """FP8GatedMLP (pdl=True by default, prefetch_w=True on its GEMMs) captures in a CUDA graph
    once its GEMMs are precompiled with pdl=True, prefetch_w=True, without any eager call."""
    m, hidden, inter = 24, 320, 176  # shapes no other test uses
    mlp = FP8GatedMLP.from_linears(make_linear(hidden, inter, bias=False, seed=21),
                                   make_linear(hidden, inter, bias=False, seed=22),
                                   make_linear(inter, hidden, bias=False, seed=23))
    assert mlp.pdl is True
    x = torch.randn(m, hidden, generator=helpers.gen(24)).to("cuda", torch.bfloat16)
    # The quantising kernels load at any call; the GEMMs' plans only with their shapes.
    ops.quantize_fp8_row(x[:1])
    ops.silu_mul_quantize_fp8_row(torch.ones(1, 32, device="cuda", dtype=torch.bfloat16))
    gate_up, down = (m, 2 * inter, hidden), (m, hidden, inter)
    for epilogue in ("none", "silu_mul"):  # either path of the forward (by its row count)
        f8gemm.precompile([gate_up], epilogue=epilogue, pdl=True, prefetch_w=True)
    f8gemm.precompile([down], pdl=True, prefetch_w=True)
    torch.cuda.synchronize()
    g, y = _capture(lambda: mlp(x))
    g.replay()
    torch.cuda.synchronize()
    assert same_bits(y, mlp(x))


def test_cuda_scale_ub_in_capture_is_read_at_replay():
    a = torch.randn(16, 256, device="cuda", dtype=torch.bfloat16)
    ub = torch.tensor([4.0], device="cuda")
    warm_up(lambda: ops.quantize_fp8_row(a, ub))
    # A scale_ub on the GPU is read by the kernel: legal in capture, and a new value takes
    # effect at the next replay without a new capture.
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        q, s = ops.quantize_fp8_row(a, ub)
    for value in (4.0, 0.5):
        ub.fill_(value)
        g.replay()
        torch.cuda.synchronize()
        q2, s2 = ops.quantize_fp8_row(a, torch.tensor([value]))
        assert torch.equal(q.view(torch.uint8), q2.view(torch.uint8)) and torch.equal(s, s2)
    # with a CPU scale_ub the capture works too (the value is read at capture time)
    ub_cpu = ub.cpu()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        q, s = ops.quantize_fp8_row(a, ub_cpu)
    g.replay()
    torch.cuda.synchronize()
    q2, s2 = ops.quantize_fp8_row(a, ub)
    assert torch.equal(q.view(torch.uint8), q2.view(torch.uint8)) and torch.equal(s, s2)


@torch.no_grad()
def test_compile_reduce_overhead():
    lin1 = torch.nn.Linear(512, 1024).to("cuda", torch.bfloat16)
    lin2 = torch.nn.Linear(1024, 512).to("cuda", torch.bfloat16)
    model = torch.nn.Sequential(FP8Linear.from_linear(lin1), torch.nn.SiLU(),
                                FP8Linear.from_linear(lin2))
    torch._dynamo.reset()
    compiled = torch.compile(model, mode="reduce-overhead", fullgraph=True)
    x = torch.randn(32, 512, device="cuda", dtype=torch.bfloat16)
    for _ in range(4):  # warm-up runs, then recorded graph replays
        y = compiled(x)
    torch.cuda.synchronize()
    assert rel_rms(y.clone(), model(x)) <= 1e-2
