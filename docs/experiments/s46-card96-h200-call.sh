#!/bin/bash
# Session 46, the second call on a warm H200 (about 200 s): card 96's A/B of the early
# dependents' trigger (early_dependents, suffix _e) on the H200, which has run only on an H100
# (card 96: plain 1,1,4096,14336 0.909 and preshuffled 1,1,28672,4096 0.980 there). The binary in
# scratch/s40/card96.tar.xz is session 40's build; no kernel or H200 table line changed since
# (git log d3e6454.. -- kernels src tables: host hardening and tables/h100.tsv only).
# Prediction (written before the call): card 81's H200 figures again within the rounds' spread,
# plain 1,1,4096,14336 0.90-0.94 and preshuffled 1,1,28672,4096 0.95-0.99 with _e; the other
# decode shapes within +-2% (no _e entry for them). Rule (card 96's): an _e entry where b / a is
# at most 0.98 in every round pair.
# Carry ["scratch/s40/card96.tar.xz"]. $OUT: card96.tgz.
set -u
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$gpu" in *H200*) ;; *) echo "GPU: $gpu: card 96 has run on an H100 already, nothing run"; exit 0 ;; esac
ROUNDS=3 AB_TIMEOUT=55 CARD96_TIMEOUT=${CARD96_TIMEOUT:-540} \
  bash docs/experiments/card-96-device-call.sh > /tmp/card96.log 2>&1
tail -n 30 /tmp/card96.log
