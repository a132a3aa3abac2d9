#!/usr/bin/env bash
# \brief The one script for the H200: builds (cmake + ninja), runs the GPU tests, the demo, the
# benchmark with its peers and the plot, and prints a short table last. Logs go to $OUT (or
# ./device-out). Usage: scripts/device-check.sh [build] [tests] [demo] [bench] [peers] [tune]
#                       [sanitize] [hostcost] [torch] [tp] [graphs] [pdl] [trace] [mlp-ab]
#                       [table-ab] [silu-tune] [torch-build]
#                       (no argument: build tests hostcost demo bench peers torch)
# torch-build: only the PyTorch extension (target f8gemm_torch, no tests), into
# $TORCH_BUILD_DIR (default build-device-torch), which the torch steps then load. With BUILD_DIR
# naming binaries built on a machine without a GPU (carried), `BUILD_DIR=dir GPU_TEST_SHARDS=6
# scripts/device-check.sh torch-build tests torch` checks a tree without the full build.
# trace: GemmGpu.Trace*, a memcheck of one instrumented call, and `run --trace` of the schedules
# that perf-log card 56 asks about (TRACES="name:B,M,N,K:config ..." replaces them).
# mlp-ab: the Llama MLP block (examples/llama_mlp.py --cuda-graph --pdl) in rounds a b b a, where
# a runs with F8GEMM_TUNE_FILE=$MLP_AB_TABLE (a user table that pins the entries under test) and
# b with the shipped tables; the torch extension must be built (the build step). MLP_M="1 16 ..."
# replaces the script's rows (M).
# silu-tune: `f8gemm tune --epilogue silu_mul` of the block's gate|up GEMM (N = 28672, K = 4096)
# at the rows $MLP_M (default 32 64 128 192 256 512 1024 2048), as the block calls it
# (F8GEMM_PDL=1, --prefetch-w: chained keys), into $OUT/silu-tune.tsv. The tune alone misleads
# (perf log, card 76): keep an entry only after the block's A/B, e.g. in the same call
# `MLP_AB_TABLE=$OUT/silu-tune.tsv scripts/device-check.sh build silu-tune mlp-ab`.
# table-ab: `f8gemm bench --no-peak` over $SHAPES in rounds a b b a, where a runs with
# F8GEMM_TUNE_FILE=$TABLE_AB (a user table pinning the entries under test) and b with the shipped
# tables, then each shape's mean graph time per round kind and b / a (f8gemm_preshuffled and
# f8gemm_plain rows). Needs no torch.
# BUILD_DIR=dir reuses a build made elsewhere (a binary built without a GPU runs here).
# SHAPES=file replaces bench/shapes.txt for tune, bench and peers.
# GPU_TEST_SHARDS=N and GPU_TEST_FILTER=pattern: the tests step in N gtest shards at once, and/or
# a --gtest_filter.
# Wheels in ./.whl (e.g. fbgemm-gpu-genai for the peers) are installed first, into /tmp/site.
# Every step prints one summary line; the script exits 1 when any step failed. On this machine a
# skipped GPU test is a failure: it means the test did not run where it was meant to.
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
BUILD_DIR=${BUILD_DIR:-build-device}
SHAPES=${SHAPES:-bench/shapes.txt}
export F8GEMM_CACHE_DIR=${F8GEMM_CACHE_DIR:-/tmp/f8gemm-cache}
# A kernel that never finishes ends the test binary, bench or tune within a minute, naming the
# shape and config (testing/hang_guard.hpp), instead of holding the step until its timeout
# (perf log, card 52: a deadlock cost a whole device call). The sanitizer step raises it.
export F8GEMM_HANG_SECONDS=${F8GEMM_HANG_SECONDS:-60}
steps=${*:-build tests hostcost demo bench peers torch}
has() { [[ " $steps " == *" $1 "* ]]; }
summary=()
failed_steps=()
note() { summary+=("$1"); echo "== $1"; }
# check NAME RC [DETAIL...]: the step's summary line; a non-zero RC marks the run failed
# (124: the step ran past its time limit).
check() {
  local name=$1 rc=$2
  shift 2
  local detail=${*:+ $*}
  if [ "$rc" -eq 0 ]; then
    note "$name: ok$detail"
  else
    [ "$rc" -eq 124 ] && detail=" timed out$detail"
    failed_steps+=("$name")
    note "$name: FAILED (rc=$rc)$detail"
  fi
}
# gtest_skips LOG: the count on gtest's "[  SKIPPED ] N tests" line (brief and full output).
gtest_skips() {
  local n
  n=$(grep -E '^\[  SKIPPED \] [0-9]+ tests?[.,]' "$1" | tail -1 | grep -oE '[0-9]+' | head -1)
  echo "${n:-0}"
}
# bad_skips LOG [ALLOWED_REGEX]: skipped tests in a pytest -rs or run_all.py log, less those whose
# reason matches ALLOWED_REGEX. pytest groups equal skips as "SKIPPED [N] file:line: reason";
# the mini runner prints one "SKIPPED name: reason" line per skip.
bad_skips() {
  local log=$1 allow=${2:-} total allowed=0
  total=$(grep -oE '[0-9]+ skipped' "$log" | tail -1 | grep -oE '^[0-9]+')
  if [ -n "$allow" ]; then
    allowed=$(grep -E '^SKIPPED' "$log" | grep -E "$allow" |
      sed -nE 's/^SKIPPED \[([0-9]+)\].*/\1/p; t; s/^SKIPPED .*/1/p' | awk '{s += $1} END {print s + 0}')
  fi
  echo $(( ${total:-0} - allowed ))
}
# Skips by design: with fewer than two GPUs the two-GPU tests ("needs 2 GPUs, found 1"), and in
# a checkout (not the pip-installed package) the test of the installed package.
ONE_GPU_SKIPS='needs 2 GPUs|F8GEMM_TEST_INSTALLED is not set'

finish() {
  echo
  echo "==== summary"
  printf '%s\n' "${summary[@]}"
  [ -f "$OUT/demo.log" ] && has demo && tail -16 "$OUT/demo.log"
  [ -f "$OUT/bench.log" ] && has bench && tail -16 "$OUT/bench.log"
  if [ ${#failed_steps[@]} -gt 0 ]; then
    printf '==== FAILED:'
    printf ' [%s]' "${failed_steps[@]}"
    echo
  else
    echo "==== all steps ok"
  fi
  # At most 8 files come back from the device: everything goes into one archive, and the few
  # files read most often stay beside it. Nothing is removed unless the archive was written.
  if tar -C "$OUT" -czf /tmp/device-logs.tgz .; then
    rm -rf /tmp/keep && mkdir -p /tmp/keep
    for f in bench.csv peers.csv bench.png h200.tsv tune.csv demo.log pytest.log; do
      [ -f "$OUT/$f" ] && cp "$OUT/$f" /tmp/keep/
    done
    rm -rf "${OUT:?}"/* && mv /tmp/device-logs.tgz "$OUT/" && cp /tmp/keep/* "$OUT/" 2>/dev/null
  fi
  [ ${#failed_steps[@]} -eq 0 ]
  exit $?
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader \
  | tee "$OUT/gpu.txt"

wheels=(.whl/*.whl)
if [ -f "${wheels[0]}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "${wheels[@]}" >"$OUT/wheels.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  check "wheels" $rc "(${wheels[*]##*/})"
  [ $rc -ne 0 ] && tail -5 "$OUT/wheels.log"
fi

if has build; then
  torch_prefix=$(python3 -c "import torch; print(torch.utils.cmake_prefix_path)" 2>/dev/null || true)
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    ${torch_prefix:+-DCMAKE_PREFIX_PATH=$torch_prefix} >"$OUT/build.log" 2>&1 &&
    ninja -C "$BUILD_DIR" >>"$OUT/build.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    check "build" 0
  else
    check "build" $rc "(see build.log)"
    tail -30 "$OUT/build.log"
    finish  # nothing below can run without the build
  fi
fi
B=$BUILD_DIR/f8gemm
TORCH_LIB_DIR=$PWD/$BUILD_DIR  # where the torch steps load libf8gemm_torch.so from

if has torch-build; then
  TORCH_BUILD_DIR=${TORCH_BUILD_DIR:-build-device-torch}
  torch_prefix=$(python3 -c "import torch; print(torch.utils.cmake_prefix_path)" 2>/dev/null || true)
  cmake -S . -B "$TORCH_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DF8GEMM_BUILD_TESTS=OFF \
    ${torch_prefix:+-DCMAKE_PREFIX_PATH=$torch_prefix} >"$OUT/torch-build.log" 2>&1 &&
    ninja -C "$TORCH_BUILD_DIR" f8gemm_torch >>"$OUT/torch-build.log" 2>&1
  rc=$?
  check "torch build" $rc "($TORCH_BUILD_DIR)"
  if [ $rc -eq 0 ]; then
    TORCH_LIB_DIR=$PWD/$TORCH_BUILD_DIR
  else
    tail -30 "$OUT/torch-build.log"
  fi
fi

if has tests; then
  # GPU_TEST_SHARDS=N runs the suite as N gtest shards at once on the one GPU (the whole suite
  # took about 260 s in six, against 600 s and more in one); GPU_TEST_FILTER=pattern passes
  # --gtest_filter. Each shard logs to gpu-tests-I.log; gpu-tests.log holds them all.
  shards=${GPU_TEST_SHARDS:-1}
  filter=()
  [ -n "${GPU_TEST_FILTER:-}" ] && filter=("--gtest_filter=$GPU_TEST_FILTER")
  rc=0
  if [ "$shards" -gt 1 ]; then
    pids=()
    for ((i = 0; i < shards; i++)); do
      GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout 600 "$BUILD_DIR/f8gemm_gpu_tests" \
        --gtest_brief=1 "${filter[@]}" >"$OUT/gpu-tests-$i.log" 2>&1 &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done
    shard_logs=()
    for ((i = 0; i < shards; i++)); do shard_logs+=("$OUT/gpu-tests-$i.log"); done
    cat "${shard_logs[@]}" >"$OUT/gpu-tests.log"
    n=0
    skipped=0
    for log in "${shard_logs[@]}"; do
      k=$(grep -E '^\[  PASSED  \] [0-9]+' "$log" | grep -oE '[0-9]+' | head -1)
      n=$((n + ${k:-0}))
      skipped=$((skipped + $(gtest_skips "$log")))
    done
    passed="[  PASSED  ] $n tests, in $shards shards."
  else
    timeout 600 "$BUILD_DIR/f8gemm_gpu_tests" --gtest_brief=1 "${filter[@]}" >"$OUT/gpu-tests.log" 2>&1
    rc=$?
    passed=$(grep -E '^\[  PASSED  \]' "$OUT/gpu-tests.log" | head -1)
    skipped=$(gtest_skips "$OUT/gpu-tests.log")
  fi
  if [ $rc -ne 0 ]; then
    grep -E "FAILED|Failure|error" "$OUT/gpu-tests.log" | head -20
    check "gpu tests" $rc "$(grep -cE '^\[  FAILED  \]' "$OUT/gpu-tests.log") FAILED lines, see gpu-tests.log"
  elif [ "$skipped" -gt 0 ]; then
    grep -A1 'Skipped$' "$OUT/gpu-tests.log" | head -4
    check "gpu tests" 1 "$skipped skipped (a skipped GPU test did not run), $passed"
  else
    check "gpu tests" 0 "$passed"
  fi
fi

if has sanitize; then
  F8GEMM_HANG_SECONDS=600 timeout 600 compute-sanitizer --tool memcheck --error-exitcode 9 "$B" run --b 3 --m 77 --n 136 \
    --k 272 --iters 2 --verify >"$OUT/sanitize.log" 2>&1
  check "compute-sanitizer memcheck (ragged shape)" $? \
    "$(grep -oE 'ERROR SUMMARY: .*' "$OUT/sanitize.log" | tail -1)"
  # Issue 6's check: memcheck and racecheck on one small ragged batched case of each schedule
  # (SAN_CASES="config:B,M,N,K ..." replaces the list): cooperative with whole-block and
  # 32-column stores, clustered, ping-pong, split-K.
  san_cases=${SAN_CASES:-"sm90_tiled_128x256x128_s3_c1x1_r8:3,300,520,272
    sm90_tiled_128x160x128_s4_c1x1_r8:3,300,360,272
    sm90_tiled_128x256x128_s3_c2x1_r8:3,300,520,272
    sm90_pingpong_64x256x128_s5_c2x1_r8:3,300,520,272
    sm90_swap_64x16x128_s8_c1x1_r0_k4:2,13,1032,1040"}
  for c in $san_cases; do
    IFS=: read -r config shape <<<"$c"
    IFS=, read -r b m n k <<<"$shape"
    for tool in memcheck racecheck; do
      log="$OUT/sanitize-$tool-$config.log"
      F8GEMM_HANG_SECONDS=600 timeout 300 compute-sanitizer --tool "$tool" --error-exitcode 9 "$B" run \
        --b "$b" --m "$m" --n "$n" --k "$k" --config "$config" --once --verify >"$log" 2>&1
      rc=$?
      # The tool's own summary line ("ERROR SUMMARY: 0 errors", "RACECHECK SUMMARY: 0 hazards
      # displayed (0 errors, 0 warnings)"), not a count of matching lines: the racecheck summary
      # itself names hazards.
      summary=$(grep -oE '(ERROR|RACECHECK) SUMMARY: .*' "$log" | tail -1)
      check "compute-sanitizer $tool ($config, $shape)" $rc \
        "$summary; $(grep -o 'verify.*: [A-Z]*$' "$log" | tail -1)"
    done
  done
fi

if has hostcost; then
  # The host cost of one C++ call for a cached configuration ("API host cost": 200 calls issued
  # back to back, wall time / 200), on a tiny shape and on two batched ones; kernel times beside.
  rc=0
  for shape in "--b 1 --m 16 --n 256 --k 256" "--b 16 --m 1 --n 1280 --k 8192" \
               "--b 16 --m 4096 --n 8192 --k 1024" "--b 16 --m 1024 --n 8192 --k 1024" \
               "--b 16 --m 4096 --n 1280 --k 8192"; do
    # shellcheck disable=SC2086 # $shape is a list of arguments
    timeout 120 "$B" run $shape --iters 100 >>"$OUT/hostcost.log" 2>&1 || rc=$?
  done
  check "hostcost" $rc "$(grep -c 'API host cost' "$OUT/hostcost.log") of 5 runs"
  grep -E "^B,M|API host" "$OUT/hostcost.log"
fi

if has demo; then
  timeout "${T_DEMO:-600}" "$B" demo >"$OUT/demo.log" 2>&1
  check "demo" $? "($(tail -1 "$OUT/demo.log"))"
fi

if has tune; then
  timeout 900 "$B" tune --shapes "$SHAPES" --both --out "$OUT/h200.tsv" \
    --log "$OUT/tune.csv" >"$OUT/tune.log" 2>&1
  check "tune" $?
  cat "$OUT/tune.log"
fi

if has trace; then
  timeout 300 "$BUILD_DIR/f8gemm_gpu_tests" --gtest_brief=1 --gtest_filter='GemmGpu.Trace*' \
    >"$OUT/trace-test.log" 2>&1
  check "trace gpu test" $? "$(grep -E '^\[  (PASSED|FAILED) ' "$OUT/trace-test.log" | head -1)"
  F8GEMM_HANG_SECONDS=600 timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 "$B" run \
    --b 3 --m 300 --n 136 --k 272 --config sm90_pingpong_64x128x128_s8_c2x1_r8 --once \
    --trace "$OUT/trace-sanitize.csv" >"$OUT/trace-sanitize.log" 2>&1
  check "compute-sanitizer memcheck (traced call)" $? \
    "$(grep -c 'Invalid' "$OUT/trace-sanitize.log") invalid accesses"
  traces=${TRACES:-"pp64x256:1,16384,8192,1024:sm90_pingpong_64x256x128_s5_c2x1_r8
    tiled128x256:1,16384,8192,1024:sm90_tiled_128x256x128_s3_c2x1_r8
    pp128x128:1,8192,8192,8192:sm90_pingpong_128x128x128_s6_c1x1_r8
    tiled128x192:1,8192,8192,8192:sm90_tiled_128x192x128_s4_c1x1_r8"}
  for t in $traces; do
    IFS=: read -r name shape config <<<"$t"
    IFS=, read -r b m n k <<<"$shape"
    timeout 120 "$B" run --b "$b" --m "$m" --n "$n" --k "$k" --config "$config" --iters 20 \
      --trace "$OUT/trace-$name.csv" >"$OUT/trace-$name.log" 2>&1
    check "trace $name ($shape $config)" $?
    cat "$OUT/trace-$name.log"
  done
fi

if has bench; then
  timeout "${T_BENCH:-900}" "$B" bench --shapes "$SHAPES" --csv "$OUT/bench.csv" >"$OUT/bench.log" 2>&1
  check "bench" $?
fi

if has pdl; then
  # Programmatic dependent launch (docs/perf-log.md, card 23): every GPU test with F8GEMM_PDL=1
  # (each test's launches overlap), the decode shapes benched with F8GEMM_PDL=0 and =1
  # alternately, twice, on one GPU; then the Llama MLP block with --pdl (needs the torch
  # extension of the build step).
  F8GEMM_PDL=1 timeout 600 "$BUILD_DIR/f8gemm_gpu_tests" --gtest_brief=1 >"$OUT/gpu-tests-pdl.log" 2>&1
  check "gpu tests, F8GEMM_PDL=1" $? "$(grep -E '^\[  PASSED  \]' "$OUT/gpu-tests-pdl.log" | head -1)"
  rc=0
  for run in 1 2; do
    for pdl in 0 1; do
      F8GEMM_PDL=$pdl timeout 300 "$B" bench --shapes bench/shapes-decode.txt --no-peak \
        --csv "$OUT/pdl$pdl-$run.csv" >"$OUT/pdl$pdl-$run.log" 2>&1 || rc=$?
    done
  done
  check "pdl bench" $rc "(pdl0-*.csv against pdl1-*.csv)"
  PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH} F8GEMM_TORCH_LIB=$TORCH_LIB_DIR \
    timeout 300 python3 examples/llama_mlp.py --cuda-graph --pdl >"$OUT/pdl-mlp.log" 2>&1
  rc=$?
  ! grep -q DIFFER "$OUT/pdl-mlp.log" || rc=1
  check "pdl llama mlp" $rc
  cat "$OUT/pdl-mlp.log"
fi

if has peers; then
  # Without the C++ bench's CSV (bench not run, or failed) peers.py measures its own ceilings.
  baseline=()
  [ -s "$OUT/bench.csv" ] && baseline=(--baseline "$OUT/bench.csv")
  PYTHONUNBUFFERED=1 timeout "${T_PEERS:-900}" python3 bench/peers.py --shapes "$SHAPES" \
    "${baseline[@]}" --csv "$OUT/peers.csv" >"$OUT/peers.log" 2>&1
  rc=$?
  fbgemm=$(grep -m1 '^FBGEMM gen_ai:' "$OUT/peers.log")
  if [ $rc -eq 0 ] && ls .whl/fbgemm_gpu_genai-*.whl >/dev/null 2>&1 &&
     [[ "$fbgemm" == *unavailable* ]]; then
    check "peers" 1 "the FBGEMM wheel is carried but did not load: ${fbgemm#FBGEMM gen_ai: }"
  else
    check "peers" $rc "(${fbgemm:-no FBGEMM line})"
  fi
  tail -30 "$OUT/peers.log"
  csvs=("$OUT/peers.csv")
  [ -s "$OUT/bench.csv" ] && csvs=("$OUT/bench.csv" "$OUT/peers.csv")
  python3 bench/plot.py "${csvs[@]}" --out "$OUT/bench.png" >"$OUT/plot.log" 2>&1
  check "plot" $? "($(tail -1 "$OUT/plot.log"))"
  if [ -s "$OUT/bench.csv" ]; then
    # The run's peer table in the perf log's form (PEAK: the highest rate measured in the run).
    python3 bench/peer_table.py --shapes "$SHAPES" --runs "$OUT/bench.csv" --peers "$OUT/peers.csv" \
      >"$OUT/peer-table.md" 2>&1
    check "peer table" $? "($(tail -1 "$OUT/peer-table.md"))"
  fi
fi

if has torch; then
  export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH} F8GEMM_TORCH_LIB=$TORCH_LIB_DIR
  export PYTHONUNBUFFERED=1
  if python3 -c "import pytest" 2>/dev/null; then
    timeout "${T_TORCH:-400}" python3 -m pytest -q -rs python/tests >"$OUT/pytest.log" 2>&1
  else
    timeout "${T_TORCH:-400}" python3 python/tests/run_all.py >"$OUT/pytest.log" 2>&1
  fi
  rc=$?
  skipped=$(bad_skips "$OUT/pytest.log" "$ONE_GPU_SKIPS")
  if [ $rc -eq 0 ] && [ "$skipped" -gt 0 ]; then
    grep -E '^SKIPPED' "$OUT/pytest.log" | grep -vE "$ONE_GPU_SKIPS" | head -10
    check "pytest" 1 "$skipped skipped other than '$ONE_GPU_SKIPS'; $(tail -1 "$OUT/pytest.log")"
  else
    check "pytest" $rc "$(tail -1 "$OUT/pytest.log")"
  fi
  timeout 120 python3 python/bench_host_overhead.py >"$OUT/torch-host.log" 2>&1
  check "torch host overhead" $?
  cat "$OUT/torch-host.log"
  timeout 300 python3 examples/llama_mlp.py >"$OUT/llama.log" 2>&1
  check "llama MLP example" $?
  cat "$OUT/llama.log"
fi

if has tp; then
  export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH} F8GEMM_TORCH_LIB=$TORCH_LIB_DIR
  export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
  timeout 300 python3 -m pytest -q -rs python/tests/test_tp.py >"$OUT/tp.log" 2>&1
  rc=$?
  skipped=$(bad_skips "$OUT/tp.log")  # this step is asked for two GPUs: every skip fails it
  if [ $rc -eq 0 ] && [ "$skipped" -gt 0 ]; then
    check "tensor-parallel test" 1 "$skipped skipped; $(tail -1 "$OUT/tp.log")"
  else
    check "tensor-parallel test" $rc "$(tail -1 "$OUT/tp.log")"
  fi
  timeout 300 python3 examples/tp_linear.py >>"$OUT/tp.log" 2>&1
  check "tensor-parallel example" $?
  tail -20 "$OUT/tp.log"
fi

if has graphs; then
  export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH} F8GEMM_TORCH_LIB=$TORCH_LIB_DIR
  export PYTHONUNBUFFERED=1
  timeout 200 python3 -m pytest -q -rs python/tests/test_graphs.py >"$OUT/graphs.log" 2>&1
  rc=$?
  skipped=$(bad_skips "$OUT/graphs.log")
  if [ $rc -eq 0 ] && [ "$skipped" -gt 0 ]; then
    check "CUDA-graph tests" 1 "$skipped skipped; $(tail -1 "$OUT/graphs.log")"
  else
    check "CUDA-graph tests" $rc "$(tail -1 "$OUT/graphs.log")"
  fi
  timeout 200 python3 examples/llama_mlp.py --cuda-graph >"$OUT/llama-graph.log" 2>&1
  check "llama MLP example under CUDA graphs" $?
  cat "$OUT/llama-graph.log"
fi

# ab_table FILE: FILE's absolute path, so that the table is found whatever directory reads it.
ab_table() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
# in_round ROUND TABLE CMD...: CMD with F8GEMM_TUNE_FILE=TABLE in round a, with the shipped
# tables in round b.
in_round() {
  local round=$1 table=$2
  shift 2
  if [ "$round" = a ]; then F8GEMM_TUNE_FILE=$table "$@"; else "$@"; fi
}

if has silu-tune; then
  {
    echo "# B,M,N,K: the Llama MLP block's gate|up GEMM (hidden 4096, intermediate 14336)"
    for m in ${MLP_M:-32 64 128 192 256 512 1024 2048}; do echo "1,$m,28672,4096"; done
  } >"$OUT/silu-shapes.txt"
  F8GEMM_PDL=1 timeout 400 "$B" tune --shapes "$OUT/silu-shapes.txt" --epilogue silu_mul \
    --prefetch-w --out "$OUT/silu-tune.tsv" --log "$OUT/silu-tune.csv" >"$OUT/silu-tune.log" 2>&1
  check "SiLU·mul tune (chained)" $?
  cat "$OUT/silu-tune.log"
fi

if has mlp-ab; then
  export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH} F8GEMM_TORCH_LIB=$TORCH_LIB_DIR
  export PYTHONUNBUFFERED=1
  if [ ! -f "${MLP_AB_TABLE:-}" ]; then
    check "MLP block A/B" 2 "(MLP_AB_TABLE='${MLP_AB_TABLE:-}' names no file)"
  else
    table=$(ab_table "$MLP_AB_TABLE")
    rc=0
    : >"$OUT/mlp-ab.log"
    for round in a b b a; do
      echo "## round $round" >>"$OUT/mlp-ab.log"
      # shellcheck disable=SC2086  # MLP_M is a list of rows
      in_round $round "$table" timeout 150 python3 examples/llama_mlp.py --cuda-graph --pdl \
        ${MLP_M:+--m $MLP_M} >>"$OUT/mlp-ab.log" 2>&1 || rc=$?
    done
    check "MLP block A/B (a: $(basename "$table"), b: shipped tables)" $rc
    grep -E '^## round|^ +[0-9]+ \|' "$OUT/mlp-ab.log"
  fi
fi

if has table-ab; then
  if [ ! -f "${TABLE_AB:-}" ]; then
    check "table A/B" 2 "(TABLE_AB='${TABLE_AB:-}' names no file)"
  else
    table=$(ab_table "$TABLE_AB")
    rc=0
    i=0
    for round in a b b a; do
      i=$((i + 1))
      in_round $round "$table" timeout "${T_BENCH:-900}" "$B" bench --shapes "$SHAPES" --no-peak \
        --csv "$OUT/table-ab-$i-$round.csv" >"$OUT/table-ab-$i-$round.log" 2>&1 || rc=$?
    done
    check "table A/B (a: $(basename "$table"), b: shipped tables)" $rc
    python3 - "$OUT" <<'PY'
import csv, glob, os, statistics, sys
times = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "table-ab-*-*.csv"))):
    kind = path.rsplit("-", 1)[1][0]
    for r in csv.DictReader(open(path)):
        if r["impl"] in ("f8gemm_preshuffled", "f8gemm_plain") and r["status"] == "ok":
            key = (r["impl"], ",".join((r["b"], r["m"], r["n"], r["k"])))
            times.setdefault(key, {}).setdefault(kind, []).append(float(r["graph_us"]))
print("impl shape: a (us, each round) | b | b / a of the means")
for (impl, shape), t in sorted(times.items()):
    a, b = t.get("a", []), t.get("b", [])
    ratio = statistics.mean(b) / statistics.mean(a) if a and b else float("nan")
    print(f"{impl} {shape}: {' '.join(f'{x:.1f}' for x in a)} | {' '.join(f'{x:.1f}' for x in b)} | {ratio:.3f}")
PY
  fi
fi

finish
