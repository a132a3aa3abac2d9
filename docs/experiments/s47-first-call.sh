#!/bin/bash
# Session 47, the first call of the next session on whichever GPU comes (about 170 s; 370 s on an
# H200): the grouped GPU tests of this tree (the swap pairs that card 110 added to
# GroupedGpu.WideRasterBandsGiveTheNarrowBandsBits, and the forced-config refusal's one spelling
# in GemmGpu.EveryConfigFamilyForcedOnARaggedShape), then card 110's A/B
# (s47-grouped-order-call.sh), then on an H200 card 96's A/B (s46-card96-h200-call.sh).
# Build here first: `ninja -C build` (the test binary is carried, as the archive's binaries are:
# the device has the same CUDA 13.0). The library of the A/B is this tree's build-torch: the A/B
# forces both orders, so the library's own default does not matter to it.
# Carry ["scratch/s41/dev.tar.xz", ".whl", "build-torch/libf8gemm_torch.so",
# "build/f8gemm_gpu_tests", "scratch/s40/card96.tar.xz"]. $OUT: gpu-tests.log, go.tgz, card96.tgz.
set -u
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $gpu"
timeout 150 build/f8gemm_gpu_tests --gtest_brief=1 \
  --gtest_filter='GroupedGpu.*:GemmGpu.EveryConfigFamilyForcedOnARaggedShape' > $OUT/gpu-tests.log 2>&1
echo "gpu tests rc=$?"; tail -n 8 $OUT/gpu-tests.log
bash docs/experiments/s47-grouped-order-call.sh
case "$gpu" in
*H200*) CARD96_TIMEOUT=300 bash docs/experiments/s46-card96-h200-call.sh
        cp /tmp/card96.log $OUT/ 2>/dev/null ;;
esac
ls $OUT
