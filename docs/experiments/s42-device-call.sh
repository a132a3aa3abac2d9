#!/bin/bash
# Session 42's third device call, whichever GPU comes:
# - an H200 (about 420 s): the peer table of issues 6, 7 and 9 (peer-table-device-call.sh,
#   PEER=M; owed since session 31) and the Llama MLP block, as s41-device-call.sh less card 96's
#   A/B (too little device time was left for it);
# - an H100 (about 230 s): card 98's follow-up. Under sustained load (s42-sustained-device-call.sh)
#   every implementation runs at the 700 W limit and ours trails torch._scaled_mm only at
#   1,4096,14336,4096 (1.5%) and ties at 1,4096,4096,4096. Which of the tuner's candidates is the
#   fastest there at the power limit? Each candidate pinned with F8GEMM_CONFIG, one process each,
#   bench/sustained_clock.py with torch._scaled_mm in the same process as the yardstick (rounds
#   ours, cuBLAS, cuBLAS, ours; 1.5 s each after a 1.5 s warm-up).
# Set-up on the CPU machine: docs/experiments/s42-setup.sh, and the H100 candidates' cache:
#   F8GEMM_CACHE_DIR=scratch/s42/cache f8gemm precompile --gpu h100 --candidates --shape S
#   (S = 1,4096,14336,4096 and 1,4096,4096,4096); tar cJf scratch/s42/cand.tar.xz scratch/s42/cache
# Carry ["scratch/s41/dev.tar.xz", "scratch/s42/cand.tar.xz", ".whl"].
# $OUT: peers.tgz and mlp.tgz (H200), or cand.tgz (H100).
set -u
t0=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $gpu"
tar xJf scratch/s41/dev.tar.xz || echo "unpack failed"
case "$gpu" in
*H200*)
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
  tar xJf scratch/s42/cand.tar.xz || echo "unpack failed"
  L=/tmp/cand; mkdir -p $L /tmp/cache; cp scratch/dev/cache/* scratch/s42/cache/* /tmp/cache/
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD/python F8GEMM_TORCH_LIB=$PWD/scratch/dev/torchlib/libf8gemm_torch.so
  export F8GEMM_CACHE_DIR=/tmp/cache F8GEMM_HANG_SECONDS=60 PYTHONUNBUFFERED=1
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,temperature.gpu \
    --format=csv,noheader | tee $L/gpu.txt
  for s in 1,4096,14336,4096 1,4096,4096,4096; do
    for c in tiled_128x256x128_s3_c1x1_r8 tiled_128x256x128_s3_c2x1_r8 tiled_128x192x128_s4_c1x1_r8 \
             tiled_128x192x128_s4_c2x1_r8 tiled_128x160x128_s5_c1x1_r8 pingpong_128x128x128_s6_c2x1_r8 \
             tiled_128x128x128_s5_c2x1_r8 pingpong_64x256x128_s5_c2x1_r8; do
      F8GEMM_CONFIG=sm90_$c timeout 40 python3 bench/sustained_clock.py $s --seconds 1.5 --rounds 2 \
        --only f8gemm_preshuffled,torch_scaled_mm --csv $L/$s-$c.csv > $L/$s-$c.log 2>&1
      rc=$?  # before the $(date) below, whose status $? would be
      echo "[$(( $(date +%s) - t0 ))s] $s $c rc=$rc" | tee -a $L/steps.txt
      grep '^round' $L/$s-$c.log
      tar czf $OUT/.c.tgz -C /tmp cand && mv $OUT/.c.tgz $OUT/cand.tgz
    done
  done ;;
esac
