"""Plugging into what other libraries call and save: keepdim scale shapes give bit-identical
outputs to flat ones, FBGEMM's ROCm alias, FP8Linear checkpoints (own and plain
FBGEMM/torchao/compressed-tensors form) and torch.export. The CPU parts run everywhere; the
GPU parts skip without an sm_90 GPU."""

import io

import helpers
from helpers import make_batched, make_single, pytest, same_bits

import torch  # noqa: E402

import f8gemm  # noqa: E402
from f8gemm.nn import FP8Linear  # noqa: E402

OPS = torch.ops.f8gemm
E4M3 = torch.float8_e4m3fn


def _gpu():
    reason = helpers.skip_reason()
    if reason:
        pytest.skip(reason)
    return helpers.DEVICE


# ------------------------------------------------------------------------ scale shapes (GPU)

@pytest.mark.parametrize("layout", ["plain", "preshuffled"])
@pytest.mark.parametrize("fp16", [False, True])
def test_keepdim_scales_are_bit_identical(layout, fp16):
    dev = _gpu()
    xq, wq, xs, ws, bias = make_single(77, 136, 272, seed=5, device=dev,
                                       bias_dtype=torch.float32)
    if layout == "plain":
        op = OPS.f8f8f16_rowwise if fp16 else OPS.f8f8bf16_rowwise
        w = wq
    else:
        op = OPS.f8f8f16_rowwise_preshuffled if fp16 else OPS.f8f8bf16_rowwise_preshuffled
        w = OPS.preshuffle(wq)
    flat = op(xq, w, xs, ws, bias, False)
    for x_scale in (xs.unsqueeze(-1),):
        for w_scale in (ws, ws.unsqueeze(-1), ws.unsqueeze(0)):
            assert same_bits(op(xq, w, x_scale, w_scale, bias, False), flat)
    assert same_bits(op(xq, w, xs, ws.unsqueeze(0), bias, False), flat)


def test_keepdim_scales_with_leading_dimensions():
    dev = _gpu()
    xq, wq, xs, ws, _ = make_single(12, 64, 128, lead=(3, 4), seed=2, device=dev)
    flat = OPS.f8f8bf16_rowwise(xq, wq, xs, ws)
    for x_scale in (xs.reshape(12), xs.reshape(12, 1), xs.unsqueeze(-1)):
        assert same_bits(OPS.f8f8bf16_rowwise(xq, wq, x_scale, ws.unsqueeze(-1)), flat)


@pytest.mark.parametrize("preshuffled", [False, True])
def test_batched_keepdim_scales_are_bit_identical(preshuffled):
    dev = _gpu()
    xq, wq, xs, ws, _ = make_batched(3, 40, 128, 256, seed=9, device=dev)
    op = OPS.f8f8bf16_rowwise_batched_preshuffled if preshuffled else OPS.f8f8bf16_rowwise_batched
    w = OPS.preshuffle(wq) if preshuffled else wq
    flat = op(xq, w, xs, ws)
    for w_scale in (ws, ws.unsqueeze(-1), ws.unsqueeze(1)):
        assert same_bits(op(xq, w, xs.unsqueeze(-1), w_scale), flat)


def test_rocm_alias_is_our_preshuffled_op():
    dev = _gpu()
    xq, wq, xs, ws, _ = make_single(33, 64, 256, seed=4, device=dev)
    wp = OPS.preshuffle(wq)
    assert same_bits(OPS.f8f8bf16_rowwise_preshuffle(xq, wp, xs, ws),
                      OPS.f8f8bf16_rowwise_preshuffled(xq, wp, xs, ws))
    assert same_bits(OPS.f8f8f16_rowwise_preshuffle(xq, wp, xs, ws),
                      OPS.f8f8f16_rowwise_preshuffled(xq, wp, xs, ws))


# ------------------------------------------------------------------------------ checkpoints

def _linear(k=256, n=128, bias=True, seed=0, device="cpu"):
    g = helpers.gen(seed)
    lin = torch.nn.Linear(k, n, bias=bias)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(n, k, generator=g) * 0.05)
        if bias:
            lin.bias.copy_(torch.randn(n, generator=g))
    return lin.to(device)


def _round_trip(state):
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return torch.load(buf)


def test_state_dict_records_the_layout_version():
    mod = FP8Linear.from_linear(_linear())
    state = mod.state_dict()
    version = state["weight_layout_version"]
    assert version.dtype == torch.int32 and int(version) == f8gemm.PRESHUFFLE_LAYOUT_VERSION
    assert set(state) == {"weight", "weight_scale", "bias", "weight_layout_version"}


def test_save_load_round_trip_cpu():
    mod = FP8Linear.from_linear(_linear(seed=1))
    fresh = FP8Linear(256, 128)
    fresh.load_state_dict(_round_trip(mod.state_dict()))  # strict: no missing or extra key
    for name in ("weight", "weight_scale", "bias"):
        a, b = getattr(mod, name), getattr(fresh, name)
        assert torch.equal(a.view(torch.uint8), b.view(torch.uint8)), name


def test_nested_module_round_trip():
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32))
    f8gemm.nn.swap_linears(model)
    state = model.state_dict()
    assert "0.weight_layout_version" in state and "2.weight_layout_version" in state
    fresh = f8gemm.nn.swap_linears(
        torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32)))
    fresh.load_state_dict(state)
    assert torch.equal(fresh[2].weight.view(torch.uint8), model[2].weight.view(torch.uint8))


@pytest.mark.parametrize("scale_shape", ["flat", "column"])
@pytest.mark.parametrize("with_version", [False, True])
def test_load_plain_checkpoint(scale_shape, with_version):
    """The form FBGEMM, torchao and compressed-tensors save: weight e4m3 [N, K] and its rowwise
    scale [N] or [N, 1]; it is preshuffled on load."""
    lin = _linear(seed=3, bias=False)
    wq, w_scale = OPS.quantize_fp8_row(lin.weight.detach())
    state = {"weight": wq, "weight_scale": w_scale if scale_shape == "flat"
             else w_scale.unsqueeze(-1)}
    if with_version:  # ignored for a plain weight
        state["weight_layout_version"] = torch.tensor(1, dtype=torch.int32)
    mod = FP8Linear(256, 128, bias=False)
    mod.load_state_dict(_round_trip(state))
    assert torch.equal(mod.weight.view(torch.uint8), OPS.preshuffle(wq).view(torch.uint8))
    assert torch.equal(mod.weight_scale, w_scale)
    ours = FP8Linear.from_linear(lin)
    assert torch.equal(mod.weight.view(torch.uint8), ours.weight.view(torch.uint8))


def test_old_checkpoint_without_version_loads():
    mod = FP8Linear.from_linear(_linear(seed=4))
    state = mod.state_dict()
    del state["weight_layout_version"]
    fresh = FP8Linear(256, 128)
    fresh.load_state_dict(state)
    assert torch.equal(fresh.weight.view(torch.uint8), mod.weight.view(torch.uint8))


def test_other_layout_version_is_refused():
    state = FP8Linear.from_linear(_linear(seed=5)).state_dict()
    state["weight_layout_version"] = torch.tensor(99, dtype=torch.int32)
    with pytest.raises(RuntimeError, match="preshuffle layout version 99"):
        FP8Linear(256, 128).load_state_dict(state)


def test_plain_checkpoint_of_wrong_shape_is_refused():
    state = {"weight": torch.zeros(128, 128, dtype=E4M3), "weight_scale": torch.ones(128),
             "bias": torch.zeros(128)}
    with pytest.raises(RuntimeError, match=r"a plain weight must be torch.float8_e4m3fn \[128, "
                                           r"256\]"):
        FP8Linear(256, 128).load_state_dict(state)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16])
def test_preshuffled_weight_of_another_dtype_is_refused(dtype):
    """A preshuffled weight is bytes in the layout: load_state_dict would convert another dtype's
    values into e4m3 (a uint8 one, the same bytes as preshuffle(WQ.view(torch.uint8)) gives,
    into other weights), so only float8_e4m3fn loads, as for a plain weight."""
    state = FP8Linear.from_linear(_linear(seed=7)).state_dict()
    weight = state["weight"]
    state["weight"] = weight.view(torch.uint8) if dtype == torch.uint8 else weight.to(dtype)
    with pytest.raises(RuntimeError, match=r"weight: a preshuffled weight must be "
                                           rf"torch.float8_e4m3fn, got {dtype}"):
        FP8Linear(256, 128).load_state_dict(state)
    state["weight"] = weight.view(torch.uint8).view(E4M3)  # the hint's way: the same bytes
    fresh = FP8Linear(256, 128)
    fresh.load_state_dict(state)
    assert torch.equal(fresh.weight.view(torch.uint8), weight.view(torch.uint8))


@torch.no_grad()
def test_save_load_outputs_bit_identical_gpu():
    dev = _gpu()
    mod = FP8Linear.from_linear(_linear(seed=6, device=dev))
    fresh = FP8Linear(256, 128, device=dev)
    fresh.load_state_dict(_round_trip(mod.state_dict()))
    x = torch.randn(5, 9, 256, device=dev, dtype=torch.bfloat16)
    assert same_bits(fresh(x), mod(x))
    # A plain checkpoint loaded onto the GPU module gives the same outputs as well.
    wq, w_scale = OPS.quantize_fp8_row(_linear(seed=6).weight.detach())
    plain = FP8Linear(256, 128, device=dev)
    plain.load_state_dict({"weight": wq, "weight_scale": w_scale.unsqueeze(-1),
                           "bias": mod.bias.cpu()})
    assert same_bits(plain(x), mod(x))


# ---------------------------------------------------------------------------- torch.export

class _Block(torch.nn.Module):
    def __init__(self, device):
        super().__init__()
        self.up = FP8Linear.from_linear(_linear(256, 128, seed=7, device=device))
        self.down = FP8Linear.from_linear(_linear(128, 256, bias=False, seed=8, device=device))

    def forward(self, x):
        return self.down(torch.nn.functional.silu(self.up(x)))


def _export(device):
    model = _Block(device)
    x = torch.randn(4, 256, dtype=torch.bfloat16, device=device)
    with torch.no_grad():
        program = torch.export.export(model, (x,))
    return model, program, x


def test_export_traces_our_ops():
    """torch.export traces FP8Linear through the Meta kernels: no GPU needed to export."""
    _, program, _ = _export("cpu")
    targets = {str(n.target) for n in program.graph.nodes if n.op == "call_function"}
    assert "f8gemm.quantize_fp8_row.default" in targets, targets
    assert "f8gemm.f8f8bf16_rowwise_preshuffled.default" in targets, targets


@torch.no_grad()
def test_export_runs_gpu():
    dev = _gpu()
    model, program, x = _export(dev)
    assert same_bits(program.module()(x), model(x))
