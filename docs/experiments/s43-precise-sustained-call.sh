#!/bin/bash
# Session 43, any GPU (about 150 s): issue 6's "precise mode is at most 1.06x fast mode on every
# shape", at the power limit (card 103). The bench's precise / fast ratios spread 0.924-1.168
# between runs on an H100 (session 42), wider than any kernel change could explain: each mode was
# timed in its own short window. Here bench/sustained_clock.py runs ours preshuffled in fast and
# in precise mode (f8gemm_precise) in one process a shape, 2 rounds of 1.5 s after a 1.5 s
# warm-up, interleaved; the twelve shapes in card 100's order, until about 150 s have passed.
# Prediction (written before the call): precise / fast 1.03-1.09 on every shape, over 1.06 on
# 4-8 of 12 (promotion adds an fp32 add a value every 128 of K, energy the power limit turns
# into time).
# Set-up: as s43-device-call.sh. Carry ["scratch/s41/dev.tar.xz",
# "build-torch/libf8gemm_torch.so"]. $OUT: prec.tgz, re-packed after each shape.
set -u
t0=$(date +%s)
tar xJf scratch/s41/dev.tar.xz || echo "unpack failed"
cp build-torch/libf8gemm_torch.so scratch/dev/torchlib/ || echo "this tree's library did not replace the archive's"
L=/tmp/prec; mkdir -p $L /tmp/cache; cp scratch/dev/cache/* /tmp/cache/
export PYTHONPATH=$PWD/python F8GEMM_TORCH_LIB=$PWD/scratch/dev/torchlib/libf8gemm_torch.so
export F8GEMM_CACHE_DIR=/tmp/cache F8GEMM_HANG_SECONDS=60 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $L/gpu.txt
for s in 1,4096,14336,4096 1,4096,4096,4096 1,16384,8192,1024 8,2048,4096,4096 \
         16,512,8192,1024 16,1024,8192,1024 16,4096,8192,1024 1,8192,8192,8192 \
         1,4096,4096,14336 16,4096,1280,8192 16,512,1280,8192 16,1024,1280,8192; do
  left=$(( ${BUDGET:-150} - ($(date +%s) - t0) ))
  if [ $left -lt 12 ]; then echo "[$(( $(date +%s) - t0 ))s] $s skipped" | tee -a $L/steps.txt; continue; fi
  timeout $(( left > 30 ? 30 : left )) python3 bench/sustained_clock.py $s --seconds 1.5 --rounds 2 \
    --only f8gemm_preshuffled,f8gemm_precise --csv $L/prec-$s.csv > $L/prec-$s.log 2>&1
  rc=$?  # before the $(date) below, whose status $? would be
  echo "[$(( $(date +%s) - t0 ))s] $s rc=$rc" | tee -a $L/steps.txt
  grep '^median' $L/prec-$s.log || tail -n 3 $L/prec-$s.log
  tar czf $OUT/.p.tgz -C /tmp prec && mv $OUT/.p.tgz $OUT/prec.tgz
done
