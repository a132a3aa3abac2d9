#!/bin/bash
# Session 46, prepared on the CPU for any GPU (about 300 s: VERIFY_BUDGET 70 + BUDGET 220): card
# 108, a 224-column tiled tile for N = 8192 (issue 6, item 4: tile widths that fit the SM count). With 128 x 256 tiles,
# 1,16384,8192,1024, 16,1024,8192,1024 (4,096 tiles) and 16,512,8192,1024 and 8192^3 (2,048)
# run 31.03 and 15.52 waves of 132 CTAs: 32 and 16 rounds, 3.1% of the SMs' time idle in the
# last. At 224 columns N = 8192 takes 37 W tiles (8,288 columns: 1.2% of the tensor work past N):
# 4,736 and 2,368 tiles, 35.88 and 17.94 waves (0.3% idle); its stage is 44 KB, so a fourth
# stage fits (card 91: the ring sets the pace at K = 1024, and 128 x 256 has three). CPU facts
# (docs/logs/2026-12-07-s46-tile224-cpu.log): tiled 128x224 s4 c1x1 and c2x1 compile at 168
# registers, no spills, no serialisation warning; four QGMMA.64x224x32 a k-block; the cost
# model scores them 0.1% under the 128 x 256 (it counts 4.8% more operand rows a product).
# Steps:
#   1. correctness: `f8gemm run --verify --once --config C` for both 224 configs on three ragged
#      shapes (N not a multiple of 224), both layouts, bias f32 and bf16, fp16 out (new family:
#      its ragged M and N edges): 24 runs, at most VERIFY_BUDGET (70) s, stopped at a timeout;
#   2. the A/B: per shape one process per config (the table's entry, 224 c1x1, 224 c2x1, the
#      entry again), bench/sustained_clock.py --only f8gemm_preshuffled,<yardstick> (2 rounds of
#      1.5 s after a 1.5 s warm-up; F8GEMM_CONFIG for the whole process: ours reads it when its
#      plan is built, and the yardstick ignores it). Yardstick: torch_scaled_mm at B = 1,
#      fbgemm_rowwise_batched at B = 16. The measure is (ours / yardstick) with 224 over the same
#      with the entry.
# Prediction (written before any run): 0.97-1.00 at the three K = 1024 shapes (the last wave's
# 3% back, less the 1.2% past N and the operand rows, plus whatever the fourth stage gives),
# 0.98-1.01 at 8192^3; c2x1 within 1% of c1x1. Rule: a table entry moves to a 224 tile where it
# is at least 1.5% faster than the entry in both of its processes against the two entry runs,
# and step 1 passed; then the tune gets 224 among its tiled widths.
# Carry ["scratch/s41/dev.tar.xz", ".whl", "build/f8gemm", "build-torch/libf8gemm_torch.so"].
# Each A/B process is one sustained_clock.py run of at most 30 s (about 13 s: 1.5 s warm-up,
# 2 rounds of 2 implementations of 1.5 s, torch import and our plan's compile).
# $OUT: t224.tgz, re-packed after each step.
set -u
t0=$(date +%s)
tar xJf scratch/s41/dev.tar.xz || echo "unpack failed"
cp build-torch/libf8gemm_torch.so scratch/dev/torchlib/ || echo "this tree's library did not replace the archive's"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || echo "FBGEMM gen_ai did not install"
L=/tmp/t224; mkdir -p $L /tmp/cache; cp scratch/dev/cache/* /tmp/cache/
export PYTHONPATH=/tmp/site:$PWD/python F8GEMM_TORCH_LIB=$PWD/scratch/dev/torchlib/libf8gemm_torch.so
export F8GEMM_CACHE_DIR=/tmp/cache F8GEMM_HANG_SECONDS=60 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $L/gpu.txt
pack() { tar czf $OUT/.t.tgz -C /tmp t224 && mv $OUT/.t.tgz $OUT/t224.tgz; }
C1=sm90_tiled_128x224x128_s4_c1x1_r8; C2=sm90_tiled_128x224x128_s4_c2x1_r8
# Step 1 has VERIFY_BUDGET seconds (default 70) and stops at the first run that times out (a
# hang of the new family); its record is packed after every run.
fails=0; runs=0; hung=0; tv=$(date +%s)  # VERIFY_BUDGET counts from here, after the set-up
for c in $C1 $C2; do
  for s in "3 300 520 272" "2 129 1000 1040" "1 1000 776 4096"; do
    read -r b m n k <<< "$s"
    for extra in "" "--plain --bias" "--bias --bias-dtype bf16" "--out fp16 --plain"; do
      [ $hung -eq 1 ] && continue
      if [ $(( $(date +%s) - tv )) -gt ${VERIFY_BUDGET:-70} ]; then continue; fi
      out=$(timeout 25 build/f8gemm run --b $b --m $m --n $n --k $k --config $c --verify --once $extra 2>&1)
      rc=$?
      runs=$((runs + 1))
      line=$(grep -E 'PASS|FAIL|error|f8gemm:' <<< "$out" | tail -n 1)
      echo "$c $b,$m,$n,$k $extra rc=$rc $line" >> $L/verify.txt
      { [ $rc -eq 0 ] && grep -q PASS <<< "$out"; } || fails=$((fails + 1))
      [ $rc -eq 124 ] && hung=1
      pack
    done
  done
done
echo "[$(( $(date +%s) - t0 ))s] verify: $runs of 24 runs, $fails not passed$([ $hung -eq 1 ] && echo ', stopped at a timeout')" | tee -a $L/steps.txt
[ $fails -gt 0 ] && grep -v 'rc=0.*PASS' $L/verify.txt | head -5
pack
# A run skipped for time counts as not passed: the A/B times only a fully checked family.
[ $hung -eq 1 ] || [ $runs -lt 24 ] || [ $fails -gt 0 ] && { echo "verify incomplete or failed: no A/B"; exit 1; }
t1=$(date +%s)  # step 2's BUDGET counts from here
i=0
for s in 1,16384,8192,1024 16,1024,8192,1024 16,512,8192,1024 1,8192,8192,8192; do
  case $s in 1,*) y=torch_scaled_mm ;; *) y=fbgemm_rowwise_batched ;; esac
  for c in table $C1 $C2 table; do
    i=$((i + 1))
    left=$(( ${BUDGET:-220} - ($(date +%s) - t1) ))
    if [ $left -lt 15 ]; then echo "[$(( $(date +%s) - t0 ))s] $i $s $c skipped" | tee -a $L/steps.txt; continue; fi
    if [ $c = table ]; then unset F8GEMM_CONFIG; else export F8GEMM_CONFIG=$c; fi
    F8GEMM_LOG=1 timeout $(( left > 30 ? 30 : left )) python3 bench/sustained_clock.py $s --seconds 1.5 \
      --rounds 2 --only f8gemm_preshuffled,$y --csv $L/t-$i.csv > $L/t-$i.log 2>&1 < /dev/null
    rc=$?  # before the $(date) below, whose status $? would be
    unset F8GEMM_CONFIG
    echo "[$(( $(date +%s) - t0 ))s] $i $s $c rc=$rc" | tee -a $L/steps.txt
    out=$(grep -- '->\|^median\|^error' $L/t-$i.log | grep -v 'util key')
    if [ -n "$out" ]; then sed 's/^f8gemm: //' <<< "$out"; else tail -n 3 $L/t-$i.log; fi
    pack
  done
done
