#!/bin/bash
# Session 43's first device call, whichever GPU comes:
# - an H200 (about 480 s): the peer table of issues 6, 7 and 9 (peer-table-device-call.sh,
#   PEER=M; owed since session 31) and the Llama MLP block, as s42-device-call.sh's H200 branch;
# - an H100 (about 450 s): issue 6's twelve shapes under sustained load (card 100). Card 98 ran
#   five B = 1 shapes that way; bench/sustained_clock.py now takes B > 1 (ours batched, FBGEMM's
#   batched op, torch._scaled_mm and FBGEMM's 2-D op looped over the batch, peers.py's Triton
#   kernel), so the batched shapes get the same interleaved, power-limited comparison. Each shape:
#   one process, ours (preshuffled) against the four peers, 2 rounds of 2 s after a 2 s warm-up.
# Prediction (card 100, written before the call): at the 700 W limit best peer / ours is
# 0.98-1.04 on the five B = 1 shapes (card 98's 0.985-1.034, within 1.5%), 1.05-1.12 on the
# K = 1024, N = 8192 batched shapes against FBGEMM's batched kernel, 1.10-1.35 at N = 1280, and
# 1.00-1.03 at 8,2048,4096,4096; geometric mean over the twelve 1.05-1.08 (the bench's 1.080).
# Set-up on the CPU machine: docs/experiments/s42-setup.sh (scratch/s41/dev.tar.xz), a Release
# build and build-torch of this tree (their binaries replace the archive's, whose kernels are the
# same). Carry ["scratch/s41/dev.tar.xz", ".whl", "build/f8gemm", "build-torch/libf8gemm_torch.so"].
# SUSTAINED=1 runs the sustained table on any GPU (an H200's second call).
# $OUT: peers.tgz and mlp.tgz (H200), or sus.tgz (H100), re-packed after each step.
set -u
t0=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $gpu"
tar xJf scratch/s41/dev.tar.xz || echo "unpack failed"
cp build/f8gemm scratch/dev/ab/M/bin/f8gemm && cp build-torch/libf8gemm_torch.so scratch/dev/torchlib/ \
  || echo "this tree's binaries did not replace the archive's"
case "${SUSTAINED:-0}:$gpu" in
0:*H200*)
  PEER=M DEADLINE=420 bash docs/experiments/peer-table-device-call.sh 2>&1 | tail -n 30
  left=$(( 585 - ($(date +%s) - t0) ))
  if [ $left -gt 25 ]; then
    M=/tmp/mlp; mkdir -p $M
    export PYTHONPATH=/tmp/site:$PWD/python F8GEMM_TORCH_LIB=$PWD/scratch/dev/torchlib/libf8gemm_torch.so
    export PYTHONUNBUFFERED=1 F8GEMM_CACHE_DIR=/tmp/cache
    timeout $(( left > 60 ? 60 : left - 5 )) python3 examples/llama_mlp.py --cuda-graph --pdl \
      > $M/mlp.log 2>&1
    rc=$?  # before the $(date) below, whose status $? would be
    echo "[$(( $(date +%s) - t0 ))s] mlp rc=$rc" | tee $M/steps.txt
    tail -n 15 $M/mlp.log
    tar czf $OUT/mlp.tgz -C /tmp mlp
  fi ;;
*)
  L=/tmp/sus; mkdir -p $L /tmp/cache; cp scratch/dev/cache/* /tmp/cache/
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD/python F8GEMM_TORCH_LIB=$PWD/scratch/dev/torchlib/libf8gemm_torch.so
  export F8GEMM_CACHE_DIR=/tmp/cache F8GEMM_HANG_SECONDS=60 PYTHONUNBUFFERED=1
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,temperature.gpu \
    --format=csv,noheader | tee $L/gpu.txt
  for s in 1,4096,14336,4096 1,4096,4096,4096 1,16384,8192,1024 8,2048,4096,4096 \
           16,512,8192,1024 16,1024,8192,1024 16,4096,8192,1024 1,8192,8192,8192 \
           1,4096,4096,14336 16,4096,1280,8192 16,512,1280,8192 16,1024,1280,8192; do
    left=$(( 580 - ($(date +%s) - t0) ))
    if [ $left -lt 45 ]; then echo "[$(( $(date +%s) - t0 ))s] $s skipped: ${left} s left" | tee -a $L/steps.txt; continue; fi
    timeout $(( left > 75 ? 75 : left - 3 )) python3 bench/sustained_clock.py $s --seconds 2 --rounds 2 \
      --only f8gemm_preshuffled,torch_scaled_mm,fbgemm_rowwise,fbgemm_rowwise_batched,triton \
      --csv $L/sus-$s.csv > $L/sus-$s.log 2>&1
    rc=$?  # before the $(date) below, whose status $? would be
    echo "[$(( $(date +%s) - t0 ))s] $s rc=$rc" | tee -a $L/steps.txt
    grep -E '^(round|median|triton config)' $L/sus-$s.log || tail -n 5 $L/sus-$s.log
    tar czf $OUT/.s.tgz -C /tmp sus && mv $OUT/.s.tgz $OUT/sus.tgz
  done
  nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader | tee -a $L/gpu.txt
  tar czf $OUT/.s.tgz -C /tmp sus && mv $OUT/.s.tgz $OUT/sus.tgz ;;
esac
