"""What recording costs a launch, against CUPTI's own floor and other profilers (issue 35).

Workloads (each mode a fresh process, all modes of a workload in one shuffled order, --runs
rounds, every process held to the same CPU cores):
  eager   bench/overhead/eager_launches.py: a PyTorch eager loop of 400 tiny elementwise
          launches per step, timed steps after warm-up; the figure is µs per launch.
  resnet  bench/overhead/train_resnet.py: ResNet-18 training steps, inputs on the GPU; the
          figure is ms per step.
Modes (MODES below): plain; the CUPTI floor (bench/overhead/cupti_floor.cc) with kernel
records only, with kernel records and a timestamp-only callback on every launch, and with
the activity kinds warpscope recorded per API call before issue 35; warpscope's defaults,
without stacks, and armed with no window; torch.profiler; Triton's Proton.

Reports per mode the median, min and max, the figure added to plain's median, the ratio to
plain and to the kernels-only floor, the peak RSS added, and for warpscope's runs the trace's
size and counts. A run whose recording did not hold what it should is a failed run, left out
of the figures: warpscope's eager trace must hold every launch as a kernel (and an armed one
none), the floor must count a record (and a launch callback, where asked) per launch.
Writes recorder_cost.json, recorder_cost.md and recorder_cost_runs.jsonl (a line per run as
it ends) to --out; prints the tables last. Exit status 1 when a run failed.

usage: recorder_cost.py --build DIR --out DIR [--runs 5] [--workloads eager,resnet]
         [--modes M1,M2] [--eager-steps 400] [--eager-warmup 20] [--resnet-steps 80]
         [--resnet-warmup 10] [--cores 2-5] [--no-aslr] [--budget-s 500] [--dry-run]
--budget-s: runs not started by then are skipped (and counted), so that one call of limited
length still writes its tables. --dry-run: no GPU; made-up figures, to try the tables, written
to dry_run_recorder_cost.* only.
"""
import argparse
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from modes import (add_build_args, floor_env, interleaved_runs, parse_cores, recording_env,
                   run_child, spread)

HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass
class Mode:
    what: str
    floor: Optional[str] = None      # WS_FLOOR_KINDS for the CUPTI floor
    warpscope: Optional[dict] = None  # warpscope settings (recording_env keywords)
    tool: Optional[str] = None       # the workload's own --mode
    armed: bool = False              # armed, no window: its trace must hold no kernel


MODES = {
    "plain": Mode("nothing injected"),
    "floor_kernel": Mode("CUPTI floor: kernel activity only", floor="kernel"),
    "floor_kernel_launch": Mode("CUPTI floor: kernel activity + timestamp-only launch "
                                "callbacks", floor="kernel,launch"),
    "floor_kernel_launch_internal": Mode("CUPTI floor: as above + INTERNAL_LAUNCH_API "
                                         "activity", floor="kernel,launch,internal"),
    "floor_recorded": Mode("CUPTI floor: kernel + runtime + memory + sync + NVTX activity "
                           "(warpscope's recording before issue 35)",
                           floor="kernel,runtime,memory,nvtx,sync"),
    "warpscope": Mode("warpscope defaults", warpscope={}),
    "warpscope_nostacks": Mode("warpscope --stacks none", warpscope={"stacks": "none"}),
    # Parts of the defaults, to find what costs what (run with --modes).
    "warpscope_kernel_launch": Mode("warpscope -t kernel,launch --stacks none: kernel records "
                                    "and the launch log alone",
                                    warpscope={"trace": "kernel,launch", "stacks": "none"}),
    "warpscope_kernel_launch_stacks": Mode("warpscope -t kernel,launch: with launch stacks",
                                           warpscope={"trace": "kernel,launch"}),
    "warpscope_no_runtime": Mode("warpscope -t kernel,launch,memory,nvtx,sync --stacks none: "
                                 "the defaults without runtime API records",
                                 warpscope={"trace": "kernel,launch,memory,nvtx,sync",
                                            "stacks": "none"}),
    "warpscope_armed": Mode("warpscope -c control, no window opened",
                            warpscope={"capture_range": "control"}, armed=True),
    "torch_profiler": Mode("torch.profiler (CPU + CUDA)", tool="torch_profiler"),
    "proton": Mode("Triton's Proton (CUPTI, shadow context)", tool="proton"),
}


@dataclass
class Workload:
    figure: str                      # the key of the workload's JSON line
    unit: str
    modes: list                      # run by default
    est_run_s: float                 # rough seconds per run, to share the budget
    command: Callable                # (args) -> argv
    extra_modes: list = field(default_factory=list)  # run only when --modes names them


WORKLOADS = {
    "eager": Workload(
        "us_per_launch", "µs per launch",
        ["plain", "floor_kernel", "floor_kernel_launch", "floor_recorded", "warpscope",
         "warpscope_nostacks", "warpscope_armed", "torch_profiler", "proton"], 7.5,
        lambda a: [sys.executable, f"{HERE}/eager_launches.py", "--steps", str(a.eager_steps),
                   "--warmup", str(a.eager_warmup), "--warmup-s", str(a.eager_warmup_s),
                   "--chunk-steps", str(a.chunk_steps), "--main-core", str(a.main_core)],
        ["floor_kernel_launch_internal", "warpscope_kernel_launch",
         "warpscope_kernel_launch_stacks", "warpscope_no_runtime"]),
    "resnet": Workload(
        "ms_per_step", "ms per step", ["plain", "floor_kernel", "warpscope", "torch_profiler"],
        10.0,
        lambda a: [sys.executable, f"{HERE}/train_resnet.py", "--steps", str(a.resnet_steps),
                   "--warmup", str(a.resnet_warmup)],
        ["floor_kernel_launch", "floor_recorded", "warpscope_nostacks", "warpscope_armed"]),
}
TARGETS = {"eager": ("added", 2.5, "warpscope defaults at most +2.5 µs per launch"),
           "resnet": ("ratio", 1.03, "warpscope defaults at most 1.03x plain")}
# Kernels beyond the loop's own launches in the eager trace: set-up fills, the final sum.
EAGER_KERNEL_SLACK = 64


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_build_args(ap)
    ap.add_argument("--workloads", default="eager,resnet")
    ap.add_argument("--modes", default="", help="only these modes (default: each workload's)")
    ap.add_argument("--eager-steps", type=int, default=400)
    ap.add_argument("--eager-warmup", type=int, default=20)
    ap.add_argument("--eager-warmup-s", type=float, default=0.0,
                    help="eager: warm up for at least this long (the GPU's clocks rise)")
    ap.add_argument("--chunk-steps", type=int, default=0,
                    help="eager: also time each K steps (chunks_us in the runs' log)")
    ap.add_argument("--main-core", type=int, default=-1,
                    help="eager: the launching thread alone on this core (not in --cores)")
    ap.add_argument("--hash-seed", default="",
                    help="PYTHONHASHSEED for every run (default: Python's random seed)")
    ap.add_argument("--no-aslr", action="store_true",
                    help="run every process with address space randomization off (setarch -R), "
                         "so that processes of one mode share one memory layout")
    ap.add_argument("--resnet-steps", type=int, default=80)
    ap.add_argument("--resnet-warmup", type=int, default=10)
    ap.add_argument("--cores", default="2-5", help="CPU cores for every run (taskset -c)")
    ap.add_argument("--budget-s", type=float, default=500,
                    help="runs not started by then are not run (the tables still come)")
    ap.add_argument("--timeout-s", type=float, default=120, help="per run")
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    unknown = set(a.workloads.split(",")) - set(WORKLOADS)
    if unknown:
        ap.error(f"unknown workloads {sorted(unknown)}; known: {sorted(WORKLOADS)}")
    wanted = [m for m in a.modes.split(",") if m]
    if set(wanted) - set(MODES):
        ap.error(f"unknown modes {sorted(set(wanted) - set(MODES))}; known: {list(MODES)}")
    return a


def usable_cores(cores):
    """--cores, or where this machine does not let us have them all, the first four we may."""
    allowed = os.sched_getaffinity(0)
    if parse_cores(cores) <= allowed:
        return cores
    chosen = ",".join(str(c) for c in sorted(allowed)[:4])
    print(f"recorder_cost: cores {cores} not all available; using {chosen}", flush=True)
    return chosen


def mode_env(mode, trace):
    m = MODES[mode]
    if m.floor is not None:
        return floor_env(BUILD, kinds=m.floor, quiet=False)
    if m.warpscope is not None:
        return recording_env(BUILD, trace, **m.warpscope)
    return {}


def trace_facts(path):
    """ws_trace_check's summary of a trace: packets, kernels, api_calls, drops, end, ...,
    and its counters; None without the checker."""
    check = f"{BUILD}/bin/ws_trace_check"
    if not os.path.exists(check):
        return None
    res = run_child([check, path, "--dump"], {}, timeout=120)
    facts = {"bytes": os.path.getsize(path)}
    for line in res["stdout"].splitlines():
        if " packets=" in line:
            facts.update({k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)", line)})
        m = re.match(r"\s*counter (\S+) = (\d+)", line)
        if m:
            facts.setdefault("counters", {})[m.group(1)] = int(m.group(2))
    return facts


def check_run(workload, mode, result, stderr, trace):
    """What the run's recording holds, and why it is not to be believed (None if it is)."""
    m = MODES[mode]
    launches = result.get("launches_total") if workload == "eager" else None
    facts, problem = {}, None
    if m.floor is not None:
        got = re.search(r"ws_cupti_floor: (\d+) records, (\d+) (?:launch|timed) callbacks", stderr)
        if not got:
            return facts, "the floor printed no counts: not injected?"
        facts = {"floor_records": int(got.group(1)), "floor_launch_callbacks": int(got.group(2))}
        need = launches or 1
        if facts["floor_records"] < need:
            problem = f"floor counted {facts['floor_records']} records for {need} launches"
        elif "launch" in m.floor.split(",") and facts["floor_launch_callbacks"] < need:
            problem = (f"floor counted {facts['floor_launch_callbacks']} launch callbacks for "
                       f"{need} launches")
    elif m.warpscope is not None:
        if not os.path.exists(trace):
            return facts, "no trace written"
        facts = trace_facts(trace) or {"bytes": os.path.getsize(trace), "unchecked": True}
        os.remove(trace)
        kernels = facts.get("kernels")
        if "unchecked" in facts:
            pass
        elif kernels is None:
            problem = "ws_trace_check could not read the trace"
        elif m.armed:
            if kernels or facts.get("windows"):
                problem = f"armed, yet {kernels:.0f} kernels and {facts.get('windows')} windows"
        elif not facts.get("end"):
            problem = "trace has no end (not complete)"
        elif launches and not launches <= kernels <= launches + EAGER_KERNEL_SLACK:
            problem = f"trace holds {kernels:.0f} kernels for {launches} launches"
        elif not kernels:
            problem = "trace holds no kernel"
    return facts, problem


class Runner:
    """Runs one workload's modes; keeps each run's details beside the figure."""

    def __init__(self, name, args, tmp, log, launch):
        self.name, self.args, self.tmp, self.log, self.launch = name, args, tmp, log, launch
        self.w = WORKLOADS[name]
        self.details = {}      # mode -> [run records]
        self.skipped = {}      # mode -> why (a tool that is not there)

    def __call__(self, mode, i):
        if mode in self.skipped:
            return None
        trace = f"{self.tmp}/{self.name}_{mode}_{i}.wst"
        cmd = self.w.command(self.args)
        if MODES[mode].tool:
            cmd += ["--mode", MODES[mode].tool]
        res = self.launch(mode, cmd, mode_env(mode, trace))
        rec = {"workload": self.name, "mode": mode, "run": i, "rc": res["rc"],
               "wall_s": round(res["wall_s"], 2), "maxrss_kb": res["maxrss_kb"]}
        result = res["result"]
        if res["rc"] == 3 and "skipped" in res["stderr"]:
            self.skipped[mode] = res["stderr"].strip().splitlines()[-1]
            rec["skipped"] = self.skipped[mode]
        elif res["rc"] != 0 or result is None or self.w.figure not in result:
            rec["problem"] = f"rc={res['rc']}: {res['stderr'][-1500:]}"
        else:
            rec["figure"] = result[self.w.figure]
            rec["result"] = result
            rec["facts"], problem = check_run(self.name, mode, result, res["stderr"], trace)
            if problem:
                rec["problem"] = problem
        self.details.setdefault(mode, []).append(rec)
        with open(self.log, "a") as f:
            f.write(json.dumps(rec) + "\n")
        shown = (f"{rec['figure']:.3f} {self.w.unit}" if "figure" in rec else "")
        shown += "" if "problem" not in rec else f" FAILED: {rec['problem'][:300]}"
        shown += "" if "skipped" not in rec else f" skipped: {rec['skipped']}"
        print(f"[{time.monotonic() - START:6.0f} s] {self.name} {mode} run {i}: {shown} "
              f"({rec['wall_s']} s)", flush=True)
        return rec["figure"] if "figure" in rec and "problem" not in rec else None


def fake_launch(args):
    """--dry-run: a stand-in for run_child that makes up figures (never written as results):
    plain near the issue's figures, each mode a made-up share above it, Proton not there."""
    base = {"eager": 7.1, "resnet": 13.3}
    above = {"plain": 0, "floor_kernel": 0.28, "floor_kernel_launch": 0.32,
             "floor_kernel_launch_internal": 0.32, "floor_recorded": 0.7, "warpscope": 0.36,
             "warpscope_nostacks": 0.33, "warpscope_armed": 0.005, "torch_profiler": 0.9}
    rng = random.Random(1)

    def launch(mode, cmd, env):
        if mode == "proton":
            return {"rc": 3, "stdout": "", "stderr": "eager_launches: proton skipped: dry run",
                    "wall_s": 0, "maxrss_kb": 0, "result": None}
        name = "eager" if "eager_launches.py" in cmd[1] else "resnet"
        share = above[mode] * (1 if name == "eager" else 0.05)
        launches = (args.eager_steps + args.eager_warmup) * 400
        if MODES[mode].warpscope is not None:
            open(env["WARPSCOPE_OUTPUT"], "w").close()
        return {"rc": 0, "stdout": "", "wall_s": 0.0,
                "stderr": (f"ws_cupti_floor: {launches + 9} records, {launches} launch "
                           "callbacks" if MODES[mode].floor else ""),
                "maxrss_kb": 900_000 + (0 if mode == "plain" else 30_000),
                "result": {WORKLOADS[name].figure: base[name] * (1 + share) *
                           rng.uniform(0.98, 1.03), "launches_total": launches}}
    return launch


def summarize(name, modes, runner, figures):
    w = WORKLOADS[name]
    rows = {}
    stats = {m: spread(v) for m, v in figures.items() if v}
    plain = stats.get("plain", {}).get("median") if stats.get("plain") else None
    floor = stats.get("floor_kernel", {}).get("median") if stats.get("floor_kernel") else None
    rss_plain = median_of([r["maxrss_kb"] for r in runner.details.get("plain", [])
                           if "figure" in r and "problem" not in r])
    for mode in modes:
        recs = runner.details.get(mode, [])
        ok = [r for r in recs if "figure" in r and "problem" not in r]
        failed = sum("problem" in r for r in recs)
        row = {"what": MODES[mode].what, "runs_ok": len(ok), "runs_failed": failed,
               "runs_not_run": runner.args.runs - len(ok) - failed,
               "figures": figures.get(mode, [])}
        if mode in runner.skipped:
            row["skipped"] = runner.skipped[mode]
        if stats.get(mode):
            s = stats[mode]
            row.update(s)
            if plain:
                row["added"] = s["median"] - plain
                row["x_plain"] = s["median"] / plain
            if floor:
                row["x_floor_kernel"] = s["median"] / floor
        row["median_wall_s"] = median_of([r["wall_s"] for r in recs if "wall_s" in r])
        # Time the tool took after the clock was read (torch.profiler's stop, Proton's
        # finalize); not in the figure.
        row["median_stop_s"] = median_of([r["result"].get("stop_s") for r in ok
                                          if r["result"].get("stop_s") is not None])
        rss = median_of([r["maxrss_kb"] for r in ok])
        if rss and rss_plain:
            row["rss_added_mb"] = (rss - rss_plain) / 1024
        traces = [r["facts"] for r in ok if r.get("facts", {}).get("bytes") is not None]
        if traces:
            t = traces[-1]
            row["trace"] = {k: t.get(k) for k in ("bytes", "packets", "kernels", "api_calls",
                                                  "syncs", "nvtx_ranges", "drops", "end")}
            row["trace"]["counters"] = t.get("counters", {})
        row["problems"] = sorted({r["problem"][:400] for r in recs if "problem" in r})[:3]
        rows[mode] = row
    return {"unit": w.unit, "modes": rows}


def median_of(values):
    s = spread(values)
    return s["median"] if s else None


def fmt(v, spec, empty=""):
    return empty if v is None else format(v, spec)


def figure_cells(mode, r, prec):
    """The cells of one mode's row after its name."""
    if "median" not in r:
        why = r.get("skipped") or "; ".join(r["problems"]) or "no run"
        return ["–", "", "", "", "", "", runs_cell(r), f"{r['what']}: {why[:160]}"]
    rss = r.get("rss_added_mb")
    return [f"{r['median']:{prec}}",
            f"{r['min']:{prec}}–{r['max']:{prec}} ({r['spread']:.1%})",
            "" if mode == "plain" else fmt(r.get("added"), "+" + prec),
            fmt(r.get("x_plain"), ".3f"),
            "" if mode in ("plain", "floor_kernel") else fmt(r.get("x_floor_kernel"), ".3f"),
            "" if rss is None else f"{rss:+.0f} MB", runs_cell(r), r["what"]]


def runs_cell(r):
    return f"{r['runs_ok']}/{r['runs_failed']}/{r['runs_not_run']}"


def trace_cells(t):
    end = t.get("end")
    return [f"{t['bytes'] / 1e6:.2f}"] + [fmt(t.get(k), ".0f", "?") for k in (
        "packets", "kernels", "api_calls", "drops")] + ["?" if end is None else
                                                         "yes" if end else "NO"]


def target_line(name, summary):
    kind, limit, text = TARGETS[name]
    modes = summary["modes"]
    ws, floor = modes.get("warpscope", {}), modes.get("floor_kernel", {})
    got = ws.get("added") if kind == "added" else ws.get("x_plain")
    if got is None:
        return []
    spec = "+.2f" if kind == "added" else ".3f"
    line = (f"Target: {text}: {got:{spec}} ({'met' if got <= limit else 'NOT met'}; plain's "
            f"spread {fmt(modes.get('plain', {}).get('spread'), '.1%', '?')}")
    if ws.get("added") is not None and floor.get("added") is not None:
        line += (f"; warpscope adds {ws['added'] - floor['added']:+.3g} {summary['unit']} to "
                 f"the kernels-only floor's {floor['added']:+.3g}")
    return ["", line + ")."]


def table(name, summary, args):
    w = WORKLOADS[name]
    what = (f"{args.eager_steps} timed steps x 400 launches after {args.eager_warmup} warm-up"
            if name == "eager" else
            f"ResNet-18 training, batch 64, {args.resnet_steps} timed steps after "
            f"{args.resnet_warmup} warm-up")
    head = ["mode", f"{w.unit} (median)", "min–max (spread)", "added", "x plain",
            "x floor_kernel", "RSS added", "runs ok/failed/not run", "what"]
    lines = [f"### {name}: {what}; {args.runs} rounds, modes shuffled, cores {args.cores}", "",
             "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    prec = ".2f" if name == "eager" else ".3f"
    shown = [m for m in w.modes + w.extra_modes if m in summary["modes"]]
    for mode in shown:
        lines.append("| " + " | ".join([mode] + figure_cells(mode, summary["modes"][mode],
                                                                 prec)) + " |")
    lines += ["", "added: the median minus plain's median; x plain, x floor_kernel: the median "
              "over theirs; spread: (max - min) / median; RSS added: median peak RSS minus "
              "plain's; not run: skipped for time, or the tool is not there."]
    traced = [m for m in shown if summary["modes"][m].get("trace")]
    if traced:
        lines += ["", "| warpscope trace (last good run) | MB | packets | kernels | API calls | "
                  "drops | complete |", "|---" * 7 + "|"]
        lines += ["| " + " | ".join([m] + trace_cells(summary["modes"][m]["trace"])) + " |"
                  for m in traced]
    return "\n".join(lines + target_line(name, summary))


def main():
    global BUILD, START  # read by mode_env, trace_facts and the progress lines
    args = parse_args()
    BUILD, START = args.build, time.monotonic()
    os.makedirs(args.out, exist_ok=True)
    prefix = "dry_run_" if args.dry_run else ""
    if args.dry_run:
        launch = fake_launch(args)
    else:
        def launch(mode, cmd, env):
            if args.hash_seed:
                env = {**env, "PYTHONHASHSEED": args.hash_seed}
            if args.no_aslr:
                cmd = ["setarch", os.uname().machine, "-R"] + list(cmd)
            return run_child(cmd, env, args.timeout_s, args.cores)

        missing = [p for p in ("lib/libwarpscope.so", "lib/libwarpscope_core.so",
                               "lib/libws_cupti_floor.so") if not os.path.exists(f"{BUILD}/{p}")]
        if missing:
            sys.exit(f"recorder_cost: {BUILD} lacks {', '.join(missing)}: stage a build with "
                     "tests/gpu/gpu_suite.sh --stage BUILD_DIR and pass --build .gpu")
        if not os.path.exists(f"{BUILD}/bin/ws_trace_check"):
            print("recorder_cost: no bin/ws_trace_check: warpscope's traces go unchecked",
                  flush=True)
        args.cores = usable_cores(args.cores)
        if args.no_aslr and not shutil.which("setarch"):
            sys.exit("recorder_cost: --no-aslr needs setarch (util-linux), not found here")
    tmp = tempfile.mkdtemp(prefix="ws_recorder_cost")
    log = os.path.join(args.out, f"{prefix}recorder_cost_runs.jsonl")
    open(log, "w").close()
    wanted = [m for m in args.modes.split(",") if m]
    plan = {}
    for name in args.workloads.split(","):
        w = WORKLOADS[name]
        plan[name] = ([m for m in w.modes + w.extra_modes if m in wanted] if wanted
                      else list(w.modes))
    if not args.dry_run:
        # One untimed run first: the files come into the page cache, and a machine where the
        # workload cannot run at all says so now, not after every mode has failed.
        first = next(iter(plan))
        res = run_child(WORKLOADS[first].command(args) + ["--steps", "5"], {},
                        args.timeout_s, args.cores)
        if res["rc"] != 0:
            sys.exit(f"recorder_cost: the {first} workload does not run here "
                     f"(rc={res['rc']}):\n{res['stderr'][-2000:]}")
        machine = {k: (res["result"] or {}).get(k) for k in ("device", "torch")}
    else:
        machine = {"device": "none (dry run)", "torch": None}
    report = {"config": vars(args), "machine": machine, "workloads": {}}
    texts = []
    cost = {n: len(m) * args.runs * WORKLOADS[n].est_run_s for n, m in plan.items()}
    for name, modes in plan.items():
        left = START + args.budget_s - time.monotonic()
        share = cost[name] / sum(cost[n] for n in list(plan)[list(plan).index(name):])
        runner = Runner(name, args, tmp, log, launch)
        figures, _ = interleaved_runs(modes, args.runs, runner, seed=args.seed,
                                      deadline=time.monotonic() + left * share)
        report["workloads"][name] = summarize(name, modes, runner, figures)
        texts.append(table(name, report["workloads"][name], args))
    header = ("# DRY RUN: made-up figures, no GPU\n\n" if args.dry_run else "") + \
        "## Recording cost (bench/overhead/recorder_cost.py)\n\n" + \
        f"{machine['device']}, torch {machine['torch']}\n\n"
    md = header + "\n\n".join(texts) + "\n"
    with open(os.path.join(args.out, f"{prefix}recorder_cost.json"), "w") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(args.out, f"{prefix}recorder_cost.md"), "w") as f:
        f.write(md)
    print(f"\n{md}", flush=True)
    failed = any(r["runs_failed"] for w in report["workloads"].values()
                 for r in w["modes"].values())
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
