#!/bin/bash
# Session 46, whichever GPU comes (about 370 s), after three asks for an H200 got none:
#   1. issue 9's token-tile A/B (s45-grouped-token-tile-call.sh, ON=any, about 170 s; its header
#      has the prediction and the rule, written for the H200, whose decode-like Zipf case misses);
#   2. card 107 (s45-precise-configs-call.sh, ON=any): on an H200 its precise-entry A/B, on an
#      H100 the reverse A/B; then the MLP block's error over 64 draws, which does not depend on
#      the GPU (the same arithmetic on every sm_90a part).
# On an H100 the token-tile A/B answers whether the second token tile costs W bytes there too
# (H100 prediction, written before the call: 128x64 takes 0.5-2% off 64,512 Zipf, the H100's
# lower bandwidth hiding less of the re-read; uniform cases within 1%).
# Carry ["scratch/s41/dev.tar.xz", ".whl", "build-torch/libf8gemm_torch.so"]. $OUT: gt.tgz, pc.tgz.
set -u
ON=any BUDGET=170 bash docs/experiments/s45-grouped-token-tile-call.sh
ON=any BUDGET=${PC_BUDGET:-150} bash docs/experiments/s45-precise-configs-call.sh
