"""Results of every op against the fp64 reference (relative RMS bounds) and against
torch._scaled_mm on the same inputs; preshuffle/unshuffle/quantize_fp8_row behaviour."""

import helpers
from helpers import (DEVICE, bound, make_batched, make_single, pytest, reference, rel_rms, scaled_mm)

helpers.require_device()

import torch  # noqa: E402

import f8gemm  # noqa: E402

ops = torch.ops.f8gemm

# (M, N, K): swap-AB small M, ragged M and K (K % 128 != 0), large K, large M.
SHAPES = [
    (1, 4096, 1024),
    (16, 1024, 512),
    (100, 512, 272),
    (256, 1280, 8192),
    (1024, 2048, 2048),
]


def _single(layout, out_dtype):
    if layout == "plain":
        return ops.f8f8f16_rowwise if out_dtype == torch.float16 else ops.f8f8bf16_rowwise
    return (ops.f8f8f16_rowwise_preshuffled if out_dtype == torch.float16
            else ops.f8f8bf16_rowwise_preshuffled)


def _weight(wq, layout):
    return wq if layout == "plain" else ops.preshuffle(wq)


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("layout", ["plain", "preshuffled"])
def test_single_accuracy(m, n, k, fast, layout):
    xq, wq, xs, ws, _ = make_single(m, n, k, seed=m + n + k)
    y = _single(layout, torch.bfloat16)(xq, _weight(wq, layout), xs, ws, None, fast)
    assert y.shape == (m, n) and y.dtype == torch.bfloat16 and y.device == xq.device
    err = rel_rms(y, reference(xq, wq, xs, ws))
    assert err <= bound(fast), f"rel RMS {err:.3e} > {bound(fast):.1e}"


@pytest.mark.parametrize("m,n,k", [s for s in SHAPES if s[0] > 1])
@pytest.mark.parametrize("fast", [True, False])
def test_against_scaled_mm(m, n, k, fast):
    xq, wq, xs, ws, _ = make_single(m, n, k, seed=7 * m + k)
    theirs = scaled_mm(xq, wq, xs, ws, fast)
    if theirs is None:
        pytest.skip("torch._scaled_mm does not support this case here")
    ref = reference(xq, wq, xs, ws)
    for layout in ("plain", "preshuffled"):
        ours = _single(layout, torch.bfloat16)(xq, _weight(wq, layout), xs, ws, None, fast)
        ours_err, their_err = rel_rms(ours, ref), rel_rms(theirs, ref)
        assert ours_err <= 1.1 * their_err + 1e-4, \
            f"{layout}: ours {ours_err:.3e} vs torch._scaled_mm {their_err:.3e}"


@pytest.mark.parametrize("bias_dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", ["plain", "preshuffled"])
def test_bias_and_fp16(bias_dtype, out_dtype, layout):
    m, n, k = 64, 512, 384
    for fast in (True, False):
        xq, wq, xs, ws, bias = make_single(m, n, k, seed=3, bias_dtype=bias_dtype)
        y = _single(layout, out_dtype)(xq, _weight(wq, layout), xs, ws, bias, fast)
        assert y.dtype == out_dtype and y.shape == (m, n)
        err = rel_rms(y, reference(xq, wq, xs, ws, bias))
        assert err <= bound(fast), f"fast={fast}: rel RMS {err:.3e}"
        if out_dtype == torch.bfloat16 and bias_dtype == torch.bfloat16:
            theirs = scaled_mm(xq, wq, xs, ws, fast, bias=bias)
            if theirs is not None:
                their_err = rel_rms(theirs, reference(xq, wq, xs, ws, bias))
                assert err <= 1.1 * their_err + 1e-4


def test_defaults_are_fast_accum_and_no_bias():
    xq, wq, xs, ws, _ = make_single(32, 256, 256, seed=11)
    assert torch.equal(ops.f8f8bf16_rowwise(xq, wq, xs, ws), ops.f8f8bf16_rowwise(xq, wq, xs, ws, None, True))
    assert torch.equal(f8gemm.f8f8bf16_rowwise(xq, wq, xs, ws, use_fast_accum=False),
                       ops.f8f8bf16_rowwise(xq, wq, xs, ws, None, False))


@pytest.mark.parametrize("scale_1d", [False, True])
def test_leading_dimensions(scale_1d):
    lead, n, k = (2, 3, 5), 256, 512
    xq, wq, xs, ws, _ = make_single(0, n, k, seed=5, lead=lead)
    if scale_1d:
        xs = xs.reshape(-1)
    for layout in ("plain", "preshuffled"):
        y = _single(layout, torch.bfloat16)(xq, _weight(wq, layout), xs, ws)
        assert y.shape == (*lead, n)
        assert rel_rms(y, reference(xq, wq, xs, ws)) <= bound(True)
    # A 1-D XQ [K] is one row; its scale is 0-dimensional (what quantize_fp8_row gives).
    x1q, x1s = ops.quantize_fp8_row(torch.randn(k, generator=helpers.gen(1)).to(DEVICE, torch.bfloat16))
    assert x1s.shape == ()
    y1 = ops.f8f8bf16_rowwise(x1q, wq, x1s, ws)
    assert y1.shape == (n,)
    assert rel_rms(y1, reference(x1q, wq, x1s, ws)) <= bound(True)


def test_plain_and_preshuffled_agree_bitwise():
    for m, n, k in [(8, 256, 256), (200, 1024, 1152)]:
        xq, wq, xs, ws, bias = make_single(m, n, k, seed=m, bias_dtype=torch.float32)
        for fast in (True, False):
            plain = ops.f8f8bf16_rowwise(xq, wq, xs, ws, bias, fast)
            shuffled = ops.f8f8bf16_rowwise_preshuffled(xq, ops.preshuffle(wq), xs, ws, bias, fast)
            assert torch.equal(plain, shuffled)
            # a uint8 view of the preshuffled weight is accepted as well
            as_u8 = ops.f8f8bf16_rowwise_preshuffled(xq, ops.preshuffle(wq).view(torch.uint8),
                                                     xs, ws, bias, fast)
            assert torch.equal(plain, as_u8)


def test_out_forms_match_functional():
    xq, wq, xs, ws, bias = make_single(48, 512, 256, seed=9, bias_dtype=torch.bfloat16)
    ws_p = ops.preshuffle(wq)
    for fast in (True, False):
        want = ops.f8f8bf16_rowwise(xq, wq, xs, ws, bias, fast)
        out = torch.full((48, 512), float("nan"), dtype=torch.bfloat16, device=DEVICE)
        assert ops.f8f8bf16_rowwise_out(xq, wq, xs, ws, out, bias, fast) is None
        assert torch.equal(out, want)
        out2 = torch.full((48, 512), float("nan"), dtype=torch.bfloat16, device=DEVICE)
        ops.f8f8bf16_rowwise_preshuffled_out(xq, ws_p, xs, ws, out2, bias=bias, use_fast_accum=fast)
        assert torch.equal(out2, want)


@pytest.mark.parametrize("b,m,n,k", [(4, 64, 256, 512), (3, 77, 136, 272), (16, 1, 1280, 1024),
                                     (2, 300, 512, 2048)])
@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("layout", ["plain", "preshuffled"])
def test_batched(b, m, n, k, fast, layout):
    for bias_dtype in (None, torch.float32):
        xq, wq, xs, ws, bias = make_batched(b, m, n, k, seed=b * m, bias_dtype=bias_dtype)
        op = ops.f8f8bf16_rowwise_batched if layout == "plain" \
            else ops.f8f8bf16_rowwise_batched_preshuffled
        w = _weight(wq, layout)
        y = op(xq, w, xs, ws, bias, fast)
        assert y.shape == (b, m, n) and y.dtype == torch.bfloat16
        ref = reference(xq, wq, xs, ws, bias)
        err = rel_rms(y, ref)
        assert err <= bound(fast), f"rel RMS {err:.3e}"
        # output= is written and returned (FBGEMM's convention)
        out = torch.full((b, m, n), float("nan"), dtype=torch.bfloat16, device=DEVICE)
        r = op(xq, w, xs, ws, bias, fast, out)
        assert r.data_ptr() == out.data_ptr()
        assert torch.equal(out, y)
        # each batch equals the single op on that batch
        if bias is None:
            single = ops.f8f8bf16_rowwise(xq[1].contiguous(), wq[1].contiguous(), xs[1].contiguous(),
                                          ws[1].contiguous(), None, fast)
            assert rel_rms(single, ref[1]) <= bound(fast)


def test_empty_m():
    xq, wq, xs, ws, _ = make_single(0, 256, 256, seed=1)
    assert xq.shape == (0, 256)
    assert ops.f8f8bf16_rowwise(xq, wq, xs, ws).shape == (0, 256)
    assert ops.f8f8bf16_rowwise_preshuffled(xq, ops.preshuffle(wq), xs, ws).shape == (0, 256)
    xb, wb, xsb, wsb, _ = make_batched(2, 0, 64, 128)
    assert ops.f8f8bf16_rowwise_batched(xb, wb, xsb, wsb).shape == (2, 0, 64)


def test_runs_on_current_stream():
    if DEVICE != "cuda":
        pytest.skip("needs CUDA streams")
    xq, wq, xs, ws, _ = make_single(512, 2048, 1024, seed=21)
    want = ops.f8f8bf16_rowwise(xq, wq, xs, ws)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            y = ops.f8f8bf16_rowwise(xq, wq, xs, ws)
    s.synchronize()
    assert torch.equal(y, want)


# ----------------------------------------------------------------- preshuffle / quantize


@pytest.mark.parametrize("shape", [(64, 256), (136, 272), (8, 16), (3, 40, 1040)])
def test_preshuffle_round_trip(shape):
    w = (torch.randn(*shape, generator=helpers.gen(2)) * 100).to(torch.float8_e4m3fn).to(DEVICE)
    n, k = shape[-2], shape[-1]
    s = ops.preshuffle(w)
    expect = ((k + 127) // 128, n // 8, 1024)
    assert s.shape == (shape[0], *expect) if len(shape) == 3 else s.shape == expect
    assert s.dtype == w.dtype
    back = ops.unshuffle(s, k)
    assert back.shape == w.shape and back.dtype == w.dtype
    assert torch.equal(back.view(torch.uint8), w.view(torch.uint8))
    # the device layout equals the host one byte for byte
    assert torch.equal(s.cpu().view(torch.uint8), ops.preshuffle(w.cpu()).view(torch.uint8))
    # uint8 works too
    assert torch.equal(ops.preshuffle(w.view(torch.uint8)), s.view(torch.uint8))


def _quantize_reference(a, scale_ub=None):
    """FBGEMM's quantize_fp8_row in fp32: scale = max(amax, eps)/448, q = sat(a / scale)."""
    af = a.float()
    amax = af.abs().amax(dim=-1, keepdim=True)
    if scale_ub is not None:
        amax = amax.clamp(max=scale_ub)
    amax = amax.clamp(min=1e-12)
    inv = 448.0 / amax
    q = (af * inv).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    return q, (amax / 448.0).squeeze(-1)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_quantize_fp8_row(dtype):
    a = (torch.randn(3, 37, 512, generator=helpers.gen(4)) *
         torch.exp2(torch.randint(-8, 8, (3, 37, 1), generator=helpers.gen(5)))).to(dtype)
    a[0, 0] = 0  # an all-zero row: scale eps/448, zeros
    ad = a.to(DEVICE)
    q, s = ops.quantize_fp8_row(ad)
    assert q.shape == a.shape and q.dtype == torch.float8_e4m3fn
    assert s.shape == a.shape[:-1] and s.dtype == torch.float32
    qr, sr = _quantize_reference(a)
    torch.testing.assert_close(s.cpu(), sr, rtol=1e-6, atol=0)
    # x * (448 / amax) may round one code differently from the fp32 reference: count them
    diff = (q.cpu().float() != qr.float()).float().mean().item()
    assert diff < 1e-3, f"{diff:.2%} codes differ from the fp32 reference"
    assert float(q[0, 0].float().abs().max()) == 0.0
    # the GPU and the host implementations agree bit for bit
    qc, sc = ops.quantize_fp8_row(a)
    assert torch.equal(q.cpu().view(torch.uint8), qc.view(torch.uint8)) and torch.equal(s.cpu(), sc)
    # use_triton is accepted and ignored; output= is filled and returned
    out = torch.empty(a.shape, dtype=torch.float8_e4m3fn, device=DEVICE)
    q2, s2 = ops.quantize_fp8_row(ad, None, False, out)
    assert q2.data_ptr() == out.data_ptr()
    assert torch.equal(q2.view(torch.uint8), q.view(torch.uint8)) and torch.equal(s2, s)


def test_quantize_scale_ub():
    a = torch.randn(16, 256, generator=helpers.gen(6)).to(DEVICE, torch.bfloat16)
    a[3, 7] = 1000.0  # an outlier: clamped by scale_ub
    for ub in (torch.tensor([8.0]), torch.tensor([8.0], device=DEVICE)):
        q, s = ops.quantize_fp8_row(a, ub)
        qr, sr = _quantize_reference(a.cpu(), 8.0)
        torch.testing.assert_close(s.cpu(), sr, rtol=1e-6, atol=0)
        assert float(s.max()) <= 8.0 / 448.0 * (1 + 1e-6)
        assert float(q[3, 7].float()) == 448.0  # saturated, not inf/nan
    # f8gemm.quantize_fp8_row is the same op
    assert f8gemm.quantize_fp8_row is ops.quantize_fp8_row


def test_precompile_then_call():
    # Compiles (and on a GPU loads) the plan; the call afterwards must give the right answer.
    f8gemm.precompile([(24, 256, 512)], layout="plain", use_fast_accum=False)
    f8gemm.precompile((2, 24, 256, 512), layout="preshuffled", out_dtype=torch.bfloat16,
                      bias_dtype=torch.float32, device=DEVICE if DEVICE == "cuda" else None)
    xq, wq, xs, ws, _ = make_single(24, 256, 512, seed=31)
    y = ops.f8f8bf16_rowwise(xq, wq, xs, ws, None, False)
    assert rel_rms(y, reference(xq, wq, xs, ws)) <= bound(False)
