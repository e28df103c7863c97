"""Checks the stacks of a sync_sites.py trace against its marked lines.

For every blocking CUDA call (syncs, and copies whose API call took time), made inside an
NVTX range `site:NAME`, the call must carry a stack (ApiStackEvent), and the innermost frame in
sync_sites.py must be the line marked `# site: NAME`. Figures: calls with a stack / blocking
calls (target 100%), and host time blocked put on the right line / all time blocked in the
sites (target >= 95%). Prints one JSON object and `PASS` or `FAIL` lines; exit 1 on a failure.

usage: check_stacks.py TRACE [--program sync_sites.py]
"""
import argparse
import json
import os
import re
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from stack_trace import StackTrace  # noqa: E402

BLOCKING = re.compile(r"^(cudaStreamSynchronize|cudaDeviceSynchronize|cudaEventSynchronize|"
                      r"cudaMemcpy|cuStreamSynchronize|cuCtxSynchronize|cuEventSynchronize|"
                      r"cuMemcpy)")


def marked_lines(program):
    lines = {}
    with open(program) as f:
        for n, text in enumerate(f, 1):
            m = re.search(r"# site: ([a-z_]+)$", text.rstrip())
            if m:
                lines[m.group(1)] = n
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--program", default=os.path.join(HERE, "sync_sites.py"))
    a = ap.parse_args()
    expected = marked_lines(a.program)
    program = os.path.basename(a.program)

    t = StackTrace(a.trace)

    def site_of(thread, start):
        for s, e, name in t.ranges.get(thread, ()):
            if s <= start < e and name.startswith("site:"):
                return name[5:]
        return None

    def program_line(correlation_id):
        for f in t.frames_of(correlation_id):
            if os.path.basename(t.string(f.file_id)) == program:
                return f.line
        return None

    blocking = with_stack = 0
    blocked_ns = right_ns = 0
    per_site = defaultdict(lambda: {"calls": 0, "with_stack": 0, "ns": 0, "right_ns": 0})
    wrong = []
    for start, end, thread, corr, name in t.calls:
        if not BLOCKING.match(name):
            continue
        site = site_of(thread, start)
        blocking += 1
        sid = t.api_stack.get(corr, 0)
        with_stack += 1 if sid else 0
        if site is None:
            continue
        s = per_site[site]
        s["calls"] += 1
        s["with_stack"] += 1 if sid else 0
        s["ns"] += end - start
        blocked_ns += end - start
        line = program_line(corr) if sid else None
        if line == expected.get(site):
            s["right_ns"] += end - start
            right_ns += end - start
        elif len(wrong) < 10:
            wrong.append({"site": site, "call": name, "line": line,
                          "expected": expected.get(site)})

    result = {
        "blocking_calls": blocking, "with_stack": with_stack,
        "stack_coverage_pct": 100.0 * with_stack / blocking if blocking else 0.0,
        "site_blocked_ms": blocked_ns / 1e6, "right_line_ms": right_ns / 1e6,
        "right_line_pct": 100.0 * right_ns / blocked_ns if blocked_ns else 0.0,
        "sites": {k: dict(v, ms=v["ns"] / 1e6) for k, v in sorted(per_site.items())},
        "sites_missing": sorted(set(expected) - set(per_site)),
        "wrong": wrong, "distinct_stacks": len(t.stacks), "frames": len(t.frames),
    }
    print(json.dumps(result, indent=1))
    ok = True
    checks = [
        ("every_blocking_call_has_a_stack", blocking > 0 and with_stack == blocking),
        ("sync_time_on_the_right_line_95pct", result["right_line_pct"] >= 95.0),
        ("every_site_seen", not result["sites_missing"]),
    ]
    for name, passed in checks:
        print(("PASS " if passed else "FAIL ") + name)
        ok = ok and passed
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
