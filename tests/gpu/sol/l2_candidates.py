#!/usr/bin/env python3
"""Which PM-sampling L2 metric reads what Nsight Compute's L2 speed of light does
(tests/gpu/sol/l2_candidates.sh, issue 40).

Nsight Compute's L2 figure, lts__throughput.avg.pct_of_peak_sustained_elapsed, is the most
loaded of several L2 sub-units; on GH100 it takes 4 passes and is no PM-sampling metric. The
sol set reads LTS.TriageCompute.lts__throughput instead: 47% where Nsight Compute read 88% on
a DRAM copy. CANDIDATES below are the GH100 PM-sampling L2 metrics that fit one pass together
(with the active-warp metrics and DRAM, checked offline with bench/probes/pm_metric_passes.cc).

    l2_candidates.py --metrics                   # the candidate set, for WARPSCOPE_PM_METRICS
    l2_candidates.py --ncu-metrics               # what Nsight Compute collects beside it
    l2_candidates.py --chrome TRACE.json --interval-us 200 --ncu KERNEL=NCU.csv ...

Per kernel: each candidate's median over the samples that lie wholly inside one of its
launches, next to Nsight Compute's lts__throughput and every metric of its breakdown (median
over the profiled launches); candidates ranked by their distance to lts__throughput.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sol_compare import ncu_median, ncu_rows  # noqa: E402  (beside this file)

PCT = ".avg.pct_of_peak_sustained_elapsed"
CANDIDATES = [
    "sm__warps_active.avg.per_cycle_active",
    "sm__cycles_active.avg",
    "gr__cycles_elapsed.max",
    "FBSP.TriageCompute.dramc__throughput" + PCT,
    "LTS.TriageCompute.lts__throughput" + PCT,  # the sol set's today
    "LTS.TriageCompute.lts__throughput.max.pct_of_peak_sustained_elapsed",
    "LTS.TriageCompute.lts__t_sector_throughput" + PCT,
    "lts__t_sectors" + PCT,
    "lts__t_requests" + PCT,
    "LTS.TriageCompute.lts__throughput_internal_activity" + PCT,
    "LTS.TriageCompute.lts__t_sector_throughput_srcunit_tex" + PCT,
    "LTS.TriageCompute.lts__t_sector_throughput_srcnode_gpc" + PCT,
    "LTS.TriageCompute.lts__t_sector_throughput_internal_activity" + PCT,
    "lts__t_bytes" + PCT,
    "lts__t_sectors.sum",
    "lts__t_requests.sum",
]
REFERENCE = "lts__throughput" + PCT
NCU_METRICS = [REFERENCE, "breakdown:" + REFERENCE, "lts__t_sectors" + PCT,
               "lts__t_requests" + PCT, "dram__throughput" + PCT, "gpu__time_duration.sum"]


def read_ncu(path: str) -> dict[str, float]:
    """Every L2 and DRAM column: the median over the profiled launches."""
    rows = ncu_rows(path)
    out = {}
    for column in rows[0].keys() if rows else []:
        value = ncu_median(rows, column) if "lts__" in column or "dram__" in column else None
        if value is not None:
            out[column] = value
    return out


def read_chrome(path: str, interval_ns: float):
    """Launches per kernel name ([start, end] in µs) and each candidate's samples."""
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    launches: dict[str, list[tuple[float, float]]] = {}
    samples: dict[str, list[tuple[float, float]]] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            name = e["name"].split("(")[0]
            launches.setdefault(name, []).append((e["ts"], e["ts"] + e.get("dur", 0)))
        elif e.get("ph") == "C" and e.get("cat") == "pm_sampling":
            metric = e["name"].split(" ", 2)[-1]  # "GPU 0 <metric>"
            samples.setdefault(metric, []).append((e["ts"], e["args"]["value"]))
    width = interval_ns / 1000.0
    return launches, samples, width


def inside(launches, start, width):
    end = start + width
    return any(a <= start and end <= b for a, b in launches)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--metrics", action="store_true")
    ap.add_argument("--ncu-metrics", action="store_true")
    ap.add_argument("--chrome")
    ap.add_argument("--interval-us", type=float, default=200)
    ap.add_argument("--ncu", action="append", default=[], help="KERNEL=NCU.csv")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.metrics:
        print(",".join(CANDIDATES))
        return 0
    if args.ncu_metrics:
        print(",".join(NCU_METRICS))
        return 0
    launches, samples, width = read_chrome(args.chrome, args.interval_us * 1000)
    result = {}
    for spec in args.ncu:
        kernel, path = spec.split("=", 1)
        ncu = read_ncu(path)
        reference = ncu.get(REFERENCE)
        mine = launches.get(kernel, [])
        rows = []
        for metric in CANDIDATES[3:]:
            values = [v for t, v in samples.get(metric, []) if inside(mine, t, width)]
            if values:
                rows.append((metric, statistics.median(values), len(values)))
        rows.sort(key=lambda r: abs(r[1] - reference) if reference is not None and
                  "pct_of_peak" in r[0] else float("inf"))
        print(f"{kernel}: {len(mine)} launches; Nsight Compute {REFERENCE} = {reference}")
        for metric, value, n in rows:
            gap = f"{value - reference:+8.2f}" if reference is not None and "pct" in metric else ""
            print(f"  {value:12.2f} {gap:>8}  ({n:4d} samples)  {metric}")
        print("  Nsight Compute's breakdown:")
        for column, value in sorted(ncu.items(), key=lambda kv: -kv[1]):
            print(f"  {value:12.2f}  {column}")
        result[kernel] = {"reference": reference, "candidates": {m: v for m, v, _ in rows},
                          "ncu": ncu}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0 if result else 1


if __name__ == "__main__":
    sys.exit(main())
