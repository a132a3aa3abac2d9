#!/bin/bash
# Session 43, any GPU (about 300 s): issue 9's grouped peers with the "grouped Triton kernel" the
# issue asks for, FBGEMM gen_ai's own (fbgemm_triton_grouped in bench/grouped_peers.py), beside
# ours, FBGEMM's CUTLASS grouped op and torch._scaled_grouped_mm: the 8 shapes x 2
# routings, 3 rounds. Prediction (written before the call): the Triton kernel, without
# warp specialisation (stock Triton 3.6), is slower than FBGEMM's CUTLASS op on the prefill-like
# cases (1.1-1.5x its time) and within 10% of it on the decode-like ones (W streaming); it is
# the best peer on none of the 16 cases.
# Set-up: as s43-device-call.sh. Carry ["scratch/s41/dev.tar.xz", ".whl",
# "build-torch/libf8gemm_torch.so"]. $OUT: grouped.tgz, re-packed after the run.
set -u
t0=$(date +%s)
tar xJf scratch/s41/dev.tar.xz || echo "unpack failed"
cp build-torch/libf8gemm_torch.so scratch/dev/torchlib/ || echo "this tree's library did not replace the archive's"
L=/tmp/grouped; mkdir -p $L /tmp/cache; cp scratch/dev/cache/* /tmp/cache/
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/python F8GEMM_TORCH_LIB=$PWD/scratch/dev/torchlib/libf8gemm_torch.so
export F8GEMM_CACHE_DIR=/tmp/cache F8GEMM_HANG_SECONDS=60 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $L/gpu.txt
timeout ${BUDGET:-540} python3 bench/grouped_peers.py --rounds 3 --csv $L/grouped.csv > $L/grouped.log 2>&1
rc=$?  # before the $(date) below, whose status $? would be
echo "[$(( $(date +%s) - t0 ))s] grouped rc=$rc" | tee $L/steps.txt
grep -v "^    .*rel RMS" $L/grouped.log | tail -n 60
tar czf $OUT/grouped.tgz -C /tmp grouped
