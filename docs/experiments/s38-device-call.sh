#!/bin/bash
# Session 38's one device call, whichever GPU comes: an H200 runs the peer table of issues 6, 7
# and 9 (peer-table-device-call.sh; owed on an H200 since session 31), any other GPU runs card 95
# (card-95-device-call.sh; an A/B, valid on an H100). Carry the union of both calls' paths:
# ["scratch/dev/ab/M", "scratch/dev/ab/N", "scratch/dev/ab/P1", "scratch/dev/ab/P2",
#  "scratch/dev/cache", "scratch/dev/cache-p", "scratch/dev/torchlib", ".whl"] (about 61 MiB).
set -u
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $gpu"
case "$gpu" in
  *H200*) PEER=M DEADLINE=${DEADLINE:-560} bash docs/experiments/peer-table-device-call.sh ;;
  *) DEADLINE=${DEADLINE:-560} bash docs/experiments/card-95-device-call.sh ;;
esac
