"""Checks that every kernel has its host side (issue 35), on the traces of
`gpu_recorder.sh attribution` or on any trace.

The reference for which range launched a kernel is independent of the launch records: the
programs keep the GPU idle when each `path:<name>` NVTX range opens and closes, so a kernel that
ran inside a range's span (its midpoint) was launched inside it. Per `path:` range and overall:

  kernels      kernels that ran inside the range (overall: all kernels of the trace)
  with_api     of those, kernels with an ApiCallEvent of their correlation id
  right_place  kernels whose launch call was made on the range's thread, inside the range (the
               push/pop range on the call's thread_id whose [start, end] holds the call's start)
  launched     kernels whose launch call lies in the range, wherever they ran (must equal
               kernels: a call in the range whose kernel ran elsewhere is misattributed)
  stack        kernels whose call has an ApiStackEvent (Python stacks by default; none with
               --stacks none; native stacks are sampled, 1 launch in 1024)
  apis         the launch calls' names

PASS only when every kernel of the trace has an API record, every kernel of every `path:` range
has its call on the right thread and in the right range, the programs' expected counts hold,
the stack expectation holds, and `warpscope summary -r nvtx` says no kernel lacks an API record.

usage: check_attribution.py FOLDER            (gpu_recorder.sh's folder: its manifest.jsonl)
       check_attribution.py TRACE.wst... [--expected LOG] [--stacks all|none|any]
                            [--cli PATH | --no-summary]
The CLI is --cli, else $WARPSCOPE_CLI, else build/bin/warpscope of this checkout.
Exit status 1 when a check fails.
"""
import argparse
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from recorder_trace import (RecorderTrace, TraceError, json_lines, manifest_traces,  # noqa: E402
                            readable, table)

ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
PREFIX = "path:"
# What `warpscope summary -r nvtx` says when GPU work cannot be put in a range
# (analyzers/analyses/summary_render.cc, TraceNotes).
MISSING_API_NOTE = re.compile(r"no API record|API records and this trace has none|"
                              r"counts? for no range|no NVTX range(, thread or call site)? counts")


class Row:
    def __init__(self, name):
        self.name = name
        self.threads = set()
        self.kernels = self.with_api = self.right = self.launched = self.stack = 0
        self.apis = Counter()
        self.instances = 0


def attribute(t):
    """Per path name a Row, and the overall Row and the Row of kernels outside every path."""
    paths = [r for r in t.ranges if r.name.startswith(PREFIX)]
    by_thread = defaultdict(list)
    for r in paths:
        by_thread[r.thread].append(r)
    rows = {}
    for r in paths:
        row = rows.setdefault(r.name, Row(r.name))
        row.instances += 1
        row.threads.add(t.thread_label(r.thread))
    overall, outside = Row("all kernels"), Row("(outside path ranges)")
    for k in t.kernels:
        mid = (k.start + k.end) // 2
        ran_in = min((r for r in paths if r.holds(mid)), key=lambda r: r.end - r.start,
                     default=None)
        call = t.launch_call(k)
        called_in = None
        if call is not None:
            called_in = min((r for r in by_thread.get(call.thread, ()) if r.holds(call.start)),
                            key=lambda r: r.end - r.start, default=None)
            if called_in is not None:
                rows[called_in.name].launched += 1
        stacked = k.correlation_id in t.stacked
        for row in (overall, rows[ran_in.name] if ran_in else outside):
            row.kernels += 1
            row.with_api += call is not None
            row.stack += stacked
            row.apis[call.name if call else "(none)"] += 1
            row.right += ran_in is not None and called_in is ran_in
    return rows, overall, outside


def summary_notes(cli, trace):
    """(problem lines of `warpscope summary -r nvtx`, error) for one trace."""
    if not (cli and os.access(cli, os.X_OK)):
        return [], (f"warpscope CLI not found at {cli!r}: build it (warpscope_cli), pass --cli "
                    "or set WARPSCOPE_CLI, or skip this check with --no-summary")
    r = subprocess.run([cli, "summary", "-r", "nvtx", trace], capture_output=True, text=True,
                       timeout=600)
    if r.returncode != 0:
        return [], f"warpscope summary exited {r.returncode}: {r.stderr.strip()[:300]}"
    text = r.stdout + r.stderr
    return [line.strip() for line in text.splitlines() if MISSING_API_NOTE.search(line)], None


def check_trace(trace, expected_log=None, stacks="any", cli=None, failures=None):
    """Prints the table and the checks of one trace; appends failed check names."""
    failures = [] if failures is None else failures

    def check(name, ok, detail=""):
        print(("PASS " if ok else "FAIL ") + name + (f": {detail}" if detail else ""))
        if not ok:
            failures.append(f"{os.path.basename(trace)}: {name}")

    t = RecorderTrace(trace)
    rows, overall, outside = attribute(t)
    expect, minimum, outside_expected, errors = {}, {}, None, {}
    for line in json_lines(expected_log, "expected_kernels"):
        expect.update(line.get("expected_kernels", {}))
        minimum.update(line.get("min_kernels", {}))
        errors.update(line.get("errors", {}))
        outside_expected = line.get("outside_paths", outside_expected)
    print(f"== {trace}: {len(t.kernels)} kernels, "
          f"{sum(len(c) for c in t.calls.values())} API calls, {len(t.stacked)} API stacks, "
          f"{sum(1 for r in t.ranges if r.name.startswith(PREFIX))} path ranges")

    def cells(row, want):
        is_path = bool(row.threads)
        pct = f"{100.0 * row.right / row.kernels:.1f}%" if row.kernels and is_path else "-"
        apis = ", ".join(f"{n} {c}" for n, c in row.apis.most_common())
        return [row.name, ",".join(sorted(row.threads)) or "-", want, row.kernels,
                row.with_api, row.right if is_path else "-", pct,
                row.launched if is_path else "-", row.stack, apis]

    body = []
    for name in sorted(rows, key=lambda n: n.lower()):
        want = expect.get(name, f">={minimum[name]}" if name in minimum else "-")
        body.append(cells(rows[name], want))
    body.append(cells(outside, "-" if outside_expected is None else outside_expected))
    body.append(cells(overall, "-"))
    print(table(["range", "thread", "expected", "kernels", "with_api", "right_place",
                 "right_%", "launched", "stack", "apis"], body))
    check("the trace is complete (it ends with EndOfTrace)", t.complete)
    if not rows:
        print("(no `path:` ranges: only the overall check applies)")
    check("every kernel has an API record of its correlation id",
          overall.kernels > 0 and overall.with_api == overall.kernels,
          f"{overall.with_api} of {overall.kernels}")
    for name, row in sorted(rows.items()):
        ok = row.kernels > 0 and row.right == row.kernels == row.with_api == row.launched
        check(f"{name}: every kernel launched on its thread, inside the range", ok,
              f"{row.kernels} ran in it, {row.with_api} with an API record, {row.right} called "
              f"on its thread inside it, {row.launched} called inside it")
        if name in expect:
            check(f"{name}: {expect[name]} kernels as the program launched",
                  row.kernels == expect[name], f"{row.kernels} in the trace")
        elif name in minimum:
            check(f"{name}: at least {minimum[name]} kernels", row.kernels >= minimum[name],
                  f"{row.kernels} in the trace")
    for name, error in sorted(errors.items()):
        check(f"{name}: the program ran it", False, error)
    if outside_expected is not None:
        check(f"{outside_expected} kernels outside the path ranges, as the program launched",
              outside.kernels == outside_expected, f"{outside.kernels} in the trace")
    for name in sorted(set(expect) | set(minimum)):
        if name not in rows:
            check(f"{name}: the range is in the trace", False, "missing")
    in_paths = sum(r.kernels for r in rows.values())
    stacked_in_paths = sum(r.stack for r in rows.values())
    if stacks == "all":
        check("every kernel of the path ranges has its launch stack",
              in_paths > 0 and stacked_in_paths == in_paths, f"{stacked_in_paths} of {in_paths}")
    elif stacks == "none":
        check("no launch stacks (--stacks none)", not t.stacked,
              f"{len(t.stacked)} ApiStackEvents")
    if cli is not None:
        notes, error = summary_notes(cli, trace)
        check("warpscope summary -r nvtx counts every kernel", error is None and not notes,
              error or ("; ".join(notes)[:400] if notes else "no note about missing API records"))
    for ns, source, message in t.notices:
        print(f"notice at {ns / 1e6:.3f} ms [{source}]: {message}")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("inputs", nargs="+", help="gpu_recorder.sh's folder, or traces")
    ap.add_argument("--expected", help="program log with an expected_kernels JSON line")
    ap.add_argument("--stacks", choices=["all", "none", "any"], default="any")
    ap.add_argument("--cli", default=os.environ.get("WARPSCOPE_CLI",
                                                    os.path.join(ROOT, "build", "bin",
                                                                 "warpscope")))
    ap.add_argument("--no-summary", action="store_true")
    a = ap.parse_args()
    cli = None if a.no_summary else a.cli
    failures = []
    for item in a.inputs:
        if os.path.isdir(item):
            for row, trace, path in manifest_traces(item, failures):
                readable(check_trace, trace, failures, path("log"), row.get("stacks", "any"), cli,
                         failures)
        else:
            readable(check_trace, item, failures, a.expected, a.stacks, cli, failures)
    print(f"attribution: {len(failures)} failed check(s)")
    for f in failures:
        print(f"  {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
