"""Where PM sampling's host CPU goes (run on the GPU machine).

Runs tests/gpu/hostile.cu's program (ws_hostile) with kernels back to back for --seconds
under PM sampling, for each interval x decode batch (WARPSCOPE_PM_DECODE_BATCH, the counter
data image's capacity), and reads back from the trace: samples written and lost (gaps,
overflows, invalid), and the decode thread's time split into CUPTI's decode, metric
evaluation and counter data image re-initialisation. The process's own CPU time
(user+system, from getrusage of the child) is reported next to the same program traced
without PM sampling, so the PM share of a core is measured, not estimated.

Each row also runs per --evaluations mode (WARPSCOPE_PM_EVALUATE: process evaluates metric
values in the process; offline writes the counter data images for the analyzers to evaluate)
and per --metric-sets entry (default: warpscope's set; warps: the three metrics that active
warps need; sol: the 18-metric set of `warpscope sol`), and per --buffers entry
(WARPSCOPE_PM_BUFFER; auto: warpscope's default), and reports the
trace bytes per sample and the holes (time without samples, invalid samples).

--sol-cost is the recording cost of `--pm-metrics sol` against the default set at the default
interval: --metric-sets default,sol --intervals 200us --batches auto (other --intervals, say
200us,500us, to see the holes go), and a closing line with each set's extra share of a core and
the ratio.

usage: pm_decode_cost.py --build DIR [--seconds 5] [--intervals 200us,50us]
                         [--batches auto,64,4096] [--evaluations process,offline]
                         [--metric-sets default,warps,sol] [--buffers auto,512M]
                         [--sol-cost] [--out DIR]   (auto: warpscope's sizing)
"""
import argparse
import json
import os
import re
import resource
import subprocess
import tempfile
import time

from modes import recording_env

ap = argparse.ArgumentParser()
ap.add_argument("--build", required=True, help="dir with bin/ and lib/ (staged .gpu or build)")
ap.add_argument("--seconds", type=float, default=5.0)
ap.add_argument("--intervals", default="200us,50us")
ap.add_argument("--batches", default="auto,64,4096")
ap.add_argument("--evaluations", default="process")
ap.add_argument("--metric-sets", default="default")
ap.add_argument("--buffers", default="auto")
ap.add_argument("--sol-cost", action="store_true",
                help="the sol set against the default one at 200 us (sets the three above)")
ap.add_argument("--out", default=".")
args = ap.parse_args()
if args.sol_cost:  # the default interval unless --intervals names others
    args.metric_sets, args.batches = "default,sol", "auto"
    if args.intervals == ap.get_default("intervals"):
        args.intervals = "200us"
B = os.path.abspath(args.build)
tmp = tempfile.mkdtemp(prefix="ws_pm_cost")
COUNTERS = ["pm_sampling.samples", "pm_sampling.gaps", "pm_sampling.gap_ns", "pm_sampling.overflows",
            "pm_sampling.samples_invalid", "pm_sampling.decode_busy_us", "pm_sampling.decode_data_us",
            "pm_sampling.evaluate_us", "pm_sampling.image_reset_us", "pm_sampling.setup_us",
            "pm_sampling.sample_info_us", "pm_sampling.raw_images", "pm_sampling.raw_image_bytes",
            "pm_sampling.samples_discarded_too_long", "pm_sampling.decodes_cut_short"]
METRIC_SETS = {"default": "",
               "throughput": "sm__warps_active.avg.per_cycle_active,sm__warps_active.sum.per_cycle_elapsed,sm__cycles_active.avg,gr__cycles_elapsed.max,TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed,FBSP.TriageCompute.dramc__throughput.avg.pct_of_peak_sustained_elapsed,TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
               "warps": "sm__warps_active.avg.per_cycle_active,sm__cycles_active.avg,gr__cycles_elapsed.max",
               "sol": "sol"}


def run(env_extra):
    path = f"{tmp}/run.wst"
    env = dict(os.environ) | recording_env(B, path, quiet=False) | env_extra
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    try:
        p = subprocess.run([f"{B}/bin/ws_hostile", "--run-ms", str(int(args.seconds * 1000)),
                            "--kernel-us", "50"], env=env, capture_output=True, text=True,
                           timeout=args.seconds + 30)
    except subprocess.TimeoutExpired as e:
        p = subprocess.CompletedProcess(e.cmd, 124, "", (e.stderr or b"").decode(errors="replace")
                                        + "\n(timed out)")
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    dump = subprocess.run([f"{B}/bin/ws_trace_check", path, "--dump"], capture_output=True,
                          text=True).stdout
    counters = {m.group(1): int(m.group(2))
                for m in re.finditer(r"counter (\S+) = (\d+)", dump)}
    notices = re.findall(r"^  notice (.*)$", dump, re.M)
    return {"rc": p.returncode, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "trace_bytes": os.path.getsize(path) if os.path.exists(path) else 0,
            "stderr": p.stderr.strip().splitlines()[-5:], "notices": notices[:5],
            "max_rss_mb": round(after.ru_maxrss / 1024, 1),
            **{c.replace("pm_sampling.", ""): counters.get(c, 0) for c in COUNTERS}}


rows = []
base = run({})
base.update(mode="trace")
rows.append(base)
for evaluation in args.evaluations.split(","):
  for metric_set in args.metric_sets.split(","):
    for interval in args.intervals.split(","):
     for batch in args.batches.split(","):
      for buffer in args.buffers.split(","):
        env = {"WARPSCOPE_PM_SAMPLING": "1", "WARPSCOPE_PM_INTERVAL": interval,
               "WARPSCOPE_PM_EVALUATE": evaluation}
        if METRIC_SETS[metric_set]:
            env["WARPSCOPE_PM_METRICS"] = METRIC_SETS[metric_set]
        if batch != "auto":  # auto: warpscope's own sizing
            env["WARPSCOPE_PM_DECODE_BATCH"] = batch
        if buffer != "auto":
            env["WARPSCOPE_PM_BUFFER"] = buffer
        r = run(env)
        r.update(mode="pm", interval=interval, batch=batch, evaluation=evaluation,
                 metric_set=metric_set, buffer=buffer)
        rows.append(r)
        print(f"  done: {evaluation} {metric_set} {interval} batch {batch} buffer {buffer}: "
              f"rc {r['rc']}, {r['samples']} samples, cpu {r['cpu_s']} s", flush=True)

os.makedirs(args.out, exist_ok=True)
with open(f"{args.out}/pm_decode_cost.json", "w") as f:
    json.dump(rows, f, indent=1)
hdr = (f"{'eval':>8} {'metrics':>8} {'interval':>8} {'batch':>6} {'buffer':>6} {'samples':>8} {'gaps':>5} "
       f"{'gap_ms':>7} {'ovfl':>5} {'inval':>6} {'long':>5} {'cut':>4} "
       f"{'cpu_s':>7} {'+cpu%core':>9} {'busy/s':>7} {'decode':>7} {'eval':>7} {'reset':>7} "
       f"{'info':>7} {'us/smp':>7} {'B/smp':>7} {'setup_ms':>8}")
lines = [f"PM decode cost: ws_hostile --run-ms {int(args.seconds*1000)} --kernel-us 50; "
         f"traced without PM: cpu {base['cpu_s']} s in {base['wall_s']} s", hdr]
for r in rows[1:]:
    secs = r["wall_s"]
    extra_core = 100.0 * (r["cpu_s"] - base["cpu_s"]) / args.seconds
    n = max(r["samples"], 1)
    lines.append(
        f"{r['evaluation']:>8} {r['metric_set']:>8} {r['interval']:>8} {r['batch']:>6} {r['buffer']:>6} "
        f"{r['samples']:>8} {r['gaps']:>5} {r['gap_ns'] / 1e6:>7.1f} {r['overflows']:>5} "
        f"{r['samples_invalid']:>6} {r['samples_discarded_too_long']:>5} {r['decodes_cut_short']:>4} "
        f"{r['cpu_s']:>7.2f} {extra_core:>8.1f}% "
        f"{r['decode_busy_us']/1e6/secs*100:>6.1f}% {r['decode_data_us']/n:>7.1f} "
        f"{r['evaluate_us']/n:>7.1f} {r['image_reset_us']/n:>7.1f} {r['sample_info_us']/n:>7.1f} "
        f"{r['decode_busy_us']/n:>7.1f} {(r['trace_bytes'] - base['trace_bytes'])/n:>7.0f} "
        f"{r['setup_us']/1000:>8.0f}")
for r in rows:
    for line in r["stderr"] + r["notices"]:
        lines.append(f"  [{r.get('interval', 'trace')} {r.get('batch', '')}] {line}")
by_set = {}
for r in rows[1:]:
    by_set.setdefault((r["interval"], r["metric_set"]), []).append(
        100.0 * (r["cpu_s"] - base["cpu_s"]) / args.seconds)
for interval in args.intervals.split(","):
    default, sol = by_set.get((interval, "default")), by_set.get((interval, "sol"))
    if default and sol:
        d, s = min(default), min(sol)
        lines.append(f"sol set at {interval}: +{s:.1f}% of a core against +{d:.1f}% for the "
                     f"default set ({s / d:.1f}x)" if d > 0 else
                     f"sol set at {interval}: +{s:.1f}% of a core; default set +{d:.1f}%")
lines.append("columns: gap_ms = time without samples the recorder counted; long = samples "
             "discarded as too long; cut = drains cut short by their time budget")
lines.append("columns: +cpu%core = (process CPU - traced-only CPU) / run time; busy/s = decode "
             "thread busy share of the run; decode/eval/reset/info/us/smp = microseconds per sample; "
             "B/smp = trace bytes per sample beyond the traced-only run's")
text = "\n".join(lines)
print(text)
with open(f"{args.out}/pm_decode_cost.txt", "w") as f:
    f.write(text + "\n")
