#!/bin/bash
# Session 43's sixth call: on an H200 the owed peer table (s43-device-call.sh, its H200 branch);
# on an H100 the MLP block at the power limit (s43-mlp-sustained-call.sh).
# Carry ["scratch/s41/dev.tar.xz", ".whl", "build/f8gemm", "build-torch/libf8gemm_torch.so"].
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$gpu" in
*H200*) exec bash docs/experiments/s43-device-call.sh ;;
*) exec bash docs/experiments/s43-mlp-sustained-call.sh ;;
esac
