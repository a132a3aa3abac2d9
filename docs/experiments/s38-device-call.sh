#!/bin/bash
# Session 38's device call, whichever GPU comes: an H200 runs the peer table of issues 6, 7 and 9
# (peer-table-device-call.sh; owed on an H200 since session 31), any other GPU the A/B it needs
# next: card 95 (card-95-device-call.sh) in the first call, which an H100 took; card 93's
# unmeasured range (card-93-range-device-call.sh) from the second on. The calls' scratch paths
# travel as one archive, since the tree, the wheel and those paths unpacked exceed the tool's
# 64 MiB (26.6 MB of binaries and cubins pack into 1.9 MB: the builds share most of their bytes).
# Before the call:
#   tar cJf scratch/s38/dev.tar.xz scratch/dev/ab/{M,N,P1,P2} scratch/dev/{cache,cache-p,torchlib}
# and carry ["scratch/s38/dev.tar.xz", ".whl"].
set -u
[ -f scratch/s38/dev.tar.xz ] && tar xJf scratch/s38/dev.tar.xz
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $gpu"
case "$gpu" in
  *H200*) PEER=M DEADLINE=${DEADLINE:-560} bash docs/experiments/peer-table-device-call.sh ;;
  *) DEADLINE=${DEADLINE:-560} bash docs/experiments/card-93-range-device-call.sh ;;
esac
