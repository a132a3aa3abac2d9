#!/bin/bash
# Session 42, any GPU (about 150 s): card 98's lead. At the 700 W limit cuBLAS's 128x128 2x1
# kernel takes 5-7% less time than our ping-pong 128x128 c2x1 (the same tile and cluster) at
# 1,4096,14336,4096 and 4096^3, so it spends less energy a tile. Nsight Compute of one call each
# at 4096^3 (bench/ncu_target.py, plain W, clocks as they run): torch._scaled_mm (nvjet), FBGEMM's
# f8f8bf16_rowwise, ours as shipped (tiled 128x256 s3 c1x1) and ours pinned to ping-pong 128x128
# s6 c2x1. Compare what costs energy whatever the clock: instructions issued, shared-memory
# wavefronts, L2 and DRAM bytes, the tensor pipe's cycles.
# Set-up: docs/experiments/s42-setup.sh and scratch/s42/cand.tar.xz (s42-device-call.sh's
# header). Carry ["scratch/s41/dev.tar.xz", "scratch/s42/cand.tar.xz", ".whl"].
# $OUT: ncu.tgz (each profile's details and raw CSVs, a summary), re-packed at every step.
set -u
t0=$(date +%s)
tar xJf scratch/s41/dev.tar.xz || echo "unpack failed"
tar xJf scratch/s42/cand.tar.xz || echo "unpack failed"
L=/tmp/ncu; mkdir -p $L /tmp/cache; cp -n scratch/dev/cache/* scratch/s42/cache/* /tmp/cache/ 2>/dev/null
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/python F8GEMM_TORCH_LIB=$PWD/scratch/dev/torchlib/libf8gemm_torch.so
export F8GEMM_CACHE_DIR=/tmp/cache F8GEMM_HANG_SECONDS=60 PYTHONUNBUFFERED=1
el() { echo "[$(( $(date +%s) - t0 ))s] $1" | tee -a $L/steps.txt; tar czf $OUT/.n.tgz -C /tmp ncu && mv $OUT/.n.tgz $OUT/ncu.tgz; }
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,temperature.gpu --format=csv | tee $L/gpu.txt
S=1,4096,4096,4096
prof() {  # name, kernel regex, impl, [F8GEMM_CONFIG]
  env ${4:+F8GEMM_CONFIG=$4} timeout 100 ncu --clock-control none --set full --import-source no \
    -k "regex:$2" --launch-skip 10 --launch-count 1 -o $L/$1 python3 bench/ncu_target.py $S $3 \
    > $L/$1.log 2>&1
  local rc=$?
  if [ -f $L/$1.ncu-rep ]; then
    ncu --import $L/$1.ncu-rep --page details --csv > $L/$1-details.csv 2>&1
    ncu --import $L/$1.ncu-rep --page raw --csv > $L/$1-raw.csv 2>&1
    rm -f $L/$1.ncu-rep
  fi
  el "$1 rc=$rc"
}
prof torch nvjet torch
prof ours-tiled256 f8gemm_gemm ours sm90_tiled_128x256x128_s3_c1x1_r8
prof ours-pp128c2 f8gemm_gemm ours sm90_pingpong_128x128x128_s6_c2x1_r8
prof fbgemm "cutlass|device_kernel|f8f8bf16" fbgemm
python3 - $L <<'PY' | tee $L/summary.txt
import csv, sys
L = sys.argv[1]
want = ["Kernel Name", "gpu__time_duration.sum", "sm__cycles_elapsed.avg", "smsp__inst_executed.sum",
        "sm__inst_executed_pipe_tensor_op_gmma.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
        "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum",
        "lts__t_bytes.sum", "lts__t_sector_hit_rate.pct", "dram__bytes_read.sum", "dram__bytes_write.sum",
        "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
        "launch__grid_size", "launch__cluster_dim_x", "launch__block_size", "launch__registers_per_thread",
        "launch__shared_mem_per_block_dynamic", "sm__warps_active.avg.pct_of_peak_sustained_active"]
for run in ("torch", "ours-tiled256", "ours-pp128c2", "fbgemm"):
    try:
        rows = list(csv.reader(open(f"{L}/{run}-raw.csv")))
    except OSError as e:
        print(run, "no raw CSV:", e); continue
    if len(rows) < 3:
        print(run, "raw CSV too short"); continue
    head, units, vals = rows[0], rows[1], rows[2]
    print(f"## {run}")
    for w in want:
        if w in head:
            i = head.index(w)
            print(f"  {w} = {vals[i]} {units[i]}")
        else:
            print(f"  {w}: not in this report")
PY
el done
