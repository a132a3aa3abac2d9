#!/bin/bash
# Session 42's last device call, any GPU (about 250 s): the session's final tree on a GPU where
# its changes reach one.
#   1. The GPU pytest modules of the torch ops whose checks now run before the output is
#      allocated (python/csrc: check_functional_call, require_flat_input), the host-overhead
#      check (test_graphs.py) and the layers; CPU-only modules run too.
#   2. The CLI on the GPU through the disk cache's new reader (detail::read_small_file): `run
#      --verify` of four shapes twice with one fresh F8GEMM_CACHE_DIR (the second run loads every
#      cubin from disk), and a FIFO planted under one key's name (read as a corrupt entry and
#      rebuilt, not a hang).
# Set-up on the CPU machine: scratch/s42/final holds build/f8gemm, build/f8gemm_gpu_tests and the
# torch extension (build-torch/libf8gemm_torch.so) of this tree;
#   tar cJf scratch/s42/final.tar.xz scratch/s42/final
# Carry ["scratch/s42/final.tar.xz"]. $OUT: final.tgz (logs), re-packed after each step.
set -u
t0=$(date +%s)
tar xJf scratch/s42/final.tar.xz || echo "unpack failed"
D=$PWD/scratch/s42/final
L=/tmp/final; mkdir -p $L
el() { echo "[$(( $(date +%s) - t0 ))s] $1" | tee -a $L/steps.txt; tar czf $OUT/.f.tgz -C /tmp final && mv $OUT/.f.tgz $OUT/final.tgz; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,temperature.gpu \
  --format=csv,noheader | tee $L/gpu.txt
export F8GEMM_HANG_SECONDS=120
C=/tmp/cache-final; rm -rf $C; mkdir -p $C
for pass in 1 2; do
  for s in "--b 3 --m 300 --n 520 --k 272" "--m 1 --n 4096 --k 4096" "--b 2 --m 129 --n 1000 --k 1040 --plain" \
           "--m 1000 --n 776 --k 4096 --precise --bias"; do
    F8GEMM_CACHE_DIR=$C timeout 120 $D/f8gemm run $s --verify --iters 5 >> $L/cli-pass$pass.log 2>&1
    echo "pass $pass: run $s rc=$?" >> $L/cli.txt
  done
  el "cli pass $pass: $(grep -c 'rc=0' $L/cli.txt) of $(wc -l < $L/cli.txt) rc=0 so far; cubins $(ls $C | wc -l)"
done
# A FIFO under the first cubin's name: the loader reads it as corrupt and the call rebuilds it.
first=$(ls $C | head -1); rm -f "$C/$first"; mkfifo "$C/$first"
for s in "--b 3 --m 300 --n 520 --k 272" "--m 1 --n 4096 --k 4096" "--b 2 --m 129 --n 1000 --k 1040 --plain" \
         "--m 1000 --n 776 --k 4096 --precise --bias"; do
  F8GEMM_CACHE_DIR=$C timeout 60 $D/f8gemm run $s --verify --iters 5 >> $L/cli-fifo.log 2>&1
  echo "fifo: run $s rc=$?" >> $L/cli.txt
done
el "cli with a FIFO in the cache: $(grep -c 'fifo.*rc=0' $L/cli.txt) of 4 rc=0; $first is now $(stat -c %F "$C/$first")"
export PYTHONPATH=$PWD/python F8GEMM_TORCH_LIB=$D/libf8gemm_torch.so PYTHONUNBUFFERED=1
export F8GEMM_CACHE_DIR=/tmp/cache-py
timeout 300 python3 -m pytest -q -rs python/tests/test_checks_before_allocation.py \
  python/tests/test_ops.py python/tests/test_grouped.py python/tests/test_fused.py \
  python/tests/test_errors.py python/tests/test_graphs.py python/tests/test_nn_conversion.py \
  python/tests/test_cpu_ops.py > $L/pytest.log 2>&1
el "pytest rc=$? $(tail -1 $L/pytest.log)"
grep -E "^(FAILED|ERROR|SKIPPED)" $L/pytest.log | head -20
cat $L/steps.txt
