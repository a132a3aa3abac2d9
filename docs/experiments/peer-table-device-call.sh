#!/bin/bash
# The peer table of issues 6, 7 and 9 in one device call (as session 35's call 2,
# docs/logs/2026-12-06-s35-call2-peers-grouped-moe-h100.log), prepared in session 37 and not run
# (no device time was left). Device tool: carry ["scratch/dev", ".whl"] (both git-ignored, e.g. in
# .git/info/exclude; 63 MiB with the FBGEMM gen_ai 1.6.0 wheel in .whl/). Set up on the CPU machine:
#   scratch/dev/ab/M/bin/f8gemm: main's build; scratch/dev/torchlib: main's torch extension library
#   (the library that F8GEMM_TORCH_LIB names); F8GEMM_CACHE_DIR=$PWD/scratch/dev/cache filled by
#   `f8gemm precompile --gpu h200 --shape S [--plain] [--precise]` (and --gpu h100) for the shapes of
#   bench/shapes-large.txt, shapes-decode.txt (also --chained with F8GEMM_PDL=1) and shapes.txt.
# PEER=N takes a second tree's binaries (scratch/dev/ab/N/bin, scratch/dev/torchlib-N); F8GEMM_TUNE_FILE,
# if set, passes through (a path on the device), and DEADLINE (s into the call, 570) bounds the steps.
set -u
D=scratch/dev; PEER=${PEER:-M}
L=/tmp/peers; mkdir -p $L
export F8GEMM_CACHE_DIR=/tmp/cache F8GEMM_HANG_SECONDS=60; mkdir -p /tmp/cache; cp scratch/dev/cache/* /tmp/cache/
# The tool returns at most 8 files from $OUT: every step re-packs the whole folder into one.
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $1" | tee -a $L/steps.txt; tar czf $OUT/.p.tgz -C /tmp peers && mv $OUT/.p.tgz $OUT/peers.tgz; }
cap() { local left=$(( ${DEADLINE:-570} - ($(date +%s) - t0) )); [ $left -lt 20 ] && { echo 1; return; }; [ $1 -lt $left ] && echo $1 || echo $left; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv,noheader | tee $L/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
echo "tree $PEER, F8GEMM_TUNE_FILE=${F8GEMM_TUNE_FILE:-}" | tee $L/tree.txt
B=$D/ab/$PEER/bin/f8gemm
TL=$D/torchlib; [ $PEER = N ] && TL=$D/torchlib-N
cat bench/shapes-large.txt bench/shapes-decode.txt | grep -v '^#' > $L/all.txt
jobs=$L/jobs.txt; : > $jobs
for s in $(cat $L/all.txt); do for f in "" "--plain"; do echo "$B precompile --shape $s $f" >> $jobs; done; done
for s in $(grep -v '^#' bench/shapes-large.txt); do for f in "--precise" "--precise --plain"; do echo "$B precompile --shape $s $f" >> $jobs; done; done
for s in $(grep -v '^#' bench/shapes.txt); do for f in "" "--plain"; do echo "$B precompile --shape $s $f" >> $jobs; done; done
for s in $(grep -v '^#' bench/shapes-decode.txt); do for f in "" "--plain"; do echo "env F8GEMM_PDL=1 $B precompile --chained --shape $s $f" >> $jobs; done; done
timeout 90 xargs -P 15 -I{} bash -c '{}' < $jobs > $L/precompile.log 2>&1; el "precompile rc=$? ($(grep -c regs= $L/precompile.log) instances)"
timeout $(cap 70) $B bench --shapes $L/all.txt --csv $L/bench-1.csv > $L/bench-1.log 2>&1; el "bench-1 rc=$?"
PYTHONUNBUFFERED=1 timeout $(cap 120) python3 bench/peers.py --shapes $L/all.txt --baseline $L/bench-1.csv \
  --only torch_scaled_mm_loop,torch_scaled_mm_graph,torch_scaled_grouped_mm,fbgemm_rowwise,fbgemm_rowwise_batched,triton \
  --csv $L/peers.csv > $L/peers.log 2>&1; el "peers rc=$?"; grep -m1 "FBGEMM gen_ai" $L/peers.log
timeout $(cap 70) $B bench --no-peak --shapes $L/all.txt --csv $L/bench-2.csv > $L/bench-2.log 2>&1; el "bench-2 rc=$?"
timeout $(cap 60) $B bench --no-peak --precise --shapes bench/shapes-large.txt --csv $L/bench-precise.csv > $L/bench-precise.log 2>&1; el "bench-precise rc=$?"
timeout $(cap 60) $B bench --no-peak --shapes bench/shapes.txt --csv $L/bench-seed.csv > $L/bench-seed.log 2>&1; el "bench-seed rc=$?"
F8GEMM_PDL=1 timeout $(cap 60) $B bench --no-peak --prefetch-w --shapes bench/shapes-decode.txt --csv $L/bench-chained.csv > $L/bench-chained.log 2>&1; el "bench-chained rc=$?"
export PYTHONPATH=/tmp/site:$PWD/python F8GEMM_TORCH_LIB=$PWD/$TL PYTHONUNBUFFERED=1
timeout $(cap 150) python3 bench/grouped_peers.py --rounds 3 --baseline $L/bench-1.csv \
  --only f8gemm_preshuffled,fbgemm_grouped_stacked,torch_scaled_grouped_mm --csv $L/grouped.csv > $L/grouped.log 2>&1; el "grouped rc=$?"
timeout $(cap 90) python3 examples/moe_layer.py > $L/moe.log 2>&1; el "moe rc=$?"
PYTHONUNBUFFERED=1 timeout $(cap 60) python3 bench/copy_floor.py --shapes bench/shapes-decode.txt --baseline $L/bench-2.csv --csv $L/copy-floor.csv > $L/copy-floor.log 2>&1; el "copy floor rc=$?"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader | tee -a $L/gpu.txt
cat $L/steps.txt; tail -n 5 $L/peers.log $L/grouped.log $L/moe.log
el done
