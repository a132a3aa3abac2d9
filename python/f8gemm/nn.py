"""FP8Linear: an inference drop-in for nn.Linear on f8gemm's preshuffled FP8 GEMM; FP8GatedMLP
(and fuse_gate_up): a gated MLP block with gate and up merged into one GEMM, in four kernels.

The weight is quantised once per output row (quantize_fp8_row) and preshuffled once; each
forward quantises the activations per row and calls f8f8bf16_rowwise_preshuffled (or the fp16
op). No autograd: use it for inference (under torch.no_grad() / torch.inference_mode()). A
module in training mode refuses an input that requires grad while grad mode is on (ValueError);
in eval mode such a forward runs and a backward through it raises (the ops have no derivative).

The buffers' dtypes are the format (e4m3fn weights, fp32 scales, the bias dtype the op takes), so
module.half(), .bfloat16(), .float() and .to(dtype) leave them as they are; device moves
(.cuda(), .to(device), .to("meta"), .to_empty()) move them. swap_linears and fuse_gate_up
(f8gemm/convert.py, re-exported here) convert a model in place.

Both modules take `pdl`, passed to every op of their forward: programmatic dependent launch of
each kernel (it may be scheduled while the kernel before it on the stream drains, and waits for
it on the device, so results do not change). None follows the library's default (the F8GEMM_PDL
switch, off when unset), True and False decide for this module whatever the switch. Their GEMMs
also pass prefetch_w=True (the weights are buffers preshuffled once, which no kernel writes), so
that with PDL each GEMM starts loading its weight before it waits for the quantisation kernel
just before it, where its configuration allows (GemmOptions::prefetch_w: not a 2x1 pair, K
split at most two ways; without PDL it changes nothing).
"""

import numbers
import operator

import torch
from torch._subclasses.fake_tensor import is_fake
from torch.utils._python_dispatch import _disable_current_modes  # stable since torch 2.0

__all__ = ["FP8Linear", "swap_linears", "FP8GatedMLP", "fuse_gate_up"]

_OPS = torch.ops.f8gemm


class _FP8Module(torch.nn.Module):
    """What FP8Linear and FP8GatedMLP share: dtype casts leave their buffers alone, their
    checkpoints record the preshuffle layout version, their forward checks its input before
    launching anything, and an fp32 input gives an fp32 output. A subclass lists its
    preshuffled weights in _preshuffled() and has out_dtype."""

    # --- checkpoints: state_dict()[prefix + LAYOUT_KEY] is the preshuffle layout version, an
    # int32 scalar tensor (safetensors-friendly). load_state_dict() accepts this module's own
    # state (any recorded version equal to ours; none means version 1, the first layout), and
    # the plain form that FBGEMM, torchao and compressed-tensors checkpoints carry: each weight
    # e4m3fn [N, K] with its scale [N] or [N, 1], which is preshuffled on load.
    LAYOUT_KEY = "weight_layout_version"

    def __init__(self):
        super().__init__()
        self._register_layout_hooks()

    def _register_layout_hooks(self):
        self._register_state_dict_hook(_FP8Module._state_dict_layout_hook)
        self._register_load_state_dict_pre_hook(_FP8Module._load_state_dict_layout_hook,
                                                with_module=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        # The hooks are per instance: an FP8GatedMLP pickled whole before it had them gets them
        # here (an FP8Linear's come back with it, the same function through inheritance).
        if _FP8Module._state_dict_layout_hook not in self._state_dict_hooks.values():
            self._register_layout_hooks()

    def _preshuffled(self):
        """(weight buffer name, its scale buffer name, N, K) of each preshuffled weight."""
        raise NotImplementedError

    @staticmethod
    def _state_dict_layout_hook(module, state_dict, prefix, local_metadata):
        state_dict[prefix + _FP8Module.LAYOUT_KEY] = torch.tensor(
            _layout_version(), dtype=torch.int32)
        return state_dict

    @staticmethod
    def _load_state_dict_layout_hook(module, state_dict, prefix, local_metadata, strict,
                                     missing_keys, unexpected_keys, error_msgs):
        version = state_dict.pop(prefix + _FP8Module.LAYOUT_KEY, None)
        if version is not None and not _is_one_integer(version):
            # int() would take 1.5 as version 1, and a tensor of two values raises without
            # naming the key.
            error_msgs.append(
                f"{prefix}{_FP8Module.LAYOUT_KEY} must be one integer, got "
                + (f"a {version.dtype} tensor of shape {list(version.shape)}"
                   if isinstance(version, torch.Tensor) else repr(version)))
            version = None
        # Scales and biases in the buffers' dtypes (fp32 scales, the bias dtype the GEMM takes):
        # copy_ converts them anyway, but load_state_dict(assign=True) (loading into a module
        # built on meta) would keep the checkpoint's, an fp16 bias that every forward refuses.
        # And contiguous: with assign=True a strided view from a checkpoint became the buffer,
        # which the ops refuse only at the GEMM of the first forward, after its quantisation.
        weights = {weight_name for weight_name, _, _, _ in module._preshuffled()}
        for name, buffer in module._buffers.items():
            value = state_dict.get(prefix + name)
            if buffer is None or not isinstance(value, torch.Tensor):
                continue
            if name not in weights and value.dtype != buffer.dtype:
                value = value.to(buffer.dtype)
            value = value.contiguous()
            # And 16-byte aligned (TMA's rule for W, the library's for every operand): a
            # contiguous slice at an offset of a larger tensor is not. Only where the tensor
            # itself becomes the buffer (assign=True; copy_ lands in the module's own buffer),
            # and only where it has an address (not meta, not a FakeTensor).
            if local_metadata.get("assign_to_params_buffers", False) and \
                    value.device.type != "meta" and not is_fake(value) and \
                    value.data_ptr() % 16 != 0:
                value = value.clone()
            state_dict[prefix + name] = value
        # A value that is not a tensor is left as it is: torch's own copy then refuses it by its
        # key ("expected torch.Tensor or Tensor-like object from checkpoint but received ...").
        for weight_name, scale_name, n, k in module._preshuffled():
            scale = state_dict.get(prefix + scale_name)
            if isinstance(scale, torch.Tensor) and tuple(scale.shape) == (n, 1):
                state_dict[prefix + scale_name] = scale.reshape(n)
            weight = state_dict.get(prefix + weight_name)
            if not isinstance(weight, torch.Tensor):
                continue
            if weight.dim() == 2:  # plain [N, K]: preshuffle it here (CPU or GPU, where it is)
                if weight.dtype != torch.float8_e4m3fn or tuple(weight.shape) != (n, k):
                    error_msgs.append(
                        f"{prefix}{weight_name}: a plain weight must be torch.float8_e4m3fn "
                        f"[{n}, {k}] (N, K), got {weight.dtype} {list(weight.shape)}")
                    continue
                state_dict[prefix + weight_name] = _OPS.preshuffle(weight.contiguous())
            elif weight.dtype != torch.float8_e4m3fn:
                # The buffer's copy_ would convert the values (a uint8 weight's bytes 0-255
                # become other e4m3 weights), where a preshuffled weight is its bytes.
                error_msgs.append(
                    f"{prefix}{weight_name}: a preshuffled weight must be torch.float8_e4m3fn, "
                    f"got {weight.dtype}" + (": pass weight.view(torch.float8_e4m3fn), the same "
                                             "bytes" if weight.dtype == torch.uint8 else ""))
            elif version is not None and int(version) != _layout_version():
                error_msgs.append(
                    f"{prefix}{weight_name}: preshuffle layout version {int(version)} in the "
                    f"checkpoint, this f8gemm reads version {_layout_version()}: load the plain "
                    "weight (torch.ops.f8gemm.unshuffle with the version that wrote it) instead")
                version = None  # said once per module

    def _apply(self, fn, recurse=True):
        # module.half() / .float() / .to(dtype) cast every floating-point buffer, and float8
        # counts as one: the weights would stop being e4m3fn, an fp32 scale could underflow in
        # fp16, and an fp16 bias is one the GEMM refuses. These buffers' dtypes are the format,
        # so fn is first tried on an empty tensor of the buffer's dtype and device: where it
        # keeps the dtype (a device move, to_empty, share_memory) it runs as usual, else the
        # buffer only goes to the device fn would have sent it to, its bytes unchanged.
        ours = {id(b) for b in self._buffers.values() if b is not None}

        def keep_dtype(t):
            if id(t) not in ours:
                return fn(t)
            probe = fn(t.new_empty((0,) * t.dim()))
            return fn(t) if probe.dtype == t.dtype else t.to(device=probe.device)

        return super()._apply(keep_dtype, recurse)

    def _check_input(self, x, features, what):
        """ValueError, before any kernel, for an input that forward cannot take."""
        owner = type(self).__name__
        if x.dim() < 1:
            raise ValueError(f"{owner}: the input must be [..., {what}], got a 0-dimensional "
                             "tensor")
        if x.shape[-1] != features:
            raise ValueError(f"{owner}: the input's last dimension must be {what} = {features}, "
                             f"got shape {tuple(x.shape)}")
        device = getattr(self, self._preshuffled()[0][0]).device
        if x.device != device:
            raise ValueError(f"{owner}: the input is on {x.device} but the module's weights are "
                             f"on {device}: move one to the other (module.to(x.device))")
        # Inference only: the ops have no derivative, so a backward through them raises (their
        # autograd kernels), and a module in training mode whose input requires grad is refused
        # here, at the forward that starts it. In eval mode the forward runs: a model converted
        # in part still has trainable layers upstream (embeddings, norms) whose outputs require
        # grad even for inference outside torch.no_grad().
        if self.training and x.requires_grad and torch.is_grad_enabled():
            raise ValueError(f"{owner} is inference-only and is in training mode with an input "
                             "that requires grad: call .eval() and run under torch.no_grad() or "
                             "torch.inference_mode() (or pass x.detach())")

    def _output(self, y, x_dtype):
        # nn.Linear keeps an fp32 input's dtype; the GEMMs write bf16 (or fp16), so without an
        # explicit out_dtype an fp32 input gets the bf16 result widened (exactly) to fp32.
        if self.out_dtype is None and x_dtype == torch.float32:
            return y.float()
        return y


class FP8Linear(_FP8Module):
    """y = x @ W^T + b with x and W quantised to e4m3fn per row (fp32 scales), fp32 accumulation.

    Buffers: weight (preshuffled e4m3fn, [ceil(K/128), N/8, 1024]), weight_scale (fp32 [N]) and
    bias (bf16 or fp32 [N], or None). Input: [..., in_features] bf16/fp16/fp32, contiguous or
    not, on the buffers' device. Output: [..., out_features] in out_dtype; by default the
    input's dtype, as nn.Linear (an fp32 input gets the GEMM's bf16 result widened to fp32, so
    it is no more precise than bf16). in_features must be a multiple of 16 and out_features of 8.

    pdl (None, True or False) is passed to quantize_fp8_row and the GEMM of every forward (see
    the module's docstring). The default, None, leaves it to the F8GEMM_PDL switch (off when
    unset): single decode GEMMs measured both ways with PDL on the H200 (docs/perf-log.md,
    card 23), those under 8 us 6-8% faster but B,M,N,K = 1,32,6144,4096 8-9% slower. True is
    for layers whose GEMMs are that short (decode), as FP8GatedMLP's default is. The GEMM also
    gets prefetch_w=True (see the module's docstring).
    """

    pdl = None  # the default, also for a module pickled whole before pdl existed

    def __init__(self, in_features, out_features, bias=True, device=None, out_dtype=None,
                 use_fast_accum=True, bias_dtype=torch.float32, activation_scale_ub=None,
                 pdl=None):
        super().__init__()
        in_features = _size("FP8Linear", "in_features", in_features)
        out_features = _size("FP8Linear", "out_features", out_features)
        if in_features <= 0 or in_features % 16 != 0:
            raise ValueError(f"FP8Linear: in_features must be a positive multiple of 16, got "
                             f"{in_features}")
        if out_features <= 0 or out_features % 8 != 0:
            raise ValueError(f"FP8Linear: out_features must be a positive multiple of 8, got "
                             f"{out_features}")
        if out_dtype not in (None, torch.bfloat16, torch.float16):
            raise ValueError(f"FP8Linear: out_dtype must be None, torch.bfloat16 or "
                             f"torch.float16, got {out_dtype}")
        if bias_dtype not in (torch.float32, torch.bfloat16):
            raise ValueError(f"FP8Linear: bias_dtype must be torch.float32 or torch.bfloat16, "
                             f"got {bias_dtype}")
        _check_pdl("FP8Linear", pdl)
        _check_use_fast_accum("FP8Linear", use_fast_accum)
        _check_gemm_sizes("FP8Linear", out_features, in_features)
        self.in_features = in_features
        self.out_features = out_features
        self.out_dtype = out_dtype
        self.use_fast_accum = use_fast_accum
        self.pdl = pdl
        shuffled = _preshuffled_shape(out_features, in_features)
        self.register_buffer(
            "weight", torch.zeros(shuffled, dtype=torch.float8_e4m3fn, device=device))
        self.register_buffer(
            "weight_scale", torch.ones(out_features, dtype=torch.float32, device=device))
        if bias:
            self.register_buffer(
                "bias", torch.zeros(out_features, dtype=bias_dtype, device=device))
        else:
            self.bias = None
        # An upper bound on activation row maxima (FBGEMM's scale_ub), kept on the CPU so that
        # reading it costs no GPU sync (and stays legal inside CUDA-graph capture). 0-dimensional:
        # FakeTensor (torch.compile) accepts a CPU scalar tensor beside CUDA inputs, not a [1].
        self.activation_scale_ub = _scale_ub("FP8Linear", "activation_scale_ub",
                                             activation_scale_ub)

    @classmethod
    @torch.no_grad()
    def from_linear(cls, linear, out_dtype=None, use_fast_accum=True, activation_scale_ub=None,
                    pdl=None):
        """An FP8Linear with linear's weight quantised per row and preshuffled (once) on
        linear's device (CPU or CUDA), its bias kept in bf16 if it is bf16, else in fp32. pdl is
        the module's (the one-time weight quantisation keeps the library's default)."""
        if not isinstance(linear, torch.nn.Linear):
            raise TypeError(f"FP8Linear.from_linear expects an nn.Linear, got {type(linear)}")
        _check_linear_shapes("FP8Linear.from_linear", "linear", linear)
        weight = linear.weight.detach()
        if weight.dtype not in _QUANTISABLE:
            raise ValueError(f"FP8Linear.from_linear: weight dtype must be bf16, fp16 or fp32, "
                             f"got {weight.dtype}")
        bias = linear.bias.detach() if linear.bias is not None else None
        bias_dtype = torch.bfloat16 if bias is not None and bias.dtype == torch.bfloat16 \
            else torch.float32
        mod = cls(linear.in_features, linear.out_features, bias=bias is not None,
                  device=weight.device, out_dtype=out_dtype, use_fast_accum=use_fast_accum,
                  bias_dtype=bias_dtype, activation_scale_ub=activation_scale_ub, pdl=pdl)
        wq, w_scale = _OPS.quantize_fp8_row(weight.contiguous())
        mod.weight.copy_(_OPS.preshuffle(wq))
        mod.weight_scale.copy_(w_scale)
        if bias is not None:
            mod.bias.copy_(bias.to(bias_dtype))
        return mod

    def _preshuffled(self):
        return (("weight", "weight_scale", self.out_features, self.in_features),)

    def forward(self, x):
        self._check_input(x, self.in_features, "in_features")
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.in_features).contiguous()
        xq, x_scale = _OPS.quantize_fp8_row(x2, self.activation_scale_ub, pdl=self.pdl)
        op = _preshuffled_gemm(self.out_dtype, x.dtype)
        # prefetch_w is safe: the weight is a buffer preshuffled at construction, and the kernel
        # just before the GEMM is the quantisation above, which lets the GEMM start only after
        # its own grid-dependency wait, so no kernel still running then writes the weight.
        # Without PDL it changes nothing.
        y = op(xq, self.weight, x_scale, self.weight_scale, self.bias, self.use_fast_accum,
               pdl=self.pdl, prefetch_w=True)
        return self._output(y.view(*lead, self.out_features), x.dtype)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, use_fast_accum={self.use_fast_accum}, "
                f"pdl={self.pdl}, weight=preshuffled e4m3fn")


def _preshuffled_gemm(out_dtype, x_dtype):
    """The preshuffled GEMM op for an output dtype; None follows the input (fp16 in, fp16 out,
    else bf16)."""
    if out_dtype is None:
        out_dtype = torch.float16 if x_dtype == torch.float16 else torch.bfloat16
    return _OPS.f8f8f16_rowwise_preshuffled if out_dtype == torch.float16 \
        else _OPS.f8f8bf16_rowwise_preshuffled


def _size(owner, name, value):
    """A size argument as an int (numpy's integers included, operator.index): TypeError naming
    it otherwise, as for a float, which is not truncated (f8gemm.precompile's rule)."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{owner}: {name} must be an integer, got {value!r}") from None


def _check_pdl(owner, pdl):
    """pdl must be what the ops' `bool? pdl` takes: None, True or False."""
    if pdl is not None and not isinstance(pdl, bool):
        raise ValueError(f"{owner}: pdl must be None, True or False, got {pdl!r}")


def _check_use_fast_accum(owner, use_fast_accum):
    """use_fast_accum must be what the GEMMs' `bool use_fast_accum` takes, checked when the
    module is built rather than by the GEMM of the first forward, after its quantisation."""
    if not isinstance(use_fast_accum, bool):
        raise ValueError(f"{owner}: use_fast_accum must be True or False, got "
                         f"{use_fast_accum!r}")


def _check_linear_shapes(owner, name, linear):
    """An nn.Linear's weight must be [out_features, in_features] and its bias [out_features]:
    a linear whose weight was replaced by one of another shape was quantised over all its
    columns and then cut to in_features when the preshuffled shapes happened to match
    (silently wrong), or failed in a torch error naming no linear."""
    want = (linear.out_features, linear.in_features)
    if tuple(linear.weight.shape) != want:
        raise ValueError(f"{owner}: {name}'s weight has shape {tuple(linear.weight.shape)}, but "
                         f"its out_features and in_features say {want}")
    if linear.bias is not None and tuple(linear.bias.shape) != (linear.out_features,):
        raise ValueError(f"{owner}: {name}'s bias has shape {tuple(linear.bias.shape)}, but its "
                         f"out_features say ({linear.out_features},)")


def _preshuffled_shape(n, k):
    """The preshuffled layout of an [n, k] weight: [ceil(k / 128), n / 8, 1024] (the library's
    preshuffle)."""
    return ((k + 127) // 128, n // 8, 1024)


def _check_gemm_sizes(owner, n, k):
    """The library's limits on a GEMM of N = n and K = k (N, K and the tensor-map strides), as
    the preshuffled GEMM's Meta kernel judges them: refused when the module is built, before
    its buffers are allocated, not by every forward. The check runs outside any active dispatch
    mode (a user's op recorder, FlopCounter, FakeTensorMode): building a module launches nothing
    that they should see."""
    with _disable_current_modes():
        meta = dict(device="meta")
        try:
            operands = (
                torch.empty(1, k, dtype=torch.float8_e4m3fn, **meta),
                torch.empty(_preshuffled_shape(n, k), dtype=torch.float8_e4m3fn, **meta),
                torch.empty(1, dtype=torch.float32, **meta),
                torch.empty(n, dtype=torch.float32, **meta))
        except (RuntimeError, TypeError, OverflowError) as e:
            # Sizes past what torch itself can describe (a storage past 2^63 bytes: RuntimeError;
            # a size past int64: TypeError).
            raise ValueError(f"{owner}: a GEMM of N = {n} and K = {k} is beyond the library's "
                             f"limits: {e}") from None
        try:
            _OPS.f8f8bf16_rowwise_preshuffled(*operands)
        except ValueError as e:  # the library's refusal; anything else is not about the sizes
            raise ValueError(f"{owner}: a GEMM of N = {n} and K = {k} is beyond the library's "
                             f"limits: {e}") from None


# The weight dtypes that from_linear(s) quantise (quantize_fp8_row's inputs).
_QUANTISABLE = (torch.bfloat16, torch.float16, torch.float32)

# The largest scale_ub that quantize_fp8_row takes (quantize_ops.cpp: value > 3.0e38f is refused,
# compared in float32).
_SCALE_UB_MAX = torch.tensor(3.0e38, dtype=torch.float32).item()


def _scale_ub(owner, name, value):
    """A scale_ub argument as the module keeps it: None, or a 0-dimensional fp32 CPU tensor
    (FakeTensor accepts a CPU scalar beside CUDA inputs) holding a value that quantize_fp8_row
    takes, positive and finite in fp32 (its rule), checked here rather than at every forward."""
    if value is None:
        return None
    # float() would also take "1e3", True and a complex number's real part: a number here is a
    # real number that is not a bool (numpy's included), or a tensor of neither kind.
    real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    tensor = isinstance(value, torch.Tensor) and value.dtype != torch.bool and \
        not value.is_complex()
    if not (real or tensor):
        raise ValueError(f"{owner}: {name} must be one number (a float or a 1-element tensor), "
                         f"got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError, RuntimeError):  # a tensor of several values
        raise ValueError(f"{owner}: {name} must be one number (a float or a 1-element tensor), "
                         f"got {value!r}") from None
    ub = torch.tensor(number, dtype=torch.float32)
    if not ub.item() > 0.0 or ub.item() > _SCALE_UB_MAX:
        raise ValueError(f"{owner}: {name} must be positive and finite (in float32), got "
                         f"{value!r}")
    return ub


def _is_one_integer(value):
    """A checkpoint's layout version as written: one integer, a tensor of one or a Python int."""
    if isinstance(value, torch.Tensor):
        return value.numel() == 1 and not value.is_floating_point() and \
            not value.is_complex() and value.dtype != torch.bool
    return isinstance(value, int) and not isinstance(value, bool)


def _layout_version():
    return int(_OPS.preshuffle_layout_version())


class FP8GatedMLP(_FP8Module):
    """A gated MLP block, down(SiLU(gate(x)) * up(x)), in four kernels on f8gemm:

    1. quantize_fp8_row(x): x quantised once, per row;
    2. one preshuffled GEMM with gate and up merged along N (N = 2I: gate rows, then up rows),
       giving gate_up [M, 2I] in bf16 (fp16 for an fp16 input);
    3. silu_mul_quantize_fp8_row(gate_up): SiLU(gate) * up in fp32, quantised per row;
    4. the down GEMM, [M, I] x [H, I]^T.

    From FUSED_ACTIVATION_MIN_ROWS rows of x on, steps 2 and 3 are instead
    f8f8bf16_rowwise_preshuffled_silu_mul (the GEMM's epilogue computes SiLU(gate) * up from
    its fp32 values and writes h [M, I] in bf16, whatever the input's dtype: half the bytes of
    gate_up) and quantize_fp8_row(h). h is rounded once into bf16 before its quantisation,
    which the unfused path does not do (it quantises the fp32 product of gate and up rounded
    into the output dtype); the per-linear swap rounds gate, up and h. Below it the swap-AB
    decode tiles, which cannot pair gate and up columns, keep the unfused path. The threshold
    is measured on the H100 (docs/perf-log.md, card 75): with the activation in the GEMM the
    block took 0.88-0.98x the time from 32 rows on, 0.98-1.01x at 1 and 16 rows, where the
    decode tiles' tuned entries stay.

    Merging gate and up changes no number: rowwise weight quantisation treats each output row
    alone, so the merged weight and scales are exactly the two stacked. Buffers: gate_up_weight
    (preshuffled e4m3fn [ceil(H/128), 2I/8, 1024]), gate_up_scale (fp32 [2I]), down_weight
    (preshuffled [ceil(I/128), H/8, 1024]), down_scale (fp32 [H]), and fp32 biases or None.
    hidden and intermediate must be multiples of 16. Inference only (no autograd). Input:
    [..., hidden] bf16/fp16/fp32 on the buffers' device; output [..., hidden] in out_dtype, by
    default the input's dtype (an fp32 input gets the bf16 result widened to fp32). Checkpoints
    record the preshuffle layout version and take plain e4m3fn [N, K] weights, as FP8Linear's.
    activation_scale_ub bounds the row maxima of x and intermediate_scale_ub those of
    SiLU(gate) * up (FBGEMM's scale_ub); each is kept as a 0-dimensional CPU tensor, read on the
    host at no cost (the ops also take one on the GPU, read by the kernel).

    pdl is passed to all four ops (see the module's docstring). Its default here is True: on the
    H200 at the power limit the block with PDL was 7.8% faster than without at M = 1, 10.1% at
    M = 16, 1.9% at 128 and 0.1% at 2048 (docs/perf-log.md, card 106; in graph replay 2.7% slower
    at 2048, a transient clock's reading), with bit-identical outputs. None follows the F8GEMM_PDL
    switch; False turns it off. Both GEMMs also get prefetch_w=True (see the module's docstring).
    """

    pdl = True  # the default, also for a module pickled whole before pdl existed
    FUSED_ACTIVATION_MIN_ROWS = 32

    def __init__(self, hidden, intermediate, bias=False, device=None, out_dtype=None,
                 use_fast_accum=True, activation_scale_ub=None, intermediate_scale_ub=None,
                 pdl=True):
        super().__init__()
        hidden = _size("FP8GatedMLP", "hidden", hidden)
        intermediate = _size("FP8GatedMLP", "intermediate", intermediate)
        for name, value in (("hidden", hidden), ("intermediate", intermediate)):
            if value <= 0 or value % 16 != 0:
                raise ValueError(f"FP8GatedMLP: {name} must be a positive multiple of 16, got "
                                 f"{value}")
        if out_dtype not in (None, torch.bfloat16, torch.float16):
            raise ValueError(f"FP8GatedMLP: out_dtype must be None, torch.bfloat16 or "
                             f"torch.float16, got {out_dtype}")
        _check_pdl("FP8GatedMLP", pdl)
        _check_use_fast_accum("FP8GatedMLP", use_fast_accum)
        _check_gemm_sizes("FP8GatedMLP", 2 * intermediate, hidden)  # gate|up
        _check_gemm_sizes("FP8GatedMLP", hidden, intermediate)  # down
        self.hidden = hidden
        self.intermediate = intermediate
        self.out_dtype = out_dtype
        self.use_fast_accum = use_fast_accum
        self.pdl = pdl
        e4m3 = dict(dtype=torch.float8_e4m3fn, device=device)
        f32 = dict(dtype=torch.float32, device=device)
        self.register_buffer("gate_up_weight", torch.zeros(
            _preshuffled_shape(2 * intermediate, hidden), **e4m3))
        self.register_buffer("gate_up_scale", torch.ones(2 * intermediate, **f32))
        self.register_buffer("down_weight", torch.zeros(
            _preshuffled_shape(hidden, intermediate), **e4m3))
        self.register_buffer("down_scale", torch.ones(hidden, **f32))
        if bias:
            self.register_buffer("gate_up_bias", torch.zeros(2 * intermediate, **f32))
            self.register_buffer("down_bias", torch.zeros(hidden, **f32))
        else:
            self.gate_up_bias = None
            self.down_bias = None
        self.activation_scale_ub = _scale_ub("FP8GatedMLP", "activation_scale_ub",
                                             activation_scale_ub)
        self.intermediate_scale_ub = _scale_ub("FP8GatedMLP", "intermediate_scale_ub",
                                               intermediate_scale_ub)

    @classmethod
    @torch.no_grad()
    def from_linears(cls, gate_proj, up_proj, down_proj, out_dtype=None, use_fast_accum=True,
                     activation_scale_ub=None, intermediate_scale_ub=None, pdl=True):
        """The block of three nn.Linear: gate_proj and up_proj [I, H], down_proj [H, I]; their
        weights are quantised per row and preshuffled once, on gate_proj's device. pdl is the
        module's (the one-time weight quantisation keeps the library's default)."""
        for name, lin in (("gate_proj", gate_proj), ("up_proj", up_proj),
                          ("down_proj", down_proj)):
            if not isinstance(lin, torch.nn.Linear):
                raise TypeError(f"FP8GatedMLP.from_linears: {name} must be an nn.Linear, got "
                                f"{type(lin)}")
            _check_linear_shapes("FP8GatedMLP.from_linears", name, lin)
        hidden, intermediate = gate_proj.in_features, gate_proj.out_features
        if (up_proj.in_features, up_proj.out_features) != (hidden, intermediate) or \
                (down_proj.in_features, down_proj.out_features) != (intermediate, hidden):
            raise ValueError(
                "FP8GatedMLP.from_linears: shapes must be gate_proj and up_proj [I, H], down_proj "
                f"[H, I]; got gate {tuple(gate_proj.weight.shape)}, up "
                f"{tuple(up_proj.weight.shape)}, down {tuple(down_proj.weight.shape)}")
        for name, lin in (("gate_proj", gate_proj), ("up_proj", up_proj),
                          ("down_proj", down_proj)):
            if lin.weight.dtype not in _QUANTISABLE:
                raise ValueError(f"FP8GatedMLP.from_linears: {name}'s weight dtype must be bf16, "
                                 f"fp16 or fp32, got {lin.weight.dtype}")
        biases = [lin.bias is not None for lin in (gate_proj, up_proj, down_proj)]
        if any(biases) and not all(biases):
            raise ValueError("FP8GatedMLP.from_linears: either all three linears have a bias or "
                             "none has")
        device = gate_proj.weight.device
        mod = cls(hidden, intermediate, bias=all(biases), device=device, out_dtype=out_dtype,
                  use_fast_accum=use_fast_accum, activation_scale_ub=activation_scale_ub,
                  intermediate_scale_ub=intermediate_scale_ub, pdl=pdl)
        gate_up = torch.cat([gate_proj.weight.detach(), up_proj.weight.detach().to(device)], 0)
        wq, ws = _OPS.quantize_fp8_row(gate_up.contiguous())
        mod.gate_up_weight.copy_(_OPS.preshuffle(wq))
        mod.gate_up_scale.copy_(ws)
        wq, ws = _OPS.quantize_fp8_row(down_proj.weight.detach().to(device).contiguous())
        mod.down_weight.copy_(_OPS.preshuffle(wq))
        mod.down_scale.copy_(ws)
        if all(biases):
            mod.gate_up_bias.copy_(torch.cat([gate_proj.bias, up_proj.bias.to(device)]).float())
            mod.down_bias.copy_(down_proj.bias.float())
        return mod

    @classmethod
    def from_module(cls, mlp, names=("gate_proj", "up_proj", "down_proj"), **kwargs):
        """From a module holding the three linears under `names` (Llama's LlamaMLP layout);
        kwargs go to from_linears (e.g. pdl)."""
        return cls.from_linears(*(getattr(mlp, n) for n in names), **kwargs)

    def _preshuffled(self):
        return (("gate_up_weight", "gate_up_scale", 2 * self.intermediate, self.hidden),
                ("down_weight", "down_scale", self.hidden, self.intermediate))

    def forward(self, x):
        self._check_input(x, self.hidden, "hidden")
        lead = x.shape[:-1]
        gemm = _preshuffled_gemm(self.out_dtype, x.dtype)
        xq, xs = _OPS.quantize_fp8_row(x.reshape(-1, self.hidden).contiguous(),
                                       self.activation_scale_ub, pdl=self.pdl)
        # prefetch_w is safe: the weights are buffers preshuffled at construction, and each GEMM
        # follows a quantisation kernel, which lets it start only after its own grid-dependency
        # wait, so no kernel still running then writes the weight. Without PDL it changes
        # nothing.
        if xq.shape[0] >= self.FUSED_ACTIVATION_MIN_ROWS:
            h = _OPS.f8f8bf16_rowwise_preshuffled_silu_mul(
                xq, self.gate_up_weight, xs, self.gate_up_scale, self.gate_up_bias,
                self.use_fast_accum, pdl=self.pdl, prefetch_w=True)
            hq, hs = _OPS.quantize_fp8_row(h, self.intermediate_scale_ub, pdl=self.pdl)
        else:
            gate_up = gemm(xq, self.gate_up_weight, xs, self.gate_up_scale, self.gate_up_bias,
                           self.use_fast_accum, pdl=self.pdl, prefetch_w=True)
            hq, hs = _OPS.silu_mul_quantize_fp8_row(gate_up, self.intermediate_scale_ub,
                                                    pdl=self.pdl)
        y = gemm(hq, self.down_weight, hs, self.down_scale, self.down_bias, self.use_fast_accum,
                 pdl=self.pdl, prefetch_w=True)
        return self._output(y.view(*lead, self.hidden), x.dtype)

    def extra_repr(self):
        return (f"hidden={self.hidden}, intermediate={self.intermediate}, "
                f"bias={self.down_bias is not None}, use_fast_accum={self.use_fast_accum}, "
                f"pdl={self.pdl}, gate|up merged (N={2 * self.intermediate}), "
                f"weights preshuffled e4m3fn")


# After the modules: convert.py imports them from here.
from .convert import fuse_gate_up, swap_linears  # noqa: E402
