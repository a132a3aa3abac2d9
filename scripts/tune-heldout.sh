#!/usr/bin/env bash
# \brief The held-out tune run for the cost-model test (tests/cpu/test_model.cpp): times every
# candidate configuration of each shape of tests/data/heldout-shapes.txt in both accumulation
# modes on an H200, in two halves that each fit a 10-minute device call, then joins them into
# tests/data/heldout-tune.csv (the `f8gemm tune --log` CSV: b,m,n,k,accum,config,graph_us,model_us).
#
# Usage (on the H200, from the repository root, with the CLI built in $BUILD_DIR):
#   scripts/tune-heldout.sh 1      # first half  -> $OUT/heldout-tune-1.csv
#   scripts/tune-heldout.sh 2      # second half -> $OUT/heldout-tune-2.csv
#   scripts/tune-heldout.sh join   # both halves -> tests/data/heldout-tune.csv (any machine)
#   scripts/tune-heldout.sh plan   # prints the halves and their estimated minutes, runs nothing
# BUILD_DIR (default build-device), OUT (default device-out), F8GEMM_CACHE_DIR (default under
# $BUILD_DIR, so that a second call on the same machine reuses the compiled instances).
#
# The halves are balanced by an estimate of each shape's time, per accumulation mode:
#   compile: CANDIDATES instances at COMPILE_S seconds each, over the machine's cores;
#   timing:  per candidate 20 ms of warm-up, 5 graph replays of 20 calls (`tune`'s default
#            --iters 40) at the shape's floor max(bytes / 4.2 TB/s, flops / 1300 TFLOP/s), and
#            OVERHEAD_MS of capture and launch bookkeeping.
# With CANDIDATES=64 (the decode shapes of the last tune had 63 on average), COMPILE_S=2 and 16
# cores, the 34 shapes estimate to about 11 minutes in all, under 6 per half. Each half runs under
# `timeout` (LIMIT_S, default 540 s) so that it ends with a clear message rather than a killed call.
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 1

SHAPES_FILE=tests/data/heldout-shapes.txt
TARGET=tests/data/heldout-tune.csv
BUILD_DIR=${BUILD_DIR:-build-device}
OUT=${OUT:-device-out}
LIMIT_S=${LIMIT_S:-540}
CANDIDATES=${CANDIDATES:-64}
COMPILE_S=${COMPILE_S:-2}
OVERHEAD_MS=${OVERHEAD_MS:-15}
# The device's cores (the nvidia-h200 machine has 16). A fixed number, not nproc: both halves
# and `join` must see the same split wherever they run.
CORES=${CORES:-16}
export F8GEMM_CACHE_DIR=${F8GEMM_CACHE_DIR:-$PWD/$BUILD_DIR/f8gemm-cache}
HEADER="b,m,n,k,accum,config,graph_us,model_us"

# Prints "half seconds shape" for every shape: the greedy split of the estimated times, longest
# first, each shape to the half with less work so far.
plan() {
  grep -v '^[[:space:]]*#' "$SHAPES_FILE" | grep -v '^[[:space:]]*$' | tr -d ' \r' |
    awk -F, -v cand="$CANDIDATES" -v comp="$COMPILE_S" -v cores="$CORES" -v over="$OVERHEAD_MS" '
      {
        b = $1; m = $2; n = $3; k = $4
        bytes = b * (m * k + n * k + 2 * m * n + 4 * (m + n))
        flops = 2 * b * m * n * k
        call_us = bytes / 4.2e6; if (flops / 1.3e9 > call_us) call_us = flops / 1.3e9
        per_mode = cand * comp / cores + cand * (0.020 + 100 * call_us * 1e-6 + over * 1e-3)
        printf "%.1f %s\n", 2 * per_mode, $0
      }' |
    sort -rn |
    awk '{ h = (t1 <= t2) ? 1 : 2; if (h == 1) t1 += $1; else t2 += $1; print h, $1, $2 }'
}

run_half() {
  local half=$1
  local shapes="$OUT/heldout-shapes-$half.txt" csv="$OUT/heldout-tune-$half.csv"
  mkdir -p "$OUT" "$F8GEMM_CACHE_DIR"
  plan | awk -v h="$half" '$1 == h { print $3 }' > "$shapes"
  local est
  est=$(plan | awk -v h="$half" '$1 == h { s += $2 } END { printf "%.1f", s / 60 }')
  echo "half $half: $(wc -l < "$shapes") shapes, estimated $est min (limit ${LIMIT_S} s)"
  timeout "$LIMIT_S" "$BUILD_DIR/f8gemm" tune --shapes "$shapes" --both \
    --out "$OUT/heldout-tune-$half.tsv" --log "$csv"
  local rc=$?
  if [ "$rc" -eq 124 ]; then
    echo "half $half ran past ${LIMIT_S} s: split the shapes further (raise CANDIDATES)" >&2
  elif [ "$rc" -ne 0 ]; then
    echo "half $half: f8gemm tune failed (exit $rc)" >&2
  else
    echo "half $half: $(($(wc -l < "$csv") - 1)) rows in $csv"
  fi
  return "$rc"
}

join_halves() {
  local first="$OUT/heldout-tune-1.csv" second="$OUT/heldout-tune-2.csv"
  for f in "$first" "$second"; do
    [ -s "$f" ] || { echo "missing $f: run halves 1 and 2 first" >&2; return 1; }
    [ "$(head -1 "$f")" = "$HEADER" ] || { echo "$f: unexpected header" >&2; return 1; }
  done
  { echo "$HEADER"; tail -n +2 "$first"; tail -n +2 "$second"; } > "$TARGET"
  echo "$TARGET: $(($(wc -l < "$TARGET") - 1)) rows"
}

case "${1:-}" in
  1 | 2) run_half "$1" ;;
  join) join_halves ;;
  plan)
    plan
    plan | awk '{ s[$1] += $2 } END { printf "half 1: %.1f min, half 2: %.1f min\n", s[1] / 60, s[2] / 60 }'
    ;;
  *)
    echo "usage: scripts/tune-heldout.sh 1|2|join|plan" >&2
    exit 2
    ;;
esac
