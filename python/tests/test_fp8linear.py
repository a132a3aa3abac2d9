"""f8gemm.nn.FP8Linear: built from nn.Linear (weights quantised per row and preshuffled once),
forward on [..., in_features] inputs, against the fp64 reference of its own quantised operands
and against the bf16 nn.Linear."""

import helpers
from helpers import DEVICE, bound, pytest, reference, rel_rms

helpers.require_device()

import torch  # noqa: E402

import f8gemm  # noqa: E402
from f8gemm.nn import FP8Linear, swap_linears  # noqa: E402

ops = torch.ops.f8gemm


_linear = helpers.make_linear


def _fp8_reference(mod, x):
    """fp64 result of the FP8Linear's own quantised operands on x."""
    x2 = x.reshape(-1, mod.in_features)
    xq, xs = ops.quantize_fp8_row(x2, mod.activation_scale_ub)
    wq = ops.unshuffle(mod.weight, mod.in_features)
    y = reference(xq, wq, xs, mod.weight_scale, mod.bias)
    return y.reshape(*x.shape[:-1], mod.out_features)


@pytest.mark.parametrize("bias,bias_dtype", [(False, None), (True, torch.bfloat16),
                                             (True, torch.float32)])
@pytest.mark.parametrize("fast", [True, False])
@torch.no_grad()
def test_from_linear_forward(bias, bias_dtype, fast):
    lin = _linear(1024, 512, bias=bias, dtype=bias_dtype or torch.bfloat16, seed=1)
    mod = FP8Linear.from_linear(lin, use_fast_accum=fast)
    assert mod.weight.dtype == torch.float8_e4m3fn and mod.weight.shape == (8, 64, 1024)
    assert mod.weight_scale.shape == (512,) and mod.weight_scale.dtype == torch.float32
    if bias:
        assert mod.bias.dtype == (torch.bfloat16 if bias_dtype == torch.bfloat16 else torch.float32)
    else:
        assert mod.bias is None
    x = torch.randn(3, 7, 1024, generator=helpers.gen(2)).to(DEVICE, torch.bfloat16)
    y = mod(x)
    assert y.shape == (3, 7, 512) and y.dtype == torch.bfloat16
    assert rel_rms(y, _fp8_reference(mod, x)) <= bound(fast)
    # FP8 quantisation of both operands costs a few percent against the bf16 layer.
    want = lin(x.to(lin.weight.dtype)).double()
    assert rel_rms(y, want) <= 0.06


@torch.no_grad()
def test_input_shapes_and_dtypes():
    lin = _linear(256, 128, seed=3)
    mod = FP8Linear.from_linear(lin)
    for shape in [(256,), (5, 256), (2, 3, 4, 256), (0, 256)]:
        x = torch.randn(*shape, generator=helpers.gen(4)).to(DEVICE, torch.bfloat16)
        y = mod(x)
        assert y.shape == (*shape[:-1], 128)
        if x.numel():
            assert rel_rms(y, _fp8_reference(mod, x)) <= bound(True)
    # non-contiguous input
    xt = torch.randn(256, 9, generator=helpers.gen(5)).to(DEVICE, torch.bfloat16).t()
    assert not xt.is_contiguous()
    assert torch.equal(mod(xt), mod(xt.contiguous()))
    # The output keeps the input's dtype, as nn.Linear's: fp16 gives fp16, fp32 gives the bf16
    # GEMM's result widened to fp32.
    x16 = torch.randn(4, 256, generator=helpers.gen(6)).to(DEVICE, torch.float16)
    assert mod(x16).dtype == torch.float16
    y32 = mod(x16.float())
    assert y32.dtype == torch.float32
    bf16_out = FP8Linear.from_linear(lin, out_dtype=torch.bfloat16)
    assert torch.equal(y32, bf16_out(x16.float()).float())
    mod16 = FP8Linear.from_linear(lin, out_dtype=torch.float16)
    assert mod16(x16.bfloat16()).dtype == torch.float16
    with pytest.raises(ValueError, match=r"in_features = 256"):
        mod(torch.randn(4, 255, device=DEVICE, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match=r"FP8Linear: the input is on cpu"):
        mod(torch.randn(4, 256, dtype=torch.bfloat16))


def test_training_use_is_refused():
    mod = FP8Linear.from_linear(_linear(256, 128, seed=3))
    x = torch.randn(4, 256, device=DEVICE, dtype=torch.bfloat16, requires_grad=True)
    with pytest.raises(ValueError, match=r"FP8Linear is inference-only and is in training mode"):
        mod(x)
    y = mod.eval()(x)  # eval mode: runs; a backward through the ops raises
    with pytest.raises(RuntimeError, match=r"derivative for f8gemm::\w+ is not implemented"):
        y.float().sum().backward()
    with torch.inference_mode():
        assert mod(x.detach()).shape == (4, 128)


@torch.no_grad()
def test_scale_ub():
    lin = _linear(256, 64, seed=7)
    mod = FP8Linear.from_linear(lin, activation_scale_ub=2.0)
    x = torch.randn(8, 256, generator=helpers.gen(8)).to(DEVICE, torch.bfloat16)
    x[0, 0] = 100.0
    y = mod(x)
    assert rel_rms(y, _fp8_reference(mod, x)) <= bound(True)
    assert mod.activation_scale_ub.device.type == "cpu"


@torch.no_grad()
def test_cpu_build_moved_to_gpu_is_identical():
    if DEVICE != "cuda":
        pytest.skip("needs a GPU")
    lin = _linear(512, 256, seed=9, device="cpu", dtype=torch.float32)
    on_cpu = FP8Linear.from_linear(lin).to("cuda")
    on_gpu = FP8Linear.from_linear(lin.to("cuda"))
    # quantize_fp8_row and preshuffle agree bit for bit on the host and the GPU
    assert torch.equal(on_cpu.weight.view(torch.uint8), on_gpu.weight.view(torch.uint8))
    assert torch.equal(on_cpu.weight_scale, on_gpu.weight_scale)
    x = torch.randn(16, 512, device="cuda", dtype=torch.bfloat16)
    assert torch.equal(on_cpu(x), on_gpu(x))


@torch.no_grad()
def test_state_dict_round_trip_and_swap():
    model = torch.nn.Sequential(_linear(256, 512, seed=10), torch.nn.SiLU(),
                                _linear(512, 256, bias=False, seed=11))
    x = torch.randn(4, 256, generator=helpers.gen(12)).to(DEVICE, torch.bfloat16)
    want = model(x)
    swap_linears(model)
    assert isinstance(model[0], FP8Linear) and isinstance(model[2], FP8Linear)
    y = model(x)
    assert rel_rms(y, want) <= 0.08
    state = model.state_dict()
    assert set(state) == {"0.weight", "0.weight_scale", "0.bias", "0.weight_layout_version",
                          "2.weight", "2.weight_scale", "2.weight_layout_version"}
    fresh = torch.nn.Sequential(FP8Linear(256, 512, device=DEVICE), torch.nn.SiLU(),
                                FP8Linear(512, 256, bias=False, device=DEVICE))
    fresh[0].bias = fresh[0].bias.to(state["0.bias"].dtype)
    fresh.load_state_dict(state)
    assert torch.equal(fresh(x), y)


def test_constructor_checks():
    with pytest.raises(ValueError, match=r"in_features must be a positive multiple of 16"):
        FP8Linear(100, 64)
    with pytest.raises(ValueError, match=r"out_features must be a positive multiple of 8"):
        FP8Linear(128, 60)
    with pytest.raises(TypeError):
        FP8Linear.from_linear(torch.nn.Conv1d(4, 4, 1))
    assert "preshuffled" in repr(FP8Linear(128, 64))
    assert f8gemm.nn.FP8Linear is FP8Linear
