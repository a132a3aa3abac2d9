"""The GEMMs with SiLU(gate) * up in their epilogue, f8f8bf16_rowwise_silu_mul and
f8f8bf16_rowwise_preshuffled_silu_mul (WQ = [gate; up], 2I rows; output [..., I] bf16): every
element against an fp64 bound, clear ValueErrors, schemas and Meta shapes, opcheck,
torch.compile(fullgraph=True), CUDA-graph capture after precompile(epilogue='silu_mul') and the
error without it, and FP8GatedMLP's fused path (from FUSED_ACTIVATION_MIN_ROWS rows on).

The CPU tests (schemas, Meta and FakeTensor shapes, argument errors, CPU rejection) run anywhere
the extension loads; the GPU tests skip without an sm_90 GPU.

Element bound (numerics::silu_mul_bound, testing/reference.hpp, where it is derived): the
kernel's fp32 g and u are within e_g = gamma * abs_g and e_u = gamma * abs_u of the fp64 ones
(abs_* = |xs| * |ws| * sum |x * w| + |bias|, gamma = numerics::accumulation_gamma), so with S
and L the largest |SiLU| and |SiLU'| over [g - e_g, g + e_g] the product moves by at most
D = S e_u + L |u| e_g; the epilogue's SiLU * up (kernels/silu_sfu.cuh, checked on
every fp32 input by GemmGpu.EpilogueSiluWithinItsBoundOnEveryFloat) adds
(2^-20 + 2^-22 (|g| + e_g)) (|h| + D) + 2^-119 (|u| + e_u), and the bf16 rounding u_r |h|:
    bound = u_r |h| + (1 + u_r) (D + that) + 2^-133   (u_r = 2^-8)."""

import copy

import helpers
from helpers import LlamaMLP, gen, make_single, pytest, reference, rel_rms, same_bits

import torch  # noqa: E402

import f8gemm  # noqa: E402
from f8gemm.nn import FP8GatedMLP, swap_linears  # noqa: E402

ops = torch.ops.f8gemm
E4M3 = torch.float8_e4m3fn
BF16_U = 2.0 ** -8            # numerics::unit_roundoff(kBF16)
BF16_SUBNORMAL = 2.0 ** -133  # numerics::subnormal_slack(kBF16)
# The epilogue SiLU's own bound (kernels/silu_sfu.cuh: kSiluSfuRel, kSiluSfuRelPerG, kSiluSfuAbs).
SFU_REL, SFU_REL_PER_G, SFU_ABS = 2.0 ** -20, 2.0 ** -22, 2.0 ** -119


def need_gpu():
    reason = helpers.skip_reason()
    if reason:
        pytest.skip(reason)


# ------------------------------------------------------------------------- fp64 reference

def accumulation_gamma(k, fast):
    """numerics::accumulation_gamma (testing/reference.cpp): the accumulation's error, relative
    to abs_ref."""
    steps = (k + 31) // 32
    if fast:
        return min(max(steps, 4), 14) * 2.0 ** -13 + steps * 2.0 ** -23
    return 4 * 2.0 ** -13 + 4 * 2.0 ** -23 + (k + 127) // 128 * 2.0 ** -24


def abs_reference(xq, wq, xs, ws, bias=None):
    """fp64 abs_ref = |xs| * |ws| * sum |x * w| (+ |bias|): helpers.reference of the absolute
    values, the scale of each element's accumulation error."""
    x = xq.float().double().abs() * xs.double().abs().reshape(*xq.shape[:-1], 1)
    w = wq.float().double().abs() * ws.double().abs().unsqueeze(-1)
    y = x @ w.t()
    return y if bias is None else y + bias.double().abs()


def _max_abs_over(f, a, b, points):
    """The largest |f| over [a, b] (elementwise) for a smooth f with its extrema at `points`."""
    m = torch.maximum(f(a).abs(), f(b).abs())
    for x in points:
        inside = (a < x) & (x < b)
        m = torch.where(inside, torch.maximum(m, f(a.new_tensor(x)).abs()), m)
    return m


def _silu(x):
    return x / (1.0 + torch.exp(-x))


def _silu_slope(x):
    s = torch.sigmoid(x)
    return s * (1.0 + x * (1.0 - s))


def silu_mul_reference(xq, wq, xs, ws, bias=None):
    """fp64 h = SiLU(g) * u of the merged GEMM (g: its columns [0, I), u: [I, 2I)), and a
    function of gamma that gives each element's bound (numerics::silu_mul_bound, bf16)."""
    inter = wq.shape[0] // 2
    gu = reference(xq, wq, xs, ws, bias)
    abs_gu = abs_reference(xq, wq, xs, ws, bias)
    g, u = gu[..., :inter], gu[..., inter:]
    h = g / (1.0 + torch.exp(-g)) * u

    def bound(gamma):
        e_g, e_u = gamma * abs_gu[..., :inter], gamma * abs_gu[..., inter:]
        # The largest |SiLU| and |SiLU'| over [g - e_g, g + e_g]: SiLU's minimum at -1.2785,
        # SiLU''s extrema at -+2.3994.
        s_max = _max_abs_over(_silu, g - e_g, g + e_g, [-1.278464542761074])
        l_max = _max_abs_over(_silu_slope, g - e_g, g + e_g,
                              [-2.399357280515467, 2.399357280515467])
        d = s_max * e_u + l_max * u.abs() * e_g
        sfu = (SFU_REL + SFU_REL_PER_G * (g.abs() + e_g)) * (h.abs() + d) + SFU_ABS * (u.abs() + e_u)
        return BF16_U * h.abs() + (1.0 + BF16_U) * (d + sfu) + BF16_SUBNORMAL

    return h, bound


def assert_within_bound(y, h, bound, label):
    assert y.shape == h.shape and y.dtype == torch.bfloat16, (label, y.shape, y.dtype)
    assert bool(torch.isfinite(y).all()), f"{label}: non-finite outputs"
    ratio = ((y.double() - h).abs() / bound).reshape(-1)
    worst = int(ratio.argmax())
    assert ratio[worst].item() <= 1.0, (
        f"{label}: |y - h| / bound = {ratio[worst].item():.3g} at flat index {worst} "
        f"(y = {y.reshape(-1)[worst].item()}, h = {h.reshape(-1)[worst].item()})")


def check_both_ops(xq, wq, xs, ws, bias, label):
    """Both ops, fast and precise accumulation, against one fp64 reference."""
    h, bound = silu_mul_reference(xq, wq, xs, ws, bias)
    wp = ops.preshuffle(wq)
    for fast in (True, False):
        b = bound(accumulation_gamma(xq.shape[-1], fast))
        assert_within_bound(ops.f8f8bf16_rowwise_silu_mul(xq, wq, xs, ws, bias, fast), h, b,
                            f"{label} plain fast={fast}")
        assert_within_bound(ops.f8f8bf16_rowwise_preshuffled_silu_mul(xq, wp, xs, ws, bias, fast),
                            h, b, f"{label} preshuffled fast={fast}")


# ------------------------------------------------------------------------------------- CPU

GEMM_ARGS = ("(Tensor XQ, Tensor WQ, Tensor x_scale, Tensor w_scale, Tensor? bias=None, "
             "bool use_fast_accum=True, bool? pdl=None")


def _schema_text(name):
    schema = str(getattr(ops, name).default._schema)
    return schema[schema.index("("):]


def test_schemas_and_exports():
    """pdl last, as on the other GEMMs; the preshuffled op then prefetch_w, as on the other
    single preshuffled GEMMs."""
    assert _schema_text("f8f8bf16_rowwise_silu_mul") == GEMM_ARGS + ") -> Tensor"
    assert _schema_text("f8f8bf16_rowwise_preshuffled_silu_mul") == \
        GEMM_ARGS + ", bool prefetch_w=False) -> Tensor"
    assert f8gemm.f8f8bf16_rowwise_silu_mul is ops.f8f8bf16_rowwise_silu_mul
    assert f8gemm.f8f8bf16_rowwise_preshuffled_silu_mul is ops.f8f8bf16_rowwise_preshuffled_silu_mul


def _meta(*shape, dtype=E4M3):
    return torch.empty(*shape, dtype=dtype, device="meta")


@pytest.mark.parametrize("lead", [(7,), (2, 5)])
def test_meta_shapes(lead):
    """[..., K] x [2I, K] -> [..., I] bf16, with any trailing pdl and prefetch_w."""
    xq, xs = _meta(*lead, 384), _meta(*lead, dtype=torch.float32)
    ws = _meta(256, dtype=torch.float32)
    wq, wp = _meta(256, 384), _meta(3, 32, 1024)  # N = 2I = 256 rows, plain and preshuffled
    bias = _meta(256, dtype=torch.bfloat16)
    ys = [ops.f8f8bf16_rowwise_silu_mul(xq, wq, xs, ws),
          ops.f8f8bf16_rowwise_silu_mul(xq, wq, xs, ws, bias, False, True),
          ops.f8f8bf16_rowwise_preshuffled_silu_mul(xq, wp, xs, ws),
          ops.f8f8bf16_rowwise_preshuffled_silu_mul(xq, wp, xs, ws, bias, True, None, True)]
    for y in ys:
        assert y.shape == (*lead, 128) and y.dtype == torch.bfloat16 and y.device.type == "meta"
    with pytest.raises(ValueError, match=r"WQ must be 3-D preshuffled.*preshuffle\(WQ\)"):
        ops.f8f8bf16_rowwise_preshuffled_silu_mul(xq, wq, xs, ws)
    with pytest.raises(ValueError, match=r"WQ must be 2-D \[N, K\].*_preshuffled op"):
        ops.f8f8bf16_rowwise_silu_mul(xq, wp, xs, ws)


def test_fake_tensor_trace_of_the_fused_block():
    """FakeTensor (torch.compile's tracer) through the fused path of FP8GatedMLP: quantise x,
    the SiLU * up GEMM, quantise h."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        xq, xs = ops.quantize_fp8_row(torch.empty(3, 7, 256, dtype=torch.bfloat16))
        wp = ops.preshuffle(torch.empty(96, 256, dtype=E4M3))
        h = ops.f8f8bf16_rowwise_preshuffled_silu_mul(xq, wp, xs, torch.empty(96), None, True,
                                                      True, True)
        assert h.shape == (3, 7, 48) and h.dtype == torch.bfloat16
        hq, hs = ops.quantize_fp8_row(h)
        assert hq.shape == (3, 7, 48) and hs.shape == (3, 7)


def test_cpu_tensors_are_rejected():
    """Valid CPU inputs pass every check up to the device: "XQ must be in GPU memory"."""
    xq, wq, xs, ws, bias = make_single(16, 64, 128, seed=1, device="cpu",
                                       bias_dtype=torch.float32)
    wp = ops.preshuffle(wq)
    for call in (lambda: ops.f8f8bf16_rowwise_silu_mul(xq, wq, xs, ws, bias),
                 lambda: ops.f8f8bf16_rowwise_preshuffled_silu_mul(xq, wp, xs, ws, bias,
                                                                   prefetch_w=True)):
        with pytest.raises(ValueError, match="XQ must be in GPU memory"):
            call()


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_bad_arguments_raise_value_error(device):
    """The library validates before it looks at the device: the same errors on the CPU."""
    if device == "cuda":
        need_gpu()
    xq, wq, xs, ws, _ = make_single(4, 32, 64, seed=2, device=device)  # N = 2I = 32
    w24 = wq[:24]  # 2I = 24 rows: I = 12 is not a multiple of 8
    for name, w, w_24 in (("f8f8bf16_rowwise_silu_mul", wq, w24),
                          ("f8f8bf16_rowwise_preshuffled_silu_mul", ops.preshuffle(wq),
                           ops.preshuffle(w24))):
        op = getattr(ops, name)
        prefix = rf"f8gemm\.{name}: invalid argument: "
        cases = [
            (lambda: op(xq, w_24, xs, ws[:24]),
             r"with the SiLU.mul epilogue, N \(WQ's rows: gate then up, 2I\) must be a multiple "
             r"of 16, got 24"),
            (lambda: op(xq[:, :40], w, xs, ws), r"K \(XQ's last dimension\) must be a positive "
                                                r"multiple of 16.*got 40"),
            (lambda: op(xq.to(torch.bfloat16), w, xs, ws),
             r"XQ must have dtype float8_e4m3fn, got bfloat16"),
            (lambda: op(xq.double(), w, xs, ws),
             r"XQ must have dtype torch.float8_e4m3fn, got torch.float64"),
            # the gate's (or up's) I values where the merged weight's 2I belong
            (lambda: op(xq, w, xs, ws[:16]), r"w_scale must have shape \[32\]"),
            (lambda: op(xq, w, xs, ws, torch.zeros(16, device=device)),
             r"bias must have shape \[32\]"),
        ]
        if device == "cuda":
            cases.append((lambda: op(xq, w.cpu(), xs, ws), r"WQ is on the host but XQ is on cuda"))
        for call, message in cases:
            with pytest.raises(ValueError, match=prefix + message):
                call()
    with pytest.raises(ValueError, match=r"WQ looks like a plain weight"):
        ops.f8f8bf16_rowwise_preshuffled_silu_mul(xq, wq, xs, ws)
    with pytest.raises(ValueError, match=r"WQ looks like a preshuffled weight"):
        ops.f8f8bf16_rowwise_silu_mul(xq, ops.preshuffle(wq), xs, ws)


def test_precompile_rejects_bad_epilogue_arguments():
    with pytest.raises(ValueError, match=r"epilogue must be 'none' or 'silu_mul', got 'gelu'"):
        f8gemm.precompile([(16, 32, 64)], epilogue="gelu")
    with pytest.raises(ValueError, match=r"SiLU.mul epilogue .*multiple of 16, got 24"):
        f8gemm.precompile([(16, 24, 64)], epilogue="silu_mul")


# ------------------------------------------------------------------------------------- GPU

# (M, I, K), WQ of 2I rows: one row (no swap-AB tile can pair gate and up: a 64- or 128-row
# tile holds it), M ragged against every tile height, I = 136 and 520 ragged against every tile
# width (half a tile's W rows are gate rows, half up rows), I = 14336 (Llama 3 8B), K two
# k-blocks and a 16-deep tail (272) or 32 k-blocks (4096).
SHAPES = [(1, 136, 272), (77, 520, 4096), (300, 14336, 4096), (2048, 520, 272),
          (300, 136, 272), (2048, 136, 4096), (1, 14336, 272), (77, 14336, 272)]


@pytest.mark.parametrize("m,inter,k", SHAPES)
def test_matches_fp64(m, inter, k):
    need_gpu()
    xq, wq, xs, ws, _ = make_single(m, 2 * inter, k, seed=m + inter + k)
    check_both_ops(xq, wq, xs, ws, None, f"M,I,K = {m},{inter},{k}")


@pytest.mark.parametrize("bias_dtype", [torch.float32, torch.bfloat16])
def test_bias_matches_fp64(bias_dtype):
    need_gpu()
    for m, inter, k in [(300, 520, 4096), (2048, 136, 272), (1, 136, 4096)]:
        xq, wq, xs, ws, bias = make_single(m, 2 * inter, k, seed=3 * m + k, bias_dtype=bias_dtype)
        check_both_ops(xq, wq, xs, ws, bias, f"M,I,K = {m},{inter},{k} bias {bias_dtype}")


def test_leading_dimensions_and_empty_input():
    need_gpu()
    xq, wq, xs, ws, _ = make_single(0, 272, 272, seed=4, lead=(3, 40))
    check_both_ops(xq, wq, xs, ws, None, "XQ [3, 40, K]")
    xq, wq, xs, ws, _ = make_single(0, 272, 272, seed=5)
    assert ops.f8f8bf16_rowwise_silu_mul(xq, wq, xs, ws).shape == (0, 136)
    assert ops.f8f8bf16_rowwise_preshuffled_silu_mul(xq, ops.preshuffle(wq), xs, ws).shape == \
        (0, 136)


def test_opcheck():
    need_gpu()
    xq, wq, xs, ws, bias = make_single(64, 256, 512, seed=6, bias_dtype=torch.float32)
    x3, _, xs3, _, _ = make_single(0, 256, 512, seed=7, lead=(2, 8))
    wp = ops.preshuffle(wq)
    bias_bf = bias.to(torch.bfloat16)
    plain = ops.f8f8bf16_rowwise_silu_mul.default
    shuffled = ops.f8f8bf16_rowwise_preshuffled_silu_mul.default
    cases = [
        (plain, (xq, wq, xs, ws), {}),
        (plain, (xq, wq, xs, ws, bias, False), {}),
        (plain, (x3, wq, xs3, ws), {"pdl": True}),
        (plain, (xq, wq, xs, ws), {"bias": bias_bf, "use_fast_accum": False, "pdl": False}),
        (shuffled, (xq, wp, xs, ws, bias_bf), {}),
        (shuffled, (x3, wp, xs3, ws, None, False), {}),
        (shuffled, (xq, wp, xs, ws), {"pdl": True, "prefetch_w": True}),
        (shuffled, (xq, wp, xs, ws, bias, True, None, True), {}),
    ]
    with helpers.fp8_comparable():
        for op, args, kwargs in cases:
            torch.library.opcheck(op, args, kwargs)


@torch.no_grad()
def test_torch_compile_fullgraph_is_eager_bit_for_bit():
    need_gpu()
    xq, wq, xs, ws, bias = make_single(200, 1040, 512, seed=8, bias_dtype=torch.bfloat16)
    wp = ops.preshuffle(wq)

    def f(xq, wq, wp, xs, ws, bias):
        return (ops.f8f8bf16_rowwise_preshuffled_silu_mul(xq, wp, xs, ws, bias, False, pdl=True,
                                                          prefetch_w=True),
                ops.f8f8bf16_rowwise_silu_mul(xq, wq, xs, ws, bias))

    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True)
    for got, want in zip(compiled(xq, wq, wp, xs, ws, bias), f(xq, wq, wp, xs, ws, bias)):
        assert same_bits(got, want)


def test_cuda_graph_after_precompile_replays_new_data():
    """precompile(epilogue='silu_mul') is all a capture needs; the replay reads the inputs anew."""
    need_gpu()
    m, inter, k = 96, 520, 768
    for layout in ("preshuffled", "plain"):
        f8gemm.precompile([(m, 2 * inter, k)], layout=layout, bias_dtype=torch.float32,
                          epilogue="silu_mul")
    static = make_single(m, 2 * inter, k, seed=9, bias_dtype=torch.float32)
    xq, wq, xs, ws, bias = static
    wp = ops.preshuffle(wq)

    def body():
        return (ops.f8f8bf16_rowwise_preshuffled_silu_mul(xq, wp, xs, ws, bias),
                ops.f8f8bf16_rowwise_silu_mul(xq, wq, xs, ws, bias))

    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        ys = body()
    for dst, src in zip(static, make_single(m, 2 * inter, k, seed=10, bias_dtype=torch.float32)):
        dst.copy_(src)
    wp.copy_(ops.preshuffle(wq))
    for y in ys:
        y.fill_(float("nan"))  # poison: the replay must write every element
    g.replay()
    torch.cuda.synchronize()
    for got, want in zip(ys, body()):
        assert same_bits(got, want)


def test_capture_without_precompile_names_the_epilogue():
    need_gpu()
    m, n, k = 40, 144, 208  # a problem no other test uses: its plan is not built yet
    xq, wq, xs, ws, bias = make_single(m, n, k, seed=11, bias_dtype=torch.bfloat16)
    wp = ops.preshuffle(wq)

    def call():
        return ops.f8f8bf16_rowwise_preshuffled_silu_mul(xq, wp, xs, ws, bias, False)

    # The same problem without the epilogue is another kernel: its plan does not serve this op.
    f8gemm.precompile([(m, n, k)], use_fast_accum=False, bias_dtype=torch.bfloat16)
    torch.cuda.synchronize()
    with pytest.raises(RuntimeError, match=r"precompile") as info:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            call()
    msg = str(info.value)
    assert "M,N,K = (40, 144, 208)" in msg and "capturing a CUDA graph" in msg, msg
    assert "epilogue='silu_mul'" in msg, msg
    torch.cuda.synchronize()
    # What the message says to run makes the same capture work.
    f8gemm.precompile([(m, n, k)], use_fast_accum=False, bias_dtype=torch.bfloat16,
                      epilogue="silu_mul")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = call()
    g.replay()
    torch.cuda.synchronize()
    assert same_bits(y, call())


# --------------------------------------------------------------------------- FP8GatedMLP

HIDDEN, INTER = 1024, 2816


def _input(*shape, seed):
    return torch.randn(*shape, generator=gen(seed)).to("cuda", torch.bfloat16)


def _kernel_names(fn):
    """The CUDA kernels of one call of fn (after a first call that loads them)."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


def _silu_mul_quantize_kernels(names):
    """How many of the kernels are silu_mul_quantize_fp8_row's: 1 on the unfused path, 0 on the
    fused one."""
    return sum("silu_mul_quantize" in n for n in names)


@pytest.mark.parametrize("m", [600, 16])  # fused (>= FUSED_ACTIVATION_MIN_ROWS), unfused
@pytest.mark.parametrize("bias", [False, True])
def test_gated_mlp_against_bf16_and_the_per_linear_swap(m, bias):
    need_gpu()
    with torch.inference_mode():
        ref = LlamaMLP(HIDDEN, INTER, bias=bias, seed=20)
        fused = FP8GatedMLP.from_module(ref)
        swapped = swap_linears(copy.deepcopy(ref))
        x = _input(m, HIDDEN, seed=21 + m)
        y_ref = copy.deepcopy(ref).double()(x.double())  # the bf16 block's function, exactly
        y = fused(x)
        assert y.shape == (m, HIDDEN) and y.dtype == torch.bfloat16
        e_fused, e_swap, e_bf16 = (rel_rms(v, y_ref) for v in (y, swapped(x), ref(x)))
    # Every path quantises x, h and both weights (about 2^-4 each). The swap also rounds gate,
    # up and h into bf16 before h's quantisation; the fused path rounds h once, the unfused path
    # gate and up (its GEMM's bf16 output).
    assert e_fused < 0.08, (m, e_fused)
    assert e_fused <= 1.1 * e_swap, (m, e_fused, e_swap)
    assert e_bf16 < e_fused, (m, e_bf16, e_fused)


def test_gated_mlp_fused_path_is_four_kernels_and_agrees_with_the_unfused_path():
    need_gpu()
    m = 600
    with torch.inference_mode():
        ref = LlamaMLP(HIDDEN, INTER, seed=30)
        mlp = FP8GatedMLP.from_module(ref)
        x = _input(m, HIDDEN, seed=31)
        y_ref = copy.deepcopy(ref).double()(x.double())
        fused_kernels = _kernel_names(lambda: mlp(x))
        y_fused = mlp(x)
        mlp.FUSED_ACTIVATION_MIN_ROWS = 10 ** 9  # this instance only: the unfused path
        unfused_kernels = _kernel_names(lambda: mlp(x))
        y_unfused = mlp(x)
    # quantize x, the SiLU * up GEMM, quantize h, the down GEMM
    assert len(fused_kernels) == 4 and _silu_mul_quantize_kernels(fused_kernels) == 0, \
        fused_kernels
    assert len(unfused_kernels) == 4 and _silu_mul_quantize_kernels(unfused_kernels) == 1, \
        unfused_kernels
    # The two paths quantise h from values a few bf16 roundings apart (the fused one rounds h,
    # the unfused one gate and up), so a few percent of h's e4m3 codes differ by one step:
    # emulated, 1.7e-2 relative RMS for this block; neither path is the less accurate.
    assert rel_rms(y_fused, y_unfused) < 3e-2
    e_fused, e_unfused = rel_rms(y_fused, y_ref), rel_rms(y_unfused, y_ref)
    assert e_fused <= 1.05 * e_unfused, (e_fused, e_unfused)


def test_gated_mlp_threshold_counts_the_flattened_rows():
    need_gpu()
    rows = FP8GatedMLP.FUSED_ACTIVATION_MIN_ROWS
    with torch.inference_mode():
        mlp = FP8GatedMLP.from_module(LlamaMLP(HIDDEN, INTER, seed=40))
        for lead, fused in (((rows,), True), ((rows - 1,), False), ((2, rows // 2), True)):
            x = _input(*lead, HIDDEN, seed=41)
            names = _kernel_names(lambda: mlp(x))
            assert len(names) == 4 and _silu_mul_quantize_kernels(names) == (0 if fused else 1), \
                (lead, names)


def test_gated_mlp_fused_path_with_an_fp16_input():
    """h is bf16 on the fused path whatever the input (there is no fp16 SiLU * up op); the
    output keeps the input's dtype."""
    need_gpu()
    with torch.inference_mode():
        ref = LlamaMLP(HIDDEN, INTER, seed=45)
        mlp = FP8GatedMLP.from_module(ref)
        x = torch.randn(2, 300, HIDDEN, generator=gen(46)).to("cuda", torch.float16)
        y = mlp(x)
        assert y.shape == (2, 300, HIDDEN) and y.dtype == torch.float16
        assert rel_rms(y, copy.deepcopy(ref).double()(x.double())) < 0.08


@torch.no_grad()
def test_compiled_gated_mlp_fused_path_is_eager_bit_for_bit():
    need_gpu()
    mlp = FP8GatedMLP.from_module(LlamaMLP(512, 1024, bias=True, seed=50))
    x = _input(2, 300, 512, seed=51)  # 600 rows: the fused path
    torch._dynamo.reset()
    assert same_bits(torch.compile(mlp, fullgraph=True)(x), mlp(x))
