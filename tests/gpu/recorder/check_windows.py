"""Checks that capture windows record from the moment their begin edge says (issue 35), on the
traces of `gpu_recorder.sh windows` or on any trace.

For each window, in ms: the begin and end edges (time since the trace's time base, triggers),
the time from when the window was asked for to its begin edge (asked: `warpscope start`, the
signal, cudaProfilerStart, the NVTX push, launch + --delay; from the request lines the driver
and the programs write), the gap from the begin edge to the first kernel launched and to the
first API call of any kind, from the last launch to the end edge, the launches recorded in the
100 ms before the begin edge (recording that began before its edge), and the kernels launched in
each tenth of the window (a kernel's launch time is its ApiCallEvent's start, else its own
start). Notices are printed with their time from the nearest begin edge.

PASS: every window has both edges, with the expected triggers and count (manifest or flags),
and for a steady loop (--steady; every manifest row of gpu_recorder.sh) at least one kernel in
every tenth, with the program already stepping when the window opened (else the window's
start says nothing about the recorder: reported as a failure of the setup).

usage: check_windows.py FOLDER                (gpu_recorder.sh's folder: its manifest.jsonl)
       check_windows.py TRACE.wst... [--steady] [--windows N] [--begin TRIGGER]
                        [--end TRIGGER] [--log LOG] [--requests FILE]
Exit status 1 when a check fails.
"""
import argparse
import bisect
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from recorder_trace import (RecorderTrace, TraceError, json_lines, manifest_traces,  # noqa: E402
                            readable, table)

MS = 1e6


def ms(ns):
    return None if ns is None else round(ns / MS, 3)


def requests(*paths):
    """Open and close requests, each in time order (lines {"request": "open"|"close", ...})."""
    lines = []
    for p in paths:
        lines += json_lines(p, "request")
    opens = sorted((r for r in lines if r.get("request") == "open"),
                   key=lambda r: r.get("unix_ns", 0))
    closes = sorted((r for r in lines if r.get("request") == "close"),
                    key=lambda r: r.get("unix_ns", r.get("after_begin_ns", 0)))
    return opens, closes


class Expect:
    def __init__(self, windows=None, begin=None, end=None, steady=False, log=None,
                 requests_file=None):
        self.windows, self.begin, self.end, self.steady = windows, begin, end, steady
        self.log, self.requests_file = log, requests_file


def window_figures(launches, call_starts, edges):
    """The figures of one window: edges (b, e) in trace ns."""
    b, e = edges
    f = {"length": e - b, "tenths": [0] * 10}
    lo, hi = bisect.bisect_left(launches, b), bisect.bisect_right(launches, e)
    length = max(e - b, 1)
    for lt in launches[lo:hi]:
        f["tenths"][min(9, (lt - b) * 10 // length)] += 1
    f["kernels"] = hi - lo
    f["first_launch_gap"] = launches[lo] - b if lo < hi else None
    f["last_launch_gap"] = e - launches[hi - 1] if lo < hi else None
    c = bisect.bisect_left(call_starts, b)
    f["first_call_gap"] = call_starts[c] - b if c < len(call_starts) and call_starts[c] <= e else None
    f["pre_100ms"] = lo - bisect.bisect_left(launches, b - 100 * 1_000_000)
    tenths = sorted(f["tenths"])
    median = (tenths[4] + tenths[5]) / 2
    f["first_vs_median"] = round(f["tenths"][0] / median, 2) if median else None
    return f


def check_trace(trace, x, failures):
    def check(name, ok, detail=""):
        print(("PASS " if ok else "FAIL ") + name + (f": {detail}" if detail else ""))
        if not ok:
            failures.append(f"{os.path.basename(trace)}: {name}")

    t = RecorderTrace(trace)
    launches = sorted(t.launch_time(k) for k in t.kernels)
    call_starts = sorted(c.start for calls in t.calls.values() for c in calls)
    opens, closes = requests(x.log, x.requests_file)
    ready = json_lines(x.log, "ready")
    first_step_unix = ready[0].get("first_step_unix_ns") if ready else None
    print(f"== {trace}: {len(t.kernels)} kernels, {len(call_starts)} API calls, "
          f"{len(t.windows)} window(s)")
    check("the trace is complete (it ends with EndOfTrace)", t.complete)
    if x.windows is not None:
        check(f"{x.windows} window(s)", len(t.windows) == x.windows, f"{len(t.windows)}")
    rows, begins = [], []
    inside = 0
    for i, wid in enumerate(sorted(t.windows)):
        w = t.windows[wid]
        if "begin" not in w or "end" not in w:
            check(f"window {wid} has both edges", False, f"has {sorted(w)}")
            continue
        (b, btrig), (e, etrig) = w["begin"], w["end"]
        begins.append(b)
        f = window_figures(launches, call_starts, (b, e))
        inside += f["kernels"]
        asked = opens[i] if i < len(opens) else None
        asked_gap = t.to_unix(b) - asked["unix_ns"] if asked and "unix_ns" in asked else None
        done_gap = (t.to_unix(b) - asked["done_unix_ns"]
                    if asked and "done_unix_ns" in asked else None)
        close = closes[i] if i < len(closes) else None
        close_gap = None
        if close and "unix_ns" in close:
            close_gap = t.to_unix(e) - close["unix_ns"]
        elif close and "after_begin_ns" in close:
            close_gap = e - b - close["after_begin_ns"]
        rows.append([wid, f"{btrig}->{etrig}", ms(b), ms(f["length"]),
                     asked["how"] if asked else "-", ms(asked_gap), ms(done_gap), ms(close_gap),
                     ms(f["first_launch_gap"]), ms(f["first_call_gap"]),
                     ms(f["last_launch_gap"]), f["pre_100ms"], f["kernels"],
                     min(f["tenths"]), f["first_vs_median"]])
        print(f"window {wid} kernels per tenth: {' '.join(map(str, f['tenths']))}")
        if x.begin:
            check(f"window {wid} opened by {x.begin}", btrig == x.begin, btrig)
        if x.end:
            check(f"window {wid} closed by {x.end}", etrig == x.end, etrig)
        if x.steady and first_step_unix is not None:
            stepping = first_step_unix <= t.to_unix(b)
            check(f"window {wid}: the program was stepping when it opened", stepping,
                  f"first step {ms(t.to_unix(b) - first_step_unix)} ms before the begin edge"
                  if stepping else f"its first step came {ms(first_step_unix - t.to_unix(b))} "
                  "ms after the begin edge: a setup problem (raise the delay), not the recorder's")
        if x.steady:
            check(f"window {wid}: kernels in every tenth", min(f["tenths"]) >= 1,
                  f"fewest {min(f['tenths'])}; first launch {ms(f['first_launch_gap'])} ms "
                  "after the begin edge")
    if rows:
        print(table(["win", "triggers", "begin_ms", "length_ms", "asked_by", "asked->begin",
                     "returned->begin", "asked->end", "first_launch", "first_api",
                     "last_launch->end", "pre_100ms", "kernels", "min_tenth",
                     "tenth1/median"], rows))
    print(f"kernels launched outside every window: {len(launches) - inside}")
    for ns, source, message in t.notices:
        near = min(begins, key=lambda b: abs(ns - b), default=None)
        where = f"{ms(ns - near):+.3f} ms from a begin edge" if near is not None else \
            f"at {ms(ns)} ms"
        print(f"notice {where} [{source}]: {message}")
    if not t.notices:
        print("no notices")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("inputs", nargs="+", help="gpu_recorder.sh's folder, or traces")
    ap.add_argument("--steady", action="store_true", help="the program launched at a steady rate")
    ap.add_argument("--windows", type=int)
    ap.add_argument("--begin", help="expected begin trigger (control, signal, delay, ...)")
    ap.add_argument("--end", help="expected end trigger")
    ap.add_argument("--log", help="the program's output (ready and request lines)")
    ap.add_argument("--requests", help="the driver's request lines")
    a = ap.parse_args()
    failures = []
    for item in a.inputs:
        if os.path.isdir(item):
            for row, trace, path in manifest_traces(item, failures):
                readable(check_trace, trace, failures,
                         Expect(row.get("windows"), row.get("begin"), row.get("end"),
                                row.get("steady", False), path("log"), path("requests")),
                         failures)
        else:
            readable(check_trace, item, failures,
                     Expect(a.windows, a.begin, a.end, a.steady, a.log, a.requests), failures)
    print(f"windows: {len(failures)} failed check(s)")
    for f in failures:
        print(f"  {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
