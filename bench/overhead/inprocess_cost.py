"""What recording adds to a launch, each process measuring itself off and on (issue 35).

Processes of the same program on the H200 machine differ by up to 50% from each other (plain
runs too), more than the costs to be told apart; within one process the loop's pace holds to
a few percent. So each process here runs the PyTorch eager loop of
bench/overhead/eager_launches.py (400 tiny elementwise launches a step) in --pairs phases,
recording switched off and on between them with cudaProfilerStop/Start, and the figure of a
mode is the median over its processes of each process's median paired difference (on - off),
in µs per launch. What a recorder costs while switched off (armed) is the one figure left to
compare across processes: `off_median_us` against plain's.

Modes (MODES below): plain (the pairs measure the loop's drift: its figure is the resolution);
the CUPTI floor (bench/overhead/cupti_floor.cc, WS_FLOOR_TOGGLE=1) with kernel records only,
with timestamp-only launch callbacks, with such callbacks on every runtime call, with the
kinds of warpscope's defaults (kernel, memory, NVTX, sync, internal launch records; launch
and runtime calls from callbacks) and with the runtime API as CUPTI's activity records;
warpscope's defaults and `--stacks none` (`-c cudaProfilerApi --capture-range-end repeat`).

usage: inprocess_cost.py --build DIR --out DIR [--runs 3] [--pairs 10] [--modes M1,M2]
         [--phase-steps 50] [--cores 2-5] [--budget-s 400]
Writes inprocess_cost.json, inprocess_cost.md and inprocess_cost_runs.jsonl (a line per
process as it ends); prints the table last. Exit status 1 when a run failed.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

from modes import add_build_args, floor_env, interleaved_runs, recording_env, run_child, spread

HERE = os.path.dirname(os.path.abspath(__file__))

FLOOR_DEFAULTS = "kernel,launch,calls,memory,nvtx,sync,internal"
MODES = {
    "plain": ("nothing injected: the loop's own drift between phases", None),
    "floor_kernel": ("CUPTI floor: kernel activity only", {"floor": "kernel"}),
    "floor_kernel_launch": ("CUPTI floor: kernel activity + timestamp-only launch callbacks",
                            {"floor": "kernel,launch"}),
    "floor_kernel_calls": ("CUPTI floor: kernel activity + timestamp-only callbacks on every "
                           "launch and runtime call", {"floor": "kernel,launch,calls"}),
    "floor_defaults": ("CUPTI floor: the kinds of warpscope's defaults, launch and runtime "
                       "calls from callbacks", {"floor": FLOOR_DEFAULTS}),
    "floor_runtime_activity": ("CUPTI floor: kernel + runtime + memory + sync + NVTX activity "
                               "(the runtime API as CUPTI's activity records)",
                               {"floor": "kernel,runtime,memory,nvtx,sync"}),
    "warpscope": ("warpscope defaults", {"warpscope": {}}),
    "warpscope_nostacks": ("warpscope --stacks none", {"warpscope": {"stacks": "none"}}),
    # Parts of the defaults, to find what costs what (run with --modes).
    "warpscope_kernel": ("warpscope -t kernel --stacks none: no API callback at all",
                         {"warpscope": {"trace": "kernel", "stacks": "none"}}),
    "warpscope_calls": ("warpscope -t kernel,launch,runtime --stacks none: the calls from "
                        "callbacks, no memory, sync or NVTX records",
                        {"warpscope": {"trace": "kernel,launch,runtime", "stacks": "none"}}),
}


def signed(v):
    return "" if v is None else f"{v:+.2f}"


def plain_number(v):
    return "" if v is None else f"{v:.2f}"


def write_report(a, modes, results, figures, failures):
    """inprocess_cost.json and .md in a.out, the table printed."""
    plain_off = [r["off_median_us"] for r in results.get("plain", [])]
    rows = []
    for m in modes:
        s = spread(figures.get(m, []))
        offs = [r["off_median_us"] for r in results[m]]
        within = [statistics.pstdev(r["added_us"]) for r in results[m] if len(r["added_us"]) > 1]
        rows.append({
            "mode": m, "what": MODES[m][0], "added": s,
            "off_median_us": statistics.median(offs) if offs else None,
            "off_minus_plain_us": (statistics.median(offs) - statistics.median(plain_off))
            if offs and plain_off else None,
            "pair_sd_us": statistics.median(within) if within else None})
    report = {"device": next((r["device"] for v in results.values() for r in v), None),
              "pairs": a.pairs, "phase_steps": a.phase_steps, "runs": a.runs, "cores": a.cores,
              "modes": rows, "failures": failures}
    with open(os.path.join(a.out, "inprocess_cost.json"), "w") as f:
        json.dump(report, f, indent=1)
    lines = ["## Recording cost, in-process pairs (bench/overhead/inprocess_cost.py)", "",
             f"{report['device']}; eager loop, {a.pairs} off/on pairs of {a.phase_steps} "
             f"steps x 400 launches per process, {a.runs} processes per mode, cores {a.cores}",
             "", "| mode | added µs/launch (median of processes) | processes min–max | "
             "pair SD | off µs/launch | off − plain | what |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r["added"]
        lines.append("| " + " | ".join([
            r["mode"], signed(s and s["median"]),
            f"{signed(s['min'])} – {signed(s['max'])}" if s else "",
            plain_number(r["pair_sd_us"]), plain_number(r["off_median_us"]),
            signed(r["off_minus_plain_us"]), r["what"]]) + " |")
    lines += ["", "added: on − off within a process (the median of its pairs), the median over "
              "processes; pair SD: the SD of one process's paired differences (median over "
              "processes); off − plain: what an armed recorder costs, across processes."]
    if failures:
        lines += ["", "Failed runs:"] + [f"- {x}" for x in failures]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "inprocess_cost.md"), "w") as f:
        f.write(text)
    print(text)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_build_args(p, runs=3)
    p.add_argument("--pairs", type=int, default=10)
    p.add_argument("--phase-steps", type=int, default=50)
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--cores", default="2-5")
    p.add_argument("--budget-s", type=float, default=400)
    a = p.parse_args()
    modes = a.modes.split(",")
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        p.error(f"unknown modes {unknown}; known: {', '.join(MODES)}")
    os.makedirs(a.out, exist_ok=True)
    log = os.path.join(a.out, "inprocess_cost_runs.jsonl")
    open(log, "w").close()
    tmp = tempfile.mkdtemp(prefix="ws_inprocess")
    results, failures = {m: [] for m in modes}, []

    def run(mode, i):
        spec = MODES[mode][1] or {}
        env = {}
        if "floor" in spec:
            env = floor_env(a.build, kinds=spec["floor"], quiet=False)
            env["WS_FLOOR_TOGGLE"] = "1"
        elif "warpscope" in spec:
            out = os.path.join(tmp, f"{mode}_{i}_w%w.wst")
            env = recording_env(a.build, out, capture_range="cudaProfilerApi",
                                capture_range_end="repeat", **spec["warpscope"])
        cmd = [sys.executable, os.path.join(HERE, "eager_launches.py"), "--pairs",
               str(a.pairs), "--phase-steps", str(a.phase_steps), "--seed", str(i)]
        r = run_child(cmd, env, timeout=180, cores=a.cores)
        res = r["result"]
        ok = r["rc"] == 0 and res is not None and res.get("mode") == "pairs"
        problem = None if ok else f"rc {r['rc']}: {r['stderr'][-400:]}"
        if ok and "floor" in spec and "timed callbacks" not in r["stderr"]:
            problem = "the floor wrote no count line"
        with open(log, "a") as f:
            f.write(json.dumps({"mode": mode, "run": i, "rc": r["rc"], "wall_s": r["wall_s"],
                                "result": res, "problem": problem}) + "\n")
        if problem:
            failures.append(f"{mode} run {i}: {problem}")
            return None
        results[mode].append(res)
        return res["added_median_us"]

    deadline = time.monotonic() + a.budget_s
    figures, _ = interleaved_runs(modes, a.runs, run, seed=35, deadline=deadline)
    write_report(a, modes, results, figures, failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
