"""Which part of recording slows a PyTorch host? Runs the fixed `.item()` loop
(tests/gpu/advise/advise_torch.py --fixed, whose step the host sets) plain, under the CUPTI
floor (bench/overhead/cupti_floor.cc) and under warpscope with one setting changed at a time,
modes shuffled within each of --rounds rounds; prints each mode's median loop time and its
ratio to plain and to the floor.
    python3 bench/probes/probe_host_cost.py --build .gpu [--rounds 5] [--steps 100]
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--build", required=True)
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--steps", type=int, default=100)
ap.add_argument("--modes", default="", help="comma list of modes to run (default: all)")
args = ap.parse_args()
here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
B = os.path.abspath(args.build)
tmp = tempfile.mkdtemp(prefix="ws_hostcost")
sys.path.insert(0, f"{here}/bench/overhead")
from modes import floor_env, recording_env, shim_path  # noqa: E402

shim = shim_path(B)
ws = recording_env(B, f"{tmp}/t.wst")
modes = {
    "plain": {},
    "floor": floor_env(B),
    "warpscope": ws,
    "ws_injection_path": {k: v for k, v in ws.items() if k != "LD_PRELOAD"} | {
        "CUDA_INJECTION64_PATH": shim, "NVTX_INJECTION64_PATH": shim},
    "ws_no_nvtx": ws | {"WARPSCOPE_TRACE": "cuda,sync"},
    "ws_no_runtime": ws | {"WARPSCOPE_TRACE": "kernel,memory,nvtx,sync"},
    "ws_no_periodic_flush": ws | {"WARPSCOPE_FLUSH_INTERVAL_MS": "600000"},
    "ws_no_api_filter": ws | {"WARPSCOPE_API_FILTER": "0"},
}
if args.modes:
    modes = {m: modes[m] for m in ["plain", "floor"] + args.modes.split(",") if m in modes}
cmd = [sys.executable, f"{here}/tests/gpu/advise/advise_torch.py", "--fixed", "--steps",
       str(args.steps)]
times = {m: [] for m in modes}
for r in range(args.rounds):
    order = list(modes)
    random.shuffle(order)
    for m in order:
        env = dict(os.environ) | modes[m]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        line = [l for l in p.stdout.splitlines() if l.startswith("{")]
        if p.returncode != 0 or not line:
            print(f"{m}: failed rc={p.returncode} {p.stderr[-300:]}", file=sys.stderr)
            continue
        times[m].append(json.loads(line[-1])["loop_ns"] / args.steps / 1e3)
        print(f"round {r} {m}: {times[m][-1]:.1f} us/step", flush=True)
med = {m: statistics.median(v) for m, v in times.items() if v}
for m, v in med.items():
    print(f"{m:22s} step {v:7.1f} us  x{v / med['plain']:.3f} plain  x{v / med['floor']:.3f} floor"
          f"  runs {' '.join(f'{x:.0f}' for x in times[m])}")
