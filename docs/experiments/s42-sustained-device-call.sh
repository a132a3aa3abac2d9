#!/bin/bash
# Session 42, any GPU (about 250 s): card 97's open question, why identical trees drift by up to
# 16% on compute-bound shapes (1,4096,4096,14336 at 341-343 or 383-405 µs, either tree), and
# session 42's first call, where `f8gemm bench` timed preshuffled 1,4096,14336,4096 at 347.7 µs
# in its host loop and 390.4 in graph replay of the same kernel (397.2 / 348.5 in the second run).
# bench/sustained_clock.py runs each implementation for --seconds under graph replay, interleaved
# (reverse order every other round), with nvidia-smi sampling the SM clock and the power: a drift
# in µs that follows the clock at the same cycles is the power limit; one in cycles is not.
# Five single-GEMM shapes of issue 6 (B = 1: the tool's limit), ours (both layouts) against
# FBGEMM's f8f8bf16_rowwise and torch._scaled_mm, 3 rounds of 2 s.
# Set-up on the CPU machine: docs/experiments/s42-setup.sh (scratch/s41/dev.tar.xz: the tree's
# torch extension and the precompiled cache). Carry ["scratch/s41/dev.tar.xz", ".whl"].
# $OUT: sus.tgz (one CSV and log a shape, the GPU), re-packed after each shape.
set -u
t0=$(date +%s)
tar xJf scratch/s41/dev.tar.xz || echo "unpack failed"
L=/tmp/sus; mkdir -p $L /tmp/cache; cp scratch/dev/cache/* /tmp/cache/
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/python F8GEMM_TORCH_LIB=$PWD/scratch/dev/torchlib/libf8gemm_torch.so
export F8GEMM_CACHE_DIR=/tmp/cache F8GEMM_HANG_SECONDS=60 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,temperature.gpu \
  --format=csv,noheader | tee $L/gpu.txt
for s in 1,4096,4096,14336 1,4096,14336,4096 1,8192,8192,8192 1,4096,4096,4096 1,16384,8192,1024; do
  timeout 75 python3 bench/sustained_clock.py $s --seconds 2 --rounds 3 \
    --only f8gemm_preshuffled,f8gemm_plain,fbgemm_rowwise,torch_scaled_mm \
    --csv $L/sus-$s.csv > $L/sus-$s.log 2>&1
  rc=$?  # before the $(date) below, whose status $? would be
  echo "[$(( $(date +%s) - t0 ))s] $s rc=$rc" | tee -a $L/steps.txt
  cat $L/sus-$s.log
  tar czf $OUT/.s.tgz -C /tmp sus && mv $OUT/.s.tgz $OUT/sus.tgz
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader | tee -a $L/gpu.txt
tar czf $OUT/.s.tgz -C /tmp sus && mv $OUT/.s.tgz $OUT/sus.tgz
