#!/usr/bin/env bash
# \brief The one script for the H200: builds (cmake + ninja), runs the GPU tests, the demo, the
# benchmark with its peers and the plot, and prints a short table last. Logs go to $OUT (or
# ./device-out). Usage: scripts/device-check.sh [build] [tests] [demo] [bench] [peers] [tune]
#                       [sanitize]   (no argument: build tests demo bench peers)
# BUILD_DIR=dir reuses a build made elsewhere (a binary built without a GPU runs here).
set -u -o pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
BUILD_DIR=${BUILD_DIR:-build-device}
export F8GEMM_CACHE_DIR=${F8GEMM_CACHE_DIR:-/tmp/f8gemm-cache}
steps=${*:-build tests demo bench peers}
has() { [[ " $steps " == *" $1 "* ]]; }
summary=()
note() { summary+=("$1"); echo "== $1"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader \
  | tee "$OUT/gpu.txt"

if has build; then
  torch_prefix=$(python3 -c "import torch; print(torch.utils.cmake_prefix_path)" 2>/dev/null || true)
  if cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
       ${torch_prefix:+-DCMAKE_PREFIX_PATH=$torch_prefix} >"$OUT/build.log" 2>&1 &&
     ninja -C "$BUILD_DIR" >>"$OUT/build.log" 2>&1; then
    note "build: ok"
  else
    tail -30 "$OUT/build.log"
    note "build: FAILED (see build.log)"
    printf '%s\n' "${summary[@]}"
    exit 1
  fi
fi
B=$BUILD_DIR/f8gemm

if has tests; then
  if timeout 600 "$BUILD_DIR/f8gemm_gpu_tests" --gtest_brief=1 >"$OUT/gpu-tests.log" 2>&1; then
    note "gpu tests: $(grep -E '^\[  PASSED  \]' "$OUT/gpu-tests.log" | head -1)"
  else
    grep -E "FAILED|Failure|error" "$OUT/gpu-tests.log" | head -20
    note "gpu tests: FAILED ($(grep -cE '^\[  FAILED  \]' "$OUT/gpu-tests.log") lines), see gpu-tests.log"
  fi
fi

if has sanitize; then
  timeout 600 compute-sanitizer --tool memcheck --error-exitcode 9 "$B" run --b 3 --m 77 --n 136 \
    --k 272 --iters 2 --verify >"$OUT/sanitize.log" 2>&1
  note "compute-sanitizer memcheck (ragged shape): rc=$? $(grep -c 'Invalid' "$OUT/sanitize.log") invalid accesses"
fi

if has demo; then
  timeout "${T_DEMO:-600}" "$B" demo >"$OUT/demo.log" 2>&1
  note "demo: rc=$? ($(tail -1 "$OUT/demo.log"))"
fi

if has tune; then
  timeout 900 "$B" tune --shapes bench/shapes.txt --both --out "$OUT/h200.tsv" \
    --log "$OUT/tune.csv" >"$OUT/tune.log" 2>&1
  note "tune: rc=$?"
  cat "$OUT/tune.log"
fi

if has bench; then
  timeout "${T_BENCH:-900}" "$B" bench --shapes bench/shapes.txt --csv "$OUT/bench.csv" >"$OUT/bench.log" 2>&1
  note "bench: rc=$?"
fi

if has peers; then
  PYTHONUNBUFFERED=1 timeout "${T_PEERS:-900}" python3 bench/peers.py --shapes bench/shapes.txt \
    --baseline "$OUT/bench.csv" --csv "$OUT/peers.csv" >"$OUT/peers.log" 2>&1
  note "peers: rc=$?"
  python3 bench/plot.py "$OUT/bench.csv" "$OUT/peers.csv" --out "$OUT/bench.png" >"$OUT/plot.log" 2>&1
  note "plot: rc=$?"
fi

echo
echo "==== summary"
printf '%s\n' "${summary[@]}"
[ -f "$OUT/demo.log" ] && has demo && tail -16 "$OUT/demo.log"
[ -f "$OUT/bench.log" ] && has bench && tail -16 "$OUT/bench.log"
# At most 8 files come back from the device: everything goes into one archive, and the few
# files read most often stay beside it.
tar -C "$OUT" -czf /tmp/device-logs.tgz . && mkdir -p /tmp/keep &&
  for f in bench.csv peers.csv bench.png h200.tsv tune.csv demo.log; do
    [ -f "$OUT/$f" ] && cp "$OUT/$f" /tmp/keep/
  done
rm -rf "${OUT:?}"/* && mv /tmp/device-logs.tgz "$OUT/" && cp /tmp/keep/* "$OUT/" 2>/dev/null
exit 0
