"""PM sampling overhead on the PyTorch training loop (run on the GPU machine).

Runs bench/overhead/train_resnet.py (ResNet-18, synthetic data, NVTX phases) plain, with
warpscope default tracing, and with tracing plus PM sampling at several intervals, all modes
interleaved in shuffled order, R times. Reports per mode the median time of the measured
steps, its ratio to tracing alone (the issue's target: <= 1.02x at the default interval) and
to plain, and, read back from each PM trace, the samples written and the samples lost
(hardware buffer overflows, decode errors, samples dropped by the writer or discarded as
overlong, gaps: stretches whose samples were overwritten before they were decoded), the
coverage (share of the sampled stretch that has samples; the minimum over runs) and the
decode thread's busy time. Writes pm_overhead.txt and pm_overhead.json to --out.

usage: pm_overhead.py --build DIR --out DIR [--runs 5] [--steps 120] [--warmup 15]
                      [--modes plain,trace] [--intervals default,1ms,20us,10us]
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

from modes import recording_env

ap = argparse.ArgumentParser()
ap.add_argument("--build", required=True, help="dir with bin/ and lib/ (staged .gpu or build)")
ap.add_argument("--out", required=True)
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--steps", type=int, default=120)
ap.add_argument("--warmup", type=int, default=15, help="untimed steps first (PM setup ends ~0.5-0.8 s after the context is created)")
ap.add_argument("--modes", default="plain,trace", help="modes besides the pm_* ones")
ap.add_argument("--intervals", default="default,1ms,20us,10us")
args = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
B = os.path.abspath(args.build)
pm_check = f"{B}/bin/ws_gpu_pm_check"
tmp = tempfile.mkdtemp(prefix="ws_pm_bench")
os.makedirs(args.out, exist_ok=True)
cmd = [sys.executable, f"{here}/train_resnet.py", "--steps", str(args.steps), "--warmup",
       str(args.warmup)]

modes = [m for m in args.modes.split(",") if m] + [f"pm_{iv}" for iv in args.intervals.split(",") if iv]


def env_for(mode, tag):
    if mode == "plain":
        return {}
    if not mode.startswith("pm_"):
        return recording_env(B, f"{tmp}/{tag}.wst")
    interval = mode[3:]
    pm = {"pm_sampling": "1"} | ({} if interval == "default" else {"pm_interval": interval})
    return recording_env(B, f"{tmp}/{tag}.wst", **pm)


def counts(path):
    """pm_samples and the pm_sampling.* counters of one trace."""
    out = subprocess.run([pm_check, "--trace", path, "--counts"], capture_output=True,
                         text=True).stdout
    res = {}
    m = re.search(r"kernels=(\d+) pm_samples=(\d+)", out)
    if m:
        res["kernels"], res["pm_samples"] = int(m.group(1)), int(m.group(2))
    for name, value in re.findall(r"^counter (pm_sampling\.[\w.]+)=(\d+)$", out, re.M):
        res[name] = int(value)
    return res


times = {m: [] for m in modes}
trace_counts = {m: [] for m in modes}
failures = {m: [] for m in modes}
for r in range(args.runs):
    order = list(modes)
    random.shuffle(order)
    for mode in order:
        tag = f"{mode}_{r}"
        env = dict(os.environ)
        env.update(env_for(mode, tag))
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            failures[mode].append("timed out after 300 s")
            print(f"{tag}: timed out", file=sys.stderr, flush=True)
            continue
        result = None
        for line in p.stdout.splitlines():
            if line.startswith("{"):
                result = json.loads(line)
        if p.returncode != 0 or result is None:
            failures[mode].append(f"rc={p.returncode}: {p.stderr[-300:]}")
            print(f"{tag}: failed rc={p.returncode} {p.stderr[-300:]}", file=sys.stderr, flush=True)
            continue
        times[mode].append(result["seconds"])
        trace = f"{tmp}/{tag}.wst"
        if mode != "plain" and os.path.exists(trace):
            trace_counts[mode].append(counts(trace))
            os.remove(trace)
        print(f"{tag}: {result['seconds']:.4f} s", flush=True)

med = {m: statistics.median(v) for m, v in times.items() if v}
lost_keys = ("pm_sampling.overflows", "pm_sampling.decode_errors", "pm_sampling.samples_dropped",
             "pm_sampling.samples_invalid", "pm_sampling.samples_discarded_too_long",
             "pm_sampling.gaps")


def interval_ns(mode):
    text = mode[3:]
    if text == "default":
        return 200_000  # collectors/pm_sampling/pm_sampling_config.h
    for unit, scale in (("us", 1_000), ("ms", 1_000_000), ("ns", 1), ("s", 1_000_000_000)):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * scale)
    return int(text)


def coverage(c, mode):
    """Share of the sampled stretch that has samples: samples x interval against that plus
    the gaps (time whose samples were overwritten before they were decoded)."""
    covered = c.get("pm_samples", 0) * interval_ns(mode)
    total = covered + c.get("pm_sampling.gap_ns", 0)
    return covered / total if total else None
rows = []
for m in modes:
    c = trace_counts[m]
    samples = statistics.median([x.get("pm_samples", 0) for x in c]) if c else 0
    lost = {k: max(x.get(k, 0) for x in c) if c else 0 for k in lost_keys}
    cov = [coverage(x, m) for x in c] if m.startswith("pm_") else []
    cov = [v for v in cov if v is not None]
    busy = [x.get("pm_sampling.decode_busy_us", 0) / 1e6 for x in c] if m.startswith("pm_") else []
    rows.append({
        "mode": m, "runs_ok": len(times[m]), "runs_failed": len(failures[m]),
        "median_s": med.get(m), "x_plain": med[m] / med["plain"] if m in med and "plain" in med else None,
        "x_trace": med[m] / med["trace"] if m in med and "trace" in med else None,
        "median_pm_samples": samples, "min_coverage": min(cov) if cov else None,
        "median_decode_busy_s": statistics.median(busy) if busy else None,
        "max_lost": lost, "failures": failures[m][:3]})

lines = [f"ResNet-18 training, {args.steps} measured steps after {args.warmup} warm-up steps, "
         f"{args.runs} interleaved runs per mode",
         f"{'mode':<14}{'ok/fail':>8}{'median s':>10}{'x plain':>9}{'x trace':>9}"
         f"{'samples':>9}{'coverage':>9}{'decode s':>9}  lost (max per run: overflows, decode "
         f"errors, dropped, invalid, overlong, gaps)"]
for row in rows:
    def f(v, spec):
        return format(v, spec) if v is not None else "-"
    lost = row["max_lost"]
    lines.append(f"{row['mode']:<14}{row['runs_ok']:>5}/{row['runs_failed']:<2}"
                 f"{f(row['median_s'], '.4f'):>10}{f(row['x_plain'], '.3f'):>9}"
                 f"{f(row['x_trace'], '.3f'):>9}{int(row['median_pm_samples']):>9}"
                 f"{f(row['min_coverage'], '.1%'):>9}{f(row['median_decode_busy_s'], '.2f'):>9}  "
                 + ", ".join(str(lost[k]) for k in lost_keys))
text = "\n".join(lines)
print(text)
with open(os.path.join(args.out, "pm_overhead.txt"), "w") as fh:
    fh.write(text + "\n")
with open(os.path.join(args.out, "pm_overhead.json"), "w") as fh:
    json.dump({"steps": args.steps, "runs": args.runs, "rows": rows, "samples": times}, fh, indent=1)
sys.exit(1 if any(failures.values()) else 0)
