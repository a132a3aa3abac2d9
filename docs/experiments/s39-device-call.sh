#!/bin/bash
# Session 39's device call after card 93's range had run: the H200 peer table of issues 6, 7 and
# 9 (peer-table-device-call.sh, PEER=M) when an H200 comes; on any other GPU the question that
# range left open (perf log, card 93, "Measured again"): does the grouped 64-row ping-pong stay
# ahead longer for the down GEMM (N = 4096, K = 14336) than for gate_up (N = 28672, K = 4096)?
# Both configs forced at 768-2,048 rows a group for the down GEMM and 1,536-2,048 for gate_up,
# four passes in alternating orders, no MoE example (about 150 s).
# Set-up and carry as s38-device-call.sh (["scratch/s38/dev.tar.xz", ".whl"]).
set -u
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $gpu"
tar xJf scratch/s38/dev.tar.xz || echo "unpack failed"
case "$gpu" in
  *H200*) PEER=M DEADLINE=${DEADLINE:-560} bash docs/experiments/peer-table-device-call.sh ;;
  *) RANGE_A="12288 16384" RANGE_B="6144 8192 12288 16384" PASSES=4 MOE_TOKENS="" \
       DEADLINE=${DEADLINE:-300} bash docs/experiments/card-93-range-device-call.sh ;;
esac
