"""What Python stacks cost a training loop: the ResNet-18 loop of bench/overhead (inputs made
on the GPU, `loss.item()` every step) run plain, under the CUPTI floor (bench/overhead's
injection that enables warpscope's activity kinds and only counts records), under warpscope
without stacks (WARPSCOPE_STACKS=none), under warpscope with its default stacks (syncs,
copies, every launch), and under torch.profiler(with_stack=True), in shuffled order, `--runs`
times each.
Prints one JSON object: the median ms per step of each mode and the ratios the docs quote.

With `--workload launch_loop`, the program is bench/overhead's launch-bound C++ loop of tiny
kernels (200,000 launches, one thread), whose stacks are native: the cost of a backtrace per
launch. torch.profiler is then left out; the figure is seconds for the loop, not ms per step.

usage: stacks_overhead.py --build DIR --out DIR [--runs 5] [--steps 120]
                          [--workload resnet|launch_loop] [--stacks CALLS]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "overhead"))
from modes import add_build_args, floor_env, interleaved_runs, recording_env  # noqa: E402

ap = argparse.ArgumentParser()
add_build_args(ap)
ap.add_argument("--steps", type=int, default=120)
ap.add_argument("--workload", default="resnet", choices=["resnet", "launch_loop"])
ap.add_argument("--stacks", default="", help="WARPSCOPE_STACKS for the stacks mode (default)")
args = ap.parse_args()
os.makedirs(args.out, exist_ok=True)
tmp = tempfile.mkdtemp(prefix="ws_stacks")
TRAIN = os.path.join(HERE, "..", "overhead", "train_resnet.py")
MODES = ["plain", "floor", "warpscope_no_stacks", "warpscope_stacks", "torch_profiler_stack"]
if args.workload == "launch_loop":
    MODES.remove("torch_profiler_stack")


def run(mode, i):
    if args.workload == "launch_loop":
        cmd = [f"{args.build}/bin/ws_launch_loop", "1", "200000"]
    else:
        cmd = [sys.executable, TRAIN, "--steps", str(args.steps), "--item"]
    env = dict(os.environ)
    if mode == "floor":
        env.update(floor_env(args.build, timestamps=True))
    elif mode == "warpscope_no_stacks":
        env.update(recording_env(args.build, f"{tmp}/{mode}{i}.wst", stacks="none"))
    elif mode == "warpscope_stacks":
        stacks = {"stacks": args.stacks} if args.stacks else {}
        env.update(recording_env(args.build, f"{tmp}/{mode}{i}.wst", **stacks))
    elif mode == "torch_profiler_stack":
        cmd += ["--mode", "torch_profiler_stack"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            result = json.loads(line)
            return result["ms_per_step"] if "ms_per_step" in result else result["seconds"]
    print(f"{mode} run {i} failed rc={p.returncode}\n{p.stderr[-1500:]}", file=sys.stderr)
    return None


times, median = interleaved_runs(MODES, args.runs, run, seed=7)
result = {"workload": args.workload, "runs": times,
          "median_" + ("seconds" if args.workload == "launch_loop" else "ms_per_step"): median}
if all(m in median for m in MODES):
    result["stacks_vs_no_stacks"] = median["warpscope_stacks"] / median["warpscope_no_stacks"]
    result["stacks_vs_plain"] = median["warpscope_stacks"] / median["plain"]
    result["no_stacks_vs_plain"] = median["warpscope_no_stacks"] / median["plain"]
    result["stacks_vs_floor"] = median["warpscope_stacks"] / median["floor"]
    if "torch_profiler_stack" in median:
        result["torch_profiler_stack_vs_plain"] = (median["torch_profiler_stack"] /
                                                   median["plain"])
last = f"{tmp}/warpscope_stacks{args.runs - 1}.wst"
if os.path.exists(last):
    result["stacks_trace_bytes"] = os.path.getsize(last)
    nostack = f"{tmp}/warpscope_no_stacks{args.runs - 1}.wst"
    if os.path.exists(nostack):
        result["no_stacks_trace_bytes"] = os.path.getsize(nostack)
    subprocess.run(["cp", last, os.path.join(args.out, "train_stacks.wst")])
with open(os.path.join(args.out, f"stacks_overhead_{args.workload}.json"), "w") as f:
    json.dump(result, f, indent=1)
print(json.dumps(result))
