"""Shared helpers of the f8gemm PyTorch tests: paths, skip conditions, problem generation, the
fp64 reference and the accuracy bounds."""

import contextlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)
REPO = os.path.dirname(PYDIR)
# F8GEMM_TEST_INSTALLED=1 tests the pip-installed package instead of this checkout's python/.
INSTALLED = os.environ.get("F8GEMM_TEST_INSTALLED") == "1"
for _p in (HERE,) if INSTALLED else (PYDIR, HERE):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import torch  # noqa: E402

try:
    import pytest  # noqa: F401
except ImportError:  # run_all.py without pytest
    from _minipytest import pytest  # noqa: F401

DEVICE = "cuda"

# Relative RMS error bounds against the fp64 reference (README "Accuracy").
BOUND_PRECISE = 1.8e-3
BOUND_FAST = 3.0e-3  # K up to 8192


def skip_reason(min_gpus=1):
    """Why the GPU tests cannot run here, or None."""
    if not torch.cuda.is_available():
        return "CUDA is not available"
    count = torch.cuda.device_count()
    if count < min_gpus:
        return f"needs {min_gpus} GPUs, found {count}"
    for i in range(min_gpus):
        cap = torch.cuda.get_device_capability(i)
        if cap != (9, 0):
            return f"needs sm_90 GPUs (H100/H200); cuda:{i} is sm_{cap[0]}{cap[1]}"
    return None


def require_device(min_gpus=1):
    """Module-level skip unless the GPUs are there."""
    reason = skip_reason(min_gpus)
    if reason:
        pytest.skip(reason, allow_module_level=True)


def gen(seed):
    return torch.Generator(device="cpu").manual_seed(seed)


def quantize(t, device=DEVICE):
    """(fp8, fp32 scale) of t [..., K] with the extension's quantize_fp8_row on `device`."""
    return torch.ops.f8gemm.quantize_fp8_row(t.to(device=device, dtype=torch.bfloat16))


def make_single(m, n, k, seed=0, lead=None, device=DEVICE, bias_dtype=None):
    """Quantised single-GEMM operands: XQ [*lead, K] (lead defaults to (m,)), x_scale lead-shaped,
    WQ [N, K], w_scale [N], bias [N] or None. Row scales vary over a few octaves."""
    g = gen(seed)
    lead = (m,) if lead is None else tuple(lead)
    rows = 1
    for d in lead:
        rows *= d
    x = torch.randn(*lead, k, generator=g) * torch.exp2(torch.randint(-3, 4, (*lead, 1), generator=g))
    w = torch.randn(n, k, generator=g) * torch.exp2(torch.randint(-3, 4, (n, 1), generator=g)) * 0.05
    xq, xs = quantize(x, device)
    wq, ws = quantize(w, device)
    bias = None
    if bias_dtype is not None:
        bias = (torch.randn(n, generator=g) * 4.0).to(device=device, dtype=bias_dtype)
    return xq, wq, xs, ws, bias


def make_batched(b, m, n, k, seed=0, device=DEVICE, bias_dtype=None):
    """Quantised batched operands: XQ [B,M,K], WQ [B,N,K], x_scale [B,M], w_scale [B,N], bias
    [B,N] or None."""
    g = gen(seed)
    x = torch.randn(b, m, k, generator=g)
    w = torch.randn(b, n, k, generator=g) * 0.05
    xq, xs = quantize(x, device)
    wq, ws = quantize(w, device)
    bias = None
    if bias_dtype is not None:
        bias = (torch.randn(b, n, generator=g) * 4.0).to(device=device, dtype=bias_dtype)
    return xq, wq, xs, ws, bias


def reference(xq, wq, xs, ws, bias=None):
    """fp64 Y = (xs * XQ) @ (ws * WQ)^T (+ bias) on the inputs' device, from the fp8 values.
    Single: XQ [..., K], WQ [N, K], bias [N]. Batched: XQ [B,M,K], WQ [B,N,K], bias [B,N]."""
    x = xq.float().double() * xs.double().reshape(*xq.shape[:-1], 1)
    w = wq.float().double() * ws.double().unsqueeze(-1)
    y = x @ w.transpose(-1, -2)
    if bias is not None:
        y = y + (bias.double() if wq.dim() == 2 else bias.double().unsqueeze(-2))
    return y


def rel_rms(y, ref):
    """||y - ref|| / ||ref|| in fp64."""
    ref = ref.double()
    return ((y.double() - ref).norm() / ref.norm().clamp_min(1e-300)).item()


def bound(fast):
    return BOUND_FAST if fast else BOUND_PRECISE


def scaled_mm(xq, wq, xs, ws, fast, bias=None):
    """torch._scaled_mm rowwise on the same inputs (2-D XQ [M,K], WQ [N,K]), or None where it
    does not support the case."""
    try:
        return torch._scaled_mm(xq, wq.t(), scale_a=xs.reshape(-1, 1).contiguous(),
                                scale_b=ws.reshape(1, -1).contiguous(), bias=bias,
                                out_dtype=torch.bfloat16, use_fast_accum=fast)
    except (RuntimeError, NotImplementedError, TypeError, ValueError):
        return None


def make_linear(k, n, bias=True, dtype=torch.bfloat16, seed=0, device=DEVICE):
    """A seeded nn.Linear(k, n): weights ~ N(0, 1/k), bias ~ N(0, 0.01), on `device` in `dtype`."""
    g = gen(seed)
    lin = torch.nn.Linear(k, n, bias=bias)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(n, k, generator=g) / k ** 0.5)
        if bias:
            lin.bias.copy_(torch.randn(n, generator=g) * 0.1)
    return lin.to(device, dtype)


class LlamaMLP(torch.nn.Module):
    """down(SiLU(gate(x)) * up(x)) with seeded make_linear projections: the bf16 block that
    FP8GatedMLP stands for (act_fn as Llama's, which fuse_gate_up checks)."""

    def __init__(self, hidden, inter, bias=False, seed=0):
        super().__init__()
        self.gate_proj = make_linear(hidden, inter, bias=bias, seed=seed)
        self.up_proj = make_linear(hidden, inter, bias=bias, seed=seed + 1)
        self.down_proj = make_linear(inter, hidden, bias=bias, seed=seed + 2)
        self.act_fn = torch.nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


@contextlib.contextmanager
def pdl_switch(value):
    """F8GEMM_PDL set to `value` ("0" or "1"; None: unset) while the block runs, then restored.
    The library reads the switch at each launch, for the ops given pdl=None."""
    old = os.environ.get("F8GEMM_PDL")
    if value is None:
        os.environ.pop("F8GEMM_PDL", None)
    else:
        os.environ["F8GEMM_PDL"] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("F8GEMM_PDL", None)
        else:
            os.environ["F8GEMM_PDL"] = old


def warm_up(fn):
    """Runs fn once on a side stream, so that its kernels are compiled and loaded before a CUDA
    graph capture (as torch recommends)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()


def same_bits(a, b):
    """a and b hold the same bytes (shape and dtype too), whatever the dtype (fp8 included)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    a, b = a.detach().cpu().contiguous(), b.detach().cpu().contiguous()
    return torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8))


@contextlib.contextmanager
def fp8_comparable():
    """opcheck's schema test detects mutation with torch.allclose, which has no float8 kernels:
    compare float8 tensors bit for bit instead (what "not mutated" means)."""
    original = torch.allclose
    fp8 = (torch.float8_e4m3fn, torch.float8_e5m2)

    def allclose(a, b, *args, **kwargs):
        if a.dtype in fp8 or b.dtype in fp8:
            return a.dtype == b.dtype and a.shape == b.shape and \
                torch.equal(a.view(torch.uint8), b.view(torch.uint8))
        return original(a, b, *args, **kwargs)

    torch.allclose = allclose
    try:
        yield
    finally:
        torch.allclose = original
