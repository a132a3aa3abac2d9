#!/bin/bash
# Session 43, any GPU (about 150 s): the Llama MLP block at the power limit (card 102):
# bench/mlp_sustained.py at M = 1, 16, 128 and 2048, bf16 against the fused FP8 block with PDL
# (the module's default) and without, 2 rounds of 2 s a variant, interleaved. Issue 7's open
# question: at M = 2048 is PDL a cost (session 41: 1.3-9% behind in four samples) or not
# (session 42: 0.5% ahead)?
# Prediction (written before the call): no pdl / pdl within 0.99-1.01 at M = 2048 and 128, and
# 1.02-1.06 at M = 1 and 16 (the launch gaps PDL hides are a larger share of a 50 µs block);
# bf16 / fused 1.8-1.95 at every M.
# Set-up: as s43-device-call.sh. Carry ["scratch/s41/dev.tar.xz", "build-torch/libf8gemm_torch.so"]
# (no FBGEMM: the block's peers are bf16 and itself). $OUT: mlp.tgz.
set -u
t0=$(date +%s)
tar xJf scratch/s41/dev.tar.xz || echo "unpack failed"
cp build-torch/libf8gemm_torch.so scratch/dev/torchlib/ || echo "this tree's library did not replace the archive's"
L=/tmp/mlps; mkdir -p $L /tmp/cache; cp scratch/dev/cache/* /tmp/cache/
export PYTHONPATH=$PWD/python F8GEMM_TORCH_LIB=$PWD/scratch/dev/torchlib/libf8gemm_torch.so
export F8GEMM_CACHE_DIR=/tmp/cache F8GEMM_HANG_SECONDS=60 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $L/gpu.txt
timeout ${BUDGET:-280} python3 bench/mlp_sustained.py --m 1 16 128 2048 --seconds 2 --rounds 2 \
  --csv $L/mlp-sustained.csv > $L/mlp-sustained.log 2>&1
rc=$?  # before the $(date) below, whose status $? would be
echo "[$(( $(date +%s) - t0 ))s] mlp_sustained rc=$rc" | tee $L/steps.txt
tail -n 40 $L/mlp-sustained.log
tar czf $OUT/mlp.tgz -C /tmp mlps
