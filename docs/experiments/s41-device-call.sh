#!/bin/bash
# Session 41's second device call, whichever GPU comes (about 450-550 s):
#   1. the PDL chain tests with this tree's tables (PdlGpu.ChainedChoiceGivesTheUnchainedBits
#      runs every shipped chained entry of the GPU's table, card 96's new H100 `_e` entries too);
#   2. on an H200 only: card 96's A/B (card-96-device-call.sh), which has run on an H100 only;
#   3. the peer table of issues 6, 7 and 9 (peer-table-device-call.sh, PEER=M) on this tree;
#   4. the Llama MLP block (`examples/llama_mlp.py --cuda-graph --pdl`), if time is left.
# Set-up on the CPU machine (scratch/ is git-ignored), from a Release build of this tree:
#   scratch/dev/ab/M/bin/f8gemm = build/f8gemm; scratch/dev/torchlib = build-torch's library;
#   scratch/dev/cache: `f8gemm precompile --gpu h100|h200` as peer-table-device-call.sh says;
#   scratch/s41/gt/f8gemm_gpu_tests = build/f8gemm_gpu_tests;
#   tar cJf scratch/s41/dev.tar.xz scratch/dev/ab/M scratch/dev/torchlib scratch/dev/cache \
#     scratch/s41/gt
# Carry ["scratch/s41/dev.tar.xz", "scratch/s40/card96.tar.xz", ".whl"].
# $OUT: pdl.tgz, card96.tgz (H200), suite.tgz (unused), peers.tgz, mlp.tgz.
set -u
t0=$(date +%s)
tar xJf scratch/s41/dev.tar.xz || echo "unpack failed"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $gpu"
P=/tmp/pdl; mkdir -p $P /tmp/cache
export F8GEMM_HANG_SECONDS=60
F8GEMM_CACHE_DIR=/tmp/cache timeout 120 scratch/s41/gt/f8gemm_gpu_tests --gtest_filter='PdlGpu.*' \
  > $P/pdl.log 2>&1
rc=$?  # before the $(date) below, whose status $? would be
echo "[$(( $(date +%s) - t0 ))s] PdlGpu rc=$rc" | tee $P/steps.txt
grep -E '^\[  (PASSED|FAILED|     OK|  SKIPPED) ' $P/pdl.log | head -12
tar czf $OUT/pdl.tgz -C /tmp pdl
deadline=540
case "$gpu" in
  *H200*) ROUNDS=3 AB_TIMEOUT=55 bash docs/experiments/card-96-device-call.sh > /tmp/card96.log 2>&1
          tail -n 22 /tmp/card96.log
          echo "[$(( $(date +%s) - t0 ))s] card 96 done"
          deadline=$(( 540 - ($(date +%s) - t0) )) ;;
esac
# The peer table's steps stop at its DEADLINE (seconds from its own start); the MLP block gets
# what is left, 60 s at most.
PEER=M DEADLINE=$(( deadline - 70 )) bash docs/experiments/peer-table-device-call.sh 2>&1 | tail -n 30
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
fi
