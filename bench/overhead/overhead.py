"""warpscope overhead benchmark driver (run on the GPU machine by tests/gpu/gpu_suite.sh).

For each workload (launch-bound loop with 1 and 4 host threads; ResNet-18 training; a PyTorch
step whose host and GPU time are about equal, `torch_balanced`, not in the default list) it runs
every mode -- plain, CUPTI floor (bench/overhead/cupti_floor.cc: same activity kinds, only
counts records), warpscope default tracing (LD_PRELOAD shim), torch.profiler where it
applies -- interleaved in shuffled order, R times, and reports the median time of each mode
and its ratio to plain (and to the floor), the median peak RSS added, and trace sizes
(bytes per event; warpscope vs torch.profiler JSON for the same training steps).
Writes bench.txt and bench.json to --out.
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile

from modes import floor_env, recording_env

ap = argparse.ArgumentParser()
ap.add_argument("--build", required=True, help="dir with bin/ and lib/ (staged .gpu or build)")
ap.add_argument("--out", required=True)
ap.add_argument("--runs", type=int, default=7)
ap.add_argument("--train-runs", type=int, default=5)
ap.add_argument("--train-steps", type=int, default=120)
ap.add_argument("--train-warmup", type=int, default=15, help="untimed training steps first")
ap.add_argument("--train-batch", type=int, default=64,
                help="ResNet-18 batch: 64 leaves the loop partly launch-bound on an H200, 256 "
                     "makes it GPU-bound")
ap.add_argument("--train-modes", default="plain,floor,warpscope,warpscope_pm,torch_profiler",
                help="the modes of resnet18_train, a subset of the default list")
ap.add_argument("--workloads", default="launch_1thread,launch_4threads,resnet18_train")
ap.add_argument("--quick", action="store_true")
ap.add_argument("--no-extras", dest="extras", action="store_false",
                help="leave out the trace-size comparison and the peak-RSS probe (14 more "
                     "training runs)")
args = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
B = os.path.abspath(args.build)
loop = f"{B}/bin/ws_launch_loop"
check = f"{B}/bin/ws_trace_check"
tmp = tempfile.mkdtemp(prefix="ws_bench")
runs = 3 if args.quick else args.runs


def run(cmd, env_extra):
    env = dict(os.environ)
    env.update(env_extra)
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = "", ""
    # os.wait4 gives this child's own peak RSS.
    _, status, ru = os.wait4(p.pid, 0)
    out = p.stdout.read()
    err = p.stderr.read()
    p.returncode = os.waitstatus_to_exitcode(status)
    result = None
    for line in out.splitlines():
        if line.startswith("{"):
            result = json.loads(line)
    if p.returncode != 0 or result is None:
        print(f"run failed rc={p.returncode}: {' '.join(cmd)}\n{err[-2000:]}", file=sys.stderr)
        return None
    result["maxrss_kb"] = ru.ru_maxrss
    return result


def mode_env(mode, tag):
    if mode == "plain":
        return {}
    if mode in ("floor", "floor_ts"):
        return floor_env(B, timestamps=mode == "floor_ts")
    if mode == "warpscope":
        return recording_env(B, f"{tmp}/{tag}.wst")
    if mode == "warpscope_pm":  # default tracing plus PM sampling at the default interval
        return recording_env(B, f"{tmp}/{tag}_pm.wst", pm_sampling="1")
    return {}


def packets(path):
    out = subprocess.run([check, path], capture_output=True, text=True).stdout
    m = re.search(r"packets=(\d+)", out)
    return int(m.group(1)) if m else 0


steps = "40" if args.quick else str(args.train_steps)
workloads = {
    "launch_1thread": {"cmd": [loop, "1", "200000"], "modes": ["plain", "floor", "floor_ts", "warpscope"]},
    "launch_4threads": {"cmd": [loop, "4", "50000"], "modes": ["plain", "floor", "warpscope"]},
    "resnet18_train": {
        "cmd": [sys.executable, f"{here}/train_resnet.py", "--steps", steps, "--warmup",
                str(args.train_warmup), "--batch", str(args.train_batch)],
        "modes": [m for m in ["plain", "floor", "warpscope", "warpscope_pm", "torch_profiler"]
                  if m in args.train_modes.split(",")],
        "runs": 3 if args.quick else args.train_runs},
    # A PyTorch step whose host and GPU take about the same time (the fixed .item() program
    # of warpscope advise's GPU check): what recording adds to the host shows in full here.
    "torch_balanced": {
        "cmd": [sys.executable, f"{here}/../../tests/gpu/advise/advise_torch.py", "--fixed",
                "--steps", "100"],
        "modes": ["plain", "floor", "warpscope"],
        "runs": 3 if args.quick else args.train_runs},
}
wanted = set(args.workloads.split(","))
workloads = {k: v for k, v in workloads.items() if k in wanted}
report = {"runs": runs, "workloads": {}}
lines = []
for name, w in workloads.items():
    samples = {m: [] for m in w["modes"]}
    rss = {m: [] for m in w["modes"]}
    trace_sizes = []
    for r in range(w.get("runs", runs)):
        order = list(w["modes"])
        random.shuffle(order)
        for mode in order:
            cmd = list(w["cmd"])
            if mode == "torch_profiler":
                cmd += ["--mode", "torch_profiler"]
            res = run(cmd, mode_env(mode, f"{name}_{r}"))
            if res is None:
                continue
            samples[mode].append(res["seconds"] if "seconds" in res else res["loop_ns"] / 1e9)
            rss[mode].append(res["maxrss_kb"])
            if mode == "warpscope":
                path = f"{tmp}/{name}_{r}.wst"
                if os.path.exists(path):
                    trace_sizes.append((os.path.getsize(path), packets(path)))
    med = {m: statistics.median(v) for m, v in samples.items() if v}
    rss_med = {m: statistics.median(v) for m, v in rss.items() if v}
    entry = {"median_seconds": med, "samples": samples, "median_maxrss_kb": rss_med}
    base = med.get("plain")
    if base:
        entry["ratio_to_plain"] = {m: v / base for m, v in med.items()}
        entry["rss_added_mb"] = {m: (v - rss_med["plain"]) / 1024 for m, v in rss_med.items()}
    if med.get("floor"):
        entry["ratio_to_floor"] = {m: v / med["floor"] for m, v in med.items()}
    if trace_sizes:
        size, pk = trace_sizes[-1]
        entry["trace_bytes"] = size
        entry["trace_packets"] = pk
        entry["bytes_per_packet"] = size / pk if pk else None
    report["workloads"][name] = entry
    lines.append(f"{name}: runs={w.get('runs', runs)} " + " ".join(
        f"{m}={med[m]:.4f}s(x{entry.get('ratio_to_plain', {}).get(m, 0):.3f} plain"
        + (f", x{entry['ratio_to_floor'][m]:.3f} floor" if 'ratio_to_floor' in entry else "")
        + f", +{entry.get('rss_added_mb', {}).get(m, 0):.0f}MB rss)" for m in med))
    if trace_sizes:
        lines.append(f"  warpscope trace: {entry['trace_bytes']} bytes, {entry['trace_packets']} "
                     f"packets, {entry['bytes_per_packet']:.1f} bytes/packet")
    print(lines[-1] if not trace_sizes else lines[-2] + "\n" + lines[-1], flush=True)

if args.extras:
    # Trace size for the same training steps: warpscope (cudaProfilerApi window around the measured
    # steps) vs torch.profiler's Chrome JSON.
    train = [sys.executable, f"{here}/train_resnet.py", "--steps", steps, "--warmup",
             str(args.train_warmup)]
    ws_path = f"{tmp}/size.wst"
    env = recording_env(B, ws_path, capture_range="cudaProfilerApi")
    res_ws = run(train + ["--profiler-api"], env)
    json_path = f"{tmp}/torch_trace.json"
    res_tp = run(train + ["--mode", "torch_profiler", "--trace-out", json_path], {})
    if res_ws and res_tp and os.path.exists(ws_path):
        ws_size = os.path.getsize(ws_path)
        pk = packets(ws_path)
        tp_size = res_tp["trace_bytes"]
        report["size_comparison"] = {"steps": int(steps), "warpscope_bytes": ws_size,
                                     "warpscope_packets": pk, "torch_profiler_json_bytes": tp_size,
                                     "ratio": tp_size / ws_size if ws_size else None}
        lines.append(f"size for {steps} training steps: warpscope {ws_size} bytes ({pk} packets, "
                     f"{ws_size / max(pk, 1):.1f} B/packet) vs torch.profiler JSON {tp_size} bytes: "
                     f"{tp_size / ws_size:.1f}x smaller")
        print(lines[-1], flush=True)
    # Where warpscope's extra peak RSS in the training run comes from: one run per variant.
    rss_probe = {}
    small = {"WARPSCOPE_BUFFER_SIZE_MB": "1", "WARPSCOPE_WRITER_MEMORY_MB": "4"}
    for label, mode, extra in [
            ("default", "warpscope", {}), ("buffer_1mb", "warpscope", {"WARPSCOPE_BUFFER_SIZE_MB": "1"}),
            ("writer_4mb", "warpscope", {"WARPSCOPE_WRITER_MEMORY_MB": "4"}),
            ("kernels_only", "warpscope", {"WARPSCOPE_TRACE": "kernel"}),
            ("small_kernels_only", "warpscope", dict(small, WARPSCOPE_TRACE="kernel")),
            ("no_periodic_flush", "warpscope", {"WARPSCOPE_FLUSH_INTERVAL_MS": "600000"}),
            ("floor", "floor", {}), ("floor_again", "floor", {}), ("plain", "plain", {}),
            ("pm_process", "warpscope_pm", {}), ("pm_offline", "warpscope_pm", {"WARPSCOPE_PM_EVALUATE": "offline"})]:
        env = mode_env(mode, f"rss_{label}")
        env.update(extra)
        res = run(train, env)
        if res:
            rss_probe[label] = res["maxrss_kb"]
    if rss_probe:
        plain_rss = report["workloads"].get("resnet18_train", {}).get("median_maxrss_kb", {}).get("plain", 0)
        report["rss_probe_kb"] = rss_probe
        lines.append("training peak RSS added by warpscope variants (one run each, MB): " + ", ".join(
            f"{k}=+{(v - plain_rss) / 1024:.0f}" for k, v in rss_probe.items()))
        print(lines[-1], flush=True)
with open(f"{args.out}/bench.json", "w") as f:
    json.dump(report, f, indent=1)
with open(f"{args.out}/bench.txt", "w") as f:
    f.write("\n".join(lines) + "\n")
