"""The per-call `pdl` argument (programmatic dependent launch, Pdl in f8gemm.hpp) of the GEMM
and row-quantisation ops and of FP8Linear / FP8GatedMLP, and the single preshuffled GEMMs'
`prefetch_w` (GemmOptions::prefetch_w: W final, its first ring slots loaded before the wait).

CPU (anywhere the extension loads): every op takes pdl = None, True or False, by keyword or by
position, and gives the same bits (quantize_fp8_row, silu_mul_quantize_fp8_row) or the same
device error (the GEMMs) for each; the Meta kernels take it; a pdl that is not a bool is
rejected; the modules keep their pdl (FP8GatedMLP: True, FP8Linear: None by default), get it
through from_linear(s), swap_linears and fuse_gate_up, and hand it to every op of their
forward (seen at the dispatcher on the meta device), with prefetch_w=True to each GEMM.

GPU (sm_90; skipped elsewhere): in a captured chain quantize -> GEMM -> silu_mul_quantize ->
GEMM, for every GEMM op, exactly the kernels whose op got pdl=True (or None with F8GEMM_PDL=1)
hang off their predecessor by a programmatic edge, and the replays and eager calls give the
bits of the chain without PDL; the same for the modules' forwards. A chain whose GEMMs also get
prefetch_w=True gives, eagerly and replayed, the bits of the chain without PDL or prefetch_w."""

import copy

import graph_edges
import helpers
from helpers import gen, make_linear, pdl_switch, pytest, same_bits, warm_up

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import f8gemm  # noqa: E402,F401  (loads the ops)
from f8gemm.nn import FP8GatedMLP, FP8Linear, fuse_gate_up, swap_linears  # noqa: E402

ops = torch.ops.f8gemm
E4M3 = torch.float8_e4m3fn
BF16 = torch.bfloat16
PDL_VALUES = [None, True, False]


def need_gpu():
    reason = helpers.skip_reason()
    if reason:
        pytest.skip(reason)


# ------------------------------------------------------------------------------------- CPU

@pytest.mark.parametrize("pdl", PDL_VALUES)
def test_cpu_quantize_ops_give_the_same_bits_for_every_pdl(pdl):
    a = (torch.randn(5, 3, 96, generator=gen(1)) * 4).to(BF16)
    ub = torch.tensor(2.0)
    for scale_ub in (None, ub):
        want = ops.quantize_fp8_row(a, scale_ub)
        for got in (ops.quantize_fp8_row(a, scale_ub, pdl=pdl),
                    ops.quantize_fp8_row(a, scale_ub, True, None, pdl)):
            assert same_bits(got[0], want[0]) and same_bits(got[1], want[1]), (scale_ub, pdl)
    out = torch.empty(a.shape, dtype=E4M3)
    q, s = ops.quantize_fp8_row(a, output=out, pdl=pdl)
    assert q.data_ptr() == out.data_ptr()
    assert same_bits(q, ops.quantize_fp8_row(a)[0]) and same_bits(s, ops.quantize_fp8_row(a)[1])
    gu = (torch.randn(6, 2, 2 * 48, generator=gen(2)) * 3).to(BF16)
    for scale_ub in (None, torch.tensor(0.5)):
        want = ops.silu_mul_quantize_fp8_row(gu, scale_ub)
        for got in (ops.silu_mul_quantize_fp8_row(gu, scale_ub, pdl=pdl),
                    ops.silu_mul_quantize_fp8_row(gu, scale_ub, pdl)):
            assert same_bits(got[0], want[0]) and same_bits(got[1], want[1]), (scale_ub, pdl)


def _cpu_gemm_calls(pdl):
    """Every GEMM op that takes pdl, called on CPU tensors, pdl by keyword or by position."""
    xq, wq, xs, ws, bias = helpers.make_single(16, 64, 128, device="cpu",
                                               bias_dtype=torch.float32)
    wp = ops.preshuffle(wq)
    xb, wb, xsb, wsb, _ = helpers.make_batched(2, 16, 64, 128, device="cpu")
    wbp = ops.preshuffle(wb)
    out = torch.empty(16, 64, dtype=BF16)
    outb = torch.empty(2, 16, 64, dtype=BF16)
    return [
        ("f8f8bf16_rowwise", lambda: ops.f8f8bf16_rowwise(xq, wq, xs, ws, bias, True, pdl)),
        ("f8f8bf16_rowwise_out", lambda: ops.f8f8bf16_rowwise_out(xq, wq, xs, ws, out, pdl=pdl)),
        ("f8f8f16_rowwise", lambda: ops.f8f8f16_rowwise(xq, wq, xs, ws, pdl=pdl)),
        ("f8f8bf16_rowwise_preshuffled",
         lambda: ops.f8f8bf16_rowwise_preshuffled(xq, wp, xs, ws, None, False, pdl)),
        ("f8f8bf16_rowwise_preshuffled_out",
         lambda: ops.f8f8bf16_rowwise_preshuffled_out(xq, wp, xs, ws, out, bias, True, pdl)),
        ("f8f8f16_rowwise_preshuffled",
         lambda: ops.f8f8f16_rowwise_preshuffled(xq, wp, xs, ws, pdl=pdl)),
        ("f8f8bf16_rowwise_preshuffle",
         lambda: ops.f8f8bf16_rowwise_preshuffle(xq, wp, xs, ws, pdl=pdl)),
        ("f8f8f16_rowwise_preshuffle",
         lambda: ops.f8f8f16_rowwise_preshuffle(xq, wp, xs, ws, None, True, pdl)),
        ("f8f8bf16_rowwise_batched",
         lambda: ops.f8f8bf16_rowwise_batched(xb, wb, xsb, wsb, pdl=pdl)),
        ("f8f8bf16_rowwise_batched output=",
         lambda: ops.f8f8bf16_rowwise_batched(xb, wb, xsb, wsb, None, True, outb, pdl)),
        ("f8f8bf16_rowwise_batched_preshuffled",
         lambda: ops.f8f8bf16_rowwise_batched_preshuffled(xb, wbp, xsb, wsb, pdl=pdl)),
        ("f8f8bf16_rowwise_batched_preshuffled output=",
         lambda: ops.f8f8bf16_rowwise_batched_preshuffled(xb, wbp, xsb, wsb, output=outb,
                                                          pdl=pdl)),
        ("_rowwise_batched",
         lambda: ops._rowwise_batched(xb, wbp, xsb, wsb, None, True, True, pdl)),
        ("_rowwise_batched_out",
         lambda: ops._rowwise_batched_out(xb, wb, xsb, wsb, outb, None, True, False, pdl=pdl)),
    ]


@pytest.mark.parametrize("pdl", PDL_VALUES)
def test_cpu_gemm_ops_take_pdl_and_validate_as_before(pdl):
    """The argument is parsed and the call reaches the library's validation, whose first
    complaint about CPU tensors is the device, as without pdl."""
    for name, call in _cpu_gemm_calls(pdl):
        with pytest.raises(ValueError, match="XQ must be in GPU memory"):
            call()


@pytest.mark.parametrize("pdl", [True, False])
def test_meta_kernels_take_pdl(pdl):
    def meta(*shape, dtype=E4M3):
        return torch.empty(*shape, dtype=dtype, device="meta")

    xq, xs, ws = meta(2, 5, 384), meta(2, 5, dtype=torch.float32), meta(256, dtype=torch.float32)
    wq, wp = meta(256, 384), meta(3, 32, 1024)
    assert ops.f8f8bf16_rowwise(xq, wq, xs, ws, pdl=pdl).shape == (2, 5, 256)
    assert ops.f8f8f16_rowwise(xq, wq, xs, ws, None, True, pdl).dtype == torch.float16
    assert ops.f8f8bf16_rowwise_preshuffled(xq, wp, xs, ws, pdl=pdl).shape == (2, 5, 256)
    assert ops.f8f8f16_rowwise_preshuffle(xq, wp, xs, ws, pdl=pdl).shape == (2, 5, 256)
    ops.f8f8bf16_rowwise_out(xq, wq, xs, ws, meta(2, 5, 256, dtype=BF16), pdl=pdl)
    xb, xsb = meta(4, 7, 256), meta(4, 7, dtype=torch.float32)
    wsb = meta(4, 128, dtype=torch.float32)
    yb = ops.f8f8bf16_rowwise_batched(xb, meta(4, 128, 256), xsb, wsb, pdl=pdl)
    assert yb.shape == (4, 7, 128)
    yb = ops.f8f8bf16_rowwise_batched_preshuffled(xb, meta(4, 2, 16, 1024), xsb, wsb, None, True,
                                                  None, pdl)
    assert yb.shape == (4, 7, 128)
    q, s = ops.quantize_fp8_row(meta(3, 64, dtype=BF16), pdl=pdl)
    assert q.shape == (3, 64) and s.shape == (3,)
    q, s = ops.silu_mul_quantize_fp8_row(meta(3, 96, dtype=BF16), None, pdl)
    assert q.shape == (3, 48) and s.shape == (3,)


def test_a_pdl_that_is_not_a_bool_is_rejected():
    a = torch.randn(4, 64)
    xq, wq, xs, ws, _ = helpers.make_single(16, 64, 128, device="cpu")
    xb, wb, xsb, wsb, _ = helpers.make_batched(2, 16, 64, 128, device="cpu")
    calls = [lambda: ops.quantize_fp8_row(a, pdl="yes"),
             lambda: ops.quantize_fp8_row(a, None, True, None, "yes"),
             lambda: ops.silu_mul_quantize_fp8_row(a, pdl="yes"),
             lambda: ops.f8f8bf16_rowwise(xq, wq, xs, ws, pdl="yes"),
             lambda: ops.f8f8bf16_rowwise_preshuffled(xq, ops.preshuffle(wq), xs, ws, None, True,
                                                      "yes"),
             lambda: ops.f8f8bf16_rowwise_batched(xb, wb, xsb, wsb, pdl="yes")]
    for call in calls:
        # torch's argument parsing refuses it before any kernel runs, naming the argument.
        with pytest.raises((RuntimeError, TypeError), match="pdl"):
            call()
    for cls, sizes in ((FP8Linear, (64, 64)), (FP8GatedMLP, (64, 96))):
        with pytest.raises(ValueError, match=r"pdl must be None, True or False, got 'yes'"):
            cls(*sizes, pdl="yes")
        with pytest.raises(ValueError, match=r"pdl must be None, True or False, got 1"):
            cls(*sizes, pdl=1)


class _Mlp(torch.nn.Module):
    def __init__(self, hidden=64, inter=96, seed=0):
        super().__init__()
        self.gate_proj = make_linear(hidden, inter, bias=False, seed=seed, device="cpu")
        self.up_proj = make_linear(hidden, inter, bias=False, seed=seed + 1, device="cpu")
        self.down_proj = make_linear(inter, hidden, bias=False, seed=seed + 2, device="cpu")
        self.act_fn = torch.nn.SiLU()


def test_modules_keep_pdl_and_their_builders_pass_it_on():
    assert FP8Linear(64, 32).pdl is None  # the library's default: F8GEMM_PDL
    assert FP8GatedMLP(64, 96).pdl is True  # measured faster (docs/perf-log.md, card 23)
    lin = make_linear(64, 32, device="cpu")
    assert FP8Linear.from_linear(lin).pdl is None
    mlp = _Mlp()
    assert FP8GatedMLP.from_module(mlp).pdl is True
    assert FP8GatedMLP.from_linears(mlp.gate_proj, mlp.up_proj, mlp.down_proj).pdl is True
    for pdl in PDL_VALUES:
        assert FP8Linear(64, 32, pdl=pdl).pdl is pdl
        assert FP8GatedMLP(64, 96, pdl=pdl).pdl is pdl
        assert FP8Linear.from_linear(lin, pdl=pdl).pdl is pdl
        assert FP8GatedMLP.from_module(mlp, pdl=pdl).pdl is pdl
        assert FP8GatedMLP.from_linears(mlp.gate_proj, mlp.up_proj, mlp.down_proj,
                                        pdl=pdl).pdl is pdl
        assert f"pdl={pdl}" in repr(FP8Linear(64, 32, pdl=pdl))
        assert f"pdl={pdl}" in repr(FP8GatedMLP(64, 96, pdl=pdl))
    net = torch.nn.Sequential(_Mlp(seed=3), torch.nn.Linear(64, 48))
    fused = fuse_gate_up(copy.deepcopy(net))
    assert isinstance(fused[0], FP8GatedMLP) and fused[0].pdl is True
    fused = fuse_gate_up(copy.deepcopy(net), pdl=False)
    assert isinstance(fused[0], FP8GatedMLP) and fused[0].pdl is False
    swapped = swap_linears(copy.deepcopy(net))
    linears = [m for m in swapped.modules() if isinstance(m, FP8Linear)]
    assert len(linears) == 4 and all(m.pdl is None for m in linears)
    swapped = swap_linears(copy.deepcopy(net), pdl=True)
    assert all(m.pdl is True for m in swapped.modules() if isinstance(m, FP8Linear))


class _OpRecorder(TorchDispatchMode):
    """Records (op, pdl) in `calls` for every f8gemm op that reaches the dispatcher: pdl as the
    op's kernel receives it, whether it was passed by keyword, by position or left out (None);
    and (op, prefetch_w) in `prefetch_w` for the ops that take it (left out: False)."""

    def __init__(self):
        super().__init__()
        self.calls = []
        self.prefetch_w = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        schema = func._schema
        if schema.name.startswith("f8gemm::"):
            op = schema.name[len("f8gemm::"):]
            names = [arg.name for arg in schema.arguments]
            assert "pdl" in names, f"{schema.name} takes no pdl"
            i = names.index("pdl")
            self.calls.append((op, args[i] if i < len(args) else kwargs.get("pdl")))
            if "prefetch_w" in names:
                i = names.index("prefetch_w")
                self.prefetch_w.append(
                    (op, args[i] if i < len(args) else kwargs.get("prefetch_w", False)))
        return func(*args, **kwargs)


@pytest.mark.parametrize("pdl", PDL_VALUES + ["default"])
def test_forward_hands_pdl_to_every_op(pdl):
    """On the meta device the modules' forwards run through the Meta kernels: no GPU needed."""
    kwargs = {} if pdl == "default" else {"pdl": pdl}
    linear = FP8Linear(64, 32, device="meta", **kwargs)
    block = FP8GatedMLP(64, 96, device="meta", **kwargs)
    x = torch.empty(3, 5, 64, dtype=BF16, device="meta")
    with _OpRecorder() as rec:
        y = linear(x)
    assert y.shape == (3, 5, 32)
    want = None if pdl == "default" else pdl
    assert rec.calls == [("quantize_fp8_row", want), ("f8f8bf16_rowwise_preshuffled", want)]
    with _OpRecorder() as rec:
        y = block(x)
    assert y.shape == (3, 5, 64)
    want = True if pdl == "default" else pdl
    assert rec.calls == [("quantize_fp8_row", want), ("f8f8bf16_rowwise_preshuffled", want),
                         ("silu_mul_quantize_fp8_row", want),
                         ("f8f8bf16_rowwise_preshuffled", want)]
    with _OpRecorder() as rec:
        FP8Linear(64, 32, device="meta", out_dtype=torch.float16, **kwargs)(x)
    assert [op for op, _ in rec.calls] == ["quantize_fp8_row", "f8f8f16_rowwise_preshuffled"]


@pytest.mark.parametrize("pdl", PDL_VALUES + ["default"])
def test_forward_gemms_get_prefetch_w(pdl):
    """Every GEMM of the modules' forwards gets prefetch_w=True, whatever pdl (without PDL it
    changes nothing): their weights are buffers preshuffled once, and the kernel before each
    GEMM is an f8gemm quantisation, which lets the GEMM start only after its own wait."""
    kwargs = {} if pdl == "default" else {"pdl": pdl}
    x = torch.empty(3, 5, 64, dtype=BF16, device="meta")
    for mod, want in (
            (FP8Linear(64, 32, device="meta", **kwargs), ["f8f8bf16_rowwise_preshuffled"]),
            (FP8Linear(64, 32, device="meta", out_dtype=torch.float16, **kwargs),
             ["f8f8f16_rowwise_preshuffled"]),
            (FP8GatedMLP(64, 96, device="meta", **kwargs), ["f8f8bf16_rowwise_preshuffled"] * 2),
            (FP8GatedMLP(64, 96, device="meta", out_dtype=torch.float16, **kwargs),
             ["f8f8f16_rowwise_preshuffled"] * 2)):
        with _OpRecorder() as rec:
            mod(x)
        assert rec.prefetch_w == [(op, True) for op in want], (type(mod).__name__, pdl)


# ------------------------------------------------------------------------------------- GPU

HIDDEN, INTER, TOKENS = 256, 384, 4

# The first GEMM of the chain (gate|up, N = 2I), one per op that takes pdl.
FIRST_GEMMS = ["f8f8bf16_rowwise", "f8f8bf16_rowwise_out", "f8f8f16_rowwise",
               "f8f8bf16_rowwise_preshuffled", "f8f8bf16_rowwise_preshuffled_out",
               "f8f8f16_rowwise_preshuffled", "f8f8bf16_rowwise_preshuffle",
               "f8f8f16_rowwise_preshuffle", "f8f8bf16_rowwise_batched",
               "f8f8bf16_rowwise_batched output=", "f8f8bf16_rowwise_batched_preshuffled",
               "f8f8bf16_rowwise_batched_preshuffled output="]

# pdl of the four ops of the chain (quantize, GEMM, silu_mul_quantize, GEMM).
PATTERNS = [(True, True, True, True), (False, False, False, False), (None, None, None, None),
            (False, True, False, True), (True, False, True, False), (None, True, None, False)]


def _first_gemm(name, w1, s1):
    """fn(xq, xs, pdl) -> gate_up for the op `name` (batched ops: B = 1)."""
    cuda = dict(device="cuda", dtype=BF16)
    wp = ops.preshuffle(w1)
    wb, sb = w1.unsqueeze(0), s1.unsqueeze(0)
    wbp = ops.preshuffle(wb)
    out = torch.empty(TOKENS, 2 * INTER, **cuda)
    outb = torch.empty(1, TOKENS, 2 * INTER, **cuda)

    def out_form(op, w):
        def call(xq, xs, pdl):
            op(xq, w, xs, s1, out, None, True, pdl)
            return out
        return call

    calls = {
        "f8f8bf16_rowwise": lambda xq, xs, pdl: ops.f8f8bf16_rowwise(xq, w1, xs, s1, pdl=pdl),
        "f8f8bf16_rowwise_out": out_form(ops.f8f8bf16_rowwise_out, w1),
        "f8f8f16_rowwise": lambda xq, xs, pdl: ops.f8f8f16_rowwise(xq, w1, xs, s1, None, True,
                                                                   pdl),
        "f8f8bf16_rowwise_preshuffled":
            lambda xq, xs, pdl: ops.f8f8bf16_rowwise_preshuffled(xq, wp, xs, s1, pdl=pdl),
        "f8f8bf16_rowwise_preshuffled_out": out_form(ops.f8f8bf16_rowwise_preshuffled_out, wp),
        "f8f8f16_rowwise_preshuffled":
            lambda xq, xs, pdl: ops.f8f8f16_rowwise_preshuffled(xq, wp, xs, s1, pdl=pdl),
        "f8f8bf16_rowwise_preshuffle":
            lambda xq, xs, pdl: ops.f8f8bf16_rowwise_preshuffle(xq, wp, xs, s1, None, True, pdl),
        "f8f8f16_rowwise_preshuffle":
            lambda xq, xs, pdl: ops.f8f8f16_rowwise_preshuffle(xq, wp, xs, s1, pdl=pdl),
        "f8f8bf16_rowwise_batched":
            lambda xq, xs, pdl: ops.f8f8bf16_rowwise_batched(xq[None], wb, xs[None], sb,
                                                             pdl=pdl),
        "f8f8bf16_rowwise_batched output=":
            lambda xq, xs, pdl: ops.f8f8bf16_rowwise_batched(xq[None], wb, xs[None], sb, None,
                                                             True, outb, pdl),
        "f8f8bf16_rowwise_batched_preshuffled":
            lambda xq, xs, pdl: ops.f8f8bf16_rowwise_batched_preshuffled(
                xq[None], wbp, xs[None], sb, pdl=pdl),
        "f8f8bf16_rowwise_batched_preshuffled output=":
            lambda xq, xs, pdl: ops.f8f8bf16_rowwise_batched_preshuffled(
                xq[None], wbp, xs[None], sb, output=outb, pdl=pdl),
    }
    return calls[name]


def _captured(fn):
    """(graph, result) of fn captured once; the graph is kept for graph_edges."""
    warm_up(fn)
    g = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(g):
        result = fn()
    return g, result


def _expected_edges(pdls, switch):
    """Whether each kernel after the first hangs off its predecessor by a programmatic edge."""
    return [p if p is not None else switch == "1" for p in pdls[1:]]


@pytest.mark.parametrize("gemm", FIRST_GEMMS)
def test_captured_chain_is_programmatic_exactly_where_asked(gemm):
    need_gpu()
    g = gen(100)
    x = torch.randn(TOKENS, HIDDEN, generator=g).to("cuda", BF16)
    w1q, s1 = helpers.quantize(torch.randn(2 * INTER, HIDDEN, generator=g) / HIDDEN ** 0.5)
    w2q, s2 = helpers.quantize(torch.randn(HIDDEN, INTER, generator=g) / INTER ** 0.5)
    w2p = ops.preshuffle(w2q)
    first = _first_gemm(gemm, w1q, s1)

    def chain(pdls):
        xq, xs = ops.quantize_fp8_row(x, pdl=pdls[0])
        gate_up = first(xq, xs, pdls[1])
        hq, hs = ops.silu_mul_quantize_fp8_row(gate_up, None, pdls[2])
        y = ops.f8f8bf16_rowwise_preshuffled(hq, w2p, hs, s2, pdl=pdls[3])
        return y.reshape(TOKENS, HIDDEN)

    with pdl_switch("0"):
        want = chain((False,) * 4).clone()
    torch.cuda.synchronize()
    # Under both switches: an explicit True or False must win over it, None must follow it.
    for switch in ("0", "1"):
        with pdl_switch(switch):
            for pdls in PATTERNS:
                eager = chain(pdls)
                torch.cuda.synchronize()
                assert same_bits(eager, want), (switch, pdls)
                graph, y = _captured(lambda: chain(pdls))
                got = graph_edges.chain_edge_types(graph.raw_cuda_graph())
                assert got == _expected_edges(pdls, switch), (gemm, switch, pdls, got)
                y.fill_(float("nan"))
                graph.replay()
                torch.cuda.synchronize()
                assert same_bits(y, want), (gemm, switch, pdls)


def _gpu_mlp(hidden=1024, inter=2816, seed=110):
    return [make_linear(hidden, inter, bias=False, seed=seed),
            make_linear(hidden, inter, bias=False, seed=seed + 1),
            make_linear(inter, hidden, bias=False, seed=seed + 2)]


@torch.no_grad()
def test_modules_in_a_graph_launch_as_their_pdl_says():
    need_gpu()
    gate, up, down = _gpu_mlp(256, 384)
    x = torch.randn(16, 256, generator=gen(111)).to("cuda", BF16)
    blocks = {"default": FP8GatedMLP.from_linears(gate, up, down)}
    linears = {"default": FP8Linear.from_linear(gate)}
    for pdl in PDL_VALUES:
        blocks[pdl] = FP8GatedMLP.from_linears(gate, up, down, pdl=pdl)
        linears[pdl] = FP8Linear.from_linear(gate, pdl=pdl)
    with pdl_switch("0"):
        want_block, want_linear = blocks[False](x).clone(), linears[False](x).clone()
    for switch in ("0", "1"):
        with pdl_switch(switch):
            for modules, want, kernels, default in ((blocks, want_block, 4, True),
                                                    (linears, want_linear, 2, None)):
                for key, mod in modules.items():
                    pdl = default if key == "default" else key
                    assert same_bits(mod(x), want), (type(mod).__name__, key, switch)
                    graph, y = _captured(lambda: mod(x))
                    got = graph_edges.chain_edge_types(graph.raw_cuda_graph())
                    assert got == _expected_edges((pdl,) * kernels, switch), \
                        (type(mod).__name__, key, switch, got)
                    y.fill_(float("nan"))  # poison: the replay must write every element
                    graph.replay()
                    torch.cuda.synchronize()
                    assert same_bits(y, want), (type(mod).__name__, key, switch)


@torch.no_grad()
def test_modules_give_the_same_bits_with_and_without_pdl():
    """Decode and prefill shapes (swap-AB with a split-K cluster, tiled), eager."""
    need_gpu()
    gate, up, down = _gpu_mlp()
    on = FP8GatedMLP.from_linears(gate, up, down, pdl=True)
    off = FP8GatedMLP.from_linears(gate, up, down, pdl=False)
    lin_on = FP8Linear.from_linear(down, pdl=True)
    lin_off = FP8Linear.from_linear(down, pdl=False)
    for m in (1, 16, 128, 257):
        x = torch.randn(m, 1024, generator=gen(120 + m)).to("cuda", BF16)
        h = torch.randn(m, 2816, generator=gen(130 + m)).to("cuda", BF16)
        for _ in range(3):  # back to back, so that the PDL launches overlap their predecessors
            y_on, y_off = on(x), off(x)
            z_on, z_off = lin_on(h), lin_off(h)
        torch.cuda.synchronize()
        assert same_bits(y_on, y_off), m
        assert same_bits(z_on, z_off), m


# prefetch_w: a Llama-like block small enough to be quick; M = 1 and 16 are decode shapes, 300
# spans several M tiles.
PREFETCH_HIDDEN, PREFETCH_INTER = 1024, 1536
PREFETCH_M = [1, 16, 300]

# The gate|up GEMM of the chain, one per op that takes prefetch_w.
PREFETCH_W_GEMMS = ["f8f8bf16_rowwise_preshuffled", "f8f8bf16_rowwise_preshuffled_out",
                    "f8f8f16_rowwise_preshuffled", "f8f8bf16_rowwise_preshuffle",
                    "f8f8f16_rowwise_preshuffle"]


@pytest.mark.parametrize("gemm", PREFETCH_W_GEMMS)
@pytest.mark.parametrize("m", PREFETCH_M)
def test_prefetch_w_chain_gives_the_bits_without_pdl(m, gemm):
    """quantize_fp8_row -> gate|up GEMM -> silu_mul_quantize_fp8_row -> down GEMM, every kernel
    with pdl=True and both GEMMs with prefetch_w=True (their weights are written by no kernel of
    the chain), eagerly and replayed from a CUDA graph, gives the bits of the chain with
    pdl=False and prefetch_w=False: loading W before the wait changes no number."""
    need_gpu()
    hidden, inter = PREFETCH_HIDDEN, PREFETCH_INTER
    g = gen(200 + m)
    x = torch.randn(m, hidden, generator=g).to("cuda", BF16)
    w1q, s1 = helpers.quantize(torch.randn(2 * inter, hidden, generator=g) / hidden ** 0.5)
    w2q, s2 = helpers.quantize(torch.randn(hidden, inter, generator=g) / inter ** 0.5)
    w1p, w2p = ops.preshuffle(w1q), ops.preshuffle(w2q)
    out = torch.empty(m, 2 * inter, device="cuda", dtype=BF16)  # the _out op's gate_up

    def first(xq, xs, on):
        if gemm == "f8f8bf16_rowwise_preshuffled_out":
            ops.f8f8bf16_rowwise_preshuffled_out(xq, w1p, xs, s1, out, None, True, on, on)
            return out
        return getattr(ops, gemm)(xq, w1p, xs, s1, pdl=on, prefetch_w=on)

    def chain(on):
        xq, xs = ops.quantize_fp8_row(x, pdl=on)
        gate_up = first(xq, xs, on)
        hq, hs = ops.silu_mul_quantize_fp8_row(gate_up, None, on)
        return ops.f8f8bf16_rowwise_preshuffled(hq, w2p, hs, s2, None, True, on, on)

    def poison():
        out.fill_(float("nan"))  # an element the gate|up GEMM leaves unwritten spreads NaN

    poison()
    want = chain(False)
    torch.cuda.synchronize()
    poison()
    # Back to back, so that each PDL launch overlaps the kernel before it; `want` and every
    # result stay alive, so no result can land in memory that already holds the right bits.
    got = [chain(True) for _ in range(3)]
    torch.cuda.synchronize()
    for y in got:
        assert same_bits(y, want), (m, gemm)
    graph, y = _captured(lambda: chain(True))
    assert graph_edges.chain_edge_types(graph.raw_cuda_graph()) == [True] * 3, (m, gemm)
    for _ in range(2):
        y.fill_(float("nan"))  # poison: the replay must write every element
        poison()
        graph.replay()
        torch.cuda.synchronize()
        assert same_bits(y, want), (m, gemm)


@pytest.mark.parametrize("m", PREFETCH_M)
def test_gated_mlp_default_gives_the_bits_of_pdl_off(m):
    """FP8GatedMLP's default (pdl=True, its GEMMs with prefetch_w=True) against pdl=False (where
    prefetch_w changes nothing), eagerly and replayed from a CUDA graph."""
    need_gpu()
    with torch.no_grad():
        gate, up, down = _gpu_mlp(PREFETCH_HIDDEN, PREFETCH_INTER, seed=210)
        block = FP8GatedMLP.from_linears(gate, up, down)
        assert block.pdl is True
        off = FP8GatedMLP.from_linears(gate, up, down, pdl=False)
        x = torch.randn(m, PREFETCH_HIDDEN, generator=gen(220 + m)).to("cuda", BF16)
        want = off(x)
        got = [block(x) for _ in range(3)]  # back to back, as in the test above
        torch.cuda.synchronize()
        for y in got:
            assert same_bits(y, want), m
        graph, y = _captured(lambda: block(x))
        assert graph_edges.chain_edge_types(graph.raw_cuda_graph()) == [True] * 3, m
        y.fill_(float("nan"))  # poison: the replay must write every element
        graph.replay()
        torch.cuda.synchronize()
        assert same_bits(y, want), m
