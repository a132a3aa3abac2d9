#!/bin/bash
# Why the grouped down GEMM runs 1.05-1.14x its whole waves of tiles at K = 14336 while the dense
# shape runs 0.97-1.05x its own (perf log, card 93, session 39's "where its time goes"). Nsight
# Compute of the same config, tiled 128x256 s3 c1x1 r8, on the dense 1,4096,4096,14336 and on
# the grouped 8,8192,4096,14336 with uniform routing (its worst cell, 1.143), clocks as they run
# (--clock-control none). Compare: L2 hit rate, DRAM throughput, the tensor pipe's active share
# and the consumers' stall reasons. Prepared in session 39, not yet run (no device time left).
# Device tool: carry ["scratch/s38/dev.tar.xz", ".whl"] (main's f8gemm in scratch/dev/ab/M, its
# cubins in scratch/dev/cache, its torch extension in scratch/dev/torchlib). About 300 s.
# Everything goes into $OUT/ncu.tgz, re-packed at every step.
set -u
tar xJf scratch/s38/dev.tar.xz || echo "unpack failed"
D=scratch/dev; B=$D/ab/M/bin/f8gemm
L=/tmp/ncu; mkdir -p $L
export F8GEMM_CACHE_DIR=/tmp/cache F8GEMM_HANG_SECONDS=60; mkdir -p /tmp/cache
cp -n $D/cache/* /tmp/cache/ 2>/dev/null
export PYTHONPATH=$PWD/python F8GEMM_TORCH_LIB=$PWD/$D/torchlib PYTHONUNBUFFERED=1
CFG=sm90_tiled_128x256x128_s3_c1x1_r8
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $1" | tee -a $L/steps.txt; tar czf $OUT/.n.tgz -C /tmp ncu && mv $OUT/.n.tgz $OUT/ncu.tgz; }
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,temperature.gpu --format=csv | tee $L/gpu.txt
NCU="ncu --clock-control none --set full --import-source no -k regex:f8gemm_gemm --launch-skip 5 --launch-count 1"
timeout 200 $NCU -o $L/dense $B run --b 1 --m 4096 --n 4096 --k 14336 --config $CFG --iters 10 \
  > $L/dense.log 2>&1; el "dense rc=$?"
F8GEMM_CONFIG=$CFG timeout 250 $NCU -o $L/grouped python3 bench/grouped_peers.py \
  --shape 8,8192,4096,14336 --routing uniform --only f8gemm_preshuffled --rounds 1 --iters 10 \
  --csv $L/grouped.csv > $L/grouped.log 2>&1; el "grouped rc=$?"
for r in dense grouped; do
  [ -f $L/$r.ncu-rep ] || continue
  ncu --import $L/$r.ncu-rep --page details --csv > $L/$r-details.csv 2>&1
  ncu --import $L/$r.ncu-rep --page raw --csv > $L/$r-raw.csv 2>&1
done
el "exported"
python3 - $L <<'PY' | tee $L/summary.txt
import csv, sys
L = sys.argv[1]
keys = ("Duration", "SM Frequency", "DRAM Throughput", "L2 Hit Rate", "L1/TEX Hit Rate",
        "Compute (SM) Throughput", "Memory Throughput", "L2 Cache Throughput", "Registers Per Thread",
        "Achieved Occupancy", "Waves Per SM", "Grid Size")
for run in ("dense", "grouped"):
    try:
        rows = list(csv.DictReader(open(f"{L}/{run}-details.csv")))
    except (OSError, csv.Error) as e:
        print(run, "no details:", e); continue
    print(f"## {run}")
    for r in rows:
        if r.get("Metric Name") in keys:
            print(f"  {r['Metric Name']:28s} {r.get('Metric Value', ''):>14s} {r.get('Metric Unit', '')}")
PY
el summary
