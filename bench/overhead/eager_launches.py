"""A PyTorch eager loop of tiny launches, as optimizer and norm code makes them: each step is
400 in-place elementwise ops (add_, mul_, addcmul_, lerp_ in turn) on 1k-element float
tensors made on the GPU, one kernel launch each, inside one NVTX range. The launches, not the
GPU, set the pace, so all that a recorder adds to a launch shows in full.

usage: eager_launches.py [--steps 400] [--warmup 30] [--launches-per-step 400]
                         [--mode plain|torch_profiler|proton] [--trace-out PATH] [--no-nvtx]
                         [--pairs N [--phase-steps 50] [--settle-steps 10] [--seed S]]
                         [--warmup-s S] [--chunk-steps K] [--main-core C]

Runs the warm-up steps, synchronizes, times --steps steps (synchronized before the clock is
read) and prints one JSON line: µs per launch and the launch counts.
  plain            no profiler of its own (warpscope and the CUPTI floor are injected from
                   outside, by the environment, and record from the first launch on).
  torch_profiler   torch.profiler.profile(activities=[CPU, CUDA]) around the warm-up and the
                   timed steps. Its CUPTI buffers are processed as they fill, inside the timed
                   part; leaving the `with` (CUPTI flush, Kineto's processing) and --trace-out's
                   Chrome JSON come after the clock is read, and their time is `stop_s`.
  proton           Triton's Proton, CUPTI backend, shadow context: proton.start() before the
                   warm-up, proton.finalize() (flush, write NAME.hatchet) after the clock is
                   read (`stop_s`). Exits 3 with one line when triton.profiler cannot be
                   imported or started.
--pairs N: one process measures itself with recording off and on. After the warm-up it runs N
pairs of phases, each pair an "off" and an "on" phase in a random order. An "on" phase begins
with cudaProfilerStart and an "off" phase with cudaProfilerStop (a recorder armed with
`-c cudaProfilerApi --capture-range-end repeat`, or the CUPTI floor with WS_FLOOR_TOGGLE=1,
turns itself on and off there; run plain, the pairs measure the loop's own drift); then
--settle-steps untimed steps and --phase-steps timed ones. The JSON line then carries each
phase's µs per launch and the median of the paired differences (on - off).
--warmup-s S: after the warm-up steps, go on stepping until S seconds of warm-up have passed
(the GPU's clocks rise with load; a short warm-up times part of the run at idle clocks).
--chunk-steps K: also report µs per launch of each K timed steps in turn (`chunks_us`), to see
drift within a process.
--main-core C: once CUDA is up, the launching thread alone is held to core C (run the process
on other cores), so that no helper thread of CUDA, CUPTI or a recorder shares its core.
Neither profiler writes its file inside the timed part; both, like warpscope and the floor,
handle CUPTI's buffers as they fill, inside it, and both keep their own per-op records in
memory as they go (torch.profiler a CPU event per op; Proton its tree).
"""
import argparse
import contextlib
import glob
import json
import os
import sys
import tempfile
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=400, help="timed steps")
p.add_argument("--warmup", type=int, default=30, help="untimed steps first")
p.add_argument("--launches-per-step", type=int, default=400, help="a multiple of 4")
p.add_argument("--mode", default="plain", choices=["plain", "torch_profiler", "proton"])
p.add_argument("--trace-out", default="",
               help="torch_profiler: Chrome JSON here; proton: the session name (.hatchet "
                    "added), a temporary folder's file by default")
p.add_argument("--no-nvtx", action="store_true", help="no NVTX range around each step")
p.add_argument("--pairs", type=int, default=0, help="measure off/on pairs in one process")
p.add_argument("--phase-steps", type=int, default=50, help="timed steps per phase")
p.add_argument("--settle-steps", type=int, default=10, help="untimed steps after a switch")
p.add_argument("--seed", type=int, default=0, help="the order of each pair's phases")
p.add_argument("--warmup-s", type=float, default=0.0, help="warm up for at least this long")
p.add_argument("--chunk-steps", type=int, default=0, help="report each K timed steps")
p.add_argument("--main-core", type=int, default=-1,
               help="after CUDA is up, hold the launching thread alone to this CPU core")
a = p.parse_args()
if a.pairs and a.mode != "plain":
    p.error("--pairs needs --mode plain (the recorder comes from outside)")
if a.launches_per_step % 4:
    p.error("--launches-per-step must be a multiple of 4")

proton = None
if a.mode == "proton":
    try:
        import triton.profiler as proton
    except Exception as e:  # noqa: BLE001 - any failure to import means no Proton here
        print(f"eager_launches: proton skipped: cannot import triton.profiler ({e!r})",
              file=sys.stderr, flush=True)
        sys.exit(3)

x = torch.zeros(1024, device="cuda")
y = torch.full((1024,), 0.5, device="cuda")
torch.cuda.synchronize()
if a.main_core >= 0:
    # Only this thread: the threads CUDA, CUPTI and a recorder started keep the process's cores,
    # so none of them takes the launching thread's core.
    os.sched_setaffinity(0, {a.main_core})
quads = a.launches_per_step // 4
nvtx = None if a.no_nvtx else torch.cuda.nvtx


def step():
    # Each op one launch, no allocation; x stays bounded (it converges).
    if nvtx:
        nvtx.range_push("step")
    for _ in range(quads):
        x.add_(y)
        x.mul_(0.5)
        x.addcmul_(y, y, value=0.125)
        x.lerp_(y, 0.25)
    if nvtx:
        nvtx.range_pop()


profile_path = ""
if a.mode == "torch_profiler":
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    ctx = torch.profiler.profile(activities=acts)
elif a.mode == "proton":
    name = a.trace_out or os.path.join(tempfile.mkdtemp(prefix="ws_proton"), "eager")
    try:
        proton.start(name, context="shadow", backend="cupti")
    except Exception as e:  # noqa: BLE001 - a Proton that cannot start: skipped, said why
        print(f"eager_launches: proton skipped: proton.start failed ({e!r})", file=sys.stderr,
              flush=True)
        sys.exit(3)
    ctx = contextlib.nullcontext()
else:
    ctx = contextlib.nullcontext()

def timed(steps):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def phases():
    """The off/on pairs in one process (--pairs): the JSON line's fields."""
    import random
    import statistics
    cudart = torch.cuda.cudart()
    rng = random.Random(a.seed)
    per_launch = a.launches_per_step * a.phase_steps / 1e6
    off, on, diffs = [], [], []
    for _ in range(a.pairs):
        got = {}
        order = ["off", "on"]
        rng.shuffle(order)
        for phase in order:
            (cudart.cudaProfilerStart if phase == "on" else cudart.cudaProfilerStop)()
            for _ in range(a.settle_steps):
                step()
            got[phase] = timed(a.phase_steps) / per_launch
        off.append(got["off"])
        on.append(got["on"])
        diffs.append(got["on"] - got["off"])
    cudart.cudaProfilerStop()
    return {"pairs": a.pairs, "phase_steps": a.phase_steps, "off_us": off, "on_us": on,
            "off_median_us": statistics.median(off), "on_median_us": statistics.median(on),
            "added_median_us": statistics.median(diffs), "added_us": diffs}


if a.pairs:
    for _ in range(a.warmup):
        step()
    result = phases()
    launches = a.pairs * 2 * (a.phase_steps + a.settle_steps) * a.launches_per_step
    print(json.dumps({
        "mode": "pairs", "warmup": a.warmup, "launches_per_step": a.launches_per_step,
        "launches_total": launches + a.warmup * a.launches_per_step,
        "checksum": float(x.sum().item()), "torch": torch.__version__,
        "device": torch.cuda.get_device_name(), **result}), flush=True)
    sys.exit(0)

def warm_up():
    """The warm-up steps, then more until --warmup-s has passed; returns how many ran."""
    t_warm = time.perf_counter()
    for _ in range(a.warmup):
        step()
    done = a.warmup
    while time.perf_counter() - t_warm < a.warmup_s:
        step()
        done += 1
    torch.cuda.synchronize()
    return done


chunks_us = []
with ctx as prof:
    warmup_steps = warm_up()
    t0 = time.perf_counter()
    if a.chunk_steps:
        done = 0
        while done < a.steps:
            k = min(a.chunk_steps, a.steps - done)
            chunks_us.append(timed(k) * 1e6 / (k * a.launches_per_step))
            done += k
    else:
        for _ in range(a.steps):
            step()
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    t_stop = time.perf_counter()
if a.mode == "torch_profiler" and a.trace_out:
    prof.export_chrome_trace(a.trace_out)
    profile_path = a.trace_out
if a.mode == "proton":
    proton.finalize()
    # Proton names the file after the session and its format (NAME.hatchet by default).
    written = sorted(glob.glob(glob.escape(name) + ".*"))
    profile_path = written[0] if written else ""
stop_s = time.perf_counter() - t_stop

launches = a.steps * a.launches_per_step
print(json.dumps({
    "mode": a.mode, "steps": a.steps, "warmup": a.warmup,
    "launches_per_step": a.launches_per_step, "launches_timed": launches,
    # Every launch of the loop, warm-up included; the set-up adds a few (two fills).
    "launches_total": (a.steps + warmup_steps) * a.launches_per_step,
    "seconds": seconds, "us_per_launch": seconds * 1e6 / launches, "stop_s": stop_s,
    "chunks_us": chunks_us, "warmup_steps": warmup_steps, "main_core": a.main_core,
    "profile_bytes": os.path.getsize(profile_path) if os.path.exists(profile_path) else 0,
    "checksum": float(x.sum().item()), "torch": torch.__version__,
    "device": torch.cuda.get_device_name(),
    "triton": getattr(sys.modules.get("triton"), "__version__", None)}), flush=True)
