#!/bin/bash
# Session 42: builds, on the CPU machine, every archive that s41-device-call.sh (the PDL tests,
# card 96's A/B, the peer table, the MLP block) and s41-precise-tune-device-call.sh carry, from a
# Release build of this tree (build/) and its torch extension (build-torch/). scratch/ and .whl/
# are git-ignored (.git/info/exclude). Until session 41 these were made by hand, and each fresh
# checkout lost them.
# Usage: docs/experiments/s42-setup.sh [h100 h200]   (the GPUs whose caches to fill; default both)
# Needs: build/f8gemm, build/f8gemm_gpu_tests, build-torch/libf8gemm_torch.so.
# Makes: scratch/s41/dev.tar.xz, scratch/s40/card96.tar.xz, scratch/s41/pt.tar.xz.
set -euo pipefail
cd "$(dirname "$0")/../.."
gpus=${*:-h100 h200}
B=$PWD/build/f8gemm
for f in build/f8gemm build/f8gemm_gpu_tests build-torch/libf8gemm_torch.so; do
  [ -f $f ] || { echo "s42-setup: $f is missing: build it first" >&2; exit 1; }
done
jobsP=$(nproc)

# 1. The peer table's tree (tree M) and the PDL tests.
rm -rf scratch/dev scratch/s41/gt && mkdir -p scratch/dev/ab/M/bin scratch/dev/torchlib \
  scratch/dev/cache scratch/s41/gt
cp build/f8gemm scratch/dev/ab/M/bin/ && cp build-torch/libf8gemm_torch.so scratch/dev/torchlib/
cp build/f8gemm_gpu_tests scratch/s41/gt/
jobs=scratch/s41/pre-jobs.txt; : > $jobs
all=$(cat bench/shapes-large.txt bench/shapes-decode.txt | grep -v '^#')
for g in $gpus; do
  for s in $all; do for f in "" "--plain"; do echo "$B precompile --gpu $g --shape $s $f"; done; done
  for s in $(grep -v '^#' bench/shapes-large.txt); do
    for f in "--precise" "--precise --plain"; do echo "$B precompile --gpu $g --shape $s $f"; done
  done
  for s in $(grep -v '^#' bench/shapes.txt); do for f in "" "--plain"; do echo "$B precompile --gpu $g --shape $s $f"; done; done
  for s in $(grep -v '^#' bench/shapes-decode.txt); do
    for f in "" "--plain"; do echo "env F8GEMM_PDL=1 $B precompile --gpu $g --chained --shape $s $f"; done
  done
done >> $jobs
F8GEMM_CACHE_DIR=$PWD/scratch/dev/cache xargs -P $jobsP -I{} bash -c '{}' < $jobs \
  > scratch/s41/pre.log 2>&1 || { echo "s42-setup: a precompile failed (scratch/s41/pre.log)" >&2; exit 1; }
echo "dev cache: $(ls scratch/dev/cache | wc -l) files"
tar cJf scratch/s41/dev.tar.xz scratch/dev/ab/M scratch/dev/torchlib scratch/dev/cache scratch/s41/gt

# 2. Card 96's A/B: tree a is this build; tree b runs it with F8GEMM_TUNE_FILE=its early.tsv.
rm -rf scratch/s40 && mkdir -p scratch/s40/ab/a/bin scratch/s40/ab/b/bin scratch/s40/cache
cp build/f8gemm scratch/s40/ab/a/bin/
cat > scratch/s40/ab/b/bin/f8gemm <<'EOF'
#!/bin/bash
here=$(cd "$(dirname "$0")" && pwd)
F8GEMM_TUNE_FILE=$here/early.tsv exec "$here/../../a/bin/f8gemm" "$@"
EOF
chmod +x scratch/s40/ab/b/bin/f8gemm
for g in $gpus; do
  for f in "" "--plain"; do
    echo "env F8GEMM_PDL=1 $B precompile --gpu $g --chained $f --shapes docs/experiments/card-96-shapes.txt"
    echo "env F8GEMM_PDL=1 F8GEMM_TUNE_FILE=$PWD/docs/experiments/card-96-early-$g.tsv $B precompile --gpu $g --chained $f --shapes docs/experiments/card-96-shapes.txt"
  done
done > scratch/s40/jobs.txt
F8GEMM_CACHE_DIR=$PWD/scratch/s40/cache xargs -P $jobsP -I{} bash -c '{}' < scratch/s40/jobs.txt \
  > scratch/s40/pre.log 2>&1 || { echo "s42-setup: a precompile failed (scratch/s40/pre.log)" >&2; exit 1; }
echo "card 96 cache: $(ls scratch/s40/cache | wc -l) files"
tar cJf scratch/s40/card96.tar.xz scratch/s40/ab scratch/s40/cache

# 3. The precise tune: the final tree's binaries and every candidate of its shapes.
rm -rf scratch/s41/final scratch/s41/pt && mkdir -p scratch/s41/final scratch/s41/pt/cache
cp build/f8gemm build/f8gemm_gpu_tests build-torch/libf8gemm_torch.so scratch/s41/final/
for g in $gpus; do
  for f in "" "--plain"; do
    echo "$B precompile --gpu $g --candidates --precise $f --shapes docs/experiments/s41-precise-shapes.txt"
  done
done > scratch/s41/pt-jobs.txt
F8GEMM_CACHE_DIR=$PWD/scratch/s41/pt/cache xargs -P $jobsP -I{} bash -c '{}' < scratch/s41/pt-jobs.txt \
  > scratch/s41/pt-pre.log 2>&1 || { echo "s42-setup: a precompile failed (scratch/s41/pt-pre.log)" >&2; exit 1; }
echo "precise-tune cache: $(ls scratch/s41/pt/cache | wc -l) files"
tar cJf scratch/s41/pt.tar.xz scratch/s41/final scratch/s41/pt/cache
ls -la scratch/s41/*.tar.xz scratch/s40/*.tar.xz .whl 2>/dev/null
