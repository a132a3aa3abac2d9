#!/bin/bash
# Card 93's unmeasured range (perf log, "Not done yet", after session 35, item 1): where between
# 512 and 2,048 rows a group does the model's tiled 128x256 overtake the 64-row ping-pong? Card 93
# moved the edge to 512 on one H100 case (2,048 rows a group); card 38 measured 128-256 rows, and
# 768-1,536 is unmeasured. Each config forced (F8GEMM_CONFIG) on both of the Mixtral layer's GEMMs
# at 8 groups and 512-1,536 rows a group, Zipf and uniform routing, two passes in opposite orders:
#   gate_up, N = 28672, K = 4096: ping-pong 64x256 r64 (the band grouped_raster() gives at K = 4096)
#   down,    N = 4096, K = 14336: ping-pong 64x256 r16 (its band at K = 14336)
#   both against tiled 128x256 s3 c1x1 r8, the model's pick at 768-1,536 rows (at 512 the
#   default is the ping-pong).
# FBGEMM's grouped GEMM in pass 1 for scale. Then the MoE example at 2,048 and 4,096 tokens (512
# and 1,024 rows an expert; the default picks, which differ there). Device tool: carry
# ["scratch/s38/dev.tar.xz", ".whl"] (main's torch extension library in scratch/dev/torchlib,
# unpacked by s38-device-call.sh). Everything goes into $OUT/range.tgz, re-packed at every step.
set -u
D=scratch/dev
L=/tmp/range; mkdir -p $L
export F8GEMM_CACHE_DIR=/tmp/cache F8GEMM_HANG_SECONDS=60; mkdir -p /tmp/cache
cp -n $D/cache/* /tmp/cache/ 2>/dev/null
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $1" | tee -a $L/steps.txt; tar czf $OUT/.r.tgz -C /tmp range && mv $OUT/.r.tgz $OUT/range.tgz; }
left() { echo $(( ${DEADLINE:-560} - ($(date +%s) - t0) )); }
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,temperature.gpu --format=csv | tee $L/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/python F8GEMM_TORCH_LIB=$PWD/$D/torchlib PYTHONUNBUFFERED=1
TT=sm90_tiled_128x256x128_s3_c1x1_r8
# RANGE_A / RANGE_B (total rows, space-separated) and PASSES (2) and MOE_TOKENS ("2048 4096")
# change the sizes, the passes (odd passes run the first order, even ones the reverse) and the
# MoE example's token counts ("" skips it).
RANGE_A=${RANGE_A-4096 6144 8192 12288}; RANGE_B=${RANGE_B-4096 6144 8192 12288}
fam() { local r; case $1 in A) for r in $RANGE_A; do echo -n "--shape 8,$r,28672,4096 "; done;;
                            B) for r in $RANGE_B; do echo -n "--shape 8,$r,4096,14336 "; done;; esac; }
pp() { case $1 in A) echo sm90_pingpong_64x256x128_s5_c1x1_r64;; B) echo sm90_pingpong_64x256x128_s5_c1x1_r16;; esac; }
fwd=""; [ -n "$RANGE_A" ] && fwd="A:PP A:TT"; [ -n "$RANGE_B" ] && fwd="$fwd B:PP B:TT"
rev=$(echo $fwd | tr ' ' '\n' | tac | tr '\n' ' ')
for pass in $(seq 1 ${PASSES:-2}); do
  order=$fwd; [ $((pass % 2)) = 0 ] && order=$rev
  for fc in $order; do
    f=${fc%:*}; c=${fc#*:}; cfg=$TT; [ $c = PP ] && cfg=$(pp $f)
    only=f8gemm_preshuffled; [ $pass = 1 ] && [ $c = PP ] && only=f8gemm_preshuffled,fbgemm_grouped_stacked
    [ $(left) -lt 40 ] && { el "out of time before $fc pass $pass"; break 2; }
    F8GEMM_CONFIG=$cfg timeout $(( $(left) < 90 ? $(left) : 90 )) python3 bench/grouped_peers.py $(fam $f) \
      --routing zipf uniform --rounds 1 --only $only --csv $L/g-$f-$c-$pass.csv > $L/g-$f-$c-$pass.log 2>&1
    el "$f $c ($cfg) pass $pass rc=$?"
  done
done
python3 - $L <<'PY' | tee $L/summary.txt
import csv, glob, os, sys, collections
L = sys.argv[1]; t = collections.defaultdict(list)
for p in sorted(glob.glob(f"{L}/g-*.csv")):
    fam, cfg, _ = os.path.basename(p)[2:-4].split("-")
    for r in csv.DictReader(open(p)):
        if r.get("status", "ok") != "ok" or not r.get("graph_us"):
            print(f"not timed: {os.path.basename(p)} {r['impl']} {r.get('routing')} "
                  f"{r.get('g')},{r.get('total_m')},{r.get('n')},{r.get('k')}: {r.get('status')}")
            continue
        name = cfg if r["impl"].startswith("f8gemm") else r["impl"]
        key = (r.get("shape") or ",".join(r[c] for c in ("g", "total_m", "n", "k") if c in r), r.get("routing", "?"))
        t[key + (name,)].append(float(r["graph_us"]))
rows = sorted({k[:2] for k in t})
for s, rt in rows:
    m = {n: sum(v) / len(v) for (s2, r2, n), v in t.items() if (s2, r2) == (s, rt)}
    line = f"{s:22s} {rt:8s} " + " ".join(f"{n}={' / '.join(f'{x:.1f}' for x in t[(s, rt, n)])}" for n in sorted(m))
    if "PP" in m and "TT" in m: line += f"   TT/PP={m['TT'] / m['PP']:.3f}"
    print(line)
PY
el summary
for tok in ${MOE_TOKENS-2048 4096}; do
  [ $(left) -lt 60 ] && { el "out of time before moe $tok"; break; }
  timeout $(( $(left) - 10 )) python3 examples/moe_layer.py --tokens $tok > $L/moe-$tok.log 2>&1; el "moe $tok rc=$?"
done
tail -n 12 $L/moe-*.log
