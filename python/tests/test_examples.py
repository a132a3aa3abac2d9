"""The examples refuse sizes they cannot run in one argparse line (exit 2), before they look for a
GPU: examples/llama_mlp.py and examples/moe_layer.py, run as a user runs them."""

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
