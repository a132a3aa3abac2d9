"""f8gemm.nn without running a GEMM: swap_linears and fuse_gate_up (all or nothing, qualified
paths in errors, skip_incompatible, which modules and activations qualify), dtype casts and
device moves of FP8Linear and FP8GatedMLP, FP8GatedMLP checkpoints, the forward's input checks
and output dtype (on the meta device, through the ops' Meta kernels), and torch.compile
tracing of the modules. Runs on the CPU; the last tests need an sm_90 GPU and skip without."""

import io
import warnings

import helpers
from helpers import pytest, same_bits

import torch  # noqa: E402

import f8gemm  # noqa: E402,F401  (loads the ops)
from f8gemm.nn import FP8GatedMLP, FP8Linear, fuse_gate_up, swap_linears  # noqa: E402

Linear = torch.nn.Linear


def _gpu():
    reason = helpers.skip_reason()
    if reason:
        pytest.skip(reason)


def _model(router_out=60):
    """model.layers.{0,1}.{attn_proj, mlp.up, mlp.router}: the router refused if router_out is
    not a multiple of 8."""
    root = torch.nn.Module()
    root.model = torch.nn.Module()
    layers = []
    for _ in range(2):
        layer = torch.nn.Module()
        layer.attn_proj = Linear(64, 64)
        layer.mlp = torch.nn.Module()
        layer.mlp.up = Linear(64, 128, bias=False)
        layer.mlp.router = Linear(64, router_out)
        layers.append(layer)
    root.model.layers = torch.nn.ModuleList(layers)
    return root


def _kinds(module):
    return {name: type(m).__name__ for name, m in module.named_modules()}


def _caught(fn):
    """fn's result and the messages of the warnings it gave."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message) for w in got]


# ------------------------------------------------------------------ swap_linears

def test_swap_refusal_changes_nothing_and_names_paths():
    model = _model()
    before = _kinds(model)
    with pytest.raises(ValueError) as info:
        swap_linears(model)
    msg = str(info.value)
    assert "model.layers.0.mlp.router" in msg and "model.layers.1.mlp.router" in msg, msg
    assert "out_features must be a positive multiple of 8, got 60" in msg, msg
    assert "model.layers.0.attn_proj" not in msg, msg
    assert _kinds(model) == before  # nothing replaced, not even the linears before the router


def test_swap_skip_incompatible_converts_the_others():
    model = _model()
    _, msgs = _caught(lambda: swap_linears(model, skip_incompatible=True))
    assert len(msgs) == 1 and "model.layers.1.mlp.router" in msgs[0], msgs
    for layer in model.model.layers:
        assert type(layer.attn_proj) is FP8Linear and type(layer.mlp.up) is FP8Linear
        assert type(layer.mlp.router) is Linear
    # The same through filter_fn, without a warning.
    model = _model()
    _, msgs = _caught(lambda: swap_linears(model, filter_fn=lambda name, lin: name != "router"))
    assert msgs == [] and type(model.model.layers[1].mlp.up) is FP8Linear


def test_swap_leaves_weight_readers_and_subclasses():
    class Scaled(Linear):  # a subclass whose forward is more than x @ W^T + b
        def forward(self, x):
            return 2 * super().forward(x)

    net = torch.nn.Module()
    net.mha = torch.nn.MultiheadAttention(64, 4, batch_first=True)
    net.enc = torch.nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, batch_first=True)
    net.scaled = Scaled(64, 64)
    net.shared = Linear(64, 64)
    net.again = net.shared
    swap_linears(net)
    assert type(net.mha.out_proj).__name__ == "NonDynamicallyQuantizableLinear"
    assert type(net.enc.linear1) is Linear and type(net.enc.linear2) is Linear
    assert type(net.enc.self_attn.out_proj) is not FP8Linear
    assert type(net.scaled) is Scaled
    assert type(net.shared) is FP8Linear and net.again is net.shared
    with torch.no_grad():  # both still run (the encoder layer on its eval fast path)
        x = torch.randn(2, 5, 64)
        assert net.mha(x, x, x)[0].shape == (2, 5, 64)
        assert net.enc.eval()(x).shape == (2, 5, 64)


# ------------------------------------------------------------------ fuse_gate_up

class _Mlp(torch.nn.Module):
    def __init__(self, hidden=64, inter=96, **act):
        super().__init__()
        self.gate_proj = Linear(hidden, inter, bias=False)
        self.up_proj = Linear(hidden, inter, bias=False)
        self.down_proj = Linear(inter, hidden, bias=False)
        for name, fn in act.items():
            setattr(self, name, fn)


def test_fuse_refusal_changes_nothing_and_names_paths():
    net = torch.nn.Module()
    net.layers = torch.nn.ModuleList([_Mlp(act_fn=torch.nn.SiLU()),
                                      _Mlp(inter=40, act_fn=torch.nn.SiLU())])
    before = _kinds(net)
    with pytest.raises(ValueError, match=r"layers\.1 \(_Mlp\): ValueError: FP8GatedMLP: "
                                         r"intermediate must be a positive multiple of 16"):
        fuse_gate_up(net)
    assert _kinds(net) == before
    _, msgs = _caught(lambda: fuse_gate_up(net, skip_incompatible=True))
    assert len(msgs) == 1 and "layers.1 (_Mlp)" in msgs[0], msgs
    assert type(net.layers[0]) is FP8GatedMLP and type(net.layers[1]) is _Mlp


def test_fuse_only_known_silu():
    net = torch.nn.ModuleDict({
        "module": _Mlp(act_fn=torch.nn.SiLU()),
        "function": _Mlp(act_fn=torch.nn.functional.silu),
        "renamed": _Mlp(act=torch.nn.SiLU()),          # fused only with act_name="act"
        "inline": _Mlp(),                              # activation in forward: unknown
        "gelu": _Mlp(act_fn=torch.nn.GELU()),
    })
    _, msgs = _caught(lambda: fuse_gate_up(net))
    fused = {k for k, m in net.items() if type(m) is FP8GatedMLP}
    assert fused == {"module", "function"}, fused
    assert len(msgs) == 1, msgs
    assert "inline (_Mlp): it has no 'act_fn'" in msgs[0] and "gelu (_Mlp): its act_fn is GELU" \
        in msgs[0] and "renamed" in msgs[0], msgs
    _, msgs = _caught(lambda: fuse_gate_up(net, act_name="act"))
    assert type(net["renamed"]) is FP8GatedMLP and type(net["inline"]) is _Mlp


# ------------------------------------------------------------------ dtype casts, device moves

def _modules():
    lin = Linear(64, 32).to(torch.bfloat16)
    return [FP8Linear.from_linear(Linear(64, 32)),                 # fp32 bias
            FP8Linear.from_linear(lin),                            # bf16 bias
            FP8GatedMLP.from_module(_Mlp(act_fn=torch.nn.SiLU())),
            FP8GatedMLP(64, 32, bias=True)]


@pytest.mark.parametrize("cast", ["half", "bfloat16", "float", "double", "to_fp16", "to_bf16"])
def test_dtype_casts_keep_buffers(cast):
    want = {"half": torch.float16, "bfloat16": torch.bfloat16, "float": torch.float32,
            "double": torch.float64, "to_fp16": torch.float16, "to_bf16": torch.bfloat16}[cast]
    for mod in _modules():
        before = {k: v.clone() for k, v in mod.named_buffers()}
        net = torch.nn.Sequential(mod, Linear(4, 4))
        {"half": net.half, "bfloat16": net.bfloat16, "float": net.float,
         "double": net.double, "to_fp16": lambda: net.to(torch.float16),
         "to_bf16": lambda: net.to("cpu", torch.bfloat16)}[cast]()
        for name, buf in mod.named_buffers():
            assert same_bits(buf, before[name]), (type(mod).__name__, name, buf.dtype)
        assert net[1].weight.dtype == want  # the other modules are cast as usual


def test_device_moves_still_move():
    for mod in _modules():
        dtypes = {k: v.dtype for k, v in mod.named_buffers()}
        mod.to("meta", torch.float16)
        assert {k: (v.device.type, v.dtype) for k, v in mod.named_buffers()} == \
            {k: ("meta", d) for k, d in dtypes.items()}
        mod.to_empty(device="cpu")
        assert all(v.device.type == "cpu" for v in mod.buffers())


# ------------------------------------------------------------------ FP8GatedMLP checkpoints

def test_gated_mlp_from_linears_names_a_weight_of_a_dtype_it_cannot_quantise():
    mlp = _Mlp(act_fn=torch.nn.SiLU())
    mlp.up_proj.double()
    with pytest.raises(ValueError, match="up_proj's weight dtype must be bf16, fp16 or fp32, got "
                                         "torch.float64"):
        FP8GatedMLP.from_module(mlp)


def test_gated_mlp_state_dict_layout_version():
    mod = FP8GatedMLP.from_module(_Mlp(act_fn=torch.nn.SiLU()))
    state = mod.state_dict()
    assert int(state["weight_layout_version"]) == f8gemm.PRESHUFFLE_LAYOUT_VERSION
    fresh = FP8GatedMLP(64, 96)
    fresh.load_state_dict(state)
    assert same_bits(fresh.gate_up_weight, mod.gate_up_weight)
    del state["weight_layout_version"]  # a checkpoint from before the key: version 1
    FP8GatedMLP(64, 96).load_state_dict(state)
    state["weight_layout_version"] = torch.tensor(99, dtype=torch.int32)
    with pytest.raises(RuntimeError, match="gate_up_weight: preshuffle layout version 99"):
        FP8GatedMLP(64, 96).load_state_dict(state)
    # A version that is not one integer is refused by its key, not read as int() reads it.
    for bad, what in ((torch.tensor([1, 1], dtype=torch.int32),
                       "a torch.int32 tensor of shape [2]"),
                      (torch.tensor(1.5), "a torch.float32 tensor of shape []"),
                      (torch.tensor(True), "a torch.bool tensor of shape []"), (1.0, "1.0")):
        state["weight_layout_version"] = bad
        with pytest.raises(RuntimeError, match=r"weight_layout_version must be one integer, got "
                                               + what.replace("[", r"\[").replace("]", r"\]")):
            FP8GatedMLP(64, 96).load_state_dict(state)
    state["weight_layout_version"] = f8gemm.PRESHUFFLE_LAYOUT_VERSION  # a Python int is fine
    FP8GatedMLP(64, 96).load_state_dict(state)
    # The plain form (e4m3fn [N, K], scale [N, 1]) is preshuffled on load.
    plain = {"gate_up_weight": torch.ops.f8gemm.unshuffle(mod.gate_up_weight, 64),
             "gate_up_scale": mod.gate_up_scale.unsqueeze(1),
             "down_weight": torch.ops.f8gemm.unshuffle(mod.down_weight, 96),
             "down_scale": mod.down_scale}
    fresh = FP8GatedMLP(64, 96)
    fresh.load_state_dict(plain)
    assert same_bits(fresh.gate_up_weight, mod.gate_up_weight)
    assert same_bits(fresh.down_weight, mod.down_weight)
    # One pickled whole before it had the (per-instance) hooks gets them when unpickled.
    mod._state_dict_hooks.clear()
    mod._load_state_dict_pre_hooks.clear()
    buf = io.BytesIO()
    torch.save(mod, buf)
    buf.seek(0)
    old = torch.load(buf, weights_only=False)
    assert "weight_layout_version" in old.state_dict()
    assert len(old._load_state_dict_pre_hooks) == 1


def test_a_checkpoint_value_that_is_no_tensor_gets_torchs_own_error():
    """The layout hook converts tensors only (plain weights, [N, 1] scales): any other value
    is left to torch's copy, which refuses it by its key, not to an AttributeError of ours."""
    def linear():
        return FP8Linear(16, 8)

    def mlp():
        return FP8GatedMLP(64, 96)

    for make, key in ((linear, "weight"), (linear, "weight_scale"), (mlp, "gate_up_weight"),
                      (mlp, "down_scale")):
        for bad in (5, [1.0] * 8):
            state = make().state_dict()
            state[key] = bad
            with pytest.raises(RuntimeError, match=rf'While copying the parameter named "{key}", '
                                                   r"expected torch\.Tensor or Tensor-like object "
                                                   r"from checkpoint but received <class "
                                                   rf"'{type(bad).__name__}'>"):
                make().load_state_dict(state)


# ------------------------------------------------------------------ forward checks and dtype

def _meta_modules():
    return [(FP8Linear(64, 32, device="meta"), "in_features"),
            (FP8GatedMLP(64, 32, device="meta"), "hidden")]


def test_input_checks_come_first():
    for mod, what in _meta_modules():
        owner = type(mod).__name__
        with pytest.raises(ValueError, match=f"{owner}: the input must be .*0-dimensional"):
            mod(torch.zeros((), device="meta"))
        with pytest.raises(ValueError, match=f"{owner}: the input's last dimension must be "
                                             f"{what} = 64"):
            mod(torch.zeros(2, 48, device="meta"))
        # On another device: refused before quantize_fp8_row runs on the input's device.
        with pytest.raises(ValueError, match=f"{owner}: the input is on cpu but the module's "
                                             "weights are on meta"):
            mod(torch.zeros(2, 64, dtype=torch.bfloat16))
        x = torch.zeros(2, 64, device="meta", requires_grad=True)
        mod.train()
        with pytest.raises(ValueError, match=f"{owner} is inference-only and is in training "
                                             "mode"):
            mod(x)
        with torch.no_grad():
            assert mod(x).shape == (2, 64 if what == "hidden" else 32)
        # In eval mode the forward runs (a partly converted model's activations require grad);
        # a backward through the ops raises, since they have no derivative.
        mod.eval()
        y = mod(x)
        assert y.requires_grad
        with pytest.raises(RuntimeError, match=r"derivative for f8gemm::\w+ is not implemented"):
            y.sum().backward()


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), 1e39])
def test_a_scale_ub_that_bounds_nothing_is_refused_at_construction(bad):
    """quantize_fp8_row refuses such a scale_ub: the module says so when it is built, and a
    conversion given one changes nothing, instead of every forward of the result raising."""
    rule = r"must be positive and finite \(in float32\), got "
    with pytest.raises(ValueError, match="FP8Linear: activation_scale_ub " + rule):
        FP8Linear(64, 32, activation_scale_ub=bad)
    for name in ("activation_scale_ub", "intermediate_scale_ub"):
        with pytest.raises(ValueError, match=f"FP8GatedMLP: {name} " + rule):
            FP8GatedMLP(64, 32, **{name: bad})
    model = _model(router_out=64)
    before = _kinds(model)
    with pytest.raises(ValueError, match="activation_scale_ub " + rule):
        swap_linears(model, activation_scale_ub=bad)
    assert _kinds(model) == before
    # The op's largest bound (3.0e38 in float32) is taken, by the module as by the op.
    mod = FP8Linear(64, 32, activation_scale_ub=3.0e38)
    torch.ops.f8gemm.quantize_fp8_row(torch.ones(2, 64), mod.activation_scale_ub)


@pytest.mark.parametrize("bad", [4096.0, "64", None])
def test_a_size_that_is_not_an_integer_is_refused_by_name(bad):
    """A float size (4096.0, as a config's arithmetic gives) raised torch.zeros' TypeError,
    which names no argument, and a string one a comparison's; numpy integers are integers."""
    rule = r" must be an integer, got "
    with pytest.raises(TypeError, match="FP8Linear: in_features" + rule):
        FP8Linear(bad, 32)
    with pytest.raises(TypeError, match="FP8Linear: out_features" + rule):
        FP8Linear(64, bad)
    with pytest.raises(TypeError, match="FP8GatedMLP: hidden" + rule):
        FP8GatedMLP(bad, 32)
    with pytest.raises(TypeError, match="FP8GatedMLP: intermediate" + rule):
        FP8GatedMLP(64, bad)
    import numpy as np
    mod = FP8Linear(np.int64(64), np.int32(32))
    assert type(mod.in_features) is int and mod.weight.shape == (1, 4, 1024)


def test_use_fast_accum_that_is_not_a_bool_is_refused_at_construction():
    """The GEMM's `bool use_fast_accum` refused it at the first forward, after the input's
    quantisation had run; the module now says so when it is built, as it does for pdl."""
    with pytest.raises(ValueError, match="FP8Linear: use_fast_accum must be True or False, "
                                         "got 'no'"):
        FP8Linear(64, 32, use_fast_accum="no")
    with pytest.raises(ValueError, match="FP8GatedMLP: use_fast_accum must be True or False"):
        FP8GatedMLP(64, 32, use_fast_accum=None)
    model = _model(router_out=64)
    before = _kinds(model)
    with pytest.raises(ValueError, match="use_fast_accum must be True or False"):
        swap_linears(model, use_fast_accum="false")
    assert _kinds(model) == before


def test_load_with_assign_keeps_the_buffer_dtypes():
    """load_state_dict(assign=True) (loading into a module built on meta) took the checkpoint's
    dtypes: an fp16 bias or a bf16 scale that the GEMM refuses at every forward. Scales and
    biases are converted to the module's dtypes on load, as copy_ does without assign."""
    for mod in _modules():
        state = mod.state_dict()
        for key, value in list(state.items()):
            if "bias" in key:
                state[key] = value.half()
            elif "scale" in key:
                state[key] = value.bfloat16()
        dtypes = {k: v.dtype for k, v in mod.named_buffers()}
        for assign in (False, True):
            if isinstance(mod, FP8Linear):
                fresh = FP8Linear(64, 32, bias_dtype=mod.bias.dtype, device="meta")
            else:
                fresh = FP8GatedMLP(64, mod.intermediate, bias=mod.down_bias is not None,
                                    device="meta")
            if assign:
                fresh.load_state_dict(dict(state), assign=True)
            else:
                fresh.to_empty(device="cpu").load_state_dict(dict(state))
            assert {k: v.dtype for k, v in fresh.named_buffers()} == dtypes, (mod, assign)
            with torch.no_grad():
                fresh.to("meta")(torch.zeros(40, 64, device="meta"))  # the GEMMs take them


@pytest.mark.parametrize("bad", [torch.tensor([1.0, 2.0]), "two", [2.0], "1e3", True,
                                 torch.tensor(True), 3 + 4j])
def test_a_scale_ub_that_is_not_one_number_is_refused_by_name(bad):
    """float() of it raised its own error ("only one element tensors can be converted to Python
    scalars", "could not convert string to float"), naming no argument."""
    with pytest.raises(ValueError, match="FP8Linear: activation_scale_ub must be one number"):
        FP8Linear(64, 32, activation_scale_ub=bad)
    with pytest.raises(ValueError, match="FP8GatedMLP: intermediate_scale_ub must be one number"):
        FP8GatedMLP(64, 32, intermediate_scale_ub=bad)


def test_a_converted_module_keeps_the_mode_of_the_one_it_replaces():
    for training in (False, True):
        net = torch.nn.Sequential(torch.nn.Linear(64, 32, device="meta"))
        net.train(training)
        swap_linears(net)
        assert net[0].training is training


@pytest.mark.parametrize("rows", [4, 64])  # FP8GatedMLP: unfused, then fused activation
def test_output_dtype_follows_the_input(rows):
    for mod, _ in _meta_modules():
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            y = mod(torch.empty(rows, 64, device="meta", dtype=dtype))
            assert y.dtype == dtype, (type(mod).__name__, dtype, y.dtype)
        mod.out_dtype = torch.bfloat16  # explicit: kept for every input
        assert mod(torch.empty(rows, 64, device="meta")).dtype == torch.bfloat16


def test_compile_fullgraph_traces_the_checks():
    """dynamo traces forward, its input checks included, without a graph break."""
    for mod, _ in _meta_modules():
        compiled = torch.compile(mod, fullgraph=True, backend="eager")
        with torch.no_grad():
            assert compiled(torch.empty(40, 64, device="meta")).dtype == torch.float32


def test_in_features_must_be_a_multiple_of_16_not_only_of_8():
    """K % 16 is the GEMM's rule: a module of in_features 24 would be built, and refused by the
    GEMM at its first forward (and swap_linears would have converted the linear)."""
    with pytest.raises(ValueError, match="FP8Linear: in_features must be a positive multiple of "
                                         "16, got 24"):
        FP8Linear(24, 32)
    model = torch.nn.Sequential(Linear(24, 32, device="meta"))
    with pytest.raises(ValueError, match=r"0 \(Linear\): ValueError: FP8Linear: in_features"):
        swap_linears(model)
    assert type(model[0]) is Linear


def test_from_linear_keeps_a_bf16_bias_in_bf16_and_any_other_in_fp32():
    for dtype, want in ((torch.bfloat16, torch.bfloat16), (torch.float16, torch.float32),
                        (torch.float32, torch.float32)):
        mod = FP8Linear.from_linear(Linear(64, 32, device="meta", dtype=dtype))
        assert mod.bias.dtype == want, (dtype, mod.bias.dtype)
        assert mod.state_dict()["bias"].dtype == want


def _gated_mlp_ops(rows):
    """The f8gemm ops that FP8GatedMLP's forward calls for `rows` rows of x (on meta)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Record(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(func._schema.name)
            return func(*args, **(kwargs or {}))

    mod = FP8GatedMLP(64, 32, device="meta")
    with torch.no_grad(), Record() as record:
        mod(torch.empty(rows, 64, device="meta"))
    return [n for n in record.names if n.startswith("f8gemm::")]


def test_gated_mlp_fuses_the_activation_from_its_threshold_on():
    """SiLU·mul runs in the gate|up GEMM's epilogue from FUSED_ACTIVATION_MIN_ROWS rows on and in
    silu_mul_quantize_fp8_row below (measured, card 75): the output's shape and dtype are the
    same either way, so the ops called say which path ran."""
    edge = FP8GatedMLP.FUSED_ACTIVATION_MIN_ROWS
    assert _gated_mlp_ops(edge - 1) == [
        "f8gemm::quantize_fp8_row", "f8gemm::f8f8bf16_rowwise_preshuffled",
        "f8gemm::silu_mul_quantize_fp8_row", "f8gemm::f8f8bf16_rowwise_preshuffled"]
    assert _gated_mlp_ops(edge) == [
        "f8gemm::quantize_fp8_row", "f8gemm::f8f8bf16_rowwise_preshuffled_silu_mul",
        "f8gemm::quantize_fp8_row", "f8gemm::f8f8bf16_rowwise_preshuffled"]


def test_bad_kwargs_raise_even_with_skip_incompatible():
    """Bad kwargs are the caller's error, not a module's: with skip_incompatible=True they would
    make every candidate "incompatible", and the call would warn and convert nothing."""
    model = _model(router_out=64)
    before = _kinds(model)
    with pytest.raises(ValueError, match="FP8Linear: use_fast_accum must be True or False"):
        swap_linears(model, skip_incompatible=True, use_fast_accum="no")
    assert _kinds(model) == before
    net = torch.nn.Sequential(_Mlp(act_fn=torch.nn.SiLU()))
    with pytest.raises(ValueError, match="FP8GatedMLP: pdl must be None, True or False"):
        fuse_gate_up(net, skip_incompatible=True, pdl="yes")
    assert type(net[0]) is _Mlp


def test_gated_mlp_refuses_a_bias_on_some_of_the_three_linears():
    """A block with a bias on gate_proj alone would otherwise become a module without biases."""
    mlp = _Mlp(act_fn=torch.nn.SiLU())
    mlp.gate_proj = Linear(64, 96, bias=True)
    with pytest.raises(ValueError, match="either all three linears have a bias or none has"):
        FP8GatedMLP.from_module(mlp)


# ------------------------------------------------------------------ GPU

@torch.no_grad()
def test_fp32_output_is_the_bf16_result_widened_gpu():
    _gpu()
    x = torch.randn(40, 256, generator=helpers.gen(3)).cuda()
    for rows in (8, 40):  # FP8GatedMLP: unfused, then fused activation
        lin = FP8Linear.from_linear(helpers.make_linear(256, 128, seed=1))
        mlp = FP8GatedMLP.from_module(helpers.LlamaMLP(256, 512, seed=2))
        for mod in (lin, mlp):
            y = mod(x[:rows])
            mod.out_dtype = torch.bfloat16
            assert y.dtype == torch.float32 and torch.equal(y, mod(x[:rows]).float())


def test_dtype_cast_then_cuda_gpu():
    _gpu()
    mod = FP8GatedMLP.from_module(helpers.LlamaMLP(256, 512, seed=4)).cpu()
    before = {k: v.clone() for k, v in mod.named_buffers()}
    mod.half().cuda()
    for name, buf in mod.named_buffers():
        assert buf.is_cuda and same_bits(buf, before[name]), name
    with torch.no_grad():
        y = mod(torch.randn(4, 256, device="cuda", dtype=torch.float16))
    assert y.dtype == torch.float16


# ------------------------------------------------------------------ session 46's probe

def test_a_linear_whose_weight_does_not_match_its_features_is_refused_by_name():
    """A weight replaced by one of another shape was quantised over all its columns and cut to
    in_features where the preshuffled shapes matched (silently wrong), or failed in a torch
    error naming no linear: now a ValueError before any quantisation, in from_linear,
    from_linears, and swap_linears' all-or-nothing check."""
    wide = Linear(32, 16)
    wide.weight = torch.nn.Parameter(torch.randn(16, 48))  # cut to 32 columns before the fix
    with pytest.raises(ValueError, match=r"linear's weight has shape \(16, 48\), but its "
                                         r"out_features and in_features say \(16, 32\)"):
        FP8Linear.from_linear(wide)
    with pytest.raises(ValueError, match=r"0 \(Linear\): ValueError: FP8Linear.from_linear: "
                                         r"linear's weight has shape \(16, 48\)"):
        swap_linears(torch.nn.Sequential(wide))
    tall = Linear(32, 16)
    tall.bias = torch.nn.Parameter(torch.randn(24))
    with pytest.raises(ValueError, match=r"linear's bias has shape \(24,\), but its out_features "
                                         r"say \(16,\)"):
        FP8Linear.from_linear(tall)
    mlp = _Mlp(act_fn=torch.nn.SiLU())
    mlp.down_proj.weight = torch.nn.Parameter(torch.randn(mlp.down_proj.out_features,
                                                          2 * mlp.down_proj.in_features))
    with pytest.raises(ValueError, match="down_proj's weight has shape"):
        FP8GatedMLP.from_module(mlp)


def test_modules_beyond_the_librarys_gemm_limits_are_refused_before_their_buffers():
    """N past 2^28 - 256 or K past 2^31 - 256 (the library's limits) built the buffers, then
    every forward failed; on meta nothing is allocated, so the check shows without memory."""
    with pytest.raises(ValueError, match=r"FP8Linear: a GEMM of N = 268435456 and K = 16 is "
                                         r"beyond the library's limits"):
        FP8Linear(16, 1 << 28, device="meta")
    with pytest.raises(ValueError, match="FP8GatedMLP: a GEMM of N = 268435456"):
        FP8GatedMLP(16, 1 << 27, device="meta")
    with pytest.raises(ValueError, match="beyond the library's limits"):
        swap_linears(torch.nn.Sequential(Linear(1 << 31, 8, device="meta")))
    FP8Linear(16, (1 << 28) - 256, device="meta")  # the largest N a GEMM takes
    # Sizes past what torch itself describes: the same ValueError, naming the module.
    for n, k in ((1 << 62, 16), (16, 1 << 62), (1 << 63, 16)):
        with pytest.raises(ValueError, match="FP8Linear: a GEMM of N = .* beyond"):
            FP8Linear(k, n, device="meta")


def test_building_a_module_works_under_any_default_dtype_and_shows_no_op():
    """The size check's meta scales are fp32 whatever torch's default dtype (models are built
    under bf16 by from_pretrained(torch_dtype=...)), and it runs outside every dispatch mode:
    a user's recorder sees no op, and under FakeTensorMode a refusal is the same ValueError."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch._subclasses.fake_tensor import FakeTensorMode

    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    before = torch.get_default_dtype()
    try:
        for dtype in (torch.bfloat16, torch.float16, torch.float64):
            torch.set_default_dtype(dtype)
            FP8Linear(32, 16)
            FP8GatedMLP(32, 16)
    finally:
        torch.set_default_dtype(before)
    with Recorder() as rec:
        FP8Linear(32, 16, device="meta")
        FP8GatedMLP(32, 16, device="meta")
    assert not [op for op in rec.ops if "f8gemm" in op], rec.ops
    with FakeTensorMode():
        FP8Linear(32, 16)
        with pytest.raises(ValueError, match="beyond the library's limits"):
            FP8Linear(16, 1 << 28)


def test_load_state_dict_with_assign_keeps_every_buffer_contiguous():
    """assign=True kept a checkpoint's strided views as the buffers, which the GEMM refuses
    only in the first forward, after its quantisation kernel."""
    mod = FP8Linear(32, 16)
    state = mod.state_dict()
    state["weight"] = torch.zeros(1024, 2, 1, dtype=torch.float8_e4m3fn).permute(2, 1, 0)
    state["weight_scale"] = torch.ones(32)[::2]
    assert not state["weight"].is_contiguous()
    mod.load_state_dict(state, assign=True)
    assert mod.weight.is_contiguous() and mod.weight_scale.is_contiguous()
    assert torch.equal(mod.weight_scale, torch.ones(16))
    # A contiguous slice at an offset: contiguous but not 16-byte aligned, cloned.
    state = mod.state_dict()
    state["weight_scale"] = torch.ones(17)[1:]
    assert state["weight_scale"].data_ptr() % 16 != 0
    mod.load_state_dict(state, assign=True)
    assert mod.weight_scale.data_ptr() % 16 == 0 and torch.equal(mod.weight_scale, torch.ones(16))
