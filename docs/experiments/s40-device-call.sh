#!/bin/bash
# Session 40's first device call: the H200 peer table of issues 6, 7 and 9
# (peer-table-device-call.sh, PEER=M) when an H200 comes; on any other GPU the Nsight Compute
# comparison of the grouped and dense down GEMM (grouped-down-ncu-device-call.sh, about 300 s;
# its prediction is in the perf log, card 93).
# Set-up and carry as s38-device-call.sh (["scratch/s38/dev.tar.xz", ".whl"]).
set -u
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $gpu"
case "$gpu" in
  *H200*) tar xJf scratch/s38/dev.tar.xz || echo "unpack failed"
          PEER=M DEADLINE=${DEADLINE:-560} bash docs/experiments/peer-table-device-call.sh ;;
  *) bash docs/experiments/grouped-down-ncu-device-call.sh ;;
esac
