#!/usr/bin/env bash
# \brief The one script for the H200: builds (cmake + ninja), runs the GPU tests, the demo, the
# benchmark with its peers and the plot, and prints a short table last. Logs go to $OUT (or
# ./device-out). Usage: scripts/device-check.sh [build] [tests] [demo] [bench] [peers] [tune]
#                       [sanitize] [hostcost] [torch] [tp] [graphs]
#                       (no argument: build tests hostcost demo bench peers torch)
# BUILD_DIR=dir reuses a build made elsewhere (a binary built without a GPU runs here).
set -u -o pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
BUILD_DIR=${BUILD_DIR:-build-device}
export F8GEMM_CACHE_DIR=${F8GEMM_CACHE_DIR:-/tmp/f8gemm-cache}
steps=${*:-build tests hostcost demo bench peers torch}
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

if has hostcost; then
  # The host cost of one C++ call for a cached configuration ("API host cost": 200 calls issued
  # back to back, wall time / 200), on a tiny shape and on two batched ones; kernel times beside.
  for shape in "--b 1 --m 16 --n 256 --k 256" "--b 16 --m 1 --n 1280 --k 8192" \
               "--b 16 --m 4096 --n 8192 --k 1024" "--b 16 --m 1024 --n 8192 --k 1024" \
               "--b 16 --m 4096 --n 1280 --k 8192"; do
    timeout 120 "$B" run $shape --iters 100 >>"$OUT/hostcost.log" 2>&1
  done
  note "hostcost: $(grep -c 'API host cost' "$OUT/hostcost.log") runs"
  grep -E "^B,M|API host" "$OUT/hostcost.log"
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

if has torch; then
  export PYTHONPATH=$PWD/python F8GEMM_TORCH_LIB=$PWD/$BUILD_DIR PYTHONUNBUFFERED=1
  if python3 -c "import pytest" 2>/dev/null; then
    timeout "${T_TORCH:-400}" python3 -m pytest -q -rs python/tests >"$OUT/pytest.log" 2>&1
  else
    timeout "${T_TORCH:-400}" python3 python/tests/run_all.py >"$OUT/pytest.log" 2>&1
  fi
  note "pytest: rc=$? $(tail -1 "$OUT/pytest.log")"
  timeout 120 python3 python/bench_host_overhead.py >"$OUT/torch-host.log" 2>&1
  note "torch host overhead: rc=$?"
  cat "$OUT/torch-host.log"
  timeout 300 python3 examples/llama_mlp.py >"$OUT/llama.log" 2>&1
  note "llama MLP example: rc=$?"
  cat "$OUT/llama.log"
fi

if has tp; then
  export PYTHONPATH=$PWD/python F8GEMM_TORCH_LIB=$PWD/$BUILD_DIR PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
  timeout 300 python3 -m pytest -q -rs python/tests/test_tp.py >"$OUT/tp.log" 2>&1
  note "tensor-parallel test: rc=$? $(tail -1 "$OUT/tp.log")"
  timeout 300 python3 examples/tp_linear.py >>"$OUT/tp.log" 2>&1
  note "tensor-parallel example: rc=$?"
  tail -20 "$OUT/tp.log"
fi

if has graphs; then
  export PYTHONPATH=$PWD/python F8GEMM_TORCH_LIB=$PWD/$BUILD_DIR PYTHONUNBUFFERED=1
  timeout 200 python3 -m pytest -q -rs python/tests/test_graphs.py >"$OUT/graphs.log" 2>&1
  note "CUDA-graph tests: rc=$? $(tail -1 "$OUT/graphs.log")"
  timeout 200 python3 examples/llama_mlp.py --cuda-graph >"$OUT/llama-graph.log" 2>&1
  note "llama MLP example under CUDA graphs: rc=$?"
  cat "$OUT/llama-graph.log"
fi

echo
echo "==== summary"
printf '%s\n' "${summary[@]}"
[ -f "$OUT/demo.log" ] && has demo && tail -16 "$OUT/demo.log"
[ -f "$OUT/bench.log" ] && has bench && tail -16 "$OUT/bench.log"
# At most 8 files come back from the device: everything goes into one archive, and the few
# files read most often stay beside it.
tar -C "$OUT" -czf /tmp/device-logs.tgz . && mkdir -p /tmp/keep &&
  for f in bench.csv peers.csv bench.png h200.tsv tune.csv demo.log pytest.log; do
    [ -f "$OUT/$f" ] && cp "$OUT/$f" /tmp/keep/
  done
rm -rf "${OUT:?}"/* && mv /tmp/device-logs.tgz "$OUT/" && cp /tmp/keep/* "$OUT/" 2>/dev/null
exit 0
