#!/usr/bin/env python3
"""Runs the f8gemm PyTorch tests: with pytest when it is installed, else (or with --mini) with a
minimal runner that imports each test module, expands mark.parametrize and calls every test_*
function. test_cpu_ops and the CPU parts of test_interop run anywhere; the other test modules
skip themselves without an sm_90 GPU (test_tp without two).

    python3 python/tests/run_all.py            # pytest -q -rs python/tests, or the mini runner
    python3 python/tests/run_all.py --mini     # the mini runner even if pytest is installed
    python3 python/tests/run_all.py --mini test_ops test_errors   # some modules only
"""

import importlib
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

MODULES = ["test_cpu_ops", "test_interop", "test_ops", "test_errors", "test_compile", "test_graphs",
           "test_fp8linear", "test_fused", "test_silu_mul_gemm", "test_pdl", "test_grouped",
           "test_tp", "test_nn_conversion", "test_meta_parity", "test_bench_tools",
           "test_checks_before_allocation"]


def _is_skip(exc):
    return type(exc).__name__ == "Skipped"


def _mini(modules):
    import _minipytest
    passed = failed = skipped = 0
    for name in modules:
        try:
            mod = importlib.import_module(name)
        except BaseException as e:  # noqa: B902  (pytest's Skipped is a BaseException)
            if isinstance(e, KeyboardInterrupt):
                raise
            if _is_skip(e):
                print(f"SKIPPED {name}: {e}")
                skipped += 1
            else:
                print(f"ERROR   {name}: import failed")
                traceback.print_exc()
                failed += 1
            continue
        for attr, fn in list(vars(mod).items()):
            if not attr.startswith("test_") or not callable(fn):
                continue
            for kwargs in _minipytest.expand(fn):
                label = f"{name}::{attr}" + (f"{kwargs}" if kwargs else "")
                start = time.perf_counter()
                try:
                    fn(**kwargs)
                except BaseException as e:  # noqa: B902
                    if isinstance(e, KeyboardInterrupt):
                        raise
                    if _is_skip(e):
                        skipped += 1
                        print(f"SKIPPED {label}: {e}")
                    else:
                        failed += 1
                        print(f"FAILED  {label}")
                        traceback.print_exc()
                    continue
                passed += 1
                print(f"PASSED  {label} ({time.perf_counter() - start:.2f} s)")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


def main(argv):
    mini = "--mini" in argv
    names = [a for a in argv if not a.startswith("-")]
    if not mini:
        try:
            import pytest
        except ImportError:
            pytest = None
        if pytest is not None:
            targets = [os.path.join(HERE, n if n.endswith(".py") else n + ".py") for n in names]
            return pytest.main(["-q", "-rs"] + (targets or [HERE]))
    return _mini(names or MODULES)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
