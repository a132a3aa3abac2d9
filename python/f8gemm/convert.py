"""Converting a model in place: swap_linears (each nn.Linear becomes an FP8Linear) and
fuse_gate_up (each gated MLP block becomes an FP8GatedMLP); f8gemm.nn re-exports both.

Both find every candidate and check it before replacing any, so a refused model is left exactly
as it was, and the error names each refused module by its qualified path (as named_modules()
gives it). The check runs the real constructor on meta-device twins of the linears: the same
rules as the conversion, with no memory and no kernel.
"""

import warnings

import torch

from .nn import FP8GatedMLP, FP8Linear

__all__ = ["swap_linears", "fuse_gate_up"]

# torch modules whose forward hands their child linears' weights to a fused kernel instead of
# calling the linears: nn.MultiheadAttention passes out_proj.weight to its attention, and
# nn.TransformerEncoderLayer's eval-mode fast path passes linear1's and linear2's (and
# out_proj's) weights to one kernel. A preshuffled FP8 weight there fails far from the swap, with
# an error that does not say why, so nothing inside them is replaced.
_READS_CHILD_WEIGHTS = (torch.nn.MultiheadAttention, torch.nn.TransformerEncoderLayer)


def _is_plain_linear(module):
    # Exactly nn.Linear, no subclass: FP8Linear computes x @ W^T + b and nothing more, while a
    # subclass may do more in its forward (a LoRA adapter's extra path, a tensor-parallel
    # collective, a weight cast) or have its weight read by its owner (MHA's out_proj is a
    # NonDynamicallyQuantizableLinear): a swap would drop that silently or break it opaquely.
    return type(module) is torch.nn.Linear


def _find(module, match, prefix="", seen=None):
    """[(qualified name, parent, attribute name, child)] for the modules below module for which
    match(attribute name, child) is true, looking inside neither those nor _READS_CHILD_WEIGHTS.
    Every attribute that holds a module counts (named_children() names a shared one once), and a
    shared parent's children are listed once."""
    found = []
    seen = set() if seen is None else seen
    if isinstance(module, _READS_CHILD_WEIGHTS) or id(module) in seen:
        return found
    seen.add(id(module))
    for name, child in module._modules.items():
        if child is None:
            continue
        if match(name, child):
            found.append((prefix + name, module, name, child))
        else:
            found += _find(child, match, prefix + name + ".", seen)
    return found


def _meta_twin(linear):
    """An nn.Linear of linear's shape, dtypes and bias on the meta device (no memory)."""
    twin = torch.nn.Linear(linear.in_features, linear.out_features,
                           bias=linear.bias is not None, device="meta")
    twin.weight = torch.nn.Parameter(torch.empty_like(linear.weight, device="meta"),
                                     requires_grad=False)
    if linear.bias is not None:
        twin.bias = torch.nn.Parameter(torch.empty_like(linear.bias, device="meta"),
                                       requires_grad=False)
    return twin


def _refusal(build, linears):
    """Why build(*linears) would fail, found on their meta twins, or None."""
    try:
        build(*(_meta_twin(lin) for lin in linears))
    except Exception as e:  # noqa: BLE001  (whatever the real build would raise)
        return f"{type(e).__name__}: {e}"
    return None


def _check(what, todo, linears_of, build, skip_incompatible):
    """todo without the entries that build refuses: ValueError naming them all, or (with
    skip_incompatible) a warning naming them."""
    refused, kept = [], []
    for entry in todo:
        reason = _refusal(build, linears_of(entry[3]))
        if reason is None:
            kept.append(entry)
        else:
            refused.append(f"{entry[0]} ({type(entry[3]).__name__}): {reason}")
    if refused and not skip_incompatible:
        raise ValueError(f"{what}: nothing was replaced; these modules cannot be converted:\n  "
                         + "\n  ".join(refused) + "\nLeave them out with filter_fn, or pass "
                         "skip_incompatible=True to convert the others")
    if refused:
        warnings.warn(f"{what}: left these modules as they are (skip_incompatible=True):\n  "
                      + "\n  ".join(refused), stacklevel=3)
    return kept


def _replace(what, todo, convert):
    """setattr(parent, name, convert(child)) for each entry of todo, one at a time, so that each
    original can be freed as soon as it is replaced; a module found in several places becomes
    one converted module in all of them."""
    done = {}  # id(original) -> converted; every original stays alive while todo holds it
    todo = todo[::-1]
    count = 0
    while todo:
        path, parent, name, child = todo.pop()
        new = done.get(id(child))
        if new is None:
            try:
                new = convert(child)
            except Exception as e:
                # Everything checkable was checked before: this is out of memory, a CUDA error.
                if hasattr(e, "add_note"):  # Python 3.11+
                    e.add_note(f"{what}: converting {path} failed after {count} modules before "
                               "it had been replaced")
                raise
            # The replacement keeps the original's mode: a model put in eval mode before the
            # conversion stays in it (a new module starts in training mode).
            new.train(child.training)
            done[id(child)] = new
        setattr(parent, name, new)
        count += 1


def swap_linears(module, filter_fn=None, skip_incompatible=False, **kwargs):
    """Replaces, in place and recursively, every nn.Linear below module (for which
    filter_fn(name, linear) is true, if given; name is its attribute name in its parent) by
    FP8Linear.from_linear(linear, **kwargs) (e.g. use_fast_accum, activation_scale_ub, pdl).
    Returns module.

    Only modules of type exactly nn.Linear are replaced: a subclass may compute more than
    x @ W^T + b, or have its weight read by its owner. Nothing inside an nn.MultiheadAttention
    or nn.TransformerEncoderLayer is replaced (their forward passes the linears' weights to
    fused kernels). A linear used in several places becomes one FP8Linear used in all of them.

    Every candidate is checked before any is replaced. If some cannot become an FP8Linear
    (in_features not a multiple of 16, out_features not one of 8, a weight not in bf16, fp16 or
    fp32), ValueError names each by its qualified path (e.g. "model.layers.3.mlp.router") with
    the reason, and nothing is replaced. With skip_incompatible=True those stay nn.Linear, the
    others are converted, and one warning names the ones left. Bad kwargs raise before anything
    is replaced. Only an unforeseen failure during the conversion itself (out of memory) can
    leave the model partly converted: the linears are converted one at a time, so that each
    original can be freed as it goes.
    """
    FP8Linear.from_linear(torch.nn.Linear(16, 8, device="meta"), **kwargs)  # kwargs, once
    todo = _find(module, lambda name, child: _is_plain_linear(child) and
                 (filter_fn is None or filter_fn(name, child)))
    todo = _check("swap_linears", todo, lambda lin: (lin,),
                  lambda lin: FP8Linear.from_linear(lin, **kwargs), skip_incompatible)
    _replace("swap_linears", todo, lambda lin: FP8Linear.from_linear(lin, **kwargs))
    return module


def _silu_or_why_not(block, act_name):
    """None if block's activation is known to be SiLU, else why it is not known to be."""
    act = getattr(block, act_name, None)
    if isinstance(act, torch.nn.SiLU) or act is torch.nn.functional.silu:
        return None
    if act is None:
        return (f"it has no {act_name!r}, so its activation is unknown (pass act_name= if the "
                "block holds its SiLU under another name)")
    return f"its {act_name} is {act!r}, not SiLU"


def fuse_gate_up(module, names=("gate_proj", "up_proj", "down_proj"), filter_fn=None,
                 skip_incompatible=False, act_name="act_fn", **kwargs):
    """Replaces, in place and recursively, every submodule of module (module itself excluded)
    that holds nn.Linear children (of exactly that type, as in swap_linears) under `names`
    (gate, up, down) by FP8GatedMLP.from_module. filter_fn(name, submodule), if given, must also
    be true. kwargs go to FP8GatedMLP.from_linears (e.g. pdl, True by default there). Returns
    module. Use swap_linears afterwards for the linears that remain.

    FP8GatedMLP computes down(SiLU(gate(x)) * up(x)), so a block is fused only if its attribute
    `act_name` (default "act_fn") is known to be SiLU: an nn.SiLU module (HF's ACT2FN["silu"] is
    one) or torch.nn.functional.silu. A block without that attribute (its activation inline or
    under another name) or with another activation is left alone, and one warning names each
    such block with the reason: fusing a GELU block as SiLU would silently change its results.
    Beyond the activation, the block's forward is taken to be that formula.

    Every candidate is checked before any is replaced: if FP8GatedMLP cannot take some (hidden
    or intermediate not a multiple of 16, shapes that do not match, a bias on some of the three
    only), ValueError names each by its qualified path with the reason, and nothing is
    replaced; with skip_incompatible=True those are left alone, the others fused, and one
    warning names the ones left. Bad kwargs raise before anything is replaced.
    """
    meta = [torch.nn.Linear(16, 16, bias=False, device="meta") for _ in range(3)]
    FP8GatedMLP.from_linears(*meta, **kwargs)  # kwargs, once
    blocks = _find(module, lambda name, child: all(
        _is_plain_linear(getattr(child, n, None)) for n in names) and
        (filter_fn is None or filter_fn(name, child)))
    todo, unknown = [], []
    for entry in blocks:
        why = _silu_or_why_not(entry[3], act_name)
        if why is None:
            todo.append(entry)
        else:
            unknown.append(f"{entry[0]} ({type(entry[3]).__name__}): {why}")
    if unknown:
        warnings.warn("fuse_gate_up: left these blocks alone, FP8GatedMLP computes "
                      "down(SiLU(gate(x)) * up(x)):\n  " + "\n  ".join(unknown), stacklevel=2)
    todo = _check("fuse_gate_up", todo, lambda block: [getattr(block, n) for n in names],
                  lambda *lins: FP8GatedMLP.from_linears(*lins, **kwargs), skip_incompatible)
    _replace("fuse_gate_up", todo,
             lambda block: FP8GatedMLP.from_module(block, names, **kwargs))
    return module
