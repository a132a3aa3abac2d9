"""torch.library.opcheck on every op (schema, fake/meta kernels, AOT dispatch with dynamic
shapes), with and without the trailing pdl (and prefetch_w), and modules using the ops under
torch.compile(fullgraph=True), against eager; a compiled module still launches with its pdl."""

import contextlib

import graph_edges
import helpers
from helpers import DEVICE, make_batched, make_single, pdl_switch, pytest, rel_rms, same_bits

helpers.require_device()

import torch  # noqa: E402

import f8gemm  # noqa: E402
from f8gemm.nn import FP8GatedMLP, FP8Linear  # noqa: E402

ops = torch.ops.f8gemm


def _opcheck_cases():
    bf = torch.bfloat16
    xq, wq, xs, ws, bias = make_single(64, 256, 512, seed=1, bias_dtype=torch.float32)
    bias_bf = bias.to(bf)
    wp = ops.preshuffle(wq)
    x3, _, xs3, _, _ = make_single(0, 256, 512, seed=2, lead=(2, 8))
    xb, wb, xsb, wsb, biasb = make_batched(3, 40, 128, 256, seed=3, bias_dtype=torch.float32)
    wbp = ops.preshuffle(wb)
    out = torch.empty(64, 256, dtype=bf, device=DEVICE)
    outb = torch.empty(3, 40, 128, dtype=bf, device=DEVICE)
    a = torch.randn(6, 7, 256, generator=helpers.gen(4)).to(DEVICE, bf)
    return [
        ("rowwise", ops.f8f8bf16_rowwise.default, (xq, wq, xs, ws), {}),
        ("rowwise bias precise", ops.f8f8bf16_rowwise.default, (xq, wq, xs, ws, bias, False), {}),
        ("rowwise 3-D", ops.f8f8bf16_rowwise.default, (x3, wq, xs3, ws), {}),
        ("rowwise kwargs", ops.f8f8bf16_rowwise.default, (xq, wq, xs, ws),
         {"bias": bias_bf, "use_fast_accum": False}),
        ("f16", ops.f8f8f16_rowwise.default, (xq, wq, xs, ws, bias), {}),
        ("out", ops.f8f8bf16_rowwise_out.default, (xq, wq, xs, ws, out), {}),
        ("out bias", ops.f8f8bf16_rowwise_out.default, (xq, wq, xs, ws, out, bias_bf, False), {}),
        ("batched", ops.f8f8bf16_rowwise_batched.default, (xb, wb, xsb, wsb), {}),
        ("batched bias", ops.f8f8bf16_rowwise_batched.default, (xb, wb, xsb, wsb, biasb, False), {}),
        ("preshuffled", ops.f8f8bf16_rowwise_preshuffled.default, (xq, wp, xs, ws, bias_bf), {}),
        ("preshuffled 3-D", ops.f8f8bf16_rowwise_preshuffled.default, (x3, wp, xs3, ws), {}),
        ("preshuffled out", ops.f8f8bf16_rowwise_preshuffled_out.default, (xq, wp, xs, ws, out), {}),
        ("preshuffled f16", ops.f8f8f16_rowwise_preshuffled.default, (xq, wp, xs, ws, None, False), {}),
        ("batched preshuffled", ops.f8f8bf16_rowwise_batched_preshuffled.default,
         (xb, wbp, xsb, wsb, biasb), {}),
        ("batched output=", ops.f8f8bf16_rowwise_batched.default,
         (xb, wb, xsb, wsb, None, True, outb), {}),
        ("batched preshuffled output=", ops.f8f8bf16_rowwise_batched_preshuffled.default,
         (xb, wbp, xsb, wsb, biasb), {"output": outb}),
        ("internal batched", ops._rowwise_batched.default,
         (xb, wbp, xsb, wsb, None, False, True), {}),
        ("internal batched out", ops._rowwise_batched_out.default,
         (xb, wb, xsb, wsb, outb, biasb, True, False), {}),
        ("preshuffle", ops.preshuffle.default, (wq,), {}),
        ("preshuffle 3-D", ops.preshuffle.default, (wb,), {}),
        ("unshuffle", ops.unshuffle.default, (wp, 512), {}),
        ("unshuffle 4-D", ops.unshuffle.default, (wbp, 256), {}),
        ("quantize", ops.quantize_fp8_row.default, (a,), {}),
        ("quantize 2-D fp32", ops.quantize_fp8_row.default, (a[0].float(),), {}),
        # A 0-dim CPU scale_ub: FakeTensor allows CPU scalars beside CUDA tensors.
        ("quantize scale_ub", ops.quantize_fp8_row.default, (a, torch.tensor(2.0), False), {}),
        # The trailing pdl (programmatic dependent launch), by keyword and by position.
        ("rowwise pdl", ops.f8f8bf16_rowwise.default, (xq, wq, xs, ws), {"pdl": True}),
        ("rowwise pdl off", ops.f8f8bf16_rowwise.default, (xq, wq, xs, ws, bias, False, False),
         {}),
        ("rowwise pdl None", ops.f8f8bf16_rowwise.default, (xq, wq, xs, ws), {"pdl": None}),
        ("f16 pdl", ops.f8f8f16_rowwise.default, (xq, wq, xs, ws, None, True, True), {}),
        ("out pdl", ops.f8f8bf16_rowwise_out.default, (xq, wq, xs, ws, out), {"pdl": True}),
        ("preshuffled pdl", ops.f8f8bf16_rowwise_preshuffled.default, (xq, wp, xs, ws),
         {"pdl": True}),
        ("preshuffled pdl off", ops.f8f8bf16_rowwise_preshuffled.default, (x3, wp, xs3, ws),
         {"pdl": False}),
        ("preshuffled out pdl", ops.f8f8bf16_rowwise_preshuffled_out.default,
         (xq, wp, xs, ws, out, bias_bf, True, True), {}),
        ("preshuffled f16 pdl", ops.f8f8f16_rowwise_preshuffled.default, (xq, wp, xs, ws),
         {"pdl": True}),
        # The single preshuffled GEMMs' last prefetch_w (W final: loaded before the PDL wait).
        ("preshuffled prefetch_w", ops.f8f8bf16_rowwise_preshuffled.default, (xq, wp, xs, ws),
         {"pdl": True, "prefetch_w": True}),
        ("preshuffled prefetch_w positional", ops.f8f8bf16_rowwise_preshuffled.default,
         (xq, wp, xs, ws, bias_bf, False, True, True), {}),
        ("preshuffled prefetch_w pdl off", ops.f8f8bf16_rowwise_preshuffled.default,
         (x3, wp, xs3, ws), {"pdl": False, "prefetch_w": True}),
        ("preshuffled out prefetch_w", ops.f8f8bf16_rowwise_preshuffled_out.default,
         (xq, wp, xs, ws, out, None, True, True, True), {}),
        ("preshuffled f16 prefetch_w", ops.f8f8f16_rowwise_preshuffled.default, (xq, wp, xs, ws),
         {"pdl": True, "prefetch_w": True}),
        ("preshuffle alias prefetch_w", ops.f8f8bf16_rowwise_preshuffle.default,
         (xq, wp, xs, ws), {"pdl": True, "prefetch_w": True}),
        ("batched pdl", ops.f8f8bf16_rowwise_batched.default, (xb, wb, xsb, wsb), {"pdl": True}),
        ("batched preshuffled pdl off", ops.f8f8bf16_rowwise_batched_preshuffled.default,
         (xb, wbp, xsb, wsb, biasb, True, None, False), {}),
        ("batched output= pdl", ops.f8f8bf16_rowwise_batched.default, (xb, wb, xsb, wsb),
         {"output": outb, "pdl": True}),
        ("internal batched pdl", ops._rowwise_batched.default,
         (xb, wbp, xsb, wsb, None, True, True, True), {}),
        ("internal batched out pdl off", ops._rowwise_batched_out.default,
         (xb, wb, xsb, wsb, outb, None, True, False), {"pdl": False}),
        ("quantize pdl", ops.quantize_fp8_row.default, (a,), {"pdl": True}),
        ("quantize pdl off", ops.quantize_fp8_row.default, (a, None, True, None, False), {}),
        ("quantize pdl None", ops.quantize_fp8_row.default, (a,), {"pdl": None}),
        # The SiLU·mul epilogue: WQ is [gate; up] (256 rows: I = 128), the output [..., 128].
        ("silu_mul", ops.f8f8bf16_rowwise_silu_mul.default, (xq, wq, xs, ws, bias), {}),
        ("silu_mul 3-D pdl", ops.f8f8bf16_rowwise_silu_mul.default, (x3, wq, xs3, ws),
         {"pdl": True}),
        ("preshuffled silu_mul", ops.f8f8bf16_rowwise_preshuffled_silu_mul.default,
         (xq, wp, xs, ws, bias_bf, False), {}),
        ("preshuffled silu_mul prefetch_w", ops.f8f8bf16_rowwise_preshuffled_silu_mul.default,
         (xq, wp, xs, ws), {"pdl": True, "prefetch_w": True}),
    ]


_CASES = _opcheck_cases()


_fp8_comparable = helpers.fp8_comparable


# quantize_fp8_row(output=...) returns its output argument, as FBGEMM's does; opcheck's schema
# test rejects a returned input, so it is checked with output=None here and with output= in
# test_ops and test_graphs. (The batched ops route output= to an internal _out op, which opcheck
# sees instead.) precompile takes no tensors.
@pytest.mark.parametrize("case", range(len(_CASES)))
def test_opcheck(case):
    name, op, args, kwargs = _CASES[case]
    with _fp8_comparable():
        torch.library.opcheck(op, args, kwargs)


def test_every_op_has_an_opcheck_case():
    covered = {op.__name__.split(".")[0] for _, op, _, _ in _CASES}
    expected = {"f8f8bf16_rowwise", "f8f8bf16_rowwise_out", "f8f8f16_rowwise",
                "f8f8bf16_rowwise_batched", "f8f8bf16_rowwise_preshuffled",
                "f8f8bf16_rowwise_preshuffled_out", "f8f8f16_rowwise_preshuffled",
                "f8f8bf16_rowwise_batched_preshuffled", "preshuffle", "unshuffle",
                "quantize_fp8_row", "_rowwise_batched", "_rowwise_batched_out",
                "f8f8bf16_rowwise_silu_mul", "f8f8bf16_rowwise_preshuffled_silu_mul"}
    assert expected <= covered, expected - covered


def test_meta_shapes():
    with torch.device("meta"):
        xq = torch.empty(2, 5, 512, dtype=torch.float8_e4m3fn)
        wq = torch.empty(256, 512, dtype=torch.float8_e4m3fn)
        xs = torch.empty(2, 5)
        ws = torch.empty(256)
        y = ops.f8f8bf16_rowwise(xq, wq, xs, ws)
        assert y.shape == (2, 5, 256) and y.dtype == torch.bfloat16 and y.device.type == "meta"
        assert ops.f8f8f16_rowwise(xq, wq, xs, ws).dtype == torch.float16
        wp = ops.preshuffle(wq)
        assert wp.shape == (4, 32, 1024) and wp.dtype == torch.float8_e4m3fn
        assert ops.preshuffle(torch.empty(3, 136, 272, dtype=torch.float8_e4m3fn)).shape == (3, 3, 17, 1024)
        assert ops.unshuffle(wp, 512).shape == (256, 512)
        assert ops.f8f8bf16_rowwise_preshuffled(xq, wp, xs, ws).shape == (2, 5, 256)
        q, s = ops.quantize_fp8_row(torch.empty(2, 5, 512, dtype=torch.bfloat16))
        assert q.shape == (2, 5, 512) and q.dtype == torch.float8_e4m3fn
        assert s.shape == (2, 5) and s.dtype == torch.float32
        yb = ops.f8f8bf16_rowwise_batched(torch.empty(3, 7, 512, dtype=torch.float8_e4m3fn),
                                          torch.empty(3, 64, 512, dtype=torch.float8_e4m3fn),
                                          torch.empty(3, 7), torch.empty(3, 64))
        assert yb.shape == (3, 7, 64)
        with pytest.raises(ValueError, match=r"WQ must be 3-D preshuffled.*preshuffle\(WQ\)"):
            ops.f8f8bf16_rowwise_preshuffled(xq, wq, xs, ws)


# ---------------------------------------------------------------------------- torch.compile


def _linear(k, n, bias, seed):
    return helpers.make_linear(k, n, bias=bias, seed=seed)


class _Block(torch.nn.Module):
    """fc2(silu(fc1(x))) + x with FP8Linear layers (quantize_fp8_row + the preshuffled GEMM)."""

    def __init__(self, hidden=512, inner=1024, scale_ub=None):
        super().__init__()
        self.fc1 = FP8Linear.from_linear(_linear(hidden, inner, True, 1),
                                         activation_scale_ub=scale_ub)
        self.fc2 = FP8Linear.from_linear(_linear(inner, hidden, False, 2), use_fast_accum=False)

    def forward(self, x):
        return self.fc2(torch.nn.functional.silu(self.fc1(x))) + x


def _fresh_compile(fn, **kwargs):
    torch._dynamo.reset()
    return torch.compile(fn, fullgraph=True, **kwargs)


@torch.no_grad()
def test_compile_fp8_block_matches_eager():
    block = _Block()
    x = torch.randn(4, 16, 512, generator=helpers.gen(5)).to(DEVICE, torch.bfloat16)
    eager = block(x)
    compiled = _fresh_compile(block)(x)
    assert compiled.shape == eager.shape and compiled.dtype == eager.dtype
    # The custom ops are opaque to inductor: any difference comes from fused bf16 pointwise ops
    # upstream of a requantisation.
    assert rel_rms(compiled, eager) <= 1e-2


@torch.no_grad()
def test_compile_dynamic_shapes():
    block = _Block(scale_ub=64.0)
    fn = _fresh_compile(block, dynamic=True)
    for m in (16, 48, 7):
        x = torch.randn(m, 512, generator=helpers.gen(m)).to(DEVICE, torch.bfloat16)
        assert rel_rms(fn(x), block(x)) <= 1e-2


@torch.no_grad()
def test_compile_batched_and_raw_ops():
    xb, wb, xsb, wsb, biasb = make_batched(4, 32, 256, 512, seed=6, bias_dtype=torch.bfloat16)
    wbp = ops.preshuffle(wb)

    def f(xb, wbp, xsb, wsb, biasb):
        y = ops.f8f8bf16_rowwise_batched_preshuffled(xb, wbp, xsb, wsb, biasb, False)
        return y * 2

    assert torch.equal(_fresh_compile(f)(xb, wbp, xsb, wsb, biasb), f(xb, wbp, xsb, wsb, biasb))

    xq, wq, xs, ws, _ = make_single(64, 256, 512, seed=7)

    def g(xq, wq, xs, ws):
        return ops.f8f8bf16_rowwise(xq, wq, xs, ws) + ops.f8f8bf16_rowwise_preshuffled(
            xq, ops.preshuffle(wq), xs, ws)

    assert torch.equal(_fresh_compile(g)(xq, wq, xs, ws), g(xq, wq, xs, ws))


def _linears(hidden, inter, seed):
    return (_linear(hidden, inter, False, seed), _linear(hidden, inter, False, seed + 1),
            _linear(inter, hidden, False, seed + 2))


@torch.no_grad()
def test_compile_modules_with_pdl():
    """FP8GatedMLP and FP8Linear compiled with fullgraph=True for each pdl give the eager
    module's bits without PDL (the ops are opaque to inductor), and the compiled code still
    launches as pdl says: captured in a CUDA graph, its f8gemm kernels hang off their
    predecessors by programmatic edges exactly when pdl is True (None: F8GEMM_PDL, unset here)."""
    gate, up, down = _linears(512, 1024, 11)
    x = torch.randn(16, 512, generator=helpers.gen(12)).to(DEVICE, torch.bfloat16)
    with pdl_switch(None):
        want_block = FP8GatedMLP.from_linears(gate, up, down, pdl=False)(x)
        want_linear = FP8Linear.from_linear(gate, pdl=False)(x)
        for pdl in (True, False, None):
            for mod, want, kernels in (
                    (FP8GatedMLP.from_linears(gate, up, down, pdl=pdl), want_block, 4),
                    (FP8Linear.from_linear(gate, pdl=pdl), want_linear, 2)):
                name = type(mod).__name__
                compiled = _fresh_compile(mod)
                assert same_bits(compiled(x), want), (name, pdl)
                torch.cuda.synchronize()
                g = torch.cuda.CUDAGraph(keep_graph=True)
                with torch.cuda.graph(g):
                    y = compiled(x)
                # Count, do not walk the chain: inductor may launch kernels of its own among
                # ours. Each of our kernels but the first hangs off one by a programmatic edge
                # (the first too if inductor put a kernel before it); without PDL none does.
                count = graph_edges.programmatic_count(g.raw_cuda_graph())
                if pdl:
                    assert kernels - 1 <= count <= kernels, (name, pdl, count)
                else:
                    assert count == 0, (name, pdl, count)
                y.fill_(float("nan"))  # poison: the replay must write every element
                g.replay()
                torch.cuda.synchronize()
                assert same_bits(y, want), (name, pdl)


@torch.no_grad()
def test_compile_out_op_mutation():
    xq, wq, xs, ws, _ = make_single(64, 256, 512, seed=8)
    want = ops.f8f8bf16_rowwise(xq, wq, xs, ws)

    def h(xq, wq, xs, ws, out):
        ops.f8f8bf16_rowwise_out(xq, wq, xs, ws, out)
        return out + 1

    out = torch.zeros(64, 256, dtype=torch.bfloat16, device=DEVICE)
    r = _fresh_compile(h)(xq, wq, xs, ws, out)
    assert torch.equal(out, want)  # the mutation reached the caller's tensor
    assert torch.equal(r, want + 1)
