"""Every op checks its arguments (dtype, shape, contiguity, device) before it allocates its
outputs, so that a call its checks refuse raises their ValueError, not the allocator's
RuntimeError for an output sized by inputs that could never run. The inputs here are CPU
tensors of a few MiB at most: the large logical shapes come from expand(), which allocates one
element, and the outputs they imply are past what the process may allocate (2^51 bytes, past any
process's address space, for the quantising and weight-layout ops; 64 to 128 GiB for the
GEMMs, whose index limits cap the output at 2^36 elements, run in a child process whose address
space is capped at 16 GiB)."""

import helpers
from helpers import pytest

import torch  # noqa: E402

import f8gemm  # noqa: E402,F401  (loads the ops)

OPS = torch.ops.f8gemm
E4M3 = torch.float8_e4m3fn


def _expanded(*shape, dtype=torch.float32):
    """A tensor of `shape` that holds one element (every stride 0)."""
    return torch.empty((1,) * len(shape), dtype=dtype).expand(*shape)


# (id, call, the op's message). Row counts stay within the ops' INT32_MAX rows, K within
# nothing: the outputs are 2^51 bytes.
ROW_AND_WEIGHT_CASES = [
    ("quantize_fp8_row",
     lambda: OPS.quantize_fp8_row(_expanded(2**31 - 1, 2**20)),
     r"^f8gemm\.quantize_fp8_row: invalid argument: a must be contiguous$"),
    ("silu_mul_quantize_fp8_row",
     lambda: OPS.silu_mul_quantize_fp8_row(_expanded(2**31 - 1, 2**21)),
     r"^f8gemm\.silu_mul_quantize_fp8_row: invalid argument: gate_up must be contiguous$"),
    ("preshuffle",
     lambda: OPS.preshuffle(_expanded(2**26, 2**25, dtype=E4M3)),
     r"^f8gemm\.preshuffle: invalid argument: WQ must be contiguous$"),
    ("unshuffle",  # K = 2^25: ceil(K / 128) = 2^18 k-blocks of 2^23 slabs, N = 2^26
     lambda: OPS.unshuffle(_expanded(2**18, 2**23, 1024, dtype=E4M3), 2**25),
     r"^f8gemm\.unshuffle: invalid argument: WQ_shuffled must be contiguous$"),
]


@pytest.mark.parametrize("name, call, message", ROW_AND_WEIGHT_CASES,
                         ids=[c[0] for c in ROW_AND_WEIGHT_CASES])
def test_an_expanded_input_is_refused_before_its_output_is_allocated(name, call, message):
    with pytest.raises(ValueError, match=message):
        call()


# M = N = 2^18, K = 16: 2^30 tiles of 8 x 8, the most the GEMMs take, and a bf16 output of
# 128 GiB (64 GiB for the SiLU·mul epilogue's N / 2 columns); each input is at most 4 MiB.
M = N = 2**18
K = 16
GROUP_ROWS = M - 8  # the grouped limit: (rows / 8 + G) * N / 8 <= 2^30 with G = 1


def _fp8(*shape):
    return torch.empty(*shape, dtype=E4M3)


def _f32(*shape):
    return torch.empty(*shape, dtype=torch.float32)


def _preshuffled(n, k):
    """A preshuffled weight's shape for N x K (the values are not read)."""
    return _fp8((k + 127) // 128, n // 8, 1024)


GEMM_CASES = [
    ("f8f8bf16_rowwise",
     lambda x: OPS.f8f8bf16_rowwise(x, _fp8(N, K), _f32(M), _f32(N))),
    ("f8f8f16_rowwise",
     lambda x: OPS.f8f8f16_rowwise(x, _fp8(N, K), _f32(M), _f32(N))),
    ("f8f8bf16_rowwise_preshuffled",
     lambda x: OPS.f8f8bf16_rowwise_preshuffled(x, _preshuffled(N, K), _f32(M), _f32(N))),
    ("f8f8bf16_rowwise_silu_mul",
     lambda x: OPS.f8f8bf16_rowwise_silu_mul(x, _fp8(N, K), _f32(M), _f32(N))),
    ("f8f8bf16_rowwise_batched",  # B = 2 of M / 2 rows: the same tiles
     lambda x: OPS.f8f8bf16_rowwise_batched(x.view(2, M // 2, K), _fp8(2, N, K),
                                            _f32(2, M // 2), _f32(2, N))),
    ("f8f8bf16_rowwise_grouped_stacked",
     lambda x: OPS.f8f8bf16_rowwise_grouped_stacked(
         x[:GROUP_ROWS], _fp8(1, N, K), _f32(GROUP_ROWS), _f32(1, N),
         torch.zeros(1, dtype=torch.int64))),
    ("f8f8bf16_rowwise_grouped_dynamic",
     lambda x: OPS.f8f8bf16_rowwise_grouped_dynamic(
         x[:GROUP_ROWS].view(1, GROUP_ROWS, K), _fp8(1, N, K), _f32(1, GROUP_ROWS),
         _f32(1, N), torch.zeros(1, dtype=torch.int64))),
]


# A CPU output of 64-128 GiB is only reserved, not touched, so on a host with that much memory
# an allocation before the checks would go unseen: each GEMM case runs in a child process whose
# address space is capped at 16 GiB (the review of session 42), where such an allocation fails
# with the allocator's RuntimeError and the case with it.
_LIMITED_CHILD = r"""
import resource, sys
limit = 16 << 30
hard = resource.getrlimit(resource.RLIMIT_AS)[1]
resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
sys.path.insert(0, sys.argv[3])
import test_checks_before_allocation as t
call = dict((c[0], c[1]) for c in t.GEMM_CASES)[sys.argv[1]]
x = t._fp8(t.M, t.K) if sys.argv[2] == "cpu" else t._expanded(t.M, t.K, dtype=t.E4M3)
try:
    call(x)
    print("no exception")
except Exception as e:
    print(type(e).__name__ + ": " + str(e).splitlines()[0])
"""


def _limited(name, kind):
    """The first line of what the case raised, run with a 16 GiB address space."""
    import os
    import subprocess
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run([sys.executable, "-c", _LIMITED_CHILD, name, kind, here],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("name, call", GEMM_CASES, ids=[c[0] for c in GEMM_CASES])
def test_a_cpu_gemm_is_refused_before_its_output_is_allocated(name, call):
    """The library's placement rule (the GEMMs run on a GPU only) comes before the output."""
    assert _limited(name, "cpu") == (f"ValueError: f8gemm.{name}: invalid argument: XQ must be in "
                                     "GPU memory, got host memory")


@pytest.mark.parametrize("name, call", GEMM_CASES, ids=[c[0] for c in GEMM_CASES])
def test_an_expanded_gemm_input_is_refused_before_the_output_is_allocated(name, call):
    import re
    line = _limited(name, "expanded")
    assert re.fullmatch(rf"ValueError: f8gemm\.{name}: invalid argument: XQ must be contiguous "
                        r"\(row-major\), got shape \[.*\] with other strides", line), line


def test_a_misaligned_weight_is_refused_with_the_librarys_message():
    """preshuffle and unshuffle take 16-byte-aligned weights: the library's rule, checked by the
    ops before their output exists, says what the library says."""
    flat = torch.zeros(8 * 16 + 16, dtype=E4M3)
    with pytest.raises(ValueError, match=r"^f8gemm\.preshuffle: invalid argument: WQ must be "
                                         r"16-byte aligned$"):
        OPS.preshuffle(flat[1:1 + 8 * 16].view(8, 16))
    flat = torch.zeros(1024 + 16, dtype=E4M3)
    with pytest.raises(ValueError, match=r"^f8gemm\.unshuffle: invalid argument: WQ_shuffled must "
                                         r"be 16-byte aligned$"):
        OPS.unshuffle(flat[1:1 + 1024].view(1, 1, 1024), 16)


def test_quantize_refuses_a_given_output_with_the_librarys_message():
    """A caller's output that the library would refuse (here: not contiguous) is refused before
    the scales are allocated, with the library's message; a good one is written."""
    a = torch.randn(4, 16)
    with pytest.raises(ValueError, match=r"^f8gemm\.quantize_fp8_row: invalid argument: output "
                                         r"must be contiguous$"):
        OPS.quantize_fp8_row(a, output=torch.empty(16, 4, dtype=E4M3).t())
    q, scale = OPS.quantize_fp8_row(a, output=torch.empty(4, 16, dtype=E4M3))
    assert q.shape == (4, 16) and scale.shape == (4,)
