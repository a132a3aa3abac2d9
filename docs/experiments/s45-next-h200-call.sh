#!/bin/bash
# Session 45, prepared for the next H200 (about 470 s in one call, so that one ask serves both):
# card 107's A/B of the precise entries and the MLP block's error over 64 draws
# (s45-precise-configs-call.sh, about 275 s), then issue 9's token-tile A/B
# (s45-grouped-token-tile-call.sh, about 170 s). Each script's header has its prediction and
# rule. On an H100 the first runs its reverse A/B (ON=any) and the second is skipped.
# Carry ["scratch/s41/dev.tar.xz", ".whl", "build-torch/libf8gemm_torch.so"].
# $OUT: pc.tgz and gt.tgz.
set -u
ON=any BUDGET=230 bash docs/experiments/s45-precise-configs-call.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$gpu" in
*H200*) BUDGET=170 bash docs/experiments/s45-grouped-token-tile-call.sh ;;
*) echo "GPU: $gpu: the grouped A/B is for an H200, not run" ;;
esac
