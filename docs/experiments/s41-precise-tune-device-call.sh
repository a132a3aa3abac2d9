#!/bin/bash
# Session 41: the H100's first precise-mode table entries (issue 6, item 5: precise at most 1.06x
# fast on every shape; the H100's tables hold no precise entry, so the cost model decides, and
# session 41's peer table has precise/fast over 1.06 on eight of the twelve large shapes). Any
# GPU: the tune's keys name it, so on an H200 it proposes tables/h200.tsv's entries (whose
# precise entries are older). About 300 s; a second A/B on the warm machine (card 97) is the
# check that the first one was not drift:
#   1. `f8gemm tune --precise` of docs/experiments/s41-precise-shapes.txt, preshuffled and plain;
#   2. the A/B of the tuned table (tree b: F8GEMM_TUNE_FILE) against the shipped tables and the
#      model (tree a), `bench --precise`, rounds a b b a (scripts/ab-bench.sh).
# The rule, as card 83's: an entry is kept where the tune's winner beat the model's pick by at
# least 2.5% and the A/B's b / a for that shape and layout is below 0.975 on the mean and below 1
# in both round pairs.
# Set-up on the CPU machine: scratch/s41/final as for s41-final-device-call.sh, and
#   F8GEMM_CACHE_DIR=scratch/s41/pt/cache f8gemm precompile --gpu h100 --candidates --precise
#     [--plain] --shapes docs/experiments/s41-precise-shapes.txt
#   tar cJf scratch/s41/pt.tar.xz scratch/s41/final scratch/s41/pt/cache
# Carry ["scratch/s41/pt.tar.xz"]. $OUT: pt.tgz (tune logs and table, the A/B), re-packed per step.
set -u
t0=$(date +%s)
tar xJf scratch/s41/pt.tar.xz || echo "unpack failed"
B=$PWD/scratch/s41/final/f8gemm
L=/tmp/pt; mkdir -p $L /tmp/cache; cp scratch/s41/pt/cache/* /tmp/cache/
export F8GEMM_CACHE_DIR=/tmp/cache F8GEMM_HANG_SECONDS=60
S=docs/experiments/s41-precise-shapes.txt
el() { echo "[$(( $(date +%s) - t0 ))s] $1" | tee -a $L/steps.txt; tar czf $OUT/.p.tgz -C /tmp pt && mv $OUT/.p.tgz $OUT/pt.tgz; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,temperature.gpu \
  --format=csv,noheader | tee $L/gpu.txt
timeout 90 $B tune --precise --shapes $S --out $L/pre.tsv --log $L/pre-log.csv > $L/tune-pre.log 2>&1
el "tune preshuffled rc=$?"
timeout 90 $B tune --precise --plain --shapes $S --out $L/plain.tsv --log $L/plain-log.csv \
  > $L/tune-plain.log 2>&1
el "tune plain rc=$?"
cat $L/pre.tsv $L/plain.tsv 2>/dev/null | grep -v '^#' > $L/precise.tsv
grep -h "best" $L/tune-pre.log $L/tune-plain.log
mkdir -p $L/ab/a/bin $L/ab/b/bin
ln -s $B $L/ab/a/bin/f8gemm
printf '#!/bin/bash\nF8GEMM_TUNE_FILE=%s exec %s "$@"\n' $L/precise.tsv $B > $L/ab/b/bin/f8gemm
chmod +x $L/ab/b/bin/f8gemm
left=$(( 560 - ($(date +%s) - t0) ))
AB_PREBUILT=bin AB_BENCH_ARGS=--precise AB_TIMEOUT=60 timeout $left \
  bash scripts/ab-bench.sh $L/ab/a $L/ab/b $S $L/abo 2 > $L/ab.log 2>&1
el "A/B rc=$?"
cat $L/ab.log | tail -n 20
