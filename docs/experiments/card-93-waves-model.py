"""Card 93, session 39: the grouped down GEMM (tiled 128x256, K = 14336) against its whole waves
of tiles, and the operand bytes each wave of 132 tiles fetches from DRAM, from the committed CSVs
of docs/bench/s39-card93-down/. Run from the repository root:
python3 docs/experiments/card-93-waves-model.py"""
import csv, glob, math
PEAK = 1464.6e12  # session 35's H100 table
K, N, BM, BN, R, SM = 14336, 4096, 128, 256, 8, 132
WT = N // BN
tile_us = 2 * BM * BN * K / (PEAK / SM) * 1e6
print(f"## whole waves (tiled 128x256 at K = 14336: {tile_us:.1f} us a tile at PEAK "
      "1,464.6 TFLOP/s)")
times, sizes = {}, {}
for p in sorted(glob.glob("docs/bench/s39-card93-down/g-B-TT-*.csv")):
    for r in csv.DictReader(open(p)):
        key = (int(r["total_m"]), r["routing"])
        times.setdefault(key, []).append(float(r["graph_us"]))
        sizes[key] = [int(x) for x in r["sizes"].split(";")]
for key in sorted(times):
    tiles = sum(math.ceil(x / BM) for x in sizes[key]) * WT
    whole = math.ceil(tiles / SM) * tile_us
    mean = sum(times[key]) / len(times[key])
    print(f"8,{key[0]},4096,14336 {key[1]:7s} tiles {tiles:5d} waves {tiles / SM:5.2f} "
          f"whole waves {whole:6.0f} us  measured (mean of 4) {mean:6.0f} us  "
          f"ratio {mean / whole:.3f}")
print(f"dense 1,4096,4096,14336: 512 tiles, 4 waves, {4 * tile_us:.0f} us")
def place(r, cx_n):
    span = R * WT; first = (r // span) * R; bx = min(cx_n - first, R); i = r % span
    return first + i % bx, i // bx
def model(tiles, name):
    waves = math.ceil(len(tiles) / SM)
    tot = sum((len({t[0] for t in tiles[w * SM:(w + 1) * SM]}) * BM +
               len({t[1] for t in tiles[w * SM:(w + 1) * SM]}) * BN) * K for w in range(waves))
    print(f"{name}: {tot / 1e6 / waves:.1f} MB a wave, {tot / 1e6 / waves / tile_us:.2f} TB/s at "
          f"{tile_us:.1f} us a wave")
print("## operand bytes from DRAM a wave (each distinct X and W tile once a wave, r8 raster)")
model([(("X", 0, cx), ("W", 0, tw)) for r in range(32 * WT) for cx, tw in [place(r, 32)]],
      "dense 1,4096,4096,14336")
for key in sorted(sizes):
    if key[0] not in (8192, 16384): continue
    ts = []
    for g, s in enumerate(sizes[key]):
        cx_n = math.ceil(s / BM)
        ts += [(("X", g, cx), ("W", g, tw))
               for r in range(cx_n * WT) for cx, tw in [place(r, cx_n)]]
    model(ts, f"grouped 8,{key[0]},4096,14336 {key[1]}")
