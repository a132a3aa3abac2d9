#!/usr/bin/env python3
"""Draws graph_us / floor per shape and implementation from `f8gemm bench` and peers.py CSVs.

  python3 bench/plot.py bench.csv peers.csv --out bench.png

One group of bars per shape (B,M,N,K), one bar per implementation (ours first), a line at 1.0
(the floor), and an 'x' at the bottom where an implementation is unsupported or failed. A peer
whose package was missing on every row (status "unavailable", e.g. FBGEMM gen_ai) keeps its
legend entry, marked so, and draws nothing. The title carries BW and PEAK from the first CSV's
ceiling rows.
"""

import argparse
import csv
import math
import sys

import peers  # bench/peers.py, beside this file: its input and output path checks

OURS = ["f8gemm_preshuffled", "f8gemm_plain"]
CEILINGS = ("ceiling_bw", "ceiling_peak")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv", nargs="+", help="CSV files in the columns of `f8gemm bench`")
    p.add_argument("--out", default="bench.png", help="output PNG (default bench.png)")
    p.add_argument("--title", default="", help="text put before the ceilings in the title")
    return p.parse_args(argv)


def number(text):
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def load(paths):
    """Returns (shapes in first-seen order, impls ours-first, {(shape, impl): ratio or None},
    bw, peak, impls whose every row is "unavailable"). A later row for the same (shape, impl)
    replaces an earlier one."""
    shapes, impls, cells, statuses = [], [], {}, {}
    bw = peak = None
    for path in paths:
        with peers.open_input(path) as f:
            for row in csv.DictReader(f):
                impl = (row.get("impl") or "").strip()
                if impl == "ceiling_bw":
                    bw = bw if bw is not None else number(row.get("tbps"))
                    continue
                if impl == "ceiling_peak":
                    peak = peak if peak is not None else number(row.get("tflops"))
                    continue
                if not impl:
                    continue
                shape = ",".join((row.get(c) or "").strip() for c in ("b", "m", "n", "k"))
                if shape not in shapes:
                    shapes.append(shape)
                if impl not in impls:
                    impls.append(impl)
                status = (row.get("status") or "").strip()
                cells[(shape, impl)] = number(row.get("graph_ratio")) if status == "ok" else None
                statuses[(shape, impl)] = status
    impls = [i for i in OURS if i in impls] + [i for i in impls if i not in OURS]
    unavailable = {i for i in impls
                   if all(st.startswith("unavailable") for (_, im), st in statuses.items()
                          if im == i)}
    return shapes, impls, cells, bw, peak, unavailable


def main(argv):
    args = parse_args(argv)
    shapes, impls, cells, bw, peak, unavailable = load(args.csv)
    if not shapes or not impls:
        raise SystemExit("plot.py: no result rows in " + ", ".join(args.csv))
    peers.check_output(args.out, "PNG")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    drawn = [i for i in impls if i not in unavailable]
    width = 0.8 / max(1, len(drawn))
    fig, ax = plt.subplots(figsize=(max(9.0, 1.1 * len(shapes) + 4.0), 5.5))
    values = [v for v in cells.values() if v is not None]
    # A log axis once ratios span more than 10x (a Python loop at small M can sit 10x off the
    # floor while the best kernels sit near 1).
    log = bool(values) and max(values) / max(min(values), 1e-9) > 10.0
    bottom = 0.5 * min(min(values), 1.0) if (log and values) else 0.0
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for j, impl in enumerate(drawn):
        color = colors[j % len(colors)]
        # Past the colour cycle (10 colours), hatching tells repeated colours apart.
        hatch = "//" if j >= len(colors) else None
        xs, ys, missing = [], [], []
        for i, shape in enumerate(shapes):
            x = i - 0.4 + width * (j + 0.5)
            if (shape, impl) not in cells:
                continue  # not measured at all: leave the slot empty
            v = cells[(shape, impl)]
            if v is None:
                missing.append(x)
            else:
                xs.append(x)
                ys.append(v)
        ax.bar(xs, ys, width=width * 0.95, label=impl, color=color, hatch=hatch,
               edgecolor="black" if impl in OURS else None, linewidth=0.6)
        if missing:
            y_mark = bottom * 1.15 if log else 0.0
            ax.plot(missing, [y_mark] * len(missing), "x", color=color, markersize=8,
                    markeredgewidth=2, clip_on=False)
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1.0, label="floor")
    if log:
        ax.set_yscale("log")
        ax.set_ylim(bottom=bottom)
    else:
        ax.set_ylim(bottom=0.0)
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels(shapes, rotation=30, ha="right")
    ax.set_xlabel("B,M,N,K  (x: unsupported or failed)")
    ax.set_ylabel("graph-replay time / floor")
    ceil = []
    if bw is not None:
        ceil.append(f"BW {bw:.2f} TB/s")
    if peak is not None:
        ceil.append(f"PEAK {peak:.0f} TFLOP/s")
    title = "FP8 rowwise batched GEMM, time / max(bytes/BW, flops/PEAK)"
    if args.title or ceil:
        title += "\n" + " ".join(t for t in [args.title, ", ".join(ceil)] if t)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    for impl in (i for i in impls if i in unavailable):
        handles.append(Patch(facecolor="none", edgecolor="gray", linestyle="--"))
        labels.append(impl + " (unavailable)")
    ax.legend(handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              borderaxespad=0.0)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}: {len(shapes)} shapes, {len(impls)} implementations")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
