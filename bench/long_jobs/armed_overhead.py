"""What being armed costs a GPU-bound training loop, and what recording into the flight
recorder's ring costs: bench/overhead's ResNet-18 loop (inputs made on the GPU, numbered step
ranges step_1, step_2, ...) run plain and under warpscope armed in each capture mode with no
window open (signal, control, cudaProfilerApi without a start, a 600 s delay, an NVTX range
that never comes), with a one-step NVTX window in the timed part (-p step_40), with the flight
recorder (30 s ring), and with default tracing, in shuffled order, `--runs` times each.
Prints one JSON object: the median ms per step of each mode and its ratio to plain.

usage: armed_overhead.py --build DIR --out DIR [--runs 5] [--steps 80]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "overhead"))
from modes import add_build_args, interleaved_runs, recording_env  # noqa: E402

ap = argparse.ArgumentParser()
add_build_args(ap)
ap.add_argument("--steps", type=int, default=80)
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


def run(mode, i):
    cmd = [sys.executable, TRAIN, "--steps", str(args.steps), "--numbered"]
    env = dict(os.environ)
    if MODES[mode] is not None:
        env.update(recording_env(args.build, f"{tmp}/{mode}{i}.wst", **MODES[mode]))
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)["ms_per_step"]
    print(f"{mode} run {i} failed rc={p.returncode}\n{p.stderr[-1500:]}", file=sys.stderr)
    return None


times, median = interleaved_runs(MODES, args.runs, run, seed=29,
                                 log_path=os.path.join(args.out, "armed_overhead_runs.jsonl"))
result = {"steps": args.steps, "runs": times, "median_ms_per_step": median}
if "plain" in median:
    result["vs_plain"] = {m: v / median["plain"] for m, v in median.items()}
    result["spread_plain"] = (max(times["plain"]) - min(times["plain"])) / median["plain"]
with open(os.path.join(args.out, "armed_overhead.json"), "w") as f:
    json.dump(result, f, indent=1)
print(json.dumps(result))
