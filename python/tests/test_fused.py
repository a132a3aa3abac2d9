"""The fused activation path: silu_mul_quantize_fp8_row (CPU and CUDA kernels against fp64 and
against each other bit for bit), quantize_fp8_row at small M and with scale_ub on the device,
opcheck, torch.compile(fullgraph=True), CUDA-graph capture, clear ValueErrors, and the
FP8GatedMLP block (four kernels) against bf16 and against the per-linear FP8 swap.

The CPU tests run anywhere the extension loads; the GPU tests skip without an sm_90 GPU.

Accuracy, derived (kernels/quantize_shared.cuh): h = SiLU(g) * u is computed in fp32 within
4 ulp of the exact value, so the scale max|h| / 448 is within 4 fp32 ulp of the fp64 one, and
each code is within one e4m3 ulp of h * 448 / amax (half an ulp of rounding, plus a possible
flip at a near-tie from h's own error of relative size 2^-21, far below one e4m3 ulp)."""

import copy
import math

import helpers
from helpers import LlamaMLP, gen, pytest, same_bits

import torch  # noqa: E402

import f8gemm  # noqa: E402,F401  (loads the ops)
from f8gemm.nn import FP8GatedMLP, fuse_gate_up, swap_linears  # noqa: E402

ops = torch.ops.f8gemm
DTYPES = [torch.bfloat16, torch.float16, torch.float32]


def need_gpu():
    reason = helpers.skip_reason()
    if reason:
        pytest.skip(reason)


def make_gate_up(lead, inter, dtype, seed=0, device="cpu"):
    """gate_up [*lead, 2I]: gate ~ N(0, 2^2) (SiLU's whole shape), up ~ N(0, 1), and each row
    scaled by 2^e with e in [-3, 3], so the rows' maxima differ."""
    g = gen(seed)
    x = torch.randn(*lead, 2 * inter, generator=g)
    x[..., :inter] *= 2.0
    x *= torch.exp2(torch.randint(-3, 4, (*lead, 1), generator=g).float())
    return x.to(device=device, dtype=dtype)


def e4m3_ulp(v):
    """One e4m3 unit in the last place at |v| (fp64 tensor)."""
    a = v.abs()
    exp = torch.floor(torch.log2(a.clamp_min(2.0 ** -6)))
    return torch.where(a < 2.0 ** -6, torch.full_like(a, 2.0 ** -9), torch.exp2(exp - 3))


def fp64_silu_mul(gate_up):
    gu = gate_up.double()
    inter = gu.shape[-1] // 2
    g, u = gu[..., :inter], gu[..., inter:]
    return g / (1.0 + torch.exp(-g)) * u


def check_against_fp64(gate_up, q, scale):
    h = fp64_silu_mul(gate_up.cpu())
    amax = h.abs().amax(-1, keepdim=True)
    want_scale = (amax / 448.0).squeeze(-1)
    rel = ((scale.cpu().double() - want_scale).abs() / want_scale).max().item()
    assert rel <= 4 * 2.0 ** -23, rel
    want = h * 448.0 / amax
    got = q.cpu().double()
    bad = ((got - want).abs() > e4m3_ulp(want)).sum().item()
    assert bad == 0, f"{bad} codes off by more than one e4m3 ulp"


# ------------------------------------------------------------------------------------- CPU

@pytest.mark.parametrize("dtype", DTYPES)
def test_cpu_kernel_matches_fp64(dtype):
    gu = make_gate_up((5, 3), 200, dtype, seed=1)
    q, scale = ops.silu_mul_quantize_fp8_row(gu)
    assert q.shape == (5, 3, 200) and q.dtype == torch.float8_e4m3fn
    assert scale.shape == (5, 3) and scale.dtype == torch.float32
    check_against_fp64(gu, q, scale)


def test_cpu_kernel_scale_ub_and_special_values():
    gu = make_gate_up((4,), 64, torch.float32, seed=2)
    gu[1] = 0.0                    # eps path: scale = 1e-12 / 448, codes 0
    gu[2, 5] = float("nan")        # a NaN gate: that code is NaN, the row's scale ignores it
    q, scale = ops.silu_mul_quantize_fp8_row(gu)
    assert scale[1].item() == pytest.approx(1e-12 / 448.0, rel=1e-6)
    assert torch.all(q[1].view(torch.uint8) == 0)
    assert q[2, 5].view(torch.uint8).item() == 0x7F
    assert math.isfinite(scale[2].item())
    ub = torch.tensor(0.01)
    qb, sb = ops.silu_mul_quantize_fp8_row(gu, ub)
    h = fp64_silu_mul(gu)
    clamped = torch.minimum(h.abs().nan_to_num(0.0).amax(-1), torch.tensor(0.01, dtype=torch.float64))
    assert torch.allclose(sb.double(), clamped.clamp_min(1e-12) / 448.0, rtol=1e-6)
    # Saturation: with the bound below the maxima, the largest |h| saturate to +-448 (0x7e/0xfe).
    big = (qb.view(torch.uint8) & 0x7F) == 0x7E
    assert big[0].any() and big[3].any()


def test_cpu_opcheck():
    for dtype in DTYPES:
        gu = make_gate_up((6,), 48, dtype, seed=3)
        torch.library.opcheck(ops.silu_mul_quantize_fp8_row, (gu,))
        torch.library.opcheck(ops.silu_mul_quantize_fp8_row, (gu, torch.tensor([0.5])))
        for pdl in (None, True, False):  # launch option only: nothing is launched on the CPU
            torch.library.opcheck(ops.silu_mul_quantize_fp8_row, (gu, None, pdl))


def test_bad_arguments_raise_value_error():
    op = ops.silu_mul_quantize_fp8_row
    with pytest.raises(ValueError, match="must be even"):
        op(torch.randn(4, 63))
    with pytest.raises(ValueError, match="must be torch.bfloat16, torch.float16 or torch.float32"):
        op(torch.randn(4, 64).to(torch.int32))
    with pytest.raises(ValueError, match="must be torch.bfloat16, torch.float16 or torch.float32"):
        op(torch.randn(4, 64, dtype=torch.float64))
    with pytest.raises(ValueError, match="gate_up must be contiguous"):
        op(torch.randn(4, 128)[:, ::2])
    with pytest.raises(ValueError, match="0-dimensional"):
        op(torch.tensor(1.0))
    with pytest.raises(ValueError, match="scale_ub must be a 1-element torch.float32"):
        op(torch.randn(4, 64), torch.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="scale_ub must be a 1-element torch.float32"):
        op(torch.randn(4, 64), torch.tensor(1.0, dtype=torch.float64))
    with pytest.raises(ValueError, match="at most 4 are supported"):
        op(torch.randn(1, 1, 1, 2, 64))
    with pytest.raises(ValueError, match="must be even"):
        op(torch.empty(4, 63, device="meta"))


def test_meta_shapes_and_empty_inputs():
    q, s = ops.silu_mul_quantize_fp8_row(torch.empty(2, 7, 96, device="meta", dtype=torch.bfloat16))
    assert q.shape == (2, 7, 48) and q.dtype == torch.float8_e4m3fn and s.shape == (2, 7)
    q, s = ops.silu_mul_quantize_fp8_row(torch.empty(0, 96))
    assert q.shape == (0, 48) and s.shape == (0,)


# ------------------------------------------------------------------------------------- GPU

# (lead, I): decode rows spread over clusters (M = 1..16, I up to 14336), prefill rows, a row
# length that is not a multiple of 16 (the single-value path), a 3-D input, and rows too
# long for registers even over 8 CTAs (40000: read twice); from 128 rows on the wide entry
# (two packs a thread): 600 rows of 14336 (a cluster of 2 a row), 520 of 4112 (one CTA a row),
# 260 of 40000 (a cluster of 8) and 128 of 65552 (a cluster of 8 with one pack a row past the
# registers, read twice).
GPU_SHAPES = [((1,), 14336), ((2,), 8192), ((16,), 14336), ((3,), 16), ((300,), 1024),
              ((33,), 4104), ((7,), 1000), ((2, 5), 520), ((1,), 28672), ((5,), 40),
              ((2,), 40000), ((600,), 14336), ((4, 130), 4112), ((260,), 40000),
              ((128,), 65552)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_kernel_is_the_cpu_kernel_bit_for_bit(dtype):
    need_gpu()
    for i, (lead, inter) in enumerate(GPU_SHAPES):
        gu = make_gate_up(lead, inter, dtype, seed=10 + i)
        q_ref, s_ref = ops.silu_mul_quantize_fp8_row(gu)
        q, s = ops.silu_mul_quantize_fp8_row(gu.cuda())
        torch.cuda.synchronize()
        assert same_bits(q, q_ref), (lead, inter)
        assert same_bits(s, s_ref), (lead, inter)
        check_against_fp64(gu, q, s)


def test_cuda_scale_ub_on_the_device_is_read_by_the_kernel():
    need_gpu()
    gu = make_gate_up((16,), 4096, torch.bfloat16, seed=20)
    for value in (0.05, 1.0, 0.0, float("nan")):
        q_ref, s_ref = ops.silu_mul_quantize_fp8_row(
            gu, torch.tensor(value) if value > 0 else None)
        q, s = ops.silu_mul_quantize_fp8_row(gu.cuda(), torch.tensor([value], device="cuda"))
        assert same_bits(q, q_ref) and same_bits(s, s_ref), value
    # A CPU scale_ub for a CUDA input is read on the host (no sync) and gives the same bits.
    q, s = ops.silu_mul_quantize_fp8_row(gu.cuda(), torch.tensor(0.05))
    q_ref, s_ref = ops.silu_mul_quantize_fp8_row(gu, torch.tensor(0.05))
    assert same_bits(q, q_ref) and same_bits(s, s_ref)


@pytest.mark.parametrize("dtype", DTYPES)
def test_quantize_fp8_row_is_the_cpu_kernel_bit_for_bit(dtype):
    need_gpu()
    # Small M with long rows: a row spread over a cluster of CTAs; plus ragged K (scalar path);
    # the wide entry (four packs a thread) where it holds a row in fewer CTAs (14336 and 4112:
    # one CTA; 40000: 4 of them; 2200 x 4112: more rows than CTAs) or from 2048 rows on at the
    # same cluster (2048 x 4096); 300 x 1000 is not vectorised (narrow).
    for i, (m, k) in enumerate([(1, 16384), (4, 16384), (16, 16384), (1, 4096), (8, 28672),
                                (16, 14336), (1, 1000), (3, 16), (1, 65536 + 16),
                                (300, 14336), (520, 4112), (2200, 4112), (257, 40000),
                                (2048, 4096), (300, 1000)]):
        x = (torch.randn(m, k, generator=gen(30 + i)) *
             torch.exp2(torch.randint(-3, 4, (m, 1), generator=gen(i)).float())).to(dtype)
        x[0, k // 3] = 100.0  # one outlier sets row 0's scale
        for ub in (None, 2.0):
            ub_cpu = None if ub is None else torch.tensor(ub)
            q_ref, s_ref = ops.quantize_fp8_row(x, ub_cpu)
            q, s = ops.quantize_fp8_row(x.cuda(), None if ub is None else
                                        torch.tensor([ub], device="cuda"))
            assert same_bits(q, q_ref), (m, k, ub)
            assert same_bits(s, s_ref), (m, k, ub)


def test_cuda_bad_arguments():
    need_gpu()
    with pytest.raises(ValueError, match="gate_up must be contiguous"):
        ops.silu_mul_quantize_fp8_row(torch.randn(4, 128, device="cuda")[:, ::2])
    with pytest.raises(ValueError, match="scale_ub must be on gate_up's device"):
        if torch.cuda.device_count() > 1:
            ops.silu_mul_quantize_fp8_row(torch.randn(4, 64, device="cuda:0"),
                                          torch.tensor([1.0], device="cuda:1"))
        else:
            ops.silu_mul_quantize_fp8_row(torch.randn(4, 64), torch.tensor([1.0], device="cuda"))


def test_cuda_opcheck():
    need_gpu()
    for dtype in DTYPES:
        gu = make_gate_up((6,), 1024, dtype, seed=40, device="cuda")
        torch.library.opcheck(ops.silu_mul_quantize_fp8_row, (gu,))
        torch.library.opcheck(ops.silu_mul_quantize_fp8_row,
                              (gu, torch.tensor([0.5], device="cuda")))
        x = gu[:, :512].contiguous()
        torch.library.opcheck(ops.quantize_fp8_row, (x, torch.tensor([0.5], device="cuda")))
        for pdl in (None, True, False):
            torch.library.opcheck(ops.silu_mul_quantize_fp8_row, (gu,), {"pdl": pdl})
            torch.library.opcheck(ops.quantize_fp8_row, (x, None, True, None, pdl))


def _quantize_both(gu, ub, pdl=None):
    q, s = ops.silu_mul_quantize_fp8_row(gu, ub, pdl=pdl)
    q2, s2 = ops.quantize_fp8_row(gu[..., : gu.shape[-1] // 2].contiguous(), ub, pdl=pdl)
    return q, s, q2, s2


def test_torch_compile_fullgraph():
    need_gpu()
    # pdl (programmatic dependent launch) changes no bit: every form gives the eager call's.
    for pdl in (None, True, False):
        torch._dynamo.reset()
        compiled = torch.compile(lambda gu, ub: _quantize_both(gu, ub, pdl), fullgraph=True)
        for m in (1, 16, 40):
            gu = make_gate_up((m,), 2048, torch.bfloat16, seed=50 + m, device="cuda")
            ub = torch.tensor([4.0], device="cuda")
            for got, want in zip(compiled(gu, ub), _quantize_both(gu, ub, False)):
                assert same_bits(got, want), (m, pdl)


def test_cuda_graph_capture_reads_scale_ub_at_replay():
    need_gpu()
    gu = make_gate_up((16,), 14336, torch.bfloat16, seed=60, device="cuda")
    x = gu[:, :4096].contiguous()
    ub = torch.tensor([1e30], device="cuda")

    def body():
        return ops.silu_mul_quantize_fp8_row(gu, ub), ops.quantize_fp8_row(x, ub)

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        body()  # loads the kernels before the capture
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        (q, sc), (xq, xs) = body()
    fresh = make_gate_up((16,), 14336, torch.bfloat16, seed=61, device="cuda")
    gu.copy_(fresh)
    x.copy_(fresh[:, :4096])
    ub.fill_(0.5)  # a new bound, read by the kernels at replay: no host sync was captured
    g.replay()
    torch.cuda.synchronize()
    q_ref, s_ref = ops.silu_mul_quantize_fp8_row(fresh.cpu(), torch.tensor(0.5))
    xq_ref, xs_ref = ops.quantize_fp8_row(fresh[:, :4096].cpu(), torch.tensor(0.5))
    assert same_bits(q, q_ref) and same_bits(sc, s_ref)
    assert same_bits(xq, xq_ref) and same_bits(xs, xs_ref)


def rel_err(y, ref):
    return ((y.double() - ref.double()).norm() / ref.double().norm()).item()


@pytest.mark.parametrize("bias", [False, True])
def test_gated_mlp_against_bf16_and_the_per_linear_swap(bias):
    need_gpu()
    hidden, inter = 1024, 2816
    with torch.inference_mode():
        ref = LlamaMLP(hidden, inter, bias=bias, seed=70)
        fused = FP8GatedMLP.from_module(ref)
        swapped = swap_linears(copy.deepcopy(ref))
        ref64 = copy.deepcopy(ref).double()
        for m in (1, 16, 128, 257):
            x = torch.randn(m, hidden, generator=gen(71 + m)).to("cuda", torch.bfloat16)
            y_ref = ref64(x.double())
            y_fused = fused(x)
            assert y_fused.shape == (m, hidden) and y_fused.dtype == torch.bfloat16
            e_fused = rel_err(y_fused, y_ref)
            e_swap = rel_err(swapped(x), y_ref)
            e_bf16 = rel_err(ref(x), y_ref)
            # FP8 costs about 2^-4 per quantised operand (3 of them on any path); the fused path
            # computes SiLU * up in fp32 where the swap rounds both to bf16 first, so it is
            # no worse than the swap (with a margin for the random draw).
            assert e_fused < 0.08, (m, e_fused)
            assert e_fused <= e_swap * 1.05 + 1e-3, (m, e_fused, e_swap)
            assert e_bf16 < e_fused
        # 3-D input and an fp16 output.
        x = torch.randn(2, 3, hidden, generator=gen(79)).to("cuda", torch.float16)
        y = fused(x)
        assert y.shape == (2, 3, hidden) and y.dtype == torch.float16
        assert rel_err(y, ref64(x.double())) < 0.08


def test_gated_mlp_is_four_kernels():
    need_gpu()
    hidden, inter = 1024, 2816
    with torch.inference_mode():
        fused = FP8GatedMLP.from_module(LlamaMLP(hidden, inter, seed=80))
        x = torch.randn(4, hidden, device="cuda", dtype=torch.bfloat16)
        fused(x)
        torch.cuda.synchronize()
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fused(x)
            torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    names = [e.name for e in kernels]
    assert len(kernels) == 4, names


def test_fuse_gate_up_replaces_only_silu_blocks():
    class Mlp(torch.nn.Module):
        def __init__(self, act):
            super().__init__()
            self.gate_proj = torch.nn.Linear(64, 96, bias=False)
            self.up_proj = torch.nn.Linear(64, 96, bias=False)
            self.down_proj = torch.nn.Linear(96, 64, bias=False)
            self.act_fn = act

    class Block(torch.nn.Module):
        def __init__(self, act):
            super().__init__()
            self.mlp = Mlp(act)
            self.proj = torch.nn.Linear(64, 64)

    net = torch.nn.Sequential(Block(torch.nn.SiLU()), Block(torch.nn.GELU()))
    gate_w = net[0].mlp.gate_proj.weight.detach().clone()
    up_w = net[0].mlp.up_proj.weight.detach().clone()
    fuse_gate_up(net)
    mlp = net[0].mlp
    assert isinstance(mlp, FP8GatedMLP)
    assert mlp.intermediate == 96 and mlp.hidden == 64
    assert not isinstance(net[1].mlp, FP8GatedMLP)      # GELU: not this block's formula
    assert isinstance(net[0].proj, torch.nn.Linear)    # other linears untouched
    # The merged weight is exactly the two quantised separately, gate rows first.
    merged = ops.unshuffle(mlp.gate_up_weight, 64).view(torch.uint8)
    for rows, w in ((slice(0, 96), gate_w), (slice(96, 192), up_w)):
        wq, ws = ops.quantize_fp8_row(w)
        assert torch.equal(merged[rows], wq.view(torch.uint8))
        assert torch.equal(mlp.gate_up_scale[rows], ws)
    with pytest.raises(ValueError, match="multiple of 16"):
        FP8GatedMLP(64, 40)


def test_gated_mlp_in_a_cuda_graph():
    need_gpu()
    hidden, inter = 1024, 2816
    with torch.inference_mode():
        fused = FP8GatedMLP.from_module(LlamaMLP(hidden, inter, seed=90))
        x = torch.randn(16, hidden, device="cuda", dtype=torch.bfloat16)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fused(x)
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = fused(x)
        x.copy_(torch.randn(16, hidden, device="cuda", dtype=torch.bfloat16))
        g.replay()
        torch.cuda.synchronize()
        assert torch.equal(y, fused(x))
