"""Checks warpscope.torch_memory on what torch_history.py left (run on the GPU machine under
`warpscope record`): the snapshot's clock is the epoch's in µs (its large block's time between
the program's readings before and after it), and at the device's peak the largest live tensor
is that 1 GiB block, at its line.

  python3 check_torch_history.py TRACE SNAPSHOT RESULT.json
Prints PASS/FAIL lines; exit status: the number of failures."""
import json
import sys

import warpscope
from warpscope.torch_memory import load_snapshot


def main():
    trace, snapshot, result = sys.argv[1:4]
    ref = json.loads(open(result).read())
    failures = 0

    def expect(what, ok, detail=""):
        nonlocal failures
        print(f"{'PASS' if ok else 'FAIL'} {what}{': ' + detail if detail else ''}")
        failures += 0 if ok else 1

    snap = load_snapshot(snapshot)
    bigs = [e for t in snap["device_traces"] for e in t
            if e.get("action") == "alloc" and e.get("size") == ref["big_bytes"]]
    expect("the snapshot holds the 1 GiB block", len(bigs) == 1, f"{len(bigs)} found")
    if bigs:
        t = bigs[0].get("time_us", 0) * 1000
        expect("time_us is µs since the epoch", ref["before_ns"] - 1_000_000 <= t <=
               ref["after_ns"] + 1_000_000,
               f"{t} against [{ref['before_ns']}, {ref['after_ns']}] ns")
        print("  frames of the block:", json.dumps(bigs[0].get("frames", [])[:6]))
    out = warpscope.torch_memory(trace, snapshot, top=5)
    print(out["coverage"].to_string())
    print(out["live_tensors"].to_string())
    peak = out["live_tensors"][out["live_tensors"]["moment"] == "peak"]
    expect("the peak is covered by the history", bool(out["coverage"]["covered"].iloc[0]))
    top = peak.iloc[0] if len(peak) else None
    want = f"torch_history.py:{ref['big_line']} "
    expect("the largest tensor at the peak is the 1 GiB block at its line",
           top is not None and top["bytes"] == ref["big_bytes"] and want in top["site"],
           "" if top is None else f"{top['bytes']} bytes at {top['site']}")
    return failures


if __name__ == "__main__":
    sys.exit(main())
