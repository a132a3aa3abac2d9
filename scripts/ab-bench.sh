#!/usr/bin/env bash
# \brief A/B of two source trees on one GPU, for a kernel change's perf-log card: builds both
# (Release, side by side), then benches them alternately (A B, B A, A B, ...) on the same shapes
# with the same method (`f8gemm bench --no-peak`: CUDA-graph replay on rotated operands), and
# prints each shape's mean graph time per tree and the ratio B/A. The two trees see the same GPU
# within minutes of each other, which is what compute-bound timings under the power limit need.
#
# Usage: scripts/ab-bench.sh DIR_A DIR_B SHAPES OUT [ROUNDS]
#   DIR_A, DIR_B  source trees, e.g. `git archive main | tar -x -C a` (the device machine gets
#                 the working tree only, not the repository)
#   SHAPES        a shapes file (bench/shapes*.txt)
#   OUT           gets two files: summary.txt (also printed) and ab-details.tgz (build logs,
#                 every bench's CSV and log)
#   ROUNDS        rounds of both trees (default 2)
# Environment: AB_BENCH_ARGS (more `f8gemm bench` options, e.g. --precise), AB_TIMEOUT (seconds
# per bench, default 150: keep builds plus 2 * ROUNDS benches inside the device's 600 s per
# command), AB_PREBUILT=SUBDIR (a path relative to each tree: use DIR/SUBDIR/f8gemm as built
# elsewhere, e.g. a Release build made on a machine without a GPU; no build here),
# CUDA_VISIBLE_DEVICES as the caller sets it. Exits non-zero when a build or a bench fails.
set -u -o pipefail
if [ $# -lt 4 ]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit 2
fi
dir_a=$(cd "$1" && pwd) || exit 2
dir_b=$(cd "$2" && pwd) || exit 2
[ -f "$3" ] || { echo "ab-bench: no shapes file $3" >&2; exit 2; }
shapes=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
out=$4
rounds=${5:-2}
mkdir -p "$out" && out=$(cd "$out" && pwd)
work=$(mktemp -d)
export F8GEMM_CACHE_DIR=${F8GEMM_CACHE_DIR:-/tmp/f8gemm-ab-cache}  # keys hash each tree's kernels

bin_dir=${AB_PREBUILT:-build-ab}
build() {  # build DIR NAME
  if [ -n "${AB_PREBUILT:-}" ]; then
    [ -x "$1/$bin_dir/f8gemm" ] && return 0
    echo "ab-bench: no prebuilt $1/$bin_dir/f8gemm" | tee "$work/build-$2.log"
    return 1
  fi
  cmake -S "$1" -B "$1/build-ab" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$work/build-$2.log" 2>&1 &&
    ninja -C "$1/build-ab" f8gemm >>"$work/build-$2.log" 2>&1
}
build "$dir_a" a & pid_a=$!
build "$dir_b" b & pid_b=$!
rc=0
wait $pid_a || {
  echo "ab-bench: A has no binary: its build failed, or no prebuilt one (build-a.log)"
  rc=1
}
wait $pid_b || {
  echo "ab-bench: B has no binary: its build failed, or no prebuilt one (build-b.log)"
  rc=1
}

if [ $rc -eq 0 ]; then
  for r in $(seq 1 "$rounds"); do
    order="a b"
    [ $((r % 2)) -eq 0 ] && order="b a"
    for v in $order; do
      dir=$dir_a
      [ "$v" = b ] && dir=$dir_b
      # shellcheck disable=SC2086 # AB_BENCH_ARGS is a list of options
      timeout "${AB_TIMEOUT:-150}" "$dir/$bin_dir/f8gemm" bench --shapes "$shapes" --no-peak \
        ${AB_BENCH_ARGS:-} --csv "$work/$v-$r.csv" >"$work/$v-$r.log" 2>&1
      status=$?
      echo "ab-bench: $v round $r rc=$status$([ $status -eq 124 ] && echo ' (timed out)')"
      [ $status -eq 0 ] || rc=1
    done
  done
fi

# Each shape's mean graph time of our rows (every layout the bench times), per tree, and B/A.
python3 - "$work" "$rounds" >"$out/summary.txt" <<'EOF'
import csv, sys, collections
work, rounds = sys.argv[1], int(sys.argv[2])
times = collections.defaultdict(list)
for v in "ab":
    for r in range(1, rounds + 1):
        try:
            rows = list(csv.DictReader(open(f"{work}/{v}-{r}.csv")))
        except OSError:
            continue
        for row in rows:
            if row["impl"].startswith("f8gemm") and row["status"] == "ok" and row["graph_us"]:
                key = (row["impl"], row["b"], row["m"], row["n"], row["k"])
                times[key + (v,)].append(float(row["graph_us"]))
keys = sorted({k[:-1] for k in times})
print(f"{'impl':<22} {'B,M,N,K':<20} {'A us':>9} {'B us':>9} {'B/A':>6}  runs")
for k in keys:
    a, b = times.get(k + ("a",)), times.get(k + ("b",))
    if a and b:
        ma, mb = sum(a) / len(a), sum(b) / len(b)
        print(f"{k[0]:<22} {','.join(k[1:]):<20} {ma:>9.2f} {mb:>9.2f} {mb / ma:>6.3f}  "
              f"{len(a)}+{len(b)}")
EOF
cat "$out/summary.txt"
tar -C "$work" -czf "$out/ab-details.tgz" . && rm -rf "$work"
exit $rc
