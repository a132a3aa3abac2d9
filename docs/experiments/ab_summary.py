"""The A/B summary of a device call's bench runs: DIR/ab-<variant>-<round>.csv (round p: precise).

Usage: ab_summary.py DIR A/B [A/B ...]. Prints, per mode, implementation and shape, each variant's
mean graph time over its rounds and each pair's ratio A/B, then the geometric means of each ratio
per mode and implementation and per mode and K. The per-shape lines are what the calls' table
rules parse: `mode impl shape V=us ... A/B=ratio`.
"""
import collections
import csv
import glob
import math
import os
import sys


def main(folder, pairs):
    pairs = [p.split("/") for p in pairs]
    variants = list(dict.fromkeys(v for p in pairs for v in p))
    times = collections.defaultdict(list)
    for path in glob.glob(f"{folder}/ab-*.csv"):
        variant, rnd = os.path.basename(path)[3:-4].split("-")
        mode = "precise" if rnd == "p" else "fast"
        for row in csv.DictReader(l for l in open(path) if not l.startswith("#")):
            if row["impl"].startswith("f8gemm") and row["status"] == "ok" and row["graph_us"]:
                shape = ",".join(row[x] for x in "bmnk")
                times[(mode, row["impl"], shape, variant)].append(float(row["graph_us"]))
    ratios = collections.defaultdict(list)
    for mode, impl, shape in sorted({k[:3] for k in times}):
        mean = {v: sum(times[(mode, impl, shape, v)]) / len(times[(mode, impl, shape, v)])
                for v in variants if times.get((mode, impl, shape, v))}
        line = f"{mode:7s} {impl:20s} {shape:18s} " + " ".join(f"{v}={x:8.1f}" for v, x in mean.items())
        for a, b in pairs:
            if a in mean and b in mean:
                r = mean[a] / mean[b]
                line += f"  {a}/{b}={r:.3f}"
                ratios[f"{mode} {impl} {a}/{b}"].append(r)
                ratios[f"{mode} K={shape.split(',')[3]} {a}/{b}"].append(r)
        print(line)
    for key, x in sorted(ratios.items()):
        g = math.exp(sum(map(math.log, x)) / len(x))
        print(f"geomean {key}: {g:.3f}  min {min(x):.3f} max {max(x):.3f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
