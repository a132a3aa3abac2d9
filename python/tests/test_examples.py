"""The examples refuse sizes they cannot run in one argparse line (exit 2), before they look for a
GPU: examples/llama_mlp.py and examples/moe_layer.py, run as a user runs them."""

import math
import os
import subprocess
import sys

import helpers
from helpers import pytest

import f8gemm  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(helpers.__file__), "..", "..", "examples")


def run_example(name, *args):
    # The examples put the checkout's python/ first on their path. Testing the installed package
    # (F8GEMM_TEST_INSTALLED), the checkout has no extension: they load the installed one.
    env = dict(os.environ)
    if helpers.INSTALLED and "F8GEMM_TORCH_LIB" not in env:
        env["F8GEMM_TORCH_LIB"] = os.path.dirname(os.path.abspath(f8gemm.__file__))
    return subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *args], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("example,args,message", [
    ("llama_mlp.py", ["--m", "0"], "--m: every row count must be >= 1"),
    ("llama_mlp.py", ["--m", "1", "-5"], "--m: every row count must be >= 1"),
    ("llama_mlp.py", ["--hidden", "4095"], "--hidden must be a positive multiple of 16"),
    ("llama_mlp.py", ["--intermediate", "0"], "--intermediate must be a positive multiple of 16"),
    ("llama_mlp.py", ["--iters", "0"], "--iters must be >= 1"),
    ("llama_mlp.py", ["--warmup", "-1"], "--warmup >= 0"),
    ("llama_mlp.py", ["--error-draws", "0"], "--error-draws must be >= 1"),
    ("moe_layer.py", ["--tokens", "0"], "--tokens: every token count must be >= 1"),
    ("moe_layer.py", ["--experts", "0"], "--experts must be >= 1"),
    ("moe_layer.py", ["--experts", "8", "--top-k", "9"], "--top-k between 1 and --experts"),
    ("moe_layer.py", ["--top-k", "0"], "--top-k between 1 and --experts"),
    ("moe_layer.py", ["--hidden", "100"], "--hidden must be a positive multiple of 16"),
    ("moe_layer.py", ["--zipf-s", "nan"], "--zipf-s must be a finite number >= 0"),
    ("moe_layer.py", ["--zipf-s", "-1"], "--zipf-s must be a finite number >= 0"),
    ("moe_layer.py", ["--iters", "0"], "--iters must be >= 1"),
])
def test_the_examples_refuse_bad_sizes(example, args, message):
    r = run_example(example, *args)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr.strip().splitlines()[-1], r.stderr


def _import_llama_mlp():
    # The example puts the checkout's python/ first on sys.path; restored after, so that the
    # other tests keep importing the package under test (f8gemm is already imported above).
    path = list(sys.path)
    sys.path.insert(0, EXAMPLES)
    try:
        import llama_mlp
    finally:
        sys.path[:] = path
    return llama_mlp


def close(got, want):
    return len(got) == len(want) and all(math.isclose(a, b, rel_tol=1e-12)
                                         for a, b in zip(got, want))


def test_the_mlp_example_pools_its_errors_over_draws():
    import torch

    mlp = _import_llama_mlp()
    x = torch.randn(2, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(3))

    def same(v):
        return v

    def one_percent_high(v):
        return v * 1.01

    def ragged(v):  # a different relative error on each draw
        return v + 0.05 * v.abs().max()

    # One draw: each block's ||y - ref|| / ||ref|| over the whole draw.
    errors, per_draw = mlp.pooled_errors(same, (one_percent_high, ragged), x, 1)
    expect = (ragged(x) - x).norm().item() / x.norm().item()
    assert close(errors, [0.01, expect]) and len(per_draw) == 1
    assert close(per_draw[0], [0.01, expect])
    # Three draws: the first is x, the others from the generator; the pool is the root of the
    # summed squared differences over the root of the summed squares, not a mean of ratios.
    g = torch.Generator().manual_seed(5)
    errors, per_draw = mlp.pooled_errors(same, (one_percent_high, ragged), x, 3, g)
    g.manual_seed(5)
    draws = [x] + [torch.randn(x.shape, generator=g, dtype=x.dtype) for _ in range(2)]
    num = sum((ragged(d) - d).square().sum().item() for d in draws)
    den = sum(d.square().sum().item() for d in draws)
    assert len(per_draw) == 3
    assert close(errors, [0.01, (num / den) ** 0.5])
    assert close([p[1] for p in per_draw],
                 [(ragged(d) - d).norm().item() / d.norm().item() for d in draws])
    # fused / swap draw by draw (the second error over the first)
    line = mlp.draw_line(16, [[0.02, 0.01], [0.04, 0.01], [0.01, 0.01]])
    assert line == ("M=16: fused / swap error over 3 draws of x: median 0.5000, range "
                    "0.2500-1.0000, fused lower in 2 of 3")
