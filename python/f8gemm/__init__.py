"""f8gemm for PyTorch: FP8 (e4m3fn) rowwise-scaled GEMMs for Hopper as torch.ops.f8gemm.*.

Importing this package loads the C++ extension (libf8gemm_torch.so) with
torch.ops.load_library. It is looked for, in order:

1. the path in the environment variable F8GEMM_TORCH_LIB (the .so file, or its folder);
2. next to this package: where `pip install --no-build-isolation .` puts it;
3. for developers running from a checkout: the repository's build folders, build*/ and the
   folders one level below them (the most recently built library wins).

A pip-installed package also records the torch and CUDA versions it was built against
(f8gemm.build_info); importing it into another torch version raises ImportError saying so.
`python -m f8gemm info` prints what the CLI's `f8gemm info` prints.

The ops (schemas follow FBGEMM/MSLK; XQ [..., K] e4m3fn, WQ [N, K] e4m3fn, fp32 scales):

    f8f8bf16_rowwise(XQ, WQ, x_scale, w_scale, bias=None, use_fast_accum=True) -> Tensor
    f8f8bf16_rowwise_out(XQ, WQ, x_scale, w_scale, output, bias=None, use_fast_accum=True)
    f8f8f16_rowwise(XQ, WQ, x_scale, w_scale, bias=None, use_fast_accum=True) -> Tensor
    f8f8bf16_rowwise_batched(XQ, WQ, x_scale, w_scale, bias=None, use_fast_accum=True,
                             output=None) -> Tensor
    ..._preshuffled variants of the four, taking preshuffle(WQ); f8f8bf16_rowwise_preshuffle
    and f8f8f16_rowwise_preshuffle are FBGEMM's ROCm names for ours (the layouts differ
    between vendors: WQ must come from f8gemm's preshuffle)
    x_scale may be XQ's leading shape, [M] or [M, 1]; w_scale [N], [N, 1] or [1, N]
    (batched: [B, M] or [B, M, 1]; [B, N], [B, N, 1] or [B, 1, N])
    preshuffle(WQ) -> Tensor;  unshuffle(WQ_shuffled, K) -> Tensor
    quantize_fp8_row(a, scale_ub=None, use_triton=True, output=None) -> (Tensor, Tensor)
    precompile(shape, layout='preshuffled', use_fast_accum=True, out_dtype=None,
               bias_dtype=None, device=None, epilogue='none', pdl=None, prefetch_w=False)
    precompile_grouped(shape, layout='preshuffled', padded=False, use_fast_accum=True,
                       bias_dtype=None, device=None)   (shape [G, total_M or M_max, N, K])
    silu_mul_quantize_fp8_row(gate_up, scale_ub=None) -> (Tensor, Tensor)
    f8f8bf16_rowwise_silu_mul(XQ, WQ, x_scale, w_scale, bias=None, use_fast_accum=True)
        -> Tensor [..., N/2]: WQ [N = 2I, K] is gate then up (torch.cat([gate, up])), and the
        epilogue computes SiLU(gate) * up in fp32 and rounds it once into bf16 (ours);
        f8f8bf16_rowwise_preshuffled_silu_mul takes preshuffle(WQ) and prefetch_w

Each of these but preshuffle, unshuffle and the precompiles takes an argument of ours after
FBGEMM's, pdl=None: programmatic dependent launch of its kernel (True), never (False), or the
F8GEMM_PDL switch (None; off when unset). Results do not depend on it. The grouped GEMMs below
keep FBGEMM's schemas, without it: they follow the switch.

The single preshuffled GEMMs (f8f8bf16_rowwise_preshuffled, f8f8bf16_rowwise_preshuffled_out,
f8f8f16_rowwise_preshuffled and the two ROCm names) take one more, last, prefetch_w=False. True
says that WQ is final: no kernel that may still be incomplete when the GEMM starts writes it
(usually the kernel just before it on the stream; if that one lets its dependents start before
its own wait, the ones before it too, back to one that does not: every f8gemm kernel lets them
start only after its wait). With PDL the GEMM then loads its first pipeline stages of WQ before
it waits for the previous kernel, in configurations outside 2x1 pairs that split K at most two
ways; elsewhere, and without PDL, it changes nothing (GemmOptions::prefetch_w). Weights
quantised and preshuffled once qualify (f8gemm.nn's modules pass True); a WQ written by the
kernel just before the GEMM does not.

Grouped (mixture-of-experts) GEMMs, FBGEMM's schemas; the group sizes stay on the GPU (no
sync, CUDA-graph safe) and are clamped there: a negative size counts as 0, groups are clipped
at total_M (or M_max). WQ [G, N, K] e4m3fn (or preshuffle(WQ) for the _preshuffled forms),
w_scale [G, N]:

    f8f8bf16_rowwise_grouped_stacked(XQ [total_M, K], WQ, x_scale [total_M], w_scale,
                                     M_sizes [G] int32/int64) -> [total_M, N]
        (rows outside every group are left unspecified, as in FBGEMM)
    f8f8bf16_rowwise_grouped_stacked_out(XQ, WQ, x_scale, w_scale, M_sizes, output, bias=None,
                                         use_fast_accum=True)   (rows outside stay untouched)
    f8f8bf16_rowwise_grouped_dynamic(XQ [G, M_max, K], WQ, x_scale [G, M_max], w_scale,
                                     zero_start_index_M [G], zeroing_output_tensor=True)
        -> [G, M_max, N]   (rows past each group's size: zeros, or unspecified if False)
    ..._preshuffled variants of the three

Errors: a bad argument raises ValueError naming it (dtype, shape, layout, device, K % 16, ...);
anything else (no sm_90 GPU, CUDA or compile failure, a compile needed during CUDA-graph
capture) raises RuntimeError.
"""

import glob
import operator
import os
import re
import sys

import torch

__all__ = [
    "f8f8bf16_rowwise",
    "f8f8bf16_rowwise_out",
    "f8f8f16_rowwise",
    "f8f8bf16_rowwise_batched",
    "f8f8bf16_rowwise_preshuffled",
    "f8f8bf16_rowwise_preshuffled_out",
    "f8f8f16_rowwise_preshuffled",
    "f8f8bf16_rowwise_batched_preshuffled",
    "f8f8bf16_rowwise_preshuffle",
    "f8f8f16_rowwise_preshuffle",
    "f8f8bf16_rowwise_silu_mul",
    "f8f8bf16_rowwise_preshuffled_silu_mul",
    "preshuffle",
    "unshuffle",
    "quantize_fp8_row",
    "f8f8bf16_rowwise_grouped_stacked",
    "f8f8bf16_rowwise_grouped_stacked_preshuffled",
    "f8f8bf16_rowwise_grouped_stacked_out",
    "f8f8bf16_rowwise_grouped_stacked_preshuffled_out",
    "f8f8bf16_rowwise_grouped_dynamic",
    "f8f8bf16_rowwise_grouped_dynamic_preshuffled",
    "precompile",
    "precompile_grouped",
    "library_path",
    "info",
    "PRESHUFFLE_LAYOUT_VERSION",
    "build_info",
    "__version__",
    "nn",
]

_LIB_NAME = "libf8gemm_torch.so"
_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))


def _find_library():
    env = os.environ.get("F8GEMM_TORCH_LIB")
    if env:
        path = os.path.join(env, _LIB_NAME) if os.path.isdir(env) else env
        if not os.path.isfile(path):
            raise ImportError(f"f8gemm: F8GEMM_TORCH_LIB={env!r} does not name {_LIB_NAME} or a "
                              "folder holding it")
        return path
    beside = os.path.join(_HERE, _LIB_NAME)
    if os.path.isfile(beside):
        return beside
    found = glob.glob(os.path.join(_REPO, "build*", _LIB_NAME))
    found += glob.glob(os.path.join(_REPO, "build*", "*", _LIB_NAME))
    if found:
        return max(found, key=os.path.getmtime)
    raise ImportError(
        f"f8gemm: {_LIB_NAME} not found (looked at $F8GEMM_TORCH_LIB, {beside} and "
        f"{os.path.join(_REPO, 'build*')} and the folders one level below). Build it with: "
        "cmake -S . -B build -G Ninja "
        "-DCMAKE_PREFIX_PATH=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') "
        "&& ninja -C build f8gemm_torch")


def _load_build_info():
    """The versions a pip-installed package was built against (None in a checkout)."""
    try:
        from . import _build_info
    except ImportError:
        return None
    return {"version": _build_info.VERSION, "torch": _build_info.TORCH_VERSION,
            "cuda": _build_info.CUDA_VERSION}


def _torch_mismatch(built, running):
    """Why a package built against torch `built` cannot load under torch `running`, or None.
    The build records torch.__version__ whole ("2.11.0+cu130", "2.12.0.dev20260101",
    "2.8.0a0+5228986c39.nv25.05"); a package built before that recorded major.minor.patch only,
    which the running version's part before "+" must then equal."""
    if not built or built in (running, running.split("+")[0]):
        return None
    return (f"f8gemm: this package was built against torch {built}, but torch {running} is "
            "imported; torch's C++ ABI differs between versions. Reinstall f8gemm with "
            "`pip install --no-build-isolation .` under this torch")


def _load_extension():
    """Finds and loads the extension; returns its path. ImportError saying why not."""
    path = _find_library()
    if build_info is not None and os.path.dirname(path) == _HERE:
        why = _torch_mismatch(build_info["torch"], str(torch.__version__))
        if why:
            raise ImportError(why)
    if hasattr(torch.ops.f8gemm, "f8f8bf16_rowwise"):  # loading twice would re-register
        return path
    try:
        torch.ops.load_library(path)
    except OSError as e:
        # The loader's error as the ImportError that `import` callers handle. torch re-raises
        # dlopen's failure as "Could not load this library", with dlerror's text as the cause.
        cause = e.__cause__ or e
        torch_build = (f"a CUDA {torch.version.cuda} build" if torch.version.cuda
                       else "a CPU-only build, which cannot load it")
        raise ImportError(
            f"f8gemm: cannot load {path}: {cause}. The extension needs a CUDA build "
            f"of torch (torch {torch.__version__} is {torch_build}), NVRTC's "
            "libnvrtc.so.13 (`pip install nvidia-cuda-nvrtc`: its site-packages/nvidia/cu13/lib "
            "is on the extension's RPATH; or the toolkit's, on LD_LIBRARY_PATH), and the torch "
            "it was built against (an undefined symbol means another torch)") from e
    return path


def _imported_by_module_cli():
    """True while `python -m f8gemm ...` imports this package before it runs f8gemm.__main__,
    which therefore cannot catch the package's ImportError. While Python locates the module of
    -m, sys.argv[0] is "-m" (documented with -m) and sys.argv[1:] are the module's arguments;
    sys.orig_argv holds the whole command line, where the token before those arguments names
    the module: "f8gemm" (or "f8gemm.__main__"), or "-mf8gemm" when written as one."""
    argv, orig = sys.argv, getattr(sys, "orig_argv", [])
    if argv[:1] != ["-m"] or len(orig) < len(argv):
        return False
    token = orig[len(orig) - len(argv)]
    # "-m" joined to its module, after other one-letter flags ("-Bmf8gemm"); not "-mfoomf8gemm".
    return re.fullmatch(r"(-[A-Za-ln-z]*m)?f8gemm(\.__main__)?", token) is not None


build_info = _load_build_info()
try:
    library_path = _load_extension()
except ImportError as e:
    if not _imported_by_module_cli():
        raise
    # `python -m f8gemm`: the reason on one line and exit status 2, as the CLI reports an
    # error, instead of the import's traceback.
    reason = " ".join(str(e).split("\n"))
    print(reason if reason.startswith("f8gemm: ") else f"f8gemm: {reason}", file=sys.stderr)
    sys.exit(2)

_ops = torch.ops.f8gemm
f8f8bf16_rowwise = _ops.f8f8bf16_rowwise
f8f8bf16_rowwise_out = _ops.f8f8bf16_rowwise_out
f8f8f16_rowwise = _ops.f8f8f16_rowwise
f8f8bf16_rowwise_batched = _ops.f8f8bf16_rowwise_batched
f8f8bf16_rowwise_preshuffled = _ops.f8f8bf16_rowwise_preshuffled
f8f8bf16_rowwise_preshuffled_out = _ops.f8f8bf16_rowwise_preshuffled_out
f8f8f16_rowwise_preshuffled = _ops.f8f8f16_rowwise_preshuffled
f8f8bf16_rowwise_batched_preshuffled = _ops.f8f8bf16_rowwise_batched_preshuffled
f8f8bf16_rowwise_preshuffle = _ops.f8f8bf16_rowwise_preshuffle
f8f8f16_rowwise_preshuffle = _ops.f8f8f16_rowwise_preshuffle
f8f8bf16_rowwise_silu_mul = _ops.f8f8bf16_rowwise_silu_mul
f8f8bf16_rowwise_preshuffled_silu_mul = _ops.f8f8bf16_rowwise_preshuffled_silu_mul
preshuffle = _ops.preshuffle
unshuffle = _ops.unshuffle
quantize_fp8_row = _ops.quantize_fp8_row
f8f8bf16_rowwise_grouped_stacked = _ops.f8f8bf16_rowwise_grouped_stacked
f8f8bf16_rowwise_grouped_stacked_preshuffled = _ops.f8f8bf16_rowwise_grouped_stacked_preshuffled
f8f8bf16_rowwise_grouped_stacked_out = _ops.f8f8bf16_rowwise_grouped_stacked_out
f8f8bf16_rowwise_grouped_stacked_preshuffled_out = \
    _ops.f8f8bf16_rowwise_grouped_stacked_preshuffled_out
f8f8bf16_rowwise_grouped_dynamic = _ops.f8f8bf16_rowwise_grouped_dynamic
f8f8bf16_rowwise_grouped_dynamic_preshuffled = _ops.f8f8bf16_rowwise_grouped_dynamic_preshuffled

# The preshuffled weight layout's version (README "Preshuffled weight layout"); FP8Linear's
# state_dict records it.
PRESHUFFLE_LAYOUT_VERSION = int(_ops.preshuffle_layout_version())
__version__ = build_info["version"] if build_info else None


def info():
    """What `f8gemm info` prints: library version, NVRTC, CUDA runtime, driver, cache, GPU."""
    return _ops.info()


def _resolve_device(device):
    """None, or the torch.device named, with a bare "cuda" pinned to the current CUDA device (a
    plan is per device)."""
    if device is None:
        return None
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return device


def _is_sequence(x):
    """A shape or a list of shapes: something with a length that iterates (a list, a tuple, a
    numpy array, a tensor of at least 1 dimension), but not a string."""
    if isinstance(x, (str, bytes)):
        return False
    try:
        len(x)
        iter(x)
    except TypeError:  # a number, None, a 0-dim tensor or array
        return False
    return True


def _shown(x):
    """x as the messages show it, on one line (a tensor's or an array's values as a list)."""
    return repr(x.tolist() if hasattr(x, "tolist") and _is_sequence(x) else x)


def _shape_list(shapes, op, form):
    """The shapes of precompile() (`op`; `form`: the shape as its docstring writes it): one shape
    (a sequence of integers, numpy's included, or a 1-D tensor, of any length: the op names a
    wrong one) or a sequence of such shapes, each as a list of ints (operator.index: a float
    size is a TypeError, not truncated); an empty sequence is no shapes (a model without FP8
    layers has none to build). Anything else: a TypeError or ValueError saying what was
    expected."""
    expected = f"one shape {form} of integers or a list of such shapes"
    if not _is_sequence(shapes):
        raise TypeError(f"f8gemm.{op}: shapes must be {expected}, got {type(shapes).__name__} "
                        f"{_shown(shapes)}")
    if len(shapes) == 0:
        return []
    nested = [_is_sequence(s) for s in shapes]
    if not any(nested):
        shapes = [shapes]  # one shape
    elif not all(nested):
        raise TypeError(f"f8gemm.{op}: shapes must be {expected}, got a mix of sizes and "
                        f"shapes: {_shown(shapes)}")
    out = []
    for shape in shapes:
        sizes = []
        for s in shape:
            try:
                sizes.append(operator.index(s))
            except TypeError as e:
                raise TypeError(f"f8gemm.{op}: every size of a shape must be an integer, got "
                                f"{_shown(s)} ({type(s).__name__}) in the shape {_shown(shape)} "
                                f"({e})") from None
        out.append(sizes)
    return out


def precompile(shapes, layout="preshuffled", use_fast_accum=True, out_dtype=torch.bfloat16,
               bias_dtype=None, device=None, epilogue="none", pdl=None, prefetch_w=False):
    """Compiles (disk-cached) and, on an sm_90 GPU, loads the kernels for these problems, so that
    calls with them compile nothing: required before capturing them in a CUDA graph.

    shapes: one or several (M, N, K) for the single ops (M = the product of XQ's leading
    dimensions, exactly as it will be called) or (B, M, N, K) for the batched ones.
    layout: 'preshuffled' (the _preshuffled ops) or 'plain'. out_dtype: torch.bfloat16 or
    torch.float16. bias_dtype: None (no bias), torch.float32 or torch.bfloat16. device: the CUDA
    device (default: the current one). epilogue: 'none', or 'silu_mul' for
    f8f8bf16_rowwise[_preshuffled]_silu_mul (N is then the merged gate|up weight's 2I rows).
    pdl, prefetch_w: what the single preshuffled ops will be called with. A call with
    prefetch_w=True and PDL on (pdl=True, or None with F8GEMM_PDL=1) has a plan of its own, as
    f8gemm.nn's modules make them (FP8GatedMLP: pdl=True by default); prefetch_w=True builds
    that plan for pdl=True, the ordinary one for pdl=False, and both for pdl=None.
    Each distinct combination is a separate kernel plan.
    """
    device = _resolve_device(device)
    for shape in _shape_list(shapes, "precompile", "(M, N, K) or (B, M, N, K)"):
        _ops.precompile(shape, layout, use_fast_accum, out_dtype, bias_dtype, device, epilogue,
                        pdl, prefetch_w)


def precompile_grouped(shapes, layout="preshuffled", padded=False, use_fast_accum=True,
                       bias_dtype=None, device=None):
    """precompile() for the grouped ops: shapes are one or several (G, total_M, N, K) for the
    stacked ops, or (G, M_max, N, K) with padded=True for the dynamic ones. Afterwards a call
    with that problem compiles nothing, whatever the group sizes: it may be captured in a CUDA
    graph and replayed with new sizes.
    """
    device = _resolve_device(device)
    form = "(G, total_M, N, K) or (G, M_max, N, K)"
    for shape in _shape_list(shapes, "precompile_grouped", form):
        _ops.precompile_grouped(shape, layout, padded, use_fast_accum, bias_dtype, device)


from . import nn  # noqa: E402  (needs the ops above)
