#!/bin/bash
# Session 41's last device call, any GPU (about 450 s): this session's final tree on a GPU.
#   1. The Llama MLP block, three runs (`examples/llama_mlp.py --cuda-graph --pdl`, M = 1, 16,
#      128, 2048), on a quiet GPU: session 41's call 3 saw the block at M = 2048 9% faster
#      without PDL in one sample; three more say whether that holds.
#   2. Then, side by side as in session 34's call B: the GPU suite in six shards
#      (`scripts/device-check.sh tests`) and the GPU pytest with the host-overhead check and the
#      eager MLP example (`scripts/device-check.sh torch`).
# Set-up on the CPU machine: scratch/s41/final holds build/f8gemm, build/f8gemm_gpu_tests and the
# torch extension (build-torch/libf8gemm_torch.so) of this tree;
#   tar cJf scratch/s41/final.tar.xz scratch/s41/final
# Carry ["scratch/s41/final.tar.xz"]. $OUT: mlp.tgz, and tests/ and torch/ (device-check's own).
set -u
t0=$(date +%s)
tar xJf scratch/s41/final.tar.xz || echo "unpack failed"
D=scratch/s41/final
export F8GEMM_CACHE_DIR=/tmp/cache F8GEMM_HANG_SECONDS=120; mkdir -p /tmp/cache /tmp/mlp
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,temperature.gpu \
  --format=csv,noheader | tee /tmp/mlp/gpu.txt
for r in 1 2 3; do
  PYTHONPATH=$PWD/python F8GEMM_TORCH_LIB=$PWD/$D PYTHONUNBUFFERED=1 timeout 60 \
    python3 examples/llama_mlp.py --cuda-graph --pdl --m 1 16 128 2048 > /tmp/mlp/run$r.log 2>&1
  rc=$?  # before the $(date) below, whose status $? would be
  echo "[$(( $(date +%s) - t0 ))s] mlp run $r rc=$rc" | tee -a /tmp/mlp/steps.txt
  grep -E '^ +[0-9]+ \|' /tmp/mlp/run$r.log
done
tar czf $OUT/mlp.tgz -C /tmp mlp
mkdir -p $OUT/tests $OUT/torch
OUT=$OUT/tests BUILD_DIR=$D GPU_TEST_SHARDS=6 timeout 420 scripts/device-check.sh tests \
  > /tmp/tests-console.log 2>&1 &
OUT=$OUT/torch BUILD_DIR=$D T_TORCH=380 timeout 420 scripts/device-check.sh torch \
  > /tmp/torch-console.log 2>&1 &
wait
echo "[$(( $(date +%s) - t0 ))s] suites done"
tail -n 8 /tmp/tests-console.log
tail -n 40 /tmp/torch-console.log
