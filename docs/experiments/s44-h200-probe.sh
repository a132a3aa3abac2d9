#!/bin/bash
# Session 44: an ask for an H200 may be served by an H100. This runs the H200-only work (the peer
# table and the MLP block of s43-device-call.sh, about 480 s) only where the GPU is an H200, and
# otherwise stops at once, so an H100 costs only its start. Carry as s43-device-call.sh says.
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$gpu" in
*H200*) exec bash docs/experiments/s43-device-call.sh ;;
*) echo "GPU: $gpu: not an H200, nothing run" ;;
esac
