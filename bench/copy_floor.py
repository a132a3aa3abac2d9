#!/usr/bin/env python3
"""A device copy that moves the same bytes as each shape's GEMM, timed as the bench times ours.

The floor of `f8gemm bench` and bench/peers.py is max(bytes / BW, flops / PEAK), where BW is
the rate of one large copy (read + write). A decode GEMM moves a few MB in a few microseconds,
and a copy of that size pays a launch and a ramp to full bandwidth that the large copy's rate
hides. This tool times `dst.copy_(src)` moving the GEMM's bytes (half read, half written: the
same total as the floor counts) as the benches time every implementation: (source,
destination) pairs rotated until consecutive copies span --rotate-l2 x the L2, so that neither
side is served from the L2, >= 100 ms of warm-up, then the median replay of a CUDA graph of 20
copies. The result is the time in which a kernel that does nothing but stream those bytes
finishes (a copy that beats bytes / BW is flagged: the L2 served part of it); with --baseline,
ours
(f8gemm_preshuffled's graph_us in a C++ bench CSV) is set against it, and BW comes from that
CSV's ceiling row, so that the floors are the bench's.

Usage (on the GPU machine):
  python3 bench/copy_floor.py --shapes bench/shapes-decode.txt --baseline bench.csv \
      --csv copy-floor.csv
"""

import argparse
import csv
import math
import sys

import peers

COLUMNS = ["b", "m", "n", "k", "bytes", "bytes_floor_us", "copy_us", "copy_over_floor",
           "ours_us", "ours_over_copy"]
UNIT = 16  # bytes: the copy's two buffers are whole 16-byte vectors


def copy_bytes(shape):
    """(bytes the GEMM moves as the floor counts them, bytes each side of the copy)."""
    nbytes = peers.shape_cost(shape, 1.0, 1.0)[0]
    half = -(-nbytes // 2)
    return nbytes, -(-half // UNIT) * UNIT


def row_of(shape, bw_tbps, copy_us, ours_us=None):
    """One CSV row: the floor at BW, the copy's time over it, and ours over the copy."""
    nbytes, _ = copy_bytes(shape)
    floor_us = nbytes / (bw_tbps * 1e12) * 1e6
    return {"b": shape[0], "m": shape[1], "n": shape[2], "k": shape[3], "bytes": nbytes,
            "bytes_floor_us": floor_us, "copy_us": copy_us,
            "copy_over_floor": copy_us / floor_us, "ours_us": ours_us,
            "ours_over_copy": ours_us / copy_us if ours_us else None}


def table(rows):
    """The rows as Markdown lines (the perf log's form)."""
    lines = ["| B,M,N,K | MB moved | floor us (bytes / BW) | copy us | copy / floor | ours us | "
             "ours / copy |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        ours = "-" if r["ours_us"] is None else f"{r['ours_us']:.2f}"
        ratio = "-" if r["ours_over_copy"] is None else f"{r['ours_over_copy']:.2f}"
        lines.append(f"| {r['b']},{r['m']},{r['n']},{r['k']} | {r['bytes'] / 1e6:.2f} | "
                     f"{r['bytes_floor_us']:.2f} | {r['copy_us']:.2f} | "
                     f"{r['copy_over_floor']:.2f} | {ours} | {ratio} |")
    return lines


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", help="file of B,M,N,K lines ('#' comments); "
                                    "default bench/peers.py's list")
    p.add_argument("--csv", default="copy-floor.csv", help="output CSV (default copy-floor.csv)")
    p.add_argument("--baseline",
                   help="CSV of `f8gemm bench`: BW from its ceiling row, ours from its rows")
    p.add_argument("--iters", type=int, default=100,
                   help="timed copies per measurement (default 100)")
    p.add_argument("--rotate-l2", type=float, default=2.0,
                   help="rotate the sources until consecutive copies span this many L2s "
                        "(default 2, as the benches)")
    return peers.check_timing_args(p, p.parse_args(argv))


def time_copy_us(torch, dev, shape, l2_bytes, rotate_l2, iters):
    """The median graph-replay time of one copy of the shape's bytes (see the module's doc)."""
    _, side = copy_bytes(shape)
    # A pair moves 2 x side bytes through the L2: as many pairs as span rotate_l2 x the L2.
    sets = max(1, min(peers.MAX_SETS, -(-math.ceil(rotate_l2 * l2_bytes) // (2 * side))))
    gen = torch.Generator(device=dev)
    gen.manual_seed(hash(shape) & 0xFFFFFFFF)
    # Random bytes, never zeros; every pair its own two buffers.
    srcs = [torch.randint(0, 256, (side,), dtype=torch.uint8, device=dev, generator=gen)
            for _ in range(sets)]
    dsts = [torch.empty(side, dtype=torch.uint8, device=dev) for _ in range(sets)]
    per_graph = (-(-peers.CALLS_PER_GRAPH // sets) * sets if sets <= peers.CALLS_PER_GRAPH
                 else sets)
    counter = [0]

    def fn():
        i = counter[0] % sets
        dsts[i].copy_(srcs[i])
        counter[0] += 1

    fn()
    peers.sync()
    if not torch.equal(dsts[0], srcs[0]):
        raise SystemExit(f"copy_floor: the copy at {shape} did not copy")
    peers.run_for(fn, peers.PEER_WARM_S)
    g = peers.capture(fn, per_graph)
    us = peers.time_graph_us(g, per_graph, iters)
    del g, srcs, dsts
    torch.cuda.empty_cache()
    return us, sets


def main(argv):
    args = parse_args(argv)
    # Every input and the output, before any GPU work.
    shapes = peers.read_shapes(args.shapes) if args.shapes else list(peers.DEFAULT_SHAPES)
    ours = peers.read_graph_times(args.baseline) if args.baseline else {}
    baseline_ceilings = peers.read_ceilings(args.baseline) if args.baseline else None
    peers.check_output(args.csv)
    torch, dev, props, l2_bytes = peers.cuda_device("copy_floor.py")
    print(f"device: {props.name}, {props.multi_processor_count} SMs, L2 {l2_bytes} bytes; "
          f"torch {torch.__version__}")
    rows = []
    with open(args.csv, "w", newline="") as f:
        # Warms the clock; BW from the baseline's ceiling row, or a 4 GiB copy.
        bw, _ = peers.ceilings(dev, args.iters, args.baseline, baseline_ceilings)
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for shape in shapes:
            us, sets = time_copy_us(torch, dev, shape, l2_bytes, args.rotate_l2, args.iters)
            r = row_of(shape, bw, us, ours.get(tuple(shape), {}).get(peers.OURS[0]))
            rows.append(r)
            w.writerow([peers.fmt(r[c], ".3f") if isinstance(r[c], float) else
                        ("" if r[c] is None else r[c]) for c in COLUMNS])
            f.flush()
            print(f"{shape}: {sets} pair(s), copy {us:.2f} us, "
                  f"{r['copy_over_floor']:.2f}x the floor"
                  + ("  WARNING: faster than bytes / BW (the L2 served part of it)"
                     if r["copy_over_floor"] < 1.0 else ""))
    print(f"\nBW {bw:.3f} TB/s")
    print("\n".join(table(rows)))
    print(f"csv: {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
