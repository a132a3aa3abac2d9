#!/usr/bin/env python3
"""The Markdown table of sustained runs (bench/sustained_clock.py) from their CSVs, as
docs/perf-log.md carries it (card 100): per shape each implementation's median µs a call over
its rounds, the best peer (bold), best peer / ours (f8gemm_preshuffled), the energy a call of
ours and of the best peer, and the SM clock of both; then the geometric mean of best peer / ours
and how many shapes reach --target.

Each CSV holds the rows of one or more runs of sustained_clock.py with their shape column (the
tool writes it since session 43; docs/bench/s43-h100-sustained-issue6.csv joins twelve runs).

Usage:
  python3 bench/sustained_table.py docs/bench/s43-h100-sustained-issue6.csv [--target 1.03]
"""

import argparse
import csv
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import peers  # noqa: E402  (input-file checks)

OURS = "f8gemm_preshuffled"
PEERS = ("torch_scaled_mm", "fbgemm_rowwise", "fbgemm_rowwise_batched", "triton")
HEADS = {"torch_scaled_mm": "torch._scaled_mm", "fbgemm_rowwise": "FBGEMM 2-D",
         "fbgemm_rowwise_batched": "FBGEMM batched", "triton": "Triton"}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv", nargs="+", help="sustained_clock.py CSVs")
    p.add_argument("--target", type=float, default=1.03,
                   help="best peer / ours that counts as met (default 1.03)")
    a = p.parse_args(argv)
    if not a.target > 0:
        p.error("--target must be positive")
    return a


def read_rows(paths):
    """Rows of every CSV, in order; a CSV without a shape column is refused by name."""
    rows = []
    for path in paths:
        with peers.open_input(path) as f:
            got = list(csv.DictReader(f))
        if not got or "shape" not in got[0]:
            sys.exit(f"{path}: no rows with a shape column (a CSV of bench/sustained_clock.py "
                     "from before session 43 lacks it)")
        rows += got
    return rows


def cell(us):
    """A table cell of µs, or "-" where the implementation did not run."""
    return "-" if us is None else f"{us:.1f}"


def table(rows, target):
    """(lines, geometric mean, shapes at or above target, shapes) of the rows."""
    head = ("| B,M,N,K | ours | " + " | ".join(HEADS[p] for p in PEERS)
            + " | best peer / ours | ours mJ | best peer mJ | ours / peer MHz |")
    lines = [head, "|" + "---|" * (len(PEERS) + 6)]
    ratios = []
    for shape in dict.fromkeys(r["shape"] for r in rows):
        mine = [r for r in rows if r["shape"] == shape]

        def med(impl, key):
            vals = [float(r[key]) for r in mine if r["impl"] == impl]
            return statistics.median(vals) if vals else None
        us = {i: med(i, "us_per_call") for i in (OURS,) + PEERS}
        ran = {p: us[p] for p in PEERS if us[p] is not None}
        if not us[OURS] or not ran:
            # Kept in the table, out of the mean: ours or every peer did not run.
            lines.append(f"| {shape} | {cell(us[OURS])} | "
                         + " | ".join(cell(us[p]) for p in PEERS) + " | - | - | - | - |")
            continue
        best = min(ran, key=ran.get)
        ratio = ran[best] / us[OURS]
        ratios.append(ratio)
        cells = [f"**{cell(us[p])}**" if p == best else cell(us[p]) for p in PEERS]
        lines.append(f"| {shape} | {us[OURS]:.1f} | " + " | ".join(cells)
                     + f" | {ratio:.3f} | {med(OURS, 'mj_per_call'):.1f} | "
                     f"{med(best, 'mj_per_call'):.1f} | {med(OURS, 'sm_mhz'):.0f} / "
                     f"{med(best, 'sm_mhz'):.0f} |")
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else float("nan")
    # Counted as printed (three places), so that a row that reads 1.030 counts at 1.03.
    return lines, geo, sum(round(r, 3) >= target for r in ratios), len(ratios)


def main(argv):
    a = parse_args(argv)
    rows = read_rows(a.csv)
    lines, geo, met, n = table(rows, a.target)
    print("\n".join(lines))
    shapes = len(dict.fromkeys(r["shape"] for r in rows))
    print(f"\ngeometric mean of best peer / ours over {n} shapes: {geo:.3f}; "
          f"at least {a.target:g} on {met} of {n}"
          + (f"; {shapes - n} shape(s) without ours or a peer are left out" if shapes > n else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
