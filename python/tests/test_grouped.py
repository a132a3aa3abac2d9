"""The grouped (mixture-of-experts) GEMM ops: FBGEMM's schemas, Meta kernels and symbolic
tracing, and error messages (these run anywhere); on an sm_90 GPU, both forms (stacked and
padded) against an fp64 reference per group, rows outside the groups, sizes clamped on the
device (summing past total_M, negative), opcheck, torch.compile(fullgraph=True) and CUDA-graph
replay with new sizes copied into the same sizes tensor."""

import helpers
from helpers import bound, gen, pytest, quantize, reference, rel_rms

import torch  # noqa: E402

import f8gemm  # noqa: E402,F401  (loads the extension)

ops = torch.ops.f8gemm
E4M3 = torch.float8_e4m3fn

# FBGEMM's schemas (fbgemm_gpu gen_ai quantize_defs.cpp) for the ops that share its names.
FBGEMM_SCHEMAS = {
    "f8f8bf16_rowwise_grouped_stacked": "(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
                                        "Tensor M_sizes) -> Tensor",
    "f8f8bf16_rowwise_grouped_dynamic": "(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, "
                                        "Tensor zero_start_index_M, "
                                        "bool zeroing_output_tensor=True) -> Tensor",
}


def _schema_text(name):
    schema = str(getattr(ops, name).default._schema)
    return schema[schema.index("("):]


def _gpu():
    """Skips the calling test unless an sm_90 GPU is there."""
    helpers.require_device()


# ------------------------------------------------------------------ anywhere: schemas, shapes

@pytest.mark.parametrize("name", sorted(FBGEMM_SCHEMAS))
def test_schema_matches_fbgemm(name):
    assert _schema_text(name) == FBGEMM_SCHEMAS[name]
    assert _schema_text(name + "_preshuffled") == FBGEMM_SCHEMAS[name]  # ours: the same arguments


def _meta(*shape, dtype=E4M3):
    return torch.empty(*shape, dtype=dtype, device="meta")


@pytest.mark.parametrize("preshuffled", [False, True])
def test_meta_shapes(preshuffled):
    g, m, n, k = 4, 50, 136, 272
    wq = _meta(g, 3, n // 8, 1024) if preshuffled else _meta(g, n, k)
    suffix = "_preshuffled" if preshuffled else ""
    sizes = _meta(g, dtype=torch.int64)
    y = getattr(ops, "f8f8bf16_rowwise_grouped_stacked" + suffix)(
        _meta(m, k), wq, _meta(m, dtype=torch.float32), _meta(g, n, dtype=torch.float32), sizes)
    assert y.shape == (m, n) and y.dtype == torch.bfloat16 and y.device.type == "meta"
    y = getattr(ops, "f8f8bf16_rowwise_grouped_dynamic" + suffix)(
        _meta(g, 7, k), wq, _meta(g, 7, dtype=torch.float32), _meta(g, n, dtype=torch.float32),
        sizes, False)
    assert y.shape == (g, 7, n) and y.dtype == torch.bfloat16
    out = _meta(m, n, dtype=torch.bfloat16)
    getattr(ops, "f8f8bf16_rowwise_grouped_stacked" + suffix + "_out")(
        _meta(m, k), wq, _meta(m, dtype=torch.float32), _meta(g, n, dtype=torch.float32), sizes,
        out, _meta(g, n, dtype=torch.bfloat16), False)


def test_keepdim_scale_shapes_are_accepted():
    """x_scale [total_M, 1] ([G, M_max, 1]) and w_scale [G, N, 1], as quantize_fp8_row's keepdim
    callers and FBGEMM's pass them, are the flat scales: on meta as on the CPU, where the first
    error is then the device, checked after every shape."""
    g, m, n, k = 4, 50, 136, 272
    xs, ws, sizes = _meta(m, 1, dtype=torch.float32), _meta(g, n, 1, dtype=torch.float32), \
        _meta(g, dtype=torch.int64)
    y = ops.f8f8bf16_rowwise_grouped_stacked(_meta(m, k), _meta(g, n, k), xs, ws, sizes)
    assert y.shape == (m, n)
    y = ops.f8f8bf16_rowwise_grouped_dynamic(_meta(g, 7, k), _meta(g, n, k),
                                             _meta(g, 7, 1, dtype=torch.float32), ws, sizes)
    assert y.shape == (g, 7, n)
    xq, wq, xs, ws, sizes = _cpu_stacked(g, m, n, k)
    with pytest.raises(ValueError, match="XQ must be in GPU memory"):
        ops.f8f8bf16_rowwise_grouped_stacked(xq, wq, xs.unsqueeze(-1), ws.unsqueeze(-1), sizes)


def test_meta_rejects_the_other_layout_with_a_hint():
    g, m, n, k = 2, 8, 64, 128
    args = (_meta(m, k), _meta(m, dtype=torch.float32), _meta(g, n, dtype=torch.float32),
            _meta(g, dtype=torch.int32))
    with pytest.raises(ValueError, match=r"WQ must be 4-D preshuffled.*preshuffle\(WQ\)"):
        ops.f8f8bf16_rowwise_grouped_stacked_preshuffled(args[0], _meta(g, n, k), *args[1:])
    with pytest.raises(ValueError, match=r"WQ must be 3-D \[G, N, K\].*_preshuffled op"):
        ops.f8f8bf16_rowwise_grouped_stacked(args[0], _meta(g, 1, n // 8, 1024), *args[1:])
    with pytest.raises(ValueError, match=r"XQ must be 3-D \[G, M_max, K\]"):
        ops.f8f8bf16_rowwise_grouped_dynamic(args[0], _meta(g, n, k), *args[1:])


def test_symbolic_trace_propagates_total_m():
    from torch.fx.experimental.proxy_tensor import make_fx

    g, n, k = 3, 64, 128

    def moe_gemm(xq, wq, xs, ws, sizes):
        return ops.f8f8bf16_rowwise_grouped_stacked(xq, wq, xs, ws, sizes)

    args = (torch.zeros(10, k).to(E4M3), torch.zeros(g, n, k).to(E4M3), torch.ones(10),
            torch.ones(g, n), torch.tensor([3, 3, 4]))
    graph = make_fx(moe_gemm, tracing_mode="symbolic")(*args)
    outputs = [node for node in graph.graph.nodes if node.op == "output"]
    val = outputs[0].args[0][0].meta["val"] if isinstance(outputs[0].args[0], (list, tuple)) \
        else outputs[0].args[0].meta["val"]
    # total_M is a symbol (traced once for every token count), N is the weight's.
    assert isinstance(val.shape[0], torch.SymInt) and val.shape[1] == n
    assert "f8f8bf16_rowwise_grouped_stacked" in graph.code


def _cpu_stacked(g=4, m=50, n=136, k=272):
    return (torch.randn(m, k).to(E4M3), torch.randn(g, n, k).to(E4M3), torch.rand(m),
            torch.rand(g, n), torch.tensor([10, 0, 30, 10]))


def test_cpu_error_messages():
    xq, wq, xs, ws, sizes = _cpu_stacked()
    op = ops.f8f8bf16_rowwise_grouped_stacked
    # Every argument is checked before the device is: these name the argument anywhere.
    with pytest.raises(ValueError, match="M_sizes must have dtype int32 or int64, got float32"):
        op(xq, wq, xs, ws, sizes.float())
    with pytest.raises(ValueError, match=r"M_sizes has 3 groups but WQ has 4"):
        op(xq, wq, xs, ws, sizes[:3])
    with pytest.raises(ValueError, match=r"M_sizes must be 1-D \[G\]"):
        op(xq, wq, xs, ws, sizes.reshape(2, 2))
    with pytest.raises(ValueError, match=r"XQ must be 2-D \[total_M, K\]"):
        op(xq.reshape(2, 25, 272), wq, xs, ws, sizes)
    with pytest.raises(ValueError, match=r"w_scale must have shape \[4, 136\]"):
        op(xq, wq, xs, ws[:, :128], sizes)
    with pytest.raises(ValueError, match=r"x_scale must have shape \[50\]"):
        op(xq, wq, xs[:49], ws, sizes)
    with pytest.raises(ValueError, match=r"XQ must be in GPU memory"):
        op(xq, wq, xs, ws, sizes)
    with pytest.raises(ValueError, match=r"WQ looks like a plain \[G, N, K\] weight"):
        ops.f8f8bf16_rowwise_grouped_stacked_preshuffled(xq, wq, xs, ws, sizes)
    dyn = ops.f8f8bf16_rowwise_grouped_dynamic
    with pytest.raises(ValueError, match=r"XQ has 2 groups but WQ has 4"):
        dyn(xq.reshape(2, 25, 272), wq, xs.reshape(2, 25), ws, sizes)
    with pytest.raises(ValueError, match=r"zero_start_index_M has 2 groups but WQ has 4"):
        dyn(xq[:48].reshape(4, 12, 272), wq, xs[:48].reshape(4, 12), ws, sizes[:2])
    out = torch.empty(50, 136, dtype=torch.float16)
    with pytest.raises(ValueError, match=r"output must have dtype torch.bfloat16, got torch.float16"):
        ops.f8f8bf16_rowwise_grouped_stacked_out(xq, wq, xs, ws, sizes, out)


# ---------------------------------------------------------------------- GPU: helpers

def make_grouped(sizes, n, k, seed=0, m_max=None, total_m=None, sizes_dtype=torch.int64):
    """Quantised grouped operands. Stacked (m_max None): XQ [total_M, K] with total_M =
    total_m or sum(clamped sizes), x_scale [total_M]; padded: XQ [G, m_max, K], x_scale
    [G, m_max]. WQ [G, N, K], w_scale [G, N], M_sizes [G] on the GPU. Row scales vary."""
    g = gen(seed)
    groups = len(sizes)
    if m_max is None:
        rows = total_m if total_m is not None else sum(max(s, 0) for s in sizes)
        lead = (rows,)
    else:
        lead = (groups, m_max)
    x = torch.randn(*lead, k, generator=g) * torch.exp2(torch.randint(-3, 4, (*lead, 1), generator=g))
    w = torch.randn(groups, n, k, generator=g) * 0.05
    xq, xs = quantize(x)
    wq, ws = quantize(w)
    return xq, wq, xs, ws, torch.tensor(sizes, dtype=sizes_dtype, device="cuda")


def group_rows(sizes, rows, padded):
    """[(g, begin, end)] of each group's rows after the kernel's clamping: a negative size counts
    as 0; stacked groups are clipped at total_M (rows), padded ones at M_max (rows)."""
    out, begin = [], 0
    for g, s in enumerate(int(v) for v in sizes):
        s = min(max(s, 0), rows)
        if padded:
            out.append((g, 0, s))
        else:
            end = min(begin + s, rows)
            out.append((g, begin, end))
            begin = end
    return out


def check_grouped(y, xq, wq, xs, ws, sizes, fast=True, bias=None, outside=None):
    """Every group's rows against the fp64 reference; with outside (a value, NaN allowed), every
    row outside the groups still equals it."""
    padded = xq.dim() == 3
    rows = xq.shape[1] if padded else xq.shape[0]
    inside = torch.zeros(y.shape[:-1], dtype=torch.bool, device=y.device)
    for g, begin, end in group_rows(sizes.tolist(), rows, padded):
        if end <= begin:
            continue
        sel = (g, slice(begin, end)) if padded else (slice(begin, end),)
        x_rows = xq[g, begin:end] if padded else xq[begin:end]
        s_rows = xs[g, begin:end] if padded else xs[begin:end]
        ref = reference(x_rows, wq[g], s_rows, ws[g], None if bias is None else bias[g])
        assert rel_rms(y[sel], ref) <= bound(fast), (g, begin, end)
        inside[sel] = True
    if outside is not None:
        rest = y[~inside]
        expect = torch.full_like(rest, outside)
        assert torch.equal(rest.isnan(), expect.isnan()) and \
            torch.equal(rest.nan_to_num(), expect.nan_to_num()), "a row outside the groups changed"


SIZE_CASES = {
    "zeros": [0, 37, 0, 0, 130, 0],
    "one group": [0, 0, 77, 0],
    "all in the first": [300, 0, 0, 0],
    "ragged": [1, 7, 9, 63, 65, 127, 129, 200],
    "decode": [1, 0, 3, 2, 0, 1, 4, 1],
}


# ---------------------------------------------------------------------- GPU: correctness

@pytest.mark.parametrize("case", sorted(SIZE_CASES))
@pytest.mark.parametrize("preshuffled", [False, True])
@pytest.mark.parametrize("sizes_dtype", [torch.int32, torch.int64])
def test_stacked_against_reference(case, preshuffled, sizes_dtype):
    _gpu()
    xq, wq, xs, ws, sizes = make_grouped(SIZE_CASES[case], 136, 272, seed=1, sizes_dtype=sizes_dtype)
    if preshuffled:
        y = ops.f8f8bf16_rowwise_grouped_stacked_preshuffled(xq, ops.preshuffle(wq), xs, ws, sizes)
    else:
        y = ops.f8f8bf16_rowwise_grouped_stacked(xq, wq, xs, ws, sizes)
    assert y.shape == (xq.shape[0], 136) and y.dtype == torch.bfloat16
    check_grouped(y, xq, wq, xs, ws, sizes)


@pytest.mark.parametrize("preshuffled", [False, True])
@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("bias_dtype", [None, torch.float32, torch.bfloat16])
def test_stacked_out_bias_modes_and_untouched_rows(preshuffled, fast, bias_dtype):
    _gpu()
    sizes_list = [40, 0, 3, 91]
    # total_M = 150 > sum(sizes) = 134: the last 16 rows belong to no group.
    xq, wq, xs, ws, sizes = make_grouped(sizes_list, 264, 400, seed=2, total_m=150)
    bias = None if bias_dtype is None else \
        (torch.randn(4, 264, generator=gen(3)) * 4.0).to("cuda", bias_dtype)
    out = torch.full((150, 264), float("nan"), dtype=torch.bfloat16, device="cuda")
    op = ops.f8f8bf16_rowwise_grouped_stacked_preshuffled_out if preshuffled \
        else ops.f8f8bf16_rowwise_grouped_stacked_out
    op(xq, ops.preshuffle(wq) if preshuffled else wq, xs, ws, sizes, out, bias, fast)
    check_grouped(out, xq, wq, xs, ws, sizes, fast=fast, bias=bias, outside=float("nan"))


@pytest.mark.parametrize("preshuffled", [False, True])
@pytest.mark.parametrize("zeroing", [True, False])
def test_dynamic_against_reference(preshuffled, zeroing):
    _gpu()
    sizes_list = [100, 0, 37, 1, 64]
    xq, wq, xs, ws, sizes = make_grouped(sizes_list, 136, 272, seed=4, m_max=100)
    op = ops.f8f8bf16_rowwise_grouped_dynamic_preshuffled if preshuffled \
        else ops.f8f8bf16_rowwise_grouped_dynamic
    y = op(xq, ops.preshuffle(wq) if preshuffled else wq, xs, ws, sizes, zeroing)
    assert y.shape == (5, 100, 136)
    check_grouped(y, xq, wq, xs, ws, sizes, outside=0.0 if zeroing else None)


def test_scale_shapes_with_a_kept_dimension():
    _gpu()
    xq, wq, xs, ws, sizes = make_grouped([5, 20, 0, 7], 128, 256, seed=5)
    y = ops.f8f8bf16_rowwise_grouped_stacked(xq, wq, xs, ws, sizes)
    assert torch.equal(y, ops.f8f8bf16_rowwise_grouped_stacked(xq, wq, xs.unsqueeze(-1),
                                                               ws.unsqueeze(-1), sizes))


# ---------------------------------------------------------------- GPU: sizes clamped on device

def test_sizes_summing_past_total_m_are_clipped_not_an_error():
    _gpu()
    # total_M = 100: group 0 owns [0, 40), group 1 [40, 90), group 2 [90, 100), group 3 nothing.
    xq, wq, xs, ws, sizes = make_grouped([40, 50, 30, 20], 136, 272, seed=6, total_m=100)
    out = torch.full((100, 136), float("nan"), dtype=torch.bfloat16, device="cuda")
    ops.f8f8bf16_rowwise_grouped_stacked_out(xq, wq, xs, ws, sizes, out)
    torch.cuda.synchronize()  # a device fault would surface here
    check_grouped(out, xq, wq, xs, ws, sizes, outside=float("nan"))
    # Padded: sizes past M_max are clipped to M_max.
    xq, wq, xs, ws, sizes = make_grouped([1000, 33, 65], 136, 272, seed=7, m_max=64)
    y = ops.f8f8bf16_rowwise_grouped_dynamic(xq, wq, xs, ws, sizes)
    torch.cuda.synchronize()
    check_grouped(y, xq, wq, xs, ws, sizes, outside=0.0)


def test_negative_sizes_count_as_zero():
    _gpu()
    xq, wq, xs, ws, sizes = make_grouped([-5, 30, -1000, 20], 136, 272, seed=8, total_m=60)
    out = torch.full((60, 136), float("nan"), dtype=torch.bfloat16, device="cuda")
    ops.f8f8bf16_rowwise_grouped_stacked_out(xq, wq, xs, ws, sizes, out)
    check_grouped(out, xq, wq, xs, ws, sizes, outside=float("nan"))


# ---------------------------------------------------------------------- GPU: bad inputs

def test_bad_inputs_raise_value_error():
    _gpu()
    xq, wq, xs, ws, sizes = make_grouped([5, 20, 0, 7], 128, 256, seed=9)
    op = ops.f8f8bf16_rowwise_grouped_stacked
    with pytest.raises(ValueError, match=r"M_sizes must be on the GPU with XQ \(cuda:\d\).*"
                                         r"got the host"):
        op(xq, wq, xs, ws, sizes.cpu())
    with pytest.raises(ValueError, match=r"zero_start_index_M must be on the GPU with XQ"):
        ops.f8f8bf16_rowwise_grouped_dynamic(xq[:32].reshape(4, 8, 256), wq,
                                             xs[:32].reshape(4, 8), ws, sizes.cpu())
    with pytest.raises(ValueError, match=r"M_sizes has 5 groups but WQ has 4"):
        op(xq, wq, xs, ws, torch.zeros(5, dtype=torch.int64, device="cuda"))
    with pytest.raises(ValueError, match=r"M_sizes must have dtype int32 or int64, got float32"):
        op(xq, wq, xs, ws, sizes.float())
    with pytest.raises(ValueError, match=r"M_sizes must have dtype int32 or int64, got int16|"
                                         r"M_sizes must have dtype torch.int32 or torch.int64"):
        op(xq, wq, xs, ws, sizes.to(torch.int16))
    with pytest.raises(ValueError, match=r"x_scale is on the host but XQ is on cuda"):
        op(xq, wq, xs.cpu(), ws, sizes)
    with pytest.raises(ValueError, match=r"WQ must have shape \[4, 128, 256\]"):
        op(xq, wq[:, :, :128], xs, ws, sizes)
    with pytest.raises(ValueError, match=r"WQ looks like a preshuffled weight"):
        op(xq, ops.preshuffle(wq), xs, ws, sizes)


# ------------------------------------------------------- GPU: opcheck, compile, CUDA graphs

def _opcheck_cases():
    # Stacked sizes that cover every row: opcheck compares whole outputs, and rows outside the
    # groups are unspecified in the functional stacked op.
    xq, wq, xs, ws, sizes = make_grouped([5, 0, 20, 7], 128, 256, seed=10)
    wp = ops.preshuffle(wq)
    xd, _, xsd, _, sd = make_grouped([8, 0, 3, 5], 128, 256, seed=11, m_max=8,
                                     sizes_dtype=torch.int32)
    out = torch.empty(32, 128, dtype=torch.bfloat16, device="cuda")
    bias = torch.randn(4, 128, device="cuda")
    return [
        (ops.f8f8bf16_rowwise_grouped_stacked.default, (xq, wq, xs, ws, sizes)),
        (ops.f8f8bf16_rowwise_grouped_stacked_preshuffled.default, (xq, wp, xs, ws, sizes)),
        (ops.f8f8bf16_rowwise_grouped_stacked_out.default, (xq, wq, xs, ws, sizes, out, bias, False)),
        (ops.f8f8bf16_rowwise_grouped_stacked_preshuffled_out.default, (xq, wp, xs, ws, sizes, out)),
        (ops.f8f8bf16_rowwise_grouped_dynamic.default, (xd, wq, xsd, ws, sd)),
        (ops.f8f8bf16_rowwise_grouped_dynamic_preshuffled.default, (xd, wp, xsd, ws, sd, True)),
    ]


def test_opcheck():
    _gpu()
    for op, args in _opcheck_cases():
        with helpers.fp8_comparable():
            torch.library.opcheck(op, args)


def test_compile_fullgraph_matches_eager():
    _gpu()
    _, wq, _, ws, sizes = make_grouped([5, 0, 20, 7], 128, 256, seed=12)
    wp = ops.preshuffle(wq)

    def moe_gemm(x, sizes):
        xq, xs = ops.quantize_fp8_row(x)
        return ops.f8f8bf16_rowwise_grouped_stacked_preshuffled(xq, wp, xs, ws, sizes)

    x = torch.randn(32, 256, generator=gen(13)).to("cuda", torch.bfloat16)
    torch._dynamo.reset()
    compiled = torch.compile(moe_gemm, fullgraph=True, dynamic=True)
    assert torch.equal(compiled(x, sizes), moe_gemm(x, sizes))
    # Another token count and routing: the same graph (total_M is symbolic).
    x2 = torch.randn(45, 256, generator=gen(14)).to("cuda", torch.bfloat16)
    sizes2 = torch.tensor([0, 40, 5, 0], device="cuda")
    assert torch.equal(compiled(x2, sizes2), moe_gemm(x2, sizes2))


def test_graph_replay_reads_new_sizes_from_the_same_tensor():
    _gpu()
    routings = [[30, 30, 30, 30], [0, 120, 0, 0], [1, 0, 118, 1], [60, 0, 0, 40], [-3, 200, 5, 5]]
    xq, wq, xs, ws, sizes = make_grouped(routings[0], 264, 272, seed=15)
    wp = ops.preshuffle(wq)
    xd, _, xsd, _, sd = make_grouped([16, 0, 3, 9], 264, 272, seed=16, m_max=16)
    out = torch.empty(120, 264, dtype=torch.bfloat16, device="cuda")

    def body():
        y = ops.f8f8bf16_rowwise_grouped_stacked(xq, wq, xs, ws, sizes)
        ops.f8f8bf16_rowwise_grouped_stacked_preshuffled_out(xq, wp, xs, ws, sizes, out)
        yd = ops.f8f8bf16_rowwise_grouped_dynamic(xd, wq, xsd, ws, sd)
        return y, yd

    s = torch.cuda.Stream()  # warm-up on a side stream, as torch recommends
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        body()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y, yd = body()
    for routing in routings:
        sizes.copy_(torch.tensor(routing))
        sd.copy_(torch.tensor([routing[0] % 17, 0, 16, 2]))
        out.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        check_grouped(y, xq, wq, xs, ws, sizes)
        check_grouped(out, xq, wq, xs, ws, sizes, outside=float("nan"))
        check_grouped(yd, xd, wq, xsd, ws, sd, outside=0.0)


def test_precompile_grouped_rejects_bad_problems():
    # Runs without a GPU too: the arguments are checked before anything compiles.
    with pytest.raises(ValueError, match=r"shape must be \[G, total_M, N, K\]"):
        f8gemm.precompile_grouped([(8, 64, 256)])
    with pytest.raises(ValueError, match="layout must be 'preshuffled' or 'plain'"):
        f8gemm.precompile_grouped((8, 64, 256, 512), layout="swizzled")
    with pytest.raises(ValueError, match="N must be a positive multiple of 8"):
        f8gemm.precompile_grouped((8, 64, 100, 512))
    with pytest.raises(ValueError, match="K must be a positive multiple of 16"):
        f8gemm.precompile_grouped((8, 64, 256, 500))
    with pytest.raises(ValueError, match="bias_dtype must be None"):
        f8gemm.precompile_grouped((8, 64, 256, 512), bias_dtype=torch.float16)
    with pytest.raises(ValueError, match="4096"):
        f8gemm.precompile_grouped((5000, 64, 256, 512))


def test_precompiled_grouped_problem_may_be_captured_before_it_ever_ran():
    _gpu()
    # A problem no other test uses, precompiled instead of run: its first call is in a capture.
    xq, wq, xs, ws, sizes = make_grouped([5, 0, 11], 88, 224, seed=23)
    f8gemm.precompile_grouped((3, 16, 88, 224), layout="plain")
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = ops.f8f8bf16_rowwise_grouped_stacked(xq, wq, xs, ws, sizes)
    g.replay()
    torch.cuda.synchronize()
    check_grouped(y, xq, wq, xs, ws, sizes)


def test_capture_of_a_problem_that_has_not_run_is_a_clear_error():
    _gpu()
    # A problem no other test uses: its kernel may need compiling, which a capture forbids.
    xq, wq, xs, ws, sizes = make_grouped([3, 9, 0], 72, 208, seed=17)
    torch.cuda.synchronize()
    with pytest.raises(RuntimeError, match=r"G,total_M,N,K = \(3, 12, 72, 208\).*has not run.*"
                                           r"capturing a CUDA graph"):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            ops.f8f8bf16_rowwise_grouped_stacked(xq, wq, xs, ws, sizes)
    torch.cuda.synchronize()
    ops.f8f8bf16_rowwise_grouped_stacked(xq, wq, xs, ws, sizes)  # runs once: now it may be captured
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = ops.f8f8bf16_rowwise_grouped_stacked(xq, wq, xs, ws, sizes)
    g.replay()
    torch.cuda.synchronize()
    check_grouped(y, xq, wq, xs, ws, sizes)
