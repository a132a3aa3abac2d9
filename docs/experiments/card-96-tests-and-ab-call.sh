#!/bin/bash
# Card 96's GPU tests, then its A/B, in one device call (any GPU; a few minutes). Set-up on the
# CPU machine (scratch/ is git-ignored), from a build of main:
#   scratch/s40/gt/f8gemm_gpu_tests: build/f8gemm_gpu_tests;
#   scratch/s40/ab, scratch/s40/cache: as card-96-device-call.sh's header says;
#   tar cJf scratch/s40/card96.tar.xz scratch/s40/ab scratch/s40/cache scratch/s40/gt
# Carry ["scratch/s40/card96.tar.xz"]; command: bash docs/experiments/card-96-tests-and-ab-call.sh
# $OUT: suite.tgz (the PdlGpu log), card96.tgz (the A/B). ROUNDS and AB_TIMEOUT pass through.
set -u
t0=$(date +%s)
tar xJf scratch/s40/card96.tar.xz || echo "unpack failed"
L=/tmp/suite; mkdir -p $L
export F8GEMM_CACHE_DIR=/tmp/cache F8GEMM_HANG_SECONDS=60; mkdir -p /tmp/cache
cp scratch/s40/cache/* /tmp/cache/
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/gpu.txt
# The PDL chains (two of them with early_dependents configs): results must be the serial bits.
timeout 150 scratch/s40/gt/f8gemm_gpu_tests --gtest_filter='PdlGpu.*' > $L/pdl.log 2>&1
rc=$?  # before the $(date) below, whose status $? would be
echo "[$(( $(date +%s) - t0 ))s] PdlGpu rc=$rc" | tee -a $L/steps.txt
grep -E '^\[  (PASSED|FAILED|     OK|  SKIPPED) ' $L/pdl.log | head -20
tar czf $OUT/suite.tgz -C /tmp suite
ROUNDS=${ROUNDS:-3} AB_TIMEOUT=${AB_TIMEOUT:-55} bash docs/experiments/card-96-device-call.sh
echo "[$(( $(date +%s) - t0 ))s] A/B done"
