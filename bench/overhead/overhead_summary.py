#!/usr/bin/env python3
"""The recording's own time in traces: warpscope's flushes and buffer translations
(WARPSCOPE_FLUSH, WARPSCOPE_BUFFER) and CUPTI's overhead records, per kind, and the program's
API calls that a long flush overlapped (were they held until it ended?).

  overhead_summary.py TRACE.wst ... [--long-us 500]

Uses the warpscope Python package (python/ of this checkout when not installed).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import warpscope  # noqa: E402


def summarize(path, long_ns):
    frames = warpscope.open(path).to_dataframes()
    overhead, api = frames["overhead"], frames["api"]
    lines = [f"== {path}: {len(overhead)} overhead records, {len(api)} API calls"]
    if len(overhead) == 0:
        return lines
    overhead = overhead.assign(dur=overhead["end_ns"] - overhead["start_ns"])
    for kind, group in overhead.groupby("kind", observed=True):
        lines.append(f"  {kind}: {len(group)}, median {group['dur'].median() / 1e3:.1f} us, "
                     f"max {group['dur'].max() / 1e3:.1f} us, total {group['dur'].sum() / 1e6:.2f} ms")
    flushes = overhead[(overhead["kind"] == "WARPSCOPE_FLUSH") & (overhead["dur"] >= long_ns)]
    for f in flushes.itertuples():
        during = api[(api["start_ns"] < f.end_ns) & (api["end_ns"] > f.start_ns) &
                     (api["os_tid"] != f.os_tid)]
        held = during[during["end_ns"] >= f.end_ns]
        calls = ", ".join(f"{c.name} ended {(c.end_ns - f.end_ns) / 1e3:.1f} us after"
                          for c in held.head(3).itertuples())
        lines.append(f"  flush at {f.start_ns / 1e6:.1f} ms, {f.dur / 1e3:.1f} us: "
                     f"{len(during)} program calls overlapped it, {len(held)} still running at "
                     f"its end{': ' + calls if calls else ''}")
    return lines


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--long-us", type=float, default=500)
    args = parser.parse_args(argv)
    status = 0
    for path in args.traces:
        try:
            print("\n".join(summarize(path, args.long_us * 1e3)))
        except (OSError, warpscope.TraceError) as e:
            print(f"== {path}: {e}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
