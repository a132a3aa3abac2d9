#!/bin/bash
# Run in session 37 (M3= ROUNDS=1 DEADLINE=170, an H100): s4 slower, card 94 not kept (perf log, card 94).
# Its 37 output files are over the tool's 8: pack $L into one archive if this is run again.
# Card 94's device call (prepared in session 36, which got no machine). One call of the device
# tool, carry ["scratch/dev"] (scratch/ must be git-ignored, e.g. in .git/info/exclude, so that
# it travels only through carry). Set up on the CPU machine first:
#   1. main's build: copy its f8gemm to scratch/dev/ab/M/bin/;
#   2. `git am docs/experiments/card-94-staging-in-ring.patch` on top of main, build, copy
#      f8gemm and f8gemm_gpu_tests to scratch/dev/ab/N/bin/;
#   3. into scratch/dev/cache (F8GEMM_CACHE_DIR=$PWD/scratch/dev/cache), for every shape S of
#      bench/shapes-large.txt: `F8GEMM_CONFIG=<c> ab/N/bin/f8gemm precompile --shape S [--precise]`
#      for c = sm90_tiled_128x256x128_s3_c1x1_r8 and s4 (both modes), main's binary with s3 (fast),
#      and the new tree's own picks (`ab/N/bin/f8gemm precompile --gpu h100|h200 --shape S
#      [--precise]`, for the table rule below). The verify cases (bias) and the GPU test's
#      instances cannot be precompiled from the CLI: they compile in the call (about 20 and 100+).
# Steps: 1. run --verify of the ring-staged families on ragged cases and on 170-576 tiles (CTAs
# give a held slot back under a next tile); 2. forced tiled 128x256 s4 (ring) against s3 (own
# staging) in the new tree (N4, N3), and main's s3 (M3), over bench/shapes-large.txt, fast in
# ROUNDS rounds, precise for PRECISE; 3. the table rule (perf log, card 94): where the current
# choice of a preshuffled shape is s3 c1x1 and s4 took at most 0.99x its time, tune.tsv names s4;
# 4. the GPU tests of the ring (GTF), 5. the sanitizers on the ring-staged schedule, as the
# deadline (DEADLINE, s into the call) allows. Everything is written under $OUT/card94, so what
# a call that runs out of time has written still comes back.
set -u
M3=${M3-1}  # main's s3 in round 1 (M3= leaves it out)
D=scratch/dev
L=$OUT/card94; mkdir -p $L
export F8GEMM_CACHE_DIR=/tmp/cache F8GEMM_HANG_SECONDS=60; mkdir -p /tmp/cache; cp -n scratch/dev/cache/* /tmp/cache/ 2>/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,temperature.gpu --format=csv | tee $L/gpu.txt
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $1" | tee -a $L/steps.txt; }
M=$D/ab/M/bin/f8gemm; N=$D/ab/N/bin/f8gemm
S3=sm90_tiled_128x256x128_s3_c1x1_r8; S4=sm90_tiled_128x256x128_s4_c1x1_r8
jobs=$L/jobs.txt; : > $jobs
for s in $(grep -v '^#' bench/shapes-large.txt); do
  for f in "" "--precise"; do
    echo "env F8GEMM_CONFIG=$S3 $N precompile --shape $s $f" >> $jobs
    echo "env F8GEMM_CONFIG=$S4 $N precompile --shape $s $f" >> $jobs
  done
  [ -n "${M3:-}" ] && echo "env F8GEMM_CONFIG=$S3 $M precompile --shape $s" >> $jobs
done
vjobs=$L/vjobs.txt; : > $vjobs; i=0
for c in $S4 sm90_tiled_128x256x128_s4_c2x1_r8 sm90_tiled_128x192x128_s5_c1x1_r8 sm90_tiled_64x256x128_s5_c1x1_r8 sm90_tiled_128x128x128_s6_c2x1_r8; do
  # Ragged; and 170-576 tiles on the SMs, so that CTAs give a held slot back under a next tile
  # (K = 1040: 9 k-blocks; K = 128: one).
  for a in "--b 3 --m 300 --n 520 --k 272" "--b 4 --m 1100 --n 1032 --k 272 --plain --bias --out fp16" \
           "--b 2 --m 2100 --n 1040 --k 1040 --bias --precise" "--b 2 --m 4000 --n 2056 --k 128 --plain --bias --bias-dtype bf16"; do
    i=$((i+1)); echo "$N run $a --config $c --verify --once > $L/v-$i.log 2>&1; echo \"rc=\$? $c $a\" >> $L/v-$i.log" >> $vjobs
  done
done
timeout 100 xargs -P 15 -I{} bash -c '{}' < $jobs > $L/precompile.log 2>&1; el "precompile rc=$? ($(grep -c regs= $L/precompile.log) instances, $(grep -ci error $L/precompile.log) errors)"
timeout 90 xargs -P 15 -I{} bash -c '{}' < $vjobs; el "verify: $(cat $L/v-*.log | grep -c '^rc=0') of $(cat $L/v-*.log | grep -c '^rc=') rc=0"
cat $L/v-*.log | grep -E "^rc=[1-9]|rror|FAIL" | head -20
for r in ${ROUNDS:-1 2}; do
  if [ $r = 1 ]; then order="N4 N3${M3:+ M3}"; else order="N3 N4"; fi
  for v in $order; do
    case $v in N4) bin=$N; c=$S4;; N3) bin=$N; c=$S3;; M3) bin=$M; c=$S3;; esac
    F8GEMM_CONFIG=$c timeout 80 $bin bench --shapes bench/shapes-large.txt --no-peak --csv $L/ab-$v-$r.csv > $L/ab-$v-$r.log 2>&1; el "fast $v round $r rc=$?"
  done
done
for v in ${PRECISE:-N4 N3}; do
  case $v in N4) c=$S4;; N3) c=$S3;; esac
  F8GEMM_CONFIG=$c timeout 80 $N bench --shapes bench/shapes-large.txt --no-peak --precise --csv $L/ab-$v-p.csv > $L/ab-$v-p.log 2>&1; el "precise $v rc=$?"
done
python3 docs/experiments/ab_summary.py $L N4/N3 N3/M3 | tee $L/summary.txt
# The rule written before the run (perf log, card 94): where the current choice (shipped table or
# model) of a preshuffled shape is the s3 c1x1 tile and s4 took at most 0.99x its time (mean of
# the rounds), the next call (the peer table, on this warm machine) takes s4 there through
# F8GEMM_TUNE_FILE; only if every check passed ($L/ok).
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
for s in $(grep -v '^#' bench/shapes-large.txt); do
  for f in fast precise; do a=; [ $f = precise ] && a=--precise
    echo "$s $f $(timeout 30 $N precompile --shape $s $a 2>/dev/null | awk 'NF>=2 && $1 ~ /,/ {print $2}' | cut -d. -f1)"; done
done > $L/picks.txt
python3 - $L "$gpu" <<'PY' | tee $L/tune-rule.txt
import sys, collections
L, gpu = sys.argv[1], sys.argv[2]
picks = {tuple(l.split()[:2]): (l.split() + [""])[2] for l in open(f"{L}/picks.txt") if l.strip()}
ratio = {}
for l in open(f"{L}/summary.txt"):
    w = l.split()
    if len(w) > 3 and w[0] in ("fast", "precise") and w[1] == "f8gemm_preshuffled":
        for x in w:
            if x.startswith("N4/N3="): ratio[(w[2], w[0])] = float(x[6:])
out = []
for (shape, mode), pick in sorted(picks.items()):
    r = ratio.get((shape, mode))
    take = pick == "sm90_tiled_128x256x128_s3_c1x1_r8" and r is not None and r <= 0.99
    print(f"{shape:18s} {mode:7s} pick {pick:40s} N4/N3 {r}  -> {'s4' if take else 'keep'}")
    if take: out.append(f"{gpu}|132|0.1.0|{shape}|preshuffled|bfloat16|{mode}\tsm90_tiled_128x256x128_s4_c1x1_r8")
open(f"{L}/tune.tsv", "w").write("".join(x + "\n" for x in out))
PY
if [ "$(cat $L/v-*.log | grep -c '^rc=0')" = 20 ]; then touch $L/ok; fi
trc=1; left=$(( ${DEADLINE:-470} - ($(date +%s) - t0) ))
if [ $left -gt 90 ]; then
F="${GTF:-GemmGpu.StagingInTheRing*:GemmGpu.SiluMulEpilogueEveryStoreKind*:GemmGpu.WholeBlockStores*}"
for i in 0 1 2 3 4 5; do GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$i timeout $((left - 10)) $D/ab/N/bin/f8gemm_gpu_tests --gtest_brief=1 --gtest_filter="$F" > $L/gtest-$i.log 2>&1 & done; wait
trc=0; for i in 0 1 2 3 4 5; do grep -q "^\[  PASSED  \]" $L/gtest-$i.log && ! grep -q "FAILED" $L/gtest-$i.log || trc=1; done
el "gtest subset ok=$((1-trc)): $(cat $L/gtest-*.log | grep -h '^\[  PASSED' | tr '\n' ' ')"; cat $L/gtest-*.log | grep -E "Failure|FAILED" | head -10
fi
[ $trc = 0 ] || rm -f $L/ok
[ -f $L/ok ] && el "verify and GPU tests passed: a next call may use tree N"
left=$(( ${DEADLINE:-470} - ($(date +%s) - t0) ))
if [ $left -gt 45 ]; then
  SAN_CASES="sm90_tiled_128x256x128_s4_c1x1_r8:2,2100,1040,272 sm90_tiled_128x256x128_s4_c2x1_r8:2,2100,1040,272" \
    OUT=$L/san BUILD_DIR=$D/ab/N/bin timeout $((left - 10)) scripts/device-check.sh sanitize > $L/san-step.log 2>&1; el "sanitize rc=$?"
  grep "^== " $L/san-step.log
fi
