#!/usr/bin/env bash
# \brief A/B of two or more source trees on one GPU, for a kernel change's perf-log card: builds
# them (Release, side by side), then benches them in turn (A B C, C B A, A B C, ...) on the same
# shapes with the same method (`f8gemm bench --no-peak`: CUDA-graph replay on rotated operands),
# and prints each shape's mean graph time per tree and each tree's ratio to A. The trees see the
# same GPU within minutes of each other, which is what compute-bound timings under the power
# limit need. One call with a tree per commit of a stack measures every step of it (session 7's
# call 1 benched seven trees in two rounds in 360 s).
#
# Usage: scripts/ab-bench.sh DIR_A DIR_B [DIR_C ...] SHAPES OUT [ROUNDS]
#   DIR_*         source trees, e.g. `git archive main | tar -x -C a` (the device machine gets
#                 the working tree only, not the repository); A is the baseline
#   SHAPES        a shapes file (bench/shapes*.txt)
#   OUT           gets two files: summary.txt (also printed) and ab-details.tgz (build logs,
#                 every bench's CSV and log)
#   ROUNDS        rounds of all trees (default 2)
# Environment: AB_BENCH_ARGS (more `f8gemm bench` options, e.g. --precise), AB_TIMEOUT (seconds
# per bench, default 150: keep builds plus trees * ROUNDS benches inside the device's 600 s per
# command), AB_PREBUILT=SUBDIR (a path relative to each tree: use DIR/SUBDIR/f8gemm as built
# elsewhere, e.g. a Release build made on a machine without a GPU; no build here),
# F8GEMM_CONFIG (forces one configuration in every tree), CUDA_VISIBLE_DEVICES as the caller sets
# it. Exits non-zero when a build or a bench fails.
set -u -o pipefail
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
args=("$@")
rounds=2
if [ ${#args[@]} -gt 0 ] && [[ ${args[-1]} =~ ^[0-9]+$ ]] && [ ${#args[@]} -ge 5 ]; then
  rounds=${args[-1]}
  unset 'args[-1]'
fi
if [ ${#args[@]} -lt 4 ]; then
  usage
  exit 2
fi
out=${args[-1]}
shapes_arg=${args[-2]}
dirs=("${args[@]:0:${#args[@]}-2}")
[ -f "$shapes_arg" ] || { echo "ab-bench: no shapes file $shapes_arg" >&2; exit 2; }
shapes=$(cd "$(dirname "$shapes_arg")" && pwd)/$(basename "$shapes_arg")
[ "$rounds" -ge 1 ] || { echo "ab-bench: ROUNDS must be at least 1" >&2; exit 2; }
labels=(a b c d e f g h i j k l m n o p q r s t u v w x y z)
[ ${#dirs[@]} -le ${#labels[@]} ] || { echo "ab-bench: at most ${#labels[@]} trees" >&2; exit 2; }
for i in "${!dirs[@]}"; do
  abs=$(cd "${dirs[i]}" 2>/dev/null && pwd) || { echo "ab-bench: no tree ${dirs[i]}" >&2; exit 2; }
  dirs[i]=$abs
done
mkdir -p "$out" && out=$(cd "$out" && pwd)
work=$(mktemp -d)
export F8GEMM_CACHE_DIR=${F8GEMM_CACHE_DIR:-/tmp/f8gemm-ab-cache}  # keys hash each tree's kernels
# A tree whose kernel never finishes fails its bench within a minute, naming the row
# (testing/hang_guard.hpp), rather than at AB_TIMEOUT.
export F8GEMM_HANG_SECONDS=${F8GEMM_HANG_SECONDS:-60}

bin_dir=${AB_PREBUILT:-build-ab}
build() {  # build DIR LABEL
  if [ -n "${AB_PREBUILT:-}" ]; then
    [ -x "$1/$bin_dir/f8gemm" ] && return 0
    echo "ab-bench: no prebuilt $1/$bin_dir/f8gemm" | tee "$work/build-$2.log"
    return 1
  fi
  cmake -S "$1" -B "$1/build-ab" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$work/build-$2.log" 2>&1 &&
    ninja -C "$1/build-ab" f8gemm >>"$work/build-$2.log" 2>&1
}
pids=()
for i in "${!dirs[@]}"; do
  build "${dirs[i]}" "${labels[i]}" &
  pids+=($!)
done
rc=0
for i in "${!dirs[@]}"; do
  wait "${pids[i]}" || {
    echo "ab-bench: ${labels[i]^^} has no binary: its build failed, or no prebuilt one" \
         "(build-${labels[i]}.log)"
    rc=1
  }
done

if [ $rc -eq 0 ]; then
  forward=("${!dirs[@]}")
  backward=()
  for ((i = ${#dirs[@]} - 1; i >= 0; i--)); do backward+=("$i"); done
  for r in $(seq 1 "$rounds"); do
    order=("${forward[@]}")
    [ $((r % 2)) -eq 0 ] && order=("${backward[@]}")
    for i in "${order[@]}"; do
      v=${labels[i]}
      # shellcheck disable=SC2086 # AB_BENCH_ARGS is a list of options
      timeout "${AB_TIMEOUT:-150}" "${dirs[i]}/$bin_dir/f8gemm" bench --shapes "$shapes" \
        --no-peak ${AB_BENCH_ARGS:-} --csv "$work/$v-$r.csv" >"$work/$v-$r.log" 2>&1
      status=$?
      echo "ab-bench: $v round $r rc=$status$([ $status -eq 124 ] && echo ' (timed out)')"
      [ $status -eq 0 ] || rc=1
    done
  done
fi

# Each shape's mean graph time of our rows (every layout the bench times), per tree, and each
# tree's ratio to A.
python3 - "$work" "$rounds" "${labels[@]:0:${#dirs[@]}}" >"$out/summary.txt" <<'EOF'
import csv, sys, collections
work, rounds, trees = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
times = collections.defaultdict(list)
for v in trees:
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
head = f"{'impl':<22} {'B,M,N,K':<20} {'A us':>9}"
head += "".join(f" {v.upper() + ' us':>9} {v.upper() + '/A':>6}" for v in trees[1:])
print(head + "  runs")
for k in keys:
    a = times.get(k + ("a",))
    if not a:
        continue
    ma = sum(a) / len(a)
    line = f"{k[0]:<22} {','.join(k[1:]):<20} {ma:>9.2f}"
    runs = [str(len(a))]
    for v in trees[1:]:
        t = times.get(k + (v,))
        if t:
            m = sum(t) / len(t)
            line += f" {m:>9.2f} {m / ma:>6.3f}"
        else:
            line += f" {'-':>9} {'-':>6}"
        runs.append(str(len(t or [])))
    print(line + "  " + "+".join(runs))
EOF
cat "$out/summary.txt"
tar -C "$work" -czf "$out/ab-details.tgz" . && rm -rf "$work"
exit $rc
