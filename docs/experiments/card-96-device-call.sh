#!/bin/bash
# Card 96's A/B (session 40), any GPU: each chained decode call's choice (tree a) against the
# same config with early_dependents (tree b: the same binary with F8GEMM_TUNE_FILE =
# card-96-early-<gpu>.tsv, whose entries are tree a's choices plus "_e"), on the shapes of
# card-96-shapes.txt, both layouts, F8GEMM_PDL=1 and --prefetch-w (the bench's PDL chain), rounds
# a b b a a b. Set-up on the CPU machine (scratch/ is git-ignored):
#   scratch/s40/ab/a/bin/f8gemm: this tree's Release build; scratch/s40/ab/b/bin/f8gemm: a script
#   that sets F8GEMM_TUNE_FILE to its folder's early.tsv and runs a's binary;
#   scratch/s40/cache: `F8GEMM_PDL=1 f8gemm precompile --gpu h200|h100 --chained [--plain]
#   --shapes docs/experiments/card-96-shapes.txt`, with and without that F8GEMM_TUNE_FILE;
#   tar cJf scratch/s40/card96.tar.xz scratch/s40/ab scratch/s40/cache; carry it.
# Output: $OUT/card96.tgz (summary, every bench's CSV and log, the GPU).
set -u
tar xJf scratch/s40/card96.tar.xz || echo "unpack failed"
L=/tmp/card96; mkdir -p $L
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv \
  | tee $L/gpu.txt
case "$gpu" in
  *H200*) cp docs/experiments/card-96-early-h200.tsv scratch/s40/ab/b/bin/early.tsv ;;
  *H100*) cp docs/experiments/card-96-early-h100.tsv scratch/s40/ab/b/bin/early.tsv ;;
  *) echo "no early table for $gpu"; exit 1 ;;
esac
mkdir -p /tmp/cache && cp scratch/s40/cache/* /tmp/cache/
export F8GEMM_CACHE_DIR=/tmp/cache F8GEMM_PDL=1 AB_BENCH_ARGS=--prefetch-w AB_PREBUILT=bin
export AB_TIMEOUT=${AB_TIMEOUT:-80}
# The archive is made however the A/B ends (session 46: CARD96_TIMEOUT, default 540 s, caps it
# inside a longer call).
trap 'tar czf $OUT/card96.tgz -C /tmp card96' EXIT
t96=${CARD96_TIMEOUT:-540}; [ "$t96" -ge 1 ] 2>/dev/null || t96=540  # 0 would mean no limit
timeout $t96 bash scripts/ab-bench.sh scratch/s40/ab/a scratch/s40/ab/b \
  docs/experiments/card-96-shapes.txt $L ${ROUNDS:-3} 2>&1 | tee $L/ab.log
# ab-bench's rounds alternate a b / b a: 3 rounds give a b b a a b.
