#!/bin/bash
# Session 46, the second call on the machine that ran the first (s45-next-h200-call.sh, or
# s46-any-gpu-call.sh on whichever GPU came), about 500 s: card 108's 224-column tile
# (s46-tile224-call.sh, any GPU, about 300 s), then card 96's early-dependents A/B on an H200
# (s46-card96-h200-call.sh, about 200 s; skipped on an H100, where it has run).
# Carry ["scratch/s41/dev.tar.xz", ".whl", "build/f8gemm", "build-torch/libf8gemm_torch.so",
# "scratch/s40/card96.tar.xz"] (build/ and build-torch/ of this tree, Release).
# $OUT: t224.tgz, card96.tgz.
set -u
t0=$(date +%s)
bash docs/experiments/s46-tile224-call.sh
# Card 96's A/B gets what is left of the call's 600 s, less 30 s for its archive.
left=$(( 570 - ($(date +%s) - t0) ))
if [ $left -ge 90 ]; then CARD96_TIMEOUT=$left bash docs/experiments/s46-card96-h200-call.sh
else echo "card 96: $left s left, not run"; fi
