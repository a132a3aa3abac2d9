#!/bin/bash
# Session 39's device call after card 93's range had run: the H200 peer table of issues 6, 7 and
# 9 (peer-table-device-call.sh, PEER=M) when an H200 comes; on any other GPU it stops at once, so
# that an H100 given for the ask costs seconds rather than a repeat of a run it already made.
# Set-up and carry as s38-device-call.sh (["scratch/s38/dev.tar.xz", ".whl"]).
set -u
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $gpu"
case "$gpu" in
  *H200*) tar xJf scratch/s38/dev.tar.xz || echo "unpack failed"
          PEER=M DEADLINE=${DEADLINE:-560} bash docs/experiments/peer-table-device-call.sh ;;
  *) echo "not an H200: nothing run" ;;
esac
