#!/usr/bin/env python3
"""The peer table of one run, in Markdown, from the CSVs that `f8gemm bench` and peers.py wrote.

  python3 bench/peer_table.py --shapes bench/shapes-large.txt --runs bench-1.csv bench-2.csv \\
      --peers peers.csv [--precise bench-precise.csv] [--chained bench-chained.csv]

One row per shape: ours (preshuffled and plain, each run), every peer of peers.csv, cuBLASLt
(the rows of the bench runs), the best peer, best peer / ours, ours / floor, and where given
precise / fast (the precise run over the last fast run) and the chained run (µs, x floor, best
peer / it). "ours" is the mean of the runs' preshuffled times; the best peer is the fastest
peer column, cuBLASLt's mean included. floor = max(bytes / BW, flops / PEAK), where PEAK is the
highest FP8 rate measured in the run by any implementation (a rate the bench marked "assumed"
does not count) and BW is the first run's copy rate (its ceiling_bw row). The last line gives
the geometric mean of best peer / ours over the shapes.
"""

import argparse
import csv
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import OURS, best_peer, read_graph_times, read_shapes, shape_cost  # noqa: E402

CUBLASLT = "cublaslt_rowwise"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", required=True, help="B,M,N,K per line (the run's shapes file)")
    p.add_argument("--runs", nargs="+", required=True, help="`f8gemm bench` CSVs of the run")
    p.add_argument("--peers", required=True, help="bench/peers.py CSV of the same run")
    p.add_argument("--precise", help="`f8gemm bench --precise` CSV of the same run")
    p.add_argument("--chained", help="`F8GEMM_PDL=1 f8gemm bench --prefetch-w` CSV")
    return p.parse_args(argv)


def number(text, path, what):
    try:
        value = float(text)
    except ValueError:
        raise SystemExit(f"{path}: {what} is not a number: {text!r}")
    return value if math.isfinite(value) else None


def measured_ceilings(paths):
    """(BW of the first file's ceiling_bw row, the highest non-assumed TFLOP/s of all rows)."""
    bw, peak = None, None
    for i, path in enumerate(paths):
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                status = (row.get("status") or "").strip()
                if i == 0 and row.get("impl") == "ceiling_bw" and row.get("tbps"):
                    bw = number(row["tbps"], path, "ceiling_bw's tbps")
                if status == "assumed" or not row.get("tflops"):
                    continue
                rate = number(row["tflops"], path, f"{row.get('impl')}'s tflops")
                if rate is not None and (peak is None or rate > peak):
                    peak = rate
    if bw is None or peak is None:
        raise SystemExit(f"{paths[0]}: no ceiling_bw row, or no measured TFLOP/s in the run")
    return bw, peak


def runs_cell(values):
    """One time per run, "/"-joined; "-" where a run has none."""
    return "/".join("-" if v is None else f"{v:.1f}" for v in values)


def times_of(times, shape, impl, path):
    if shape not in times or impl not in times[shape]:
        raise SystemExit(f"{path}: no {impl} row that ran for {','.join(map(str, shape))}")
    return times[shape][impl]


def table(args):
    """(lines of the Markdown table, geometric mean of best peer / ours)."""
    for path in [args.shapes, *args.runs, args.peers, args.precise, args.chained]:
        if path is not None and not os.path.isfile(path):
            raise SystemExit(f"{path}: no such file")
    shapes = read_shapes(args.shapes)
    runs = [read_graph_times(p) for p in args.runs]
    peers = read_graph_times(args.peers)
    precise = read_graph_times(args.precise) if args.precise else None
    chained = read_graph_times(args.chained) if args.chained else None
    bw, peak = measured_ceilings(args.runs + [args.peers])
    peer_cols = []
    for shape in shapes:
        for impl in peers.get(shape, {}):
            if impl not in OURS and impl != CUBLASLT and impl not in peer_cols:
                peer_cols.append(impl)
    head = ["B,M,N,K", "ours pre", "ours plain"] + peer_cols + [
        "cuBLASLt", "best peer", "best peer / ours", "ours / floor"]
    if precise is not None:
        head.append("precise / fast")
    if chained is not None:
        head.append("chained pre: µs, / floor, best peer / it")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    ratios = []
    for shape in shapes:
        _, _, floor_us = shape_cost(shape, bw, peak)
        pre = [times_of(r, shape, OURS[0], p) for r, p in zip(runs, args.runs)]
        plain = [r.get(shape, {}).get(OURS[1]) for r in runs]
        ours = sum(pre) / len(pre)
        row_peers = {impl: us for impl, us in peers.get(shape, {}).items() if impl not in OURS}
        lt = [r.get(shape, {}).get(CUBLASLT) for r in runs]
        if all(v is not None for v in lt):
            row_peers[CUBLASLT] = sum(lt) / len(lt)
        best = best_peer(row_peers)
        if best is None:
            raise SystemExit(f"{args.peers}: no peer ran for {','.join(map(str, shape))}")
        ratio = best[1] / ours
        ratios.append(ratio)
        cells = [",".join(map(str, shape)), runs_cell(pre), runs_cell(plain)]
        cells += ["-" if row_peers.get(c) is None else f"{row_peers[c]:.1f}" for c in peer_cols]
        cells += [runs_cell(lt) if row_peers.get(CUBLASLT) else "-",
                  f"{best[0]} {best[1]:.1f}", f"{ratio:.3f}", f"{ours / floor_us:.2f}"]
        if precise is not None:
            p = times_of(precise, shape, OURS[0], args.precise)
            cells.append(f"{p / pre[-1]:.3f}")
        if chained is not None:
            c = times_of(chained, shape, OURS[0], args.chained)
            cells.append(f"{c:.2f}, {c / floor_us:.2f}, {best[1] / c:.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    lines.append("")
    lines.append(f"PEAK {peak:.1f} TFLOP/s, BW {bw:.3f} TB/s; geometric mean of best peer / ours "
                 f"over {len(ratios)} shapes: {geo:.3f}")
    return lines, geo


def main(argv):
    lines, _ = table(parse_args(argv))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
