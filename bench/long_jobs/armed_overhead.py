"""What being armed costs a GPU-bound training loop, and what recording into the flight
recorder's ring costs: bench/overhead's ResNet-18 loop (inputs made on the GPU, numbered step
ranges step_1, step_2, ...) run plain and under warpscope armed in each capture mode with no
window open (signal, control, cudaProfilerApi without a start, a 600 s delay, an NVTX range
that never comes), with a one-step NVTX window in the timed part (-p step_40), with the flight
recorder (30 s ring), and with default tracing, in shuffled order, `--runs` times each, every
run pinned to `--cores`. Prints one JSON object: each mode's median ms per step, its ratio to
plain, its spread, and the median peak RSS of its processes (what the flight recorder's ring
holds shows as RSS above tracing's).

usage: armed_overhead.py --build DIR --out DIR [--runs 5] [--steps 80] [--modes a,b]
                         [--cores 2-5] [--budget-s S]
"""
import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "overhead"))
from modes import (add_build_args, interleaved_runs, recording_env, run_child,  # noqa: E402
                   spread)

ap = argparse.ArgumentParser()
add_build_args(ap)
ap.add_argument("--steps", type=int, default=80)
ap.add_argument("--modes", default="", help="only these modes, comma-separated")
ap.add_argument("--cores", default="", help="CPU cores for every run (taskset -c)")
ap.add_argument("--budget-s", type=float, default=None,
                help="runs not started by then are not run")
args = ap.parse_args()
os.makedirs(args.out, exist_ok=True)
tmp = tempfile.mkdtemp(prefix="ws_armed")
TRAIN = os.path.join(HERE, "..", "overhead", "train_resnet.py")
# Each mode's settings (None: plain). The warm-up is 15 steps, so step_40 is in the timed part.
MODES = {
    "plain": None,
    "armed_signal": {"capture_range": "signal"},
    "armed_control": {"capture_range": "control"},
    "armed_profiler_api": {"capture_range": "cudaProfilerApi"},
    "armed_delay": {"delay": "600"},
    "armed_nvtx": {"capture_range": "nvtx", "nvtx_capture": "step_never"},
    "nvtx_window_step_40": {"capture_range": "nvtx", "nvtx_capture": "step_40"},
    "flight_recorder": {"flight_recorder": "30"},
    "tracing": {},
}


if args.modes:
    unknown = set(args.modes.split(",")) - set(MODES)
    if unknown:
        sys.exit(f"armed_overhead: unknown modes {sorted(unknown)}; known: {sorted(MODES)}")
    MODES = {m: MODES[m] for m in args.modes.split(",")}
rss_kb = {m: [] for m in MODES}


def run(mode, i):
    cmd = [sys.executable, TRAIN, "--steps", str(args.steps), "--numbered"]
    env = {}
    if MODES[mode] is not None:
        env = recording_env(args.build, f"{tmp}/{mode}{i}.wst", **MODES[mode])
    child = run_child(cmd, env, timeout=600, cores=args.cores or None)
    if child["result"] and "ms_per_step" in child["result"]:
        rss_kb[mode].append(child["maxrss_kb"])
        return child["result"]["ms_per_step"]
    print(f"{mode} run {i} failed rc={child['rc']}\n{child['stderr'][-1500:]}", file=sys.stderr)
    return None


deadline = time.monotonic() + args.budget_s if args.budget_s else None
times, median = interleaved_runs(MODES, args.runs, run, seed=29, deadline=deadline,
                                 log_path=os.path.join(args.out, "armed_overhead_runs.jsonl"))
result = {"steps": args.steps, "cores": args.cores, "runs": times, "median_ms_per_step": median,
          "spread": {m: spread(v) for m, v in times.items() if v},
          "median_peak_rss_mb": {m: sorted(v)[len(v) // 2] / 1024 for m, v in rss_kb.items() if v}}
if "plain" in median:
    result["vs_plain"] = {m: v / median["plain"] for m, v in median.items()}
with open(os.path.join(args.out, "armed_overhead.json"), "w") as f:
    json.dump(result, f, indent=1)
print(json.dumps(result))
