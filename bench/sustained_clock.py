#!/usr/bin/env python3
"""Sustained runs of one GEMM shape, ours against FBGEMM, torch._scaled_mm and Triton, with the
SM clock and the board power sampled while each runs: time per call, clock, power, cycles per
call (time x clock) and energy per call (time x power).

Alone under Nsight Compute ours and FBGEMM can take the same cycles while the bench, which runs
each for a second or more under the power limit, still shows a gap (docs/perf-log.md, card 44).
This separates the two causes: a lower clock for the same cycles (more energy per tile) or more
cycles at the same clock. At the power limit a GEMM's time is its energy (card 98).

After a warm-up of --seconds at the first implementation, each implementation in turn (rounds
interleave them, in reverse order every other round) replays a CUDA graph of whole rotation
cycles for --seconds, over input sets rotated so that consecutive calls' inputs span more than
2 x the L2 (as peers.py); `nvidia-smi --query-gpu=clocks.sm,power.draw -lms 50` samples the GPU
meanwhile, and the samples of the window's first 0.5 s are dropped. Rows use per-row quantised
randn (the bench's distribution). The last line gives each implementation's median over the
rounds and the best peer's median time over ours (f8gemm_preshuffled), as peer_table.py does.
torch._scaled_mm writes into a preallocated output (out=), as peers.py's first spelling; card
98's runs (B = 1 only) let it allocate.

Implementations (B = 1: the 2-D ops; B > 1: the batched ops, and a loop over the batch where a
peer has no batched op, as in peers.py):
  f8gemm_preshuffled, f8gemm_plain   ours (batched: f8f8bf16_rowwise_batched[_preshuffled])
  f8gemm_precise                     ours preshuffled in precise mode (use_fast_accum=False); not
                                     in the default set: --only names it, and the summary then
                                     gives its median over fast mode's; --precise-config NAME
                                     makes it run that config (F8GEMM_CONFIG while its plan is
                                     built) instead of the table's or the model's pick
  fbgemm_rowwise                     FBGEMM gen_ai f8f8bf16_rowwise_out, one call per batch
  fbgemm_rowwise_batched             FBGEMM gen_ai f8f8bf16_rowwise_batched, one launch
  torch_scaled_mm                    torch._scaled_mm rowwise (cuBLASLt), one call per batch
  triton                             peers.py's autotuned Triton kernel (grid-y over batch)

Usage (on the GPU machine, with the torch extension and FBGEMM gen_ai importable):
  python3 bench/sustained_clock.py B,M,N,K [--seconds 3] [--rounds 2] [--only a,b] [--csv out.csv]
                                   [--precise-config NAME]
"""

import argparse
import contextlib
import csv
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import peers  # noqa: E402  (bench/peers.py: graph capture, quantisation, FBGEMM loading)

CALLS_PER_GRAPH = 20
SETTLE_S = 0.5
COLUMNS = ["shape", "impl", "round", "us_per_call", "sm_mhz", "power_w", "mcycles_per_call",
           "mj_per_call", "samples"]
IMPLS = ("f8gemm_preshuffled", "f8gemm_plain", "fbgemm_rowwise", "fbgemm_rowwise_batched",
         "torch_scaled_mm", "triton", "f8gemm_precise")
OURS = "f8gemm_preshuffled"
PRECISE = "f8gemm_precise"  # ours preshuffled with use_fast_accum=False (issue 6: precise / fast)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("shape", help="B,M,N,K")
    p.add_argument("--seconds", type=float, default=3.0, help="sustained run per implementation")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--only", help="comma-separated subset of: " + ", ".join(IMPLS))
    p.add_argument("--csv", help="output CSV")
    p.add_argument("--precise-config", metavar="NAME",
                   help="f8gemm_precise runs this config (as F8GEMM_CONFIG names it); the other "
                   "implementations keep their own choice")
    a = p.parse_args(argv)
    try:
        b, m, n, k = (int(v) for v in a.shape.split(","))
    except ValueError:
        p.error(f"shape must be B,M,N,K (four integers), got {a.shape!r}")
    if min(b, m, n, k) < 1:
        p.error(f"shape must be B,M,N,K with positive B, M, N, K, got {a.shape!r}")
    a.only_given = bool(a.only)
    a.only = ([s.strip() for s in a.only.split(",") if s.strip()] if a.only
              else [i for i in IMPLS if i != PRECISE])
    unknown = [s for s in a.only if s not in IMPLS]
    if unknown:
        p.error(f"--only names {unknown}; known: {', '.join(IMPLS)}")
    if a.precise_config is not None:
        if PRECISE not in a.only:
            p.error(f"--precise-config needs {PRECISE} in --only")
        if os.environ.get("F8GEMM_CONFIG"):
            p.error("--precise-config with F8GEMM_CONFIG set: every implementation would run "
                    "F8GEMM_CONFIG's config; unset it")
        if not a.precise_config.strip():
            p.error("--precise-config needs a config name")
    if a.seconds <= SETTLE_S or a.rounds < 1:
        p.error(f"--seconds must exceed {SETTLE_S} and --rounds must be >= 1")
    a.b, a.m, a.n, a.k = b, m, n, k
    return a


@contextlib.contextmanager
def forced_config(name):
    """F8GEMM_CONFIG=name inside (nothing when name is None), as it was after: ours reads it only
    while it builds a plan, which later calls of that mode and shape reuse."""
    if name is None:
        yield
        return
    before = os.environ.get("F8GEMM_CONFIG")
    os.environ["F8GEMM_CONFIG"] = name
    try:
        yield
    finally:
        if before is None:
            del os.environ["F8GEMM_CONFIG"]
        else:
            os.environ["F8GEMM_CONFIG"] = before


def sampled(gpu_id, seconds, run):
    """Runs run() while nvidia-smi samples GPU gpu_id's clock and power; returns run()'s result
    and the (mhz, watts) samples after the first SETTLE_S seconds' worth (nvidia-smi starts
    sampling within a few ms of the call)."""
    smi = subprocess.Popen(
        ["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
         "-lms", "50", "-i", gpu_id],
        stdout=subprocess.PIPE, text=True)
    t0 = time.time()
    try:
        result = run(seconds)
    finally:
        smi.terminate()
    out, _ = smi.communicate()
    t1 = time.time()
    rows = [line.split(",") for line in out.strip().splitlines() if line.count(",") == 1]
    # Samples arrive every 50 ms from t0: keep those after the settling time.
    keep = int(SETTLE_S / 0.05)
    samples = []
    for mhz, watts in rows[keep:]:
        try:
            samples.append((float(mhz), float(watts)))
        except ValueError:
            continue
    if not samples:
        raise RuntimeError(f"nvidia-smi gave no samples in {t1 - t0:.1f} s")
    return result, samples


def window(gpu_id, seconds, run):
    """(µs a call, median SM clock in MHz, mean board power in W, samples) of one sustained
    window: run(seconds) under sampled()."""
    us, samples = sampled(gpu_id, seconds, run)
    return (us, statistics.median(s[0] for s in samples), statistics.mean(s[1] for s in samples),
            len(samples))


def write_csv(path, columns, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        w.writerows(rows)
    print(f"csv: {path}")


def sustain(torch, g, calls):
    """run(seconds): replays CUDA graph g (calls calls a replay) back to back for about that long
    and returns the µs a call, from CUDA events around all the replays."""
    def run(seconds):
        g.replay()
        peers.sync()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        replays = 0
        start.record()
        while time.perf_counter() - t0 < seconds:
            g.replay()
            replays += 1
            if replays % 8 == 0:
                peers.sync()  # keeps the host at most 8 replays ahead
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1000.0 / (replays * calls)
    return run


def summary_line(rows):
    """Each implementation's median time over its rounds, and the best peer's median over ours
    (f8gemm_preshuffled) where both ran: rows as main() writes them."""
    names = list(dict.fromkeys(r["impl"] for r in rows))
    medians = {n: statistics.median(float(r["us_per_call"]) for r in rows if r["impl"] == n)
               for n in names}
    line = "median us/call: " + ", ".join(f"{n} {us:.2f}" for n, us in medians.items())
    peer_times = {n: us for n, us in medians.items() if not n.startswith("f8gemm_")}
    if OURS in medians and peer_times:
        best = min(peer_times, key=peer_times.get)
        line += (f"; best peer {best} {peer_times[best]:.2f}, best peer / ours "
                 f"{peer_times[best] / medians[OURS]:.3f}")
    if OURS in medians and PRECISE in medians:
        line += f"; precise / fast {medians[PRECISE] / medians[OURS]:.3f}"
    return line


def main(argv):
    a = parse_args(argv)
    if a.csv:
        peers.check_output(a.csv)  # before any GPU work
    import torch
    import f8gemm  # noqa: F401 - registers torch.ops.f8gemm.*

    fbgemm, fb_version = peers.load_fbgemm(torch)
    dev = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(dev)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    torch.manual_seed(0)
    bsz, batched = a.b, a.b > 1
    set_bytes = bsz * (a.m * a.k + a.n * a.k)  # the inputs, as peers.py counts them
    sets = min(peers.MAX_SETS, max(1, -(-2 * l2 // set_bytes)))
    gpu_id = "GPU-" + str(props.uuid)  # nvidia-smi's name for the device (not a MIG slice)
    # B = 1: 2-D tensors, for the 2-D ops; B > 1: 3-D, for the batched ops and the loops.
    lead = (bsz,) if batched else ()
    inputs = []
    for _ in range(sets):
        xq, xs = peers.quantize_rows(torch.randn(*lead, a.m, a.k, device="cuda"))
        wq, ws = peers.quantize_rows(torch.randn(*lead, a.n, a.k, device="cuda"))
        inputs.append((xq, xs, wq, f8gemm.preshuffle(wq), ws,
                       torch.empty(*lead, a.m, a.n, dtype=torch.bfloat16, device="cuda")))
    ops = torch.ops.f8gemm
    state = {"i": 0}

    def rotate():
        state["i"] = (state["i"] + 1) % sets
        return inputs[state["i"]]

    def per_batch(xq, xs, wq, ws, y):
        """(x, xs, w, ws, y) of each batch: the 2-D tensors themselves at B = 1."""
        if not batched:
            return [(xq, xs, wq, ws, y)]
        return [(xq[i], xs[i], wq[i], ws[i], y[i]) for i in range(bsz)]

    def ours_preshuffled(fast=True):
        xq, xs, _, wp, ws, y = rotate()
        if batched:
            ops.f8f8bf16_rowwise_batched_preshuffled(xq, wp, xs, ws, use_fast_accum=fast,
                                                     output=y)
        else:
            ops.f8f8bf16_rowwise_preshuffled_out(xq, wp, xs, ws, y, use_fast_accum=fast)

    def ours_plain():
        xq, xs, wq, _, ws, y = rotate()
        if batched:
            ops.f8f8bf16_rowwise_batched(xq, wq, xs, ws, output=y)
        else:
            ops.f8f8bf16_rowwise_out(xq, wq, xs, ws, y)

    def fbgemm_rowwise():
        xq, xs, wq, _, ws, y = rotate()
        for x1, xs1, w1, ws1, y1 in per_batch(xq, xs, wq, ws, y):
            fbgemm.f8f8bf16_rowwise_out(x1, w1, xs1, ws1, y1)

    def fbgemm_rowwise_batched():
        # At B = 1 the batched op on a batch of one: its own dispatch, which differs from the
        # 2-D op's (the peer table, session 17, has it 5% faster at 1,16384,8192,1024).
        xq, xs, wq, _, ws, y = rotate()
        if batched:
            fbgemm.f8f8bf16_rowwise_batched(xq, wq, xs, ws, use_fast_accum=True, output=y)
        else:
            fbgemm.f8f8bf16_rowwise_batched(xq[None], wq[None], xs[None], ws[None],
                                            use_fast_accum=True, output=y[None])

    def torch_scaled_mm():
        xq, xs, wq, _, ws, y = rotate()
        for x1, xs1, w1, ws1, y1 in per_batch(xq, xs, wq, ws, y):
            torch._scaled_mm(x1, w1.t(), scale_a=xs1.unsqueeze(1), scale_b=ws1.unsqueeze(0),
                             out_dtype=torch.bfloat16, use_fast_accum=True, out=y1)

    triton_bmm = peers.triton_rowwise_bmm(fast=True) if "triton" in a.only else None

    def triton():
        xq, xs, wq, _, ws, y = rotate()
        if batched:
            triton_bmm(xq, wq, xs, ws, y)
        else:
            triton_bmm(xq[None], wq[None], xs[None], ws[None], y[None])

    impls = {"f8gemm_preshuffled": ours_preshuffled, "f8gemm_plain": ours_plain,
             "torch_scaled_mm": torch_scaled_mm, "triton": triton,
             PRECISE: lambda: ours_preshuffled(fast=False)}
    if fbgemm is not None:
        impls["fbgemm_rowwise"] = fbgemm_rowwise
        impls["fbgemm_rowwise_batched"] = fbgemm_rowwise_batched
    missing = [name for name in a.only if name not in impls]
    if missing and a.only_given:
        sys.exit(f"error: --only names {missing}, which need FBGEMM gen_ai: {fb_version}")
    impls = {name: impls[name] for name in a.only if name in impls}
    print(f"device: {props.name}; shape {bsz},{a.m},{a.n},{a.k}; {sets} input sets; "
          f"FBGEMM gen_ai: {fb_version if fbgemm is not None else 'unavailable: ' + fb_version}")
    if a.precise_config:
        print(f"{PRECISE} runs {a.precise_config} (--precise-config)")
    graphs = {}
    for name, fn in impls.items():
        calls = CALLS_PER_GRAPH * sets  # whole rotation cycles per replay
        # The first call outside capture: Triton autotunes there, and ours builds its plan, which
        # later calls of that mode reuse: F8GEMM_CONFIG is read only then.
        forced = a.precise_config if name == PRECISE else None
        with forced_config(forced):
            try:
                fn()
            except Exception as e:
                # The library's refusal of the forced config ("F8GEMM_CONFIG='<name>': config
                # <name> cannot run ..." or a name it cannot parse) in one line; anything else
                # as it came.
                if forced is None or "F8GEMM_CONFIG=" not in str(e):
                    raise
                sys.exit(f"error: --precise-config {forced}: {e}")
        peers.sync()
        graphs[name] = (peers.capture(fn, calls), calls)
        if name == "triton":
            print(f"triton config: {triton_bmm.kernel.best_config}")

    rows = []
    first = next(iter(graphs.values()))
    sustain(torch, *first)(a.seconds)  # warm-up: the clock and the power settle before round 1
    for r in range(1, a.rounds + 1):
        order = list(graphs.items())
        if r % 2 == 0:
            order.reverse()
        for name, (g, calls) in order:
            us, mhz, watts, samples = window(gpu_id, a.seconds, sustain(torch, g, calls))
            row = {"shape": f"{bsz},{a.m},{a.n},{a.k}", "impl": name, "round": r,
                   "us_per_call": f"{us:.2f}", "sm_mhz": f"{mhz:.0f}",
                   "power_w": f"{watts:.1f}", "mcycles_per_call": f"{us * mhz / 1e6:.4f}",
                   "mj_per_call": f"{us * watts / 1e3:.3f}", "samples": samples}
            rows.append(row)
            print(f"round {r} {name:22s} {us:9.2f} us/call  {mhz:6.0f} MHz  {watts:6.1f} W  "
                  f"{us * mhz / 1e6:.4f} Mcycles/call  {us * watts / 1e3:8.3f} mJ/call  "
                  f"({samples} samples)", flush=True)
    print(summary_line(rows))
    if a.csv:
        write_csv(a.csv, COLUMNS, rows)


if __name__ == "__main__":
    main(sys.argv[1:])
