#!/bin/bash
# Card 95's device call (prepared in session 37, not run: no device time was left). It tests card
# 94's reading of its loss: does the ring-staged tiled 128x256 s4 get back to s3's time, or past
# it, when the box warps wait for their stores' reads one or two k-blocks later?
# One call of the device tool, carry ["scratch/dev/ab/N", "scratch/dev/ab/P1",
# "scratch/dev/ab/P2", "scratch/dev/cache", "scratch/dev/cache-p"] (scratch/ git-ignored).
# Set up on the CPU machine, on top of main:
#   N:  `git am docs/experiments/card-94-staging-in-ring.patch`, build, copy f8gemm and
#       f8gemm_gpu_tests to scratch/dev/ab/N/bin/ (the release after k-block 0: card 94);
#   P1: then `git am docs/experiments/card-95-staging-release-probe.patch`, build, copy both to
#       scratch/dev/ab/P1/bin/ (after k-block 1);
#   P2: the same with `#define F8GEMM_STAGING_RELEASE_KB 2` in kernels/gemm_traits.cuh, to
#       scratch/dev/ab/P2/bin/ (after k-block 2, the latest a 4-stage ring allows);
#   cubins: F8GEMM_CACHE_DIR=$PWD/scratch/dev/cache-p, `F8GEMM_CONFIG=<s4> ab/P?/bin/f8gemm
#       precompile --shape S [--precise]` for S in bench/shapes-large.txt (and ab/N's s3 and s4
#       into scratch/dev/cache, as card 94's call says).
# Steps: 1. run --verify of P1 and P2's s4, alone and paired, on ragged cases and on 170-576
# tiles; 2. fast A/B over bench/shapes-large.txt, N3 (s3, own staging), N4, P1 and P2 (s4), two
# rounds in opposite orders; 3. precise, one round, if the deadline allows; 4. P1's ring GPU tests.
# The first verify case has one tile a CTA (no release); the others reach it (272: 3 k-blocks,
# 1040: 9). P2 gets the verify cases only, no GPU tests. Everything goes into one archive, $OUT/card95.tgz, re-packed at every step (the tool returns at
# most 8 files).
# Prediction: if the wait for the stores' reads is the loss, P1 and P2 cut card 94's 7% at
# K = 1024 to at most 2-3% (the drain gets 1.5-2.3 µs instead of 0.8) and P2 <= P1; if P1 and P2
# stay at N4's time, the loss is elsewhere (the 256-thread barrier, the box addressing) and a
# store warp would not help either.
set -u
D=scratch/dev
L=/tmp/card95; mkdir -p $L
export F8GEMM_CACHE_DIR=/tmp/cache F8GEMM_HANG_SECONDS=60; mkdir -p /tmp/cache
cp -n $D/cache/* $D/cache-p/* /tmp/cache/ 2>/dev/null
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $1" | tee -a $L/steps.txt; tar czf $OUT/.c.tgz -C /tmp card95 && mv $OUT/.c.tgz $OUT/card95.tgz; }
left() { echo $(( ${DEADLINE:-560} - ($(date +%s) - t0) )); }
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,temperature.gpu --format=csv | tee $L/gpu.txt
S3=sm90_tiled_128x256x128_s3_c1x1_r8; S4=sm90_tiled_128x256x128_s4_c1x1_r8
bin() { echo $D/ab/$1/bin/f8gemm; }
cfg() { case $1 in N3) echo $S3;; *) echo $S4;; esac; }
binv() { case $1 in N3|N4) bin N;; *) bin $1;; esac; }
jobs=$L/jobs.txt; : > $jobs
for s in $(grep -v '^#' bench/shapes-large.txt); do
  for v in N3 N4 P1 P2; do for f in "" "--precise"; do
    echo "env F8GEMM_CONFIG=$(cfg $v) $(binv $v) precompile --shape $s $f" >> $jobs
  done; done
done
vjobs=$L/vjobs.txt; : > $vjobs; i=0
for P in P1 P2; do
  for c in $S4 sm90_tiled_128x256x128_s4_c2x1_r8; do
    for a in "--b 3 --m 300 --n 520 --k 272" "--b 4 --m 1100 --n 1032 --k 272 --plain --bias --out fp16" \
             "--b 2 --m 2100 --n 1040 --k 1040 --bias --precise" "--b 2 --m 4000 --n 2056 --k 128 --plain --bias --bias-dtype bf16"; do
      i=$((i+1)); echo "$(bin $P) run $a --config $c --verify --once > $L/v-$i.log 2>&1; echo \"rc=\$? $P $c $a\" >> $L/v-$i.log" >> $vjobs
    done
  done
done
timeout 100 xargs -P 15 -I{} bash -c '{}' < $jobs > $L/precompile.log 2>&1
el "precompile rc=$? ($(grep -c regs= $L/precompile.log) instances, $(grep -ci error $L/precompile.log) errors)"
timeout 90 xargs -P 15 -I{} bash -c '{}' < $vjobs
cat $L/v-*.log > $L/verify.txt; rm -f $L/v-*.log
el "verify: $(grep -c '^rc=0' $L/verify.txt) of $(grep -c '^rc=' $L/verify.txt) rc=0"
grep -E "^rc=[1-9]|rror|FAIL" $L/verify.txt | head -20
for r in 1 2; do
  order="N4 P1 P2 N3"; [ $r = 2 ] && order="N3 P2 P1 N4"
  for v in $order; do
    [ $(left) -lt 50 ] && { el "out of time before fast $v round $r"; break 2; }
    F8GEMM_CONFIG=$(cfg $v) timeout 80 $(binv $v) bench --shapes bench/shapes-large.txt --no-peak \
      --csv $L/ab-$v-$r.csv > $L/ab-$v-$r.log 2>&1; el "fast $v round $r rc=$?"
  done
done
for v in P1 P2 N4 N3; do
  [ $(left) -lt 50 ] && { el "out of time before precise $v"; break; }
  F8GEMM_CONFIG=$(cfg $v) timeout 80 $(binv $v) bench --shapes bench/shapes-large.txt --no-peak --precise \
    --csv $L/ab-$v-p.csv > $L/ab-$v-p.log 2>&1; el "precise $v rc=$?"
done
python3 docs/experiments/ab_summary.py $L N4/N3 P1/N3 P2/N3 | tee $L/summary.txt
el "summary"
if [ $(left) -gt 90 ]; then
  F="GemmGpu.StagingInTheRing*:GemmGpu.SiluMulEpilogueEveryStoreKind*:GemmGpu.WholeBlockStores*"
  for i in 0 1 2 3 4 5; do GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$i timeout $(( $(left) - 10 )) \
    $D/ab/P1/bin/f8gemm_gpu_tests --gtest_brief=1 --gtest_filter="$F" > $L/gtest-$i.log 2>&1 & done; wait
  cat $L/gtest-*.log > $L/gtest.txt; rm -f $L/gtest-*.log
  el "P1 gtest subset: $(grep -c '^\[  PASSED' $L/gtest.txt) of 6 shards passed, $(grep -c 'FAILED' $L/gtest.txt) FAILED lines"
fi
