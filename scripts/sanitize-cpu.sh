#!/usr/bin/env bash
# \brief The CPU tests under sanitizers, no GPU needed: one build with AddressSanitizer and
# UndefinedBehaviorSanitizer, another with ThreadSanitizer (the two cannot share a binary). Each
# builds the library, the CLI (the CLI tests run it) and f8gemm_cpu_tests, then runs ctest -L cpu.
# Exits non-zero on any sanitizer report or failing test.
#
#   scripts/sanitize-cpu.sh            both builds
#   scripts/sanitize-cpu.sh asan|tsan  one of them
#
# Every CPU suite runs, the JIT compile of every shipped instance included: NVRTC is a prebuilt
# library, so it runs uninstrumented and only its allocations go through the sanitizer. The
# instance tests compile on every core from an empty cache, which is where TSan sees the JIT's
# concurrent callers. Set F8GEMM_SANITIZE_FILTER to a ctest -E regex to leave suites out.
# Build directories: build-asan, build-tsan (F8GEMM_SANITIZE_DIR=prefix to move them).
set -euo pipefail
cd "$(dirname "$0")/.."

cuda=${CUDAToolkit_ROOT:-/usr/local/cuda}
export PATH="$cuda/bin:$PATH"
prefix=${F8GEMM_SANITIZE_DIR:-build}
if [ $# -gt 0 ]; then kinds=("$@"); else kinds=(asan tsan); fi

# A report fails the test that triggered it: ASan and UBSan stop the process at the first one
# with exit status 86, TSan reports every race and then exits 66. The CLI tests run the f8gemm
# binary and check its exact status (0, 1 or 2), so a report inside the CLI fails them too. The
# CUDA runtime maps memory inside ASan's shadow gap when a driver is present: gap unprotected.
export ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=1:halt_on_error=1:exitcode=86
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=86
export TSAN_OPTIONS=halt_on_error=0:exitcode=66:second_deadlock_stack=1

# TSan sees only instrumented code. NVRTC is a prebuilt library: it publishes the mutexes it
# allocates through synchronisation TSan cannot see, so two threads compiling at once report a
# "race" whose every known frame is inside libnvrtc (its malloc, its pthread_mutex_lock). Those
# reports, and only reports with a libnvrtc frame, are suppressed; f8gemm's own locking (the JIT's
# memory cache, the plan cache) stays under watch.
tsan_suppressions() {
  printf '%s\n' 'race:libnvrtc.so'
}

status=0
for kind in "${kinds[@]}"; do
  case $kind in
    asan) flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined" ;;
    tsan) flags="-fsanitize=thread" ;;
    *) echo "sanitize-cpu: unknown build '$kind' (asan or tsan)" >&2; exit 2 ;;
  esac
  dir=$prefix-$kind
  start=$SECONDS
  # -O1 -g: stacks that name lines, at a speed the instance tests can afford. GCC drops its
  # default --as-needed when sanitizing, and then the toolkit's libcuda stub, listed but unused,
  # becomes a dependency that a machine without a driver cannot load: ask for it back.
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_CXX_FLAGS="$flags -fno-omit-frame-pointer" \
        -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
        -DCMAKE_EXE_LINKER_FLAGS="$flags -Wl,--as-needed" \
        -DCUDAToolkit_ROOT="$cuda" -DF8GEMM_BUILD_TORCH=OFF -DF8GEMM_INSTALL=OFF >/dev/null
  cmake --build "$dir" -j "$(nproc)" --target f8gemm_cpu_tests f8gemm_cli
  built=$SECONDS
  # Its own JIT cache, so that no cubin of another build hides a compile path.
  cache=$(mktemp -d)
  if [ "$kind" = tsan ]; then
    supp=$(cd "$dir" && pwd)/tsan.supp
    tsan_suppressions >"$supp"
    export TSAN_OPTIONS="$TSAN_OPTIONS:suppressions=$supp"
  fi
  log=$dir/sanitize.log
  set +e
  F8GEMM_CACHE_DIR=$cache ctest --test-dir "$dir" -L cpu -j "$(nproc)" --output-on-failure \
        ${F8GEMM_SANITIZE_FILTER:+-E "$F8GEMM_SANITIZE_FILTER"} >"$log" 2>&1
  rc=$?
  set -e
  rm -rf "$cache"
  # ctest keeps only failing tests' output; a report in a passing one would be a bug here.
  reports=$(grep -cE "ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|WARNING: ThreadSanitizer" "$log" || true)
  tail -n 3 "$log"
  echo "sanitize-cpu: $kind: build $((built - start)) s, tests $((SECONDS - built)) s, ctest rc=$rc, reports=$reports (log: $log)"
  if [ "$rc" -ne 0 ] || [ "$reports" -ne 0 ]; then
    grep -E -A12 "ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|WARNING: ThreadSanitizer|\(Failed\)" "$log" | head -n 200
    status=1
  fi
done
exit $status
