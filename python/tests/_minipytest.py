"""A tiny stand-in for the parts of pytest these tests use (skip, raises, mark.parametrize), so
that run_all.py can run them where pytest is not installed."""

import itertools
import re


class Skipped(Exception):
    """Raised by skip(); run_all.py counts it as a skip."""


class _Raises:
    def __init__(self, expected, match=None):
        self.expected = expected
        self.match = match
        self.value = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            raise AssertionError(f"DID NOT RAISE {self.expected}")
        if not issubclass(exc_type, self.expected):
            return False  # a different exception propagates
        if self.match is not None and not re.search(self.match, str(exc)):
            raise AssertionError(f"Regex pattern {self.match!r} did not match {str(exc)!r}")
        self.value = exc
        return True


class _Mark:
    @staticmethod
    def parametrize(argnames, argvalues, ids=None):
        names = [n.strip() for n in argnames.split(",")] if isinstance(argnames, str) \
            else list(argnames)

        def decorate(fn):
            sets = getattr(fn, "_mini_params", [])
            values = [v if len(names) > 1 else (v,) for v in argvalues]
            fn._mini_params = [(names, values)] + sets
            return fn
        return decorate


class pytest:  # noqa: N801  (used as a module stand-in)
    mark = _Mark()

    @staticmethod
    def skip(reason="", allow_module_level=False):
        raise Skipped(reason)

    @staticmethod
    def raises(expected, match=None):
        return _Raises(expected, match)


def expand(fn):
    """All keyword-argument sets of a test function decorated with mark.parametrize (this
    module's, or real pytest's when it is installed but run_all.py --mini is used)."""
    sets = list(getattr(fn, "_mini_params", []))
    for mark in getattr(fn, "pytestmark", []):
        if getattr(mark, "name", "") == "parametrize":
            argnames, argvalues = mark.args[0], mark.args[1]
            names = [n.strip() for n in argnames.split(",")] if isinstance(argnames, str) \
                else list(argnames)
            sets.append((names, [v if len(names) > 1 else (v,) for v in argvalues]))
    if not sets:
        return [{}]
    out = []
    for combo in itertools.product(*[values for _, values in sets]):
        kwargs = {}
        for (names, _), vals in zip(sets, combo):
            kwargs.update(dict(zip(names, vals)))
        out.append(kwargs)
    return out
