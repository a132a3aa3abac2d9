"""The GEMM Meta kernels refuse what the CPU/CUDA kernels refuse, at trace time: every call below
raises the same ValueError, message included, on meta tensors, under FakeTensorMode (as
torch.compile traces) and on CPU tensors (which reach the library's validation, shapes first,
and only then its "must be in GPU memory"); on CUDA tensors too where an sm_90 GPU is there.
One rule serves all of them: the library's check_gemm_shapes / check_grouped_shapes, which the
call runs first. With symbolic sizes (dynamic shapes), a rule is checked where its sizes are
concrete and skipped where they are not, and no guard is added."""

import re

from helpers import pytest, skip_reason

import torch  # noqa: E402

import f8gemm  # noqa: E402,F401  (loads the extension)

OPS = torch.ops.f8gemm
E4M3 = torch.float8_e4m3fn
F32 = torch.float32
BF16 = torch.bfloat16


class T:
    """A tensor argument, made on the device of each run (zeros: no value is read)."""

    def __init__(self, *shape, dtype=E4M3):
        self.shape, self.dtype = shape, dtype

    def make(self, device):
        return torch.zeros(self.shape, dtype=self.dtype, device=device)


def _args(args, device):
    return [a.make(device) if isinstance(a, T) else a for a in args]


def _raised(op, args, kwargs, device, mode=None):
    """The exception of OPS.<op>(*args, **kwargs) on `device` (None when it returns); with a
    FakeTensorMode, on fakes of the `device` tensors."""
    args = _args(args, device)
    kwargs = dict(zip(kwargs, _args(kwargs.values(), device)))
    try:
        if mode is None:
            getattr(OPS, op)(*args, **kwargs)
        else:
            fake = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
            fake_kwargs = {k: mode.from_tensor(v) if isinstance(v, torch.Tensor) else v
                           for k, v in kwargs.items()}
            with mode:
                getattr(OPS, op)(*fake, **fake_kwargs)
    except Exception as e:  # noqa: BLE001  (the class is what is compared)
        return e
    return None


# A valid single GEMM: XQ [2, 8, 256], WQ [64, 256] (preshuffled [2, 8, 1024]), x_scale [2, 8],
# w_scale [64], bias [64]; each case changes one thing.
X, W, WP, XS, WS = T(2, 8, 256), T(64, 256), T(2, 8, 1024), T(2, 8, dtype=F32), T(64, dtype=F32)
OUT = T(2, 8, 64, dtype=BF16)
# Batched: XQ [3, 8, 256], WQ [3, 64, 256] (preshuffled [3, 2, 8, 1024]).
XB, WB, WBP = T(3, 8, 256), T(3, 64, 256), T(3, 2, 8, 1024)
XSB, WSB, OUTB = T(3, 8, dtype=F32), T(3, 64, dtype=F32), T(3, 8, 64, dtype=BF16)
# Grouped, stacked: XQ [40, 256], WQ [4, 64, 256], M_sizes [4]; padded (dynamic): XQ [4, 8, 256].
XG, WG, WGP, XSG, WSG = T(40, 256), T(4, 64, 256), T(4, 2, 8, 1024), T(40, dtype=F32), \
    T(4, 64, dtype=F32)
SIZES, OUTG = T(4, dtype=torch.int32), T(40, 64, dtype=BF16)
XD, XSD = T(4, 8, 256), T(4, 8, dtype=F32)

# (id, op, args, kwargs, the message's rule): each must be refused alike everywhere.
REFUSED = [
    ("K%16", "f8f8bf16_rowwise", (T(16, 200), T(64, 200), T(16, dtype=F32), WS), {},
     r"K \(XQ's last dimension\) must be a positive multiple of 16 .*got 200"),
    ("K=0", "f8f8bf16_rowwise", (T(16, 0), T(64, 0), T(16, dtype=F32), WS), {},
     r"K \(XQ's last dimension\) must be a positive multiple of 16 .*got 0"),
    ("N%8", "f8f8bf16_rowwise", (X, T(60, 256), XS, T(60, dtype=F32)), {},
     r"N \(WQ's rows\) must be a positive multiple of 8, got 60"),
    ("W's K", "f8f8bf16_rowwise", (X, T(64, 128), XS, WS), {},
     r"WQ must have shape \[64, 256\] \(\[N, K\] matching XQ's K\)"),
    ("x_scale", "f8f8bf16_rowwise", (X, W, T(2, 7, dtype=F32), WS), {},
     r"x_scale must have XQ's leading shape .*accepted: x_scale"),
    ("x_scale flat", "f8f8bf16_rowwise", (X, W, T(15, dtype=F32), WS), {},
     r"x_scale must have XQ's leading shape \(M = 16 values\), got \[15\]"),
    ("w_scale", "f8f8bf16_rowwise", (X, W, XS, T(63, dtype=F32)), {},
     r"w_scale must have shape \[64\] \(\[N\]\), got \[63\]"),
    ("w_scale [2, N]", "f8f8bf16_rowwise", (X, W, XS, T(2, 64, dtype=F32)), {},
     r"w_scale must have shape \[64\]"),
    ("bias shape", "f8f8bf16_rowwise", (X, W, XS, WS, T(32, dtype=F32)), {},
     r"bias must have shape \[64\] \(\[N\]\), got \[32\]"),
    ("bias dtype", "f8f8bf16_rowwise", (X, W, XS, WS, T(64, dtype=torch.float16)), {},
     r"bias must have dtype float32 or bfloat16, got float16"),
    ("XQ dtype", "f8f8bf16_rowwise", (T(2, 8, 256, dtype=BF16), W, XS, WS), {},
     r"XQ must have dtype float8_e4m3fn, got bfloat16"),
    ("XQ float64", "f8f8bf16_rowwise", (T(2, 8, 256, dtype=torch.float64), W, XS, WS), {},
     r"XQ must have dtype torch.float8_e4m3fn, got torch.float64"),
    ("x_scale dtype", "f8f8bf16_rowwise", (X, W, T(2, 8, dtype=BF16), WS), {},
     r"x_scale must have dtype float32, got bfloat16"),
    ("XQ rank 5", "f8f8bf16_rowwise", (T(1, 1, 2, 8, 256), W, XS, WS), {},
     r"XQ has 5 dimensions"),
    ("f16 K%16", "f8f8f16_rowwise", (T(16, 200), T(64, 200), T(16, dtype=F32), WS), {},
     r"K \(XQ's last dimension\) must be a positive multiple of 16"),
    ("out shape", "f8f8bf16_rowwise_out", (X, W, XS, WS, T(2, 8, 32, dtype=BF16)), {},
     r"output must have shape XQ.shape\[:-1\] \+ \[N\] \(N = 64\), got \[2, 8, 32\]"),
    ("out rank", "f8f8bf16_rowwise_out", (X, W, XS, WS, T(16, 64, 1, dtype=BF16)), {},
     r"output must have shape XQ.shape\[:-1\] \+ \[N\]"),
    ("out dtype", "f8f8bf16_rowwise_out", (X, W, XS, WS, T(2, 8, 64, dtype=torch.float16)), {},
     r"output must have dtype torch.bfloat16, got torch.float16"),
    ("out bias", "f8f8bf16_rowwise_out", (X, W, XS, WS, OUT, T(2, 64, dtype=BF16)), {},
     r"bias must have shape \[64\]"),
    ("padded W", "f8f8bf16_rowwise_preshuffled", (X, T(3, 8, 1024), XS, WS), {},
     r"WQ must have shape \[2, 8, 1024\] \(preshuffled \[ceil\(K/128\), N/8, 1024\]"),
    ("slab bytes", "f8f8bf16_rowwise_preshuffled", (X, T(2, 8, 512), XS, WS), {},
     r"WQ must have shape \[2, 8, 1024\]"),
    ("plain as preshuffled", "f8f8bf16_rowwise_preshuffled", (X, W, XS, WS), {},
     r"WQ must be 3-D preshuffled .*preshuffle\(WQ\)"),
    ("preshuffled as plain", "f8f8bf16_rowwise", (X, WP, XS, WS), {},
     r"WQ must be 2-D \[N, K\] \(a plain weight\).*_preshuffled op"),
    ("preshuffled w_scale", "f8f8bf16_rowwise_preshuffled", (X, WP, XS, T(72, dtype=F32)), {},
     r"w_scale must have shape \[64\]"),
    ("preshuffled f16", "f8f8f16_rowwise_preshuffled", (X, T(3, 8, 1024), XS, WS), {},
     r"WQ must have shape \[2, 8, 1024\]"),
    ("preshuffled out", "f8f8bf16_rowwise_preshuffled_out",
     (X, WP, XS, WS, T(2, 8, 72, dtype=BF16)), {}, r"output must have shape"),
    ("ROCm name", "f8f8bf16_rowwise_preshuffle", (X, T(3, 8, 1024), XS, WS), {},
     r"WQ must have shape \[2, 8, 1024\]"),
    ("batched W", "f8f8bf16_rowwise_batched", (XB, T(2, 64, 256), XSB, WSB), {},
     r"WQ must have shape \[3, 64, 256\] \(\[B, N, K\] matching XQ \[B, M, K\]\)"),
    ("batched K%16", "f8f8bf16_rowwise_batched", (T(3, 8, 40), T(3, 64, 40), XSB, WSB), {},
     r"K \(XQ's last dimension\) must be a positive multiple of 16 .*got 40"),
    ("batched x_scale", "f8f8bf16_rowwise_batched", (XB, WB, T(3, 7, dtype=F32), WSB), {},
     r"x_scale must have shape \[3, 8\] \(\[B, M\]\)"),
    ("batched w_scale", "f8f8bf16_rowwise_batched", (XB, WB, XSB, T(64, dtype=F32)), {},
     r"w_scale must have shape \[3, 64\] \(\[B, N\]\)"),
    ("batched bias", "f8f8bf16_rowwise_batched", (XB, WB, XSB, WSB, T(64, dtype=F32)), {},
     r"bias must have shape \[3, 64\] \(\[B, N\]\)"),
    ("batched output=", "f8f8bf16_rowwise_batched", (XB, WB, XSB, WSB),
     {"output": T(3, 8, 32, dtype=BF16)}, r"output must have shape \[3, 8, 64\]"),
    ("batched preshuffled", "f8f8bf16_rowwise_batched_preshuffled",
     (XB, T(3, 1, 8, 1024), XSB, WSB), {}, r"WQ must have shape \[3, 2, 8, 1024\]"),
    ("silu_mul N%16", "f8f8bf16_rowwise_silu_mul", (X, T(24, 256), XS, T(24, dtype=F32)), {},
     r"with the SiLU·mul epilogue, N \(WQ's rows: gate then up, 2I\) must be a multiple of "
     r"16, got 24"),
    ("preshuffled silu_mul", "f8f8bf16_rowwise_preshuffled_silu_mul",
     (X, T(2, 3, 1024), XS, T(24, dtype=F32)), {},
     r"with the SiLU·mul epilogue, N \(WQ's rows: gate then up, 2I\) must be a multiple of 16"),
    ("grouped K%16", "f8f8bf16_rowwise_grouped_stacked",
     (T(40, 200), T(4, 64, 200), XSG, WSG, SIZES), {},
     r"K \(XQ's last dimension\) must be a positive multiple of 16"),
    ("grouped N%8", "f8f8bf16_rowwise_grouped_stacked",
     (XG, T(4, 60, 256), XSG, T(4, 60, dtype=F32), SIZES), {},
     r"N \(WQ's rows\) must be a positive multiple of 8, got 60"),
    ("grouped M_sizes", "f8f8bf16_rowwise_grouped_stacked",
     (XG, WG, XSG, WSG, T(3, dtype=torch.int32)), {}, r"M_sizes has 3 groups but WQ has 4"),
    ("grouped M_sizes dtype", "f8f8bf16_rowwise_grouped_stacked",
     (XG, WG, XSG, WSG, T(4, dtype=F32)), {},
     r"M_sizes must have dtype int32 or int64, got float32"),
    ("grouped x_scale", "f8f8bf16_rowwise_grouped_stacked",
     (XG, WG, T(39, dtype=F32), WSG, SIZES), {}, r"x_scale must have shape \[40\]"),
    ("grouped w_scale", "f8f8bf16_rowwise_grouped_stacked",
     (XG, WG, XSG, T(4, 56, dtype=F32), SIZES), {}, r"w_scale must have shape \[4, 64\]"),
    ("grouped padded W", "f8f8bf16_rowwise_grouped_stacked_preshuffled",
     (XG, T(4, 3, 8, 1024), XSG, WSG, SIZES), {}, r"WQ must have shape \[4, 2, 8, 1024\]"),
    ("grouped out", "f8f8bf16_rowwise_grouped_stacked_out",
     (XG, WG, XSG, WSG, SIZES, T(40, 72, dtype=BF16)), {}, r"output must have shape \[40, 64\]"),
    ("grouped out bias", "f8f8bf16_rowwise_grouped_stacked_preshuffled_out",
     (XG, WGP, XSG, WSG, SIZES, OUTG, T(64, dtype=F32)), {}, r"bias must have shape \[4, 64\]"),
    ("dynamic groups", "f8f8bf16_rowwise_grouped_dynamic",
     (T(2, 8, 256), WG, T(2, 8, dtype=F32), WSG, SIZES), {}, r"XQ has 2 groups but WQ has 4"),
    ("dynamic x_scale", "f8f8bf16_rowwise_grouped_dynamic_preshuffled",
     (XD, WGP, T(4, 7, dtype=F32), WSG, SIZES), {}, r"x_scale must have shape \[4, 8\]"),
    # 0-dim tensors: a present optional one (bias) is a bias, on meta as on the CPU.
    ("bias 0-dim", "f8f8bf16_rowwise", (X, W, XS, WS, T(dtype=F32)), {},
     r"bias must have shape \[64\] \(\[N\]\), got \[\]"),
    ("preshuffled bias 0-dim", "f8f8bf16_rowwise_preshuffled", (X, WP, XS, WS, T(dtype=BF16)),
     {}, r"bias must have shape \[64\] \(\[N\]\), got \[\]"),
    ("out bias 0-dim", "f8f8bf16_rowwise_out", (X, W, XS, WS, OUT, T(dtype=F32)), {},
     r"bias must have shape \[64\] \(\[N\]\), got \[\]"),
    ("batched bias 0-dim", "f8f8bf16_rowwise_batched", (XB, WB, XSB, WSB, T(dtype=F32)), {},
     r"bias must have shape \[3, 64\] \(\[B, N\]\), got \[\]"),
    ("grouped out bias 0-dim", "f8f8bf16_rowwise_grouped_stacked_out",
     (XG, WG, XSG, WSG, SIZES, OUTG, T(dtype=F32)), {},
     r"bias must have shape \[4, 64\] \(\[G, N\]\), got \[\]"),
    ("grouped preshuffled out bias 0-dim", "f8f8bf16_rowwise_grouped_stacked_preshuffled_out",
     (XG, WGP, XSG, WSG, SIZES, OUTG, T(dtype=BF16)), {}, r"bias must have shape \[4, 64\]"),
    ("output 0-dim", "f8f8bf16_rowwise_out", (X, W, XS, WS, T(dtype=BF16)), {},
     r"output must have shape XQ.shape\[:-1\] \+ \[N\] \(N = 64\), got \[\]"),
    ("w_scale 0-dim", "f8f8bf16_rowwise", (X, W, XS, T(dtype=F32)), {},
     r"w_scale must have shape \[64\] \(\[N\]\), got \[\]"),
    ("XQ 0-dim", "f8f8bf16_rowwise", (T(), W, XS, WS), {},
     r"XQ must be \[\.\.\., K\] with at least 1 dimension"),
    ("M_sizes 0-dim", "f8f8bf16_rowwise_grouped_stacked", (XG, WG, XSG, WSG,
                                                           T(dtype=torch.int32)), {},
     r"M_sizes must be 1-D \[G\]"),
]

# (id, op, args, kwargs, the output's shape, dtype; None for the _out ops).
ACCEPTED = [
    ("single", "f8f8bf16_rowwise", (X, W, XS, WS, T(64, dtype=F32)), {}, (2, 8, 64), BF16),
    ("x_scale [M, 1], w_scale [N, 1]", "f8f8bf16_rowwise",
     (X, W, T(16, 1, dtype=F32), T(64, 1, dtype=F32)), {}, (2, 8, 64), BF16),
    ("w_scale [1, N]", "f8f8f16_rowwise", (X, W, XS, T(1, 64, dtype=F32)), {}, (2, 8, 64),
     torch.float16),
    ("out as [M, N]", "f8f8bf16_rowwise_out", (X, W, XS, WS, T(16, 64, dtype=BF16)), {},
     None, None),
    ("preshuffled", "f8f8bf16_rowwise_preshuffled", (X, WP, XS, WS), {"prefetch_w": True},
     (2, 8, 64), BF16),
    ("batched", "f8f8bf16_rowwise_batched", (XB, WB, XSB, WSB, T(3, 64, dtype=BF16)), {},
     (3, 8, 64), BF16),
    ("batched preshuffled", "f8f8bf16_rowwise_batched_preshuffled", (XB, WBP, XSB, WSB), {},
     (3, 8, 64), BF16),
    ("silu_mul", "f8f8bf16_rowwise_silu_mul", (X, W, XS, WS), {}, (2, 8, 32), BF16),
    ("grouped", "f8f8bf16_rowwise_grouped_stacked", (XG, WG, T(40, 1, dtype=F32), WSG, SIZES),
     {}, (40, 64), BF16),
    ("grouped out", "f8f8bf16_rowwise_grouped_stacked_preshuffled_out",
     (XG, WGP, XSG, WSG, SIZES, OUTG, T(4, 64, dtype=BF16), False), {}, None, None),
    ("dynamic", "f8f8bf16_rowwise_grouped_dynamic", (XD, WG, XSD, WSG, SIZES), {},
     (4, 8, 64), BF16),
]


def _real_devices():
    """CPU always (the library refuses CPU data only after every shape rule); CUDA on sm_90."""
    return ["cpu"] + (["cuda"] if skip_reason() is None else [])


@pytest.mark.parametrize("case", REFUSED, ids=[c[0] for c in REFUSED])
def test_meta_refuses_what_the_real_kernels_refuse(case):
    from torch._subclasses.fake_tensor import FakeTensorMode

    _, op, args, kwargs, rule = case
    meta = _raised(op, args, kwargs, "meta")
    assert isinstance(meta, ValueError), meta
    assert re.search(rule, str(meta)), str(meta)
    fake = _raised(op, args, kwargs, "cpu", FakeTensorMode())
    assert type(fake) is ValueError and str(fake) == str(meta), (fake, meta)
    for device in _real_devices():
        real = _raised(op, args, kwargs, device)
        assert type(real) is ValueError and str(real) == str(meta), (device, real, meta)


@pytest.mark.parametrize("case", ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_meta_accepts_what_the_real_kernels_accept(case):
    _, op, args, kwargs, shape, dtype = case
    y = getattr(OPS, op)(*_args(args, "meta"), **kwargs)  # no T in the accepted kwargs
    if shape is not None:
        assert tuple(y.shape) == shape and y.dtype == dtype and y.device.type == "meta"
    # On the CPU every shape rule passes and the library stops at the data's place.
    with pytest.raises(ValueError, match="XQ must be in GPU memory"):
        getattr(OPS, op)(*_args(args, "cpu"), **kwargs)


class H(T):
    """A tensor argument of any size over one element (stride 0): its shape costs no memory."""

    def make(self, device):
        ones = (1,) * len(self.shape)
        return torch.zeros(ones, dtype=self.dtype, device=device).expand(self.shape)


# A K that WQ does not match, with M and N whose output would be 2^53 bytes or more: the shape
# rules refuse it before the CPU/CUDA kernel allocates anything, as the Meta kernel does.
BIG_M, BIG_N = 1 << 30, 1 << 22
HUGE_OUTPUT = [
    ("single", "f8f8bf16_rowwise",
     (H(BIG_M, 16), H(BIG_N, 32), H(BIG_M, dtype=F32), H(BIG_N, dtype=F32)),
     r"WQ must have shape \[4194304, 16\] \(\[N, K\] matching XQ's K\)"),
    ("f16", "f8f8f16_rowwise",
     (H(BIG_M, 16), H(BIG_N, 32), H(BIG_M, dtype=F32), H(BIG_N, dtype=F32)),
     r"WQ must have shape \[4194304, 16\]"),
    ("silu_mul", "f8f8bf16_rowwise_silu_mul",
     (H(BIG_M, 16), H(BIG_N, 32), H(BIG_M, dtype=F32), H(BIG_N, dtype=F32)),
     r"WQ must have shape \[4194304, 16\]"),
    ("preshuffled", "f8f8bf16_rowwise_preshuffled",
     (H(BIG_M, 16), H(2, BIG_N // 8, 1024), H(BIG_M, dtype=F32), H(BIG_N, dtype=F32)),
     r"WQ must have shape \[1, 524288, 1024\]"),
    ("batched", "f8f8bf16_rowwise_batched",
     (H(2, BIG_M // 2, 16), H(2, BIG_N, 32), H(2, BIG_M // 2, dtype=F32),
      H(2, BIG_N, dtype=F32)), r"WQ must have shape \[2, 4194304, 16\]"),
    ("grouped", "f8f8bf16_rowwise_grouped_stacked",
     (H(BIG_M, 16), H(4, BIG_N, 32), H(BIG_M, dtype=F32), H(4, BIG_N, dtype=F32), SIZES),
     r"WQ must have shape \[4, 4194304, 16\]"),
    ("dynamic", "f8f8bf16_rowwise_grouped_dynamic",
     (H(4, BIG_M // 4, 16), H(4, BIG_N, 32), H(4, BIG_M // 4, dtype=F32),
      H(4, BIG_N, dtype=F32), SIZES), r"WQ must have shape \[4, 4194304, 16\]"),
]


@pytest.mark.parametrize("case", HUGE_OUTPUT, ids=[c[0] for c in HUGE_OUTPUT])
def test_real_kernels_check_shapes_before_allocating_the_output(case):
    """The CPU/CUDA kernels run the Meta kernel's shape check before they allocate: a bad WQ
    whose N makes a petabyte output raises the shape error, not the allocator's."""
    _, op, args, rule = case
    meta = _raised(op, args, {}, "meta")
    assert isinstance(meta, ValueError) and re.search(rule, str(meta)), meta
    for device in _real_devices():
        real = _raised(op, args, {}, device)
        assert type(real) is ValueError and str(real) == str(meta), (device, real, meta)


def test_zero_dim_scale_ub_is_one_value_everywhere():
    """quantize_fp8_row's optional scale_ub: a 0-dim one is its one value on meta and the CPU;
    a 0-dim output is refused alike."""
    for device in ("meta", "cpu"):
        q, s = OPS.quantize_fp8_row(torch.ones(4, 64, device=device),
                                    torch.tensor(2.0, device=device))
        assert q.shape == (4, 64) and s.shape == (4,)
    messages = {str(_raised("quantize_fp8_row", (T(4, 64, dtype=F32), None, True, T()), {}, d))
                for d in ("meta", "cpu")}
    assert len(messages) == 1 and "output must have a's shape" in messages.pop(), messages


def _symbolic(mode, t, dynamic):
    """A fake of t whose dimensions in `dynamic` are symbols (torch.compile's dynamic shapes)."""
    from torch.fx.experimental.symbolic_shapes import DimDynamic, StatelessSymbolicContext

    sizes = [DimDynamic.DYNAMIC if i in dynamic else DimDynamic.STATIC for i in range(t.dim())]
    return mode.from_tensor(t, symbolic_context=StatelessSymbolicContext(dynamic_sizes=sizes))


def test_symbolic_sizes_check_the_concrete_rules_and_add_no_guard():
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    mode = FakeTensorMode(shape_env=ShapeEnv())

    def call(k, n, ws_n, xs_rows=16, out=None):
        xq = _symbolic(mode, torch.zeros(16, k, dtype=E4M3), {0})
        xs = _symbolic(mode, torch.zeros(xs_rows, dtype=F32), {0})
        wq = _symbolic(mode, torch.zeros(n, k, dtype=E4M3), set())  # a weight's static sizes
        ws = _symbolic(mode, torch.zeros(ws_n, dtype=F32), set())
        with mode:
            if out is None:
                return OPS.f8f8bf16_rowwise(xq, wq, xs, ws)
            OPS.f8f8bf16_rowwise_out(xq, wq, xs, ws, _symbolic(mode, out, {0}))

    y = call(256, 64, 64)
    assert isinstance(y.shape[0], torch.SymInt) and y.shape[1] == 64
    # M is a symbol: K, N, WQ's K and w_scale are still checked ...
    with pytest.raises(ValueError, match=r"K \(XQ's last dimension\) must be a positive "
                                         r"multiple of 16 .*got 200"):
        call(200, 64, 64)
    with pytest.raises(ValueError, match=r"N \(WQ's rows\) must be a positive multiple of 8"):
        call(256, 60, 60)
    with pytest.raises(ValueError, match=r"w_scale must have shape \[64\]"):
        call(256, 64, 63)
    with pytest.raises(ValueError, match=r"output must have shape XQ.shape\[:-1\] \+ \[N\]"):
        call(256, 64, 64, out=torch.zeros(16, 32, dtype=BF16))
    # ... while x_scale's M against XQ's is skipped (two symbols), and no guard was added: the
    # graph stays valid for every M.
    call(256, 64, 64, xs_rows=24)
    assert not mode.shape_env.guards, mode.shape_env.guards


def test_inductor_lays_out_a_transposed_input_of_a_tagged_op():
    """The ops tagged needs_contiguous_strides (schemas.cpp) let Inductor copy a transposed,
    sliced or expanded input to row-major before the call, so their Meta kernels must not refuse
    such an input at trace time: a Meta rule "must be contiguous" (tried in session 33, then
    reverted) broke this compile, which ran before it and runs again now."""
    w = torch.randn(256, 64).to(E4M3)
    torch._dynamo.reset()
    got = torch.compile(lambda t: OPS.preshuffle(t.t()), backend="inductor", fullgraph=True)(w)
    want = OPS.preshuffle(w.t().contiguous())
    assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))


def test_weight_layouts_near_int64_refuse_alike_on_meta_and_on_the_cpu():
    """A weight whose preshuffled output or N would pass 2^63 (a 0 dimension keeps the input
    itself empty): the Meta kernel failed in torch's stride arithmetic (RuntimeError) or wrapped
    N into a small shape, where the real kernel refused it (session 46's probe)."""
    def strided(shape, device):
        return torch.empty_strided(shape, (1,) * len(shape), dtype=torch.float8_e4m3fn,
                                   device=device)
    cases = [
        (torch.ops.f8gemm.preshuffle, ((0, 8, (1 << 63) - 16),), (),
         r"the output would have more than 2\^63 elements: shape \[0, 72057594037927936, 1, 1024\]"),
        (torch.ops.f8gemm.unshuffle, ((0, 1, (1 << 61) + 1, 1024),), (16,),
         r"N/8 dimension is 2305843009213693953: N = 8 x that is past 2\^63"),
    ]
    for op, (shape,), rest, rule in cases:
        messages = []
        for device in ("meta", "cpu"):
            with pytest.raises(ValueError, match=rule) as e:
                op(strided(shape, device), *rest)
            messages.append(str(e.value))
        assert messages[0] == messages[1], messages
