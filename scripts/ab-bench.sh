#!/usr/bin/env bash
# \brief A/B of two source trees on one GPU, for a kernel change's perf-log card: builds both
# (Release, side by side), then benches them alternately (A B A B ...) on the same shapes with the
# same method (`f8gemm bench --no-peak`: CUDA-graph replay on rotated operands), and prints each
# shape's mean graph time per tree and the ratio B/A. The two trees see the same GPU within
# minutes of each other, which is what compute-bound timings under the power limit need.
#
# Usage: scripts/ab-bench.sh DIR_A DIR_B SHAPES OUT [ROUNDS]
#   DIR_A, DIR_B: source trees, e.g. `git archive main | tar -x -C a` (the device machine gets
#                 the working tree only, not the repository);
#   SHAPES:       a shapes file (bench/shapes*.txt); OUT: a folder for the CSVs and logs;
#   ROUNDS:       rounds of A then B (default 2).
# Environment: F8GEMM_CACHE_DIR is set per tree (their kernels differ); CUDA_VISIBLE_DEVICES as
# the caller sets it. Exits non-zero when a build or a bench fails.
set -u -o pipefail
if [ $# -lt 4 ]; then
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
dir_a=$(cd "$1" && pwd) || exit 2
dir_b=$(cd "$2" && pwd) || exit 2
shapes=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
out=$4
rounds=${5:-2}
mkdir -p "$out" && out=$(cd "$out" && pwd)
[ -f "$shapes" ] || { echo "ab-bench: no shapes file $3" >&2; exit 2; }

build() {  # build DIR NAME
  cmake -S "$1" -B "$1/build-ab" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$out/build-$2.log" 2>&1 &&
    ninja -C "$1/build-ab" f8gemm >>"$out/build-$2.log" 2>&1
}
build "$dir_a" a & pid_a=$!
build "$dir_b" b & pid_b=$!
rc=0
wait $pid_a || { echo "ab-bench: build of A failed (build-a.log)"; rc=1; }
wait $pid_b || { echo "ab-bench: build of B failed (build-b.log)"; rc=1; }
[ $rc -eq 0 ] || exit 1

for r in $(seq 1 "$rounds"); do
  for v in a b; do
    dir=$dir_a
    [ $v = b ] && dir=$dir_b
    F8GEMM_CACHE_DIR=/tmp/f8gemm-ab-cache-$v timeout 900 "$dir/build-ab/f8gemm" bench \
      --shapes "$shapes" --no-peak --csv "$out/$v-$r.csv" >"$out/$v-$r.log" 2>&1
    status=$?
    echo "ab-bench: $v round $r rc=$status"
    [ $status -eq 0 ] || rc=1
  done
done

# Each shape's mean graph time of our rows (every layout the bench times), per tree, and B/A.
python3 - "$out" "$rounds" <<'EOF'
import csv, sys, collections
out, rounds = sys.argv[1], int(sys.argv[2])
times = collections.defaultdict(list)
for v in "ab":
    for r in range(1, rounds + 1):
        try:
            rows = list(csv.DictReader(open(f"{out}/{v}-{r}.csv")))
        except OSError:
            continue
        for row in rows:
            if row["impl"].startswith("f8gemm") and row["status"] == "ok" and row["graph_us"]:
                key = (row["impl"], row["b"], row["m"], row["n"], row["k"])
                times[key + (v,)].append(float(row["graph_us"]))
keys = sorted({k[:-1] for k in times})
print(f"{'impl':<22} {'B,M,N,K':<20} {'A us':>9} {'B us':>9} {'B/A':>6}")
for k in keys:
    a, b = times.get(k + ("a",)), times.get(k + ("b",))
    if a and b:
        ma, mb = sum(a) / len(a), sum(b) / len(b)
        print(f"{k[0]:<22} {','.join(k[1:]):<20} {ma:>9.2f} {mb:>9.2f} {mb / ma:>6.3f}")
EOF
exit $rc
