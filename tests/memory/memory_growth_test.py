#!/usr/bin/env python3
"""Peak memory of the commands that stream does not grow with a trace's events.

Writes two synthetic traces with warpscope_bench_trace, one with 8 times the events of the
other, runs `warpscope info` on each, and checks that the larger trace's peak RSS (the child's
ru_maxrss, from wait4) stays within 1.3 x the smaller's + 20 MiB.

Then the rule of the analyses (issue 38): on traces of 1 M and 3 M events, the larger's peak
RSS within 1.2 x the smaller's, but for what they are documented to hold per NVTX range (one
range a step, a step being 103 events here): `summary` keeps the ranges to project them onto
the GPU, RANGE_BYTES each (docs/validation.md, "Trace size"); `advise` keeps them to find the
steps and reads at most --max-events events (ADVISE_MAX_EVENTS here, under both traces, so that
both read a part of the same size: its note says so); `diff` (the trace against itself) keeps
the ranges of both sides, so twice theirs; `timeline` keeps them to find the steps it draws.
The Chrome, Perfetto and Kineto exports (launches joined to their GPU work through temporary
files, launch_join.h; Perfetto's events sorted through them too) hold nothing per API call or
GPU work; the Kineto export keeps the NVTX ranges (for the steps), RANGE_BYTES each. The commands that read kernels and samples (`tail`, `occupancy`,
`stalls`) are held, on traces with PM and PC samples (SAMPLED_ROWS, the same 500 kernel names),
to 1.2x plus KERNEL_BYTES a kernel more: none of them holds anything per launch or sample (0).
The Parquet export (events and samples read and written a chunk at a time) is held to the same
bound, on those traces and on traces with PM and PC samples, where
the package beside the CLI has the warpscope_native extension and pyarrow.
`job` (each rank's trace streamed in two passes) is held, on jobs of JOB_RANKS ranks of 1 M and
3 M events a rank, to 1.2x plus JOB_STEP_BYTES per step of a rank more (what its digest keeps)
and, for the straggler's own advise (within --max-events ADVISE_MAX_EVENTS), which keeps its
NVTX ranges as `advise` does, JOB_STEP_RANGES ranges of RANGE_BYTES per step of one rank; read
one rank at a time (-j 1), the text form's tables only (`--table ranks`).
`precision` reads the kernels again one at a time and sums them per name: held to 1.2x. The
Perfetto export of ten steps (`--step 100-109`) keeps the NVTX ranges to find them: 1.2x plus
RANGE_BYTES a range. `memory`, on traces of 1 M and 3 M events with a device block allocated and
freed per step (`--alloc`), holds every memory event and NVTX range: 1.2x plus
MEMORY_STEP_BYTES per step more; the same on the sampled traces (which have --alloc too), where
it holds nothing per PM or PC sample. `sol` is not checked: the generator writes no speed-of-light
metrics.
Exit 77 (skipped) when warpscope_bench_trace was not built.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

SMALL_ROWS = 100_000
FACTOR = 8
RULE_ROWS = (1_000_000, 3_000_000)
RULE_FACTOR = 1.2
SAMPLED_ROWS = (100_000, 300_000)
RANGE_BYTES = 240  # NvtxRange, its path, its group's entry and its place in the thread index
ADVISE_MAX_EVENTS = 500_000
# What `tail`, `occupancy` and `stalls` are documented to hold per kernel launch, its PM
# samples (2.5 a kernel in these traces) and its share of PC samples included
# (docs/validation.md, "Trace size"). `occupancy` and `tail` sort launches and PM samples
# through temporary files and `stalls` reads kernels and PC records again one at a time: what
# they hold grows with distinct names, launch configurations, PCs and rows, the same in both
# traces.
KERNEL_BYTES = {"tail": 0, "occupancy": 0, "stalls": 0}
# What `memory` keeps per step of the traces with --alloc (docs/validation.md, "Trace size"): it
# holds every memory event and NVTX range, here 2 and 1 a step (about 650 bytes measured).
MEMORY_STEP_BYTES = 700
JOB_RANKS = 2
JOB_ROWS_PER_RANK = (1_000_000, 3_000_000)
# What `job` keeps per step of a rank (docs/validation.md, "Trace size"): the step, its times and
# its 2 collectives (112 bytes each) with the stretch before each, and the job's 2 matched
# collectives a step (96 bytes each, over the ranks). Before: 2600, with the tables of a row per
# step and rank made for every format.
JOB_STEP_BYTES = 500
# The straggler's NVTX ranges a step (data_load, forward, backward, optimizer and the step),
# which its own advise keeps (RANGE_BYTES each).
JOB_STEP_RANGES = 5


def peak_rss(argv):
    """Peak RSS in bytes of argv run to the end; its stdout."""
    with open(os.devnull, "wb") as devnull, tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=devnull)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            sys.exit(f"memory_growth_test: {' '.join(argv)} exited {proc.returncode}")
        out.seek(0)
        return usage.ru_maxrss * 1024, out.read()


def parquet_reads_in_chunks(cli):
    """Whether the package beside the CLI (build/python, where the Parquet export runs) has
    the extension that reads a trace in chunks, and pyarrow."""
    package = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(cli))), "python")
    env = dict(os.environ, PYTHONPATH=package)
    probe = subprocess.run(["python3", "-c", "import pyarrow, warpscope_native"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return probe.returncode == 0


def check_sampled_parquet(cli, bench_trace, work):
    """The Parquet export of traces with PM samples every 10 us and a PC sample batch per
    step (SAMPLED_ROWS, 3 times more in the larger) held to 1.2x; the failure's name."""
    rss = []
    for path in sampled_traces(bench_trace, work):
        rss.append(peak_rss([cli, "export", path, "--format", "parquet", "-o",
                             os.path.join(work, "sampled_parquet")])[0])
    bound = RULE_FACTOR * rss[0]
    verdict = "ok" if rss[1] <= bound else "GREW"
    print(f"export --format parquet, sampled: {SAMPLED_ROWS[0]} rows {rss[0] / 2**20:.1f} MiB, "
          f"{SAMPLED_ROWS[1]} rows {rss[1] / 2**20:.1f} MiB (bound {bound / 2**20:.1f} MiB) "
          f"{verdict}")
    return [] if rss[1] <= bound else ["export --format parquet (sampled)"]


def sampled_traces(bench_trace, work):
    """The traces with PM and PC samples (SAMPLED_ROWS), written once: (path, kernels)."""
    traces = []
    for rows in SAMPLED_ROWS:
        path = os.path.join(work, f"sampled_{rows}.wst")
        if not os.path.exists(path):
            subprocess.run([bench_trace, path, str(rows), "--pm-ns", "10000", "--pc", "--alloc"],
                           check=True)
        traces.append(path)
    return traces


def check_kernel_commands(cli, bench_trace, work):
    """`tail`, `occupancy` and `stalls` on the sampled traces: the larger's peak RSS within
    1.2x the smaller's plus KERNEL_BYTES a kernel more; the names of those that grew."""
    traces = sampled_traces(bench_trace, work)
    kernels, steps = [], []
    for path in traces:
        counts = {row["kind"]: row["count"] for row in json.loads(
            peak_rss([cli, "info", "--format", "json", path])[1])["events"]}
        kernels.append(counts["kernel"])
        steps.append(counts["nvtx_range"])
    failures = []
    # `memory` on the same traces: what it holds per step, and nothing per PM or PC sample.
    rss = [peak_rss([cli, "memory", t, "--format", "csv"])[0] for t in traces]
    bound = RULE_FACTOR * rss[0] + MEMORY_STEP_BYTES * (steps[1] - steps[0])
    verdict = "ok" if rss[1] <= bound else "GREW"
    print(f"memory, sampled: {steps[0]} steps {rss[0] / 2**20:.1f} MiB, {steps[1]} steps "
          f"{rss[1] / 2**20:.1f} MiB (bound {bound / 2**20:.1f} MiB) {verdict}")
    if rss[1] > bound:
        failures.append("memory (sampled)")
    for name, per_kernel in KERNEL_BYTES.items():
        rss = [peak_rss([cli, name, t, "--format", "csv"])[0] for t in traces]
        bound = RULE_FACTOR * rss[0] + per_kernel * (kernels[1] - kernels[0])
        verdict = "ok" if rss[1] <= bound else "GREW"
        print(f"{name}: {kernels[0]} kernels {rss[0] / 2**20:.1f} MiB, {kernels[1]} kernels "
              f"{rss[1] / 2**20:.1f} MiB (bound {bound / 2**20:.1f} MiB) {verdict}")
        if rss[1] > bound:
            failures.append(name)
    return failures


def check_memory(cli, bench_trace, work):
    """`memory` on traces of RULE_ROWS events with a device block allocated and freed per step:
    the larger's peak RSS within 1.2x the smaller's plus MEMORY_STEP_BYTES per step more; the
    failure's name."""
    runs = []
    for rows in RULE_ROWS:
        path = os.path.join(work, f"alloc_{rows}.wst")
        subprocess.run([bench_trace, path, str(rows), "--alloc"], check=True)
        counts = {row["kind"]: row["count"] for row in json.loads(
            peak_rss([cli, "info", "--format", "json", path])[1])["events"]}
        if counts.get("memory", 0) != 2 * counts["nvtx_range"]:
            sys.exit(f"memory_growth_test: {path} has {counts.get('memory', 0)} memory events "
                     f"for {counts['nvtx_range']} steps, not 2 a step")
        runs.append((peak_rss([cli, "memory", path, "--format", "csv"])[0],
                     counts["nvtx_range"]))
        os.remove(path)
    (small, small_steps), (large, large_steps) = runs
    bound = RULE_FACTOR * small + MEMORY_STEP_BYTES * (large_steps - small_steps)
    verdict = "ok" if large <= bound else "GREW"
    print(f"memory: {small_steps} steps {small / 2**20:.1f} MiB, {large_steps} steps "
          f"{large / 2**20:.1f} MiB (bound {bound / 2**20:.1f} MiB) {verdict}")
    return [] if large <= bound else ["memory"]


def check_job(cli, bench_trace, work):
    """`job` on JOB_RANKS ranks of 1 M and 3 M events a rank: the larger's peak RSS within 1.2x
    the smaller's plus JOB_STEP_BYTES per step of a rank more and the straggler's NVTX ranges
    (at most the steps of the rank with the most); the failure's name."""
    runs = []
    for rows in JOB_ROWS_PER_RANK:
        folder = os.path.join(work, f"job_{rows}")
        subprocess.run([bench_trace, folder, str(rows * JOB_RANKS), "--ranks", str(JOB_RANKS)],
                       check=True, stdout=subprocess.DEVNULL)
        rss, out = peak_rss([cli, "job", folder, "--format", "json", "--table", "ranks", "-j",
                             "1", "--max-events", str(ADVISE_MAX_EVENTS)])
        steps = [row["steps"] for row in json.loads(out)]
        runs.append((rss, sum(steps), max(steps)))
        shutil.rmtree(folder)
    (small, small_steps, small_most), (large, large_steps, large_most) = runs
    bound = (RULE_FACTOR * small + JOB_STEP_BYTES * (large_steps - small_steps) +
             JOB_STEP_RANGES * RANGE_BYTES * (large_most - small_most))
    verdict = "ok" if large <= bound else "GREW"
    print(f"job: {JOB_RANKS} ranks of {JOB_ROWS_PER_RANK[0]} events {small / 2**20:.1f} MiB, of "
          f"{JOB_ROWS_PER_RANK[1]} events {large / 2**20:.1f} MiB (bound {bound / 2**20:.1f} "
          f"MiB) {verdict}")
    return [] if large <= bound else ["job"]


def check_rule(cli, bench_trace, work):
    """The analyses held to 1.2x from 1 M to 3 M events; the names of those that grew."""
    traces = []
    for rows in RULE_ROWS:
        path = os.path.join(work, f"rule_{rows}.wst")
        subprocess.run([bench_trace, path, str(rows)], check=True)
        _, info = peak_rss([cli, "info", "--format", "json", path])
        counts = {row["kind"]: row["count"] for row in json.loads(info)["events"]}
        traces.append((path, sum(counts.values()), counts["nvtx_range"]))
    (small, small_events, small_ranges), (large, large_events, large_ranges) = traces
    failures = []
    # The command, a note its output must have, the traces whose ranges it keeps.
    commands = {
        "summary": (["summary", "{t}", "--format", "csv"], None, 1),
        "advise": (["advise", "{t}", "--format", "json", "--max-events", str(ADVISE_MAX_EVENTS)],
                   f"more than --max-events {ADVISE_MAX_EVENTS}", 1),
        "diff": (["diff", "{t}", "{t}", "--format", "csv"], None, 2),
        "export --format chrome": (
            ["export", "{t}", "--all", "--format", "chrome", "-o", os.path.join(work, "out.json")],
            None, 0),
        "export --format perfetto": (
            ["export", "{t}", "--all", "--format", "perfetto", "-o",
             os.path.join(work, "out.pftrace")],
            None, 0),
        "export --format kineto": (
            ["export", "{t}", "--all", "--format", "kineto", "-o",
             os.path.join(work, "kineto.json")],
            None, 1),
        # The ranges, to find the steps, then the three steps it draws.
        "timeline": (["timeline", "{t}", "--svg", os.path.join(work, "timeline.svg")], None, 1),
        # Kernels read again one at a time, summed per name.
        "precision": (["precision", "{t}", "--format", "csv"], None, 0),
        # Ten steps: the ranges, to find them, then the slice's events alone.
        "export --step 100-109 --format perfetto": (
            ["export", "{t}", "--step", "100-109", "--format", "perfetto", "-o",
             os.path.join(work, "steps.pftrace")],
            None, 1),
    }
    if parquet_reads_in_chunks(cli):
        commands["export --format parquet"] = (
            ["export", "{t}", "--format", "parquet", "-o", os.path.join(work, "parquet")],
            None, 1)
    else:
        print("export --format parquet: no warpscope_native extension or pyarrow beside the "
              "CLI; not checked")
    if "export --format parquet" in commands:
        failures += check_sampled_parquet(cli, bench_trace, work)
    for name, (command, note, sides) in commands.items():
        runs = [peak_rss([cli] + [a.format(t=t) for a in command]) for t in (small, large)]
        rss = [r[0] for r in runs]
        if note is not None and not all(note in r[1].decode() for r in runs):
            print(f"{name}: no note \"{note}\" in its output")
            failures.append(name)
        bound = RULE_FACTOR * rss[0] + sides * RANGE_BYTES * (large_ranges - small_ranges)
        verdict = "ok" if rss[1] <= bound else "GREW"
        print(f"{name}: {small_events} events {rss[0] / 2**20:.1f} MiB, {large_events} events "
              f"{rss[1] / 2**20:.1f} MiB (bound {bound / 2**20:.1f} MiB) {verdict}")
        if rss[1] > bound:
            failures.append(name)
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True,
                        help="folder with warpscope and warpscope_bench_trace")
    args = parser.parse_args()
    cli = os.path.join(args.bin, "warpscope")
    bench_trace = os.path.join(args.bin, "warpscope_bench_trace")
    if not os.access(bench_trace, os.X_OK):
        print(f"memory_growth_test: {bench_trace} not built; skipped")
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as work:
        traces = []
        for rows in (SMALL_ROWS, SMALL_ROWS * FACTOR):
            path = os.path.join(work, f"trace_{rows}.wst")
            subprocess.run([bench_trace, path, str(rows)], check=True)
            _, info = peak_rss([cli, "info", "--format", "json", path])
            counts = {e["kind"]: e["count"] for e in json.loads(info)["events"]}
            traces.append((path, sum(counts.values())))
        (small, small_events), (large, large_events) = traces
        commands = {"info": ["info", "{t}"]}
        for name, command in commands.items():
            rss = [peak_rss([cli] + [a.format(t=t) for a in command])[0] for t in (small, large)]
            bound = 1.3 * rss[0] + 20 * 2**20
            verdict = "ok" if rss[1] <= bound else "GREW"
            print(f"{name}: {small_events} events {rss[0] / 2**20:.1f} MiB, {large_events} events "
                  f"{rss[1] / 2**20:.1f} MiB (bound {bound / 2**20:.1f} MiB) {verdict}")
            if rss[1] > bound:
                failures.append(name)
        failures += check_rule(cli, bench_trace, work)
        failures += check_kernel_commands(cli, bench_trace, work)
        failures += check_memory(cli, bench_trace, work)
        failures += check_job(cli, bench_trace, work)
    if failures:
        print("memory_growth_test: peak memory grew with events: " + ", ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
