#!/usr/bin/env python3
"""Compares `warpscope sol -f json` with Nsight Compute on the held-out kernels of
sol_kernels.cu (tests/gpu/sol/gpu_sol.sh).

    sol_compare.py --ncu-metrics                 # the Nsight Compute metrics to collect
    sol_compare.py --ws WS.json --ncu KERNEL=NCU.csv ... --out RESULT.json

Per long kernel and unit with a reference (the median of Nsight Compute's profiled launches):
warpscope's figure within TOLERANCE (5) points, and its interval holding the reference (0.5
points of slack for rounding). Per long kernel: warpscope's verdict equals the one the same
rule (docs/sol.md: latency-bound below 60% on every unit, else the larger of memory and
compute) gives on Nsight Compute's figures, and the design's (copy: memory-bound, fma and
mma: compute-bound, chase: latency-bound). The short kernel: present, every launch counted,
its coverage at least half its time. Prints one line per check; exit status: failed checks.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys

TOLERANCE = 5.0
SLACK = 0.5
LATENCY_BOUND_BELOW = 60.0
SHORT_LAUNCHES = 2000
# warpscope's unit -> Nsight Compute metrics measuring it, first found wins. Both read the
# same counters: PM sampling's TriageCompute names are the profiler's groups of them.
UNITS = {
    "sm": ["sm__throughput.avg.pct_of_peak_sustained_elapsed"],
    "issue": ["sm__inst_executed.avg.pct_of_peak_sustained_elapsed"],
    "fma": ["sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed"],
    "alu": ["sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_elapsed"],
    "tensor": ["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
               "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed"],
    "fp64": ["sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed"],
    "dram": ["dram__throughput.avg.pct_of_peak_sustained_elapsed",
             "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"],
    "l2": ["lts__throughput.avg.pct_of_peak_sustained_elapsed"],
    "l1_lsu": ["l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed"],
    "l1_tex": ["l1tex__data_pipe_tex_wavefronts.avg.pct_of_peak_sustained_elapsed"],
}
MEMORY = {"dram", "l2", "l1_lsu", "l1_tex"}
JUDGED = [u for u in UNITS if u != "sm"]
DESIGN = {"ws_sol_copy": ("memory-bound", "dram"), "ws_sol_fma": ("compute-bound", "fma"),
          "ws_sol_mma": ("compute-bound", "tensor"), "ws_sol_chase": ("latency-bound", "")}


def ncu_metrics() -> str:
    names = [m for ms in UNITS.values() for m in ms]
    return ",".join(dict.fromkeys(names + ["gpu__time_duration.sum"]))


def number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def ncu_rows(path: str) -> list[dict[str, str]]:
    """Nsight Compute's CSV (--page raw): one row per profiled launch."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return [r for r in rows if r.get("ID", "").strip().isdigit()]  # drop the units row


def ncu_median(rows: list[dict[str, str]], metric: str) -> float | None:
    """The median of a metric over the profiled launches; None without a number."""
    values = [v for v in (number(r.get(metric, "")) for r in rows) if v is not None]
    return statistics.median(values) if values else None


def read_ncu(path: str) -> dict[str, float]:
    """Per unit, the median over the profiled launches."""
    rows = ncu_rows(path)
    out = {}
    for unit, metrics in UNITS.items():
        for m in metrics:
            value = ncu_median(rows, m)
            if value is not None:
                out[unit] = value
                break
    return out


def verdict(figures: dict[str, float]) -> tuple[str, str]:
    """The rule of docs/sol.md on one kernel's figures."""
    mem = max(((figures[u], u) for u in MEMORY if u in figures), default=(-1.0, ""))
    comp = max(((figures[u], u) for u in UNITS if u not in MEMORY and u != "sm"
                and u in figures), default=(-1.0, ""))
    comp_all = max(comp[0], figures.get("sm", -1.0))
    if max(mem[0], comp_all) < LATENCY_BOUND_BELOW:
        return "latency-bound", ""
    if mem[0] >= comp_all:
        return "memory-bound", mem[1]
    return "compute-bound", comp[1]


class Checks:
    def __init__(self) -> None:
        self.items: list[dict] = []

    def add(self, name: str, ok: bool, detail: str) -> None:
        self.items.append({"check": name, "pass": bool(ok), "detail": detail})
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")

    @property
    def failed(self) -> int:
        return sum(1 for c in self.items if not c["pass"])


def compare_kernel(checks: Checks, kernel: str, units: dict[str, dict], ncu: dict[str, float],
                   table: list) -> None:
    for unit, ref in sorted(ncu.items()):
        got = units.get(unit)
        if got is None or got.get("value_pct") is None:
            checks.add(f"{kernel}/{unit}", False, f"no warpscope figure (ncu {ref:.2f}%)")
            continue
        value, low, high = got["value_pct"], got["low_pct"], got["high_pct"]
        close = abs(value - ref) <= TOLERANCE
        held = low - SLACK <= ref <= high + SLACK
        table.append({"kernel": kernel, "unit": unit, "warpscope": value, "low": low,
                      "high": high, "ncu": ref, "diff": value - ref})
        checks.add(f"{kernel}/{unit}", close and held,
                   f"warpscope {value:.2f}% [{low:.2f}, {high:.2f}] vs ncu {ref:.2f}% "
                   f"(diff {value - ref:+.2f}, within {TOLERANCE}: {close}, held: {held})")
    mine = verdict({u: v["value_pct"] for u, v in units.items() if v.get("value_pct") is not None})
    theirs = verdict(ncu)
    checks.add(f"{kernel}/verdict_vs_ncu", mine == theirs, f"warpscope {mine}, ncu's figures {theirs}")
    if kernel in DESIGN:
        checks.add(f"{kernel}/verdict_vs_design", mine[0] == DESIGN[kernel][0] and
                   (not DESIGN[kernel][1] or mine[1] == DESIGN[kernel][1]),
                   f"warpscope {mine}, designed {DESIGN[kernel]}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ncu-metrics", action="store_true")
    ap.add_argument("--ws")
    ap.add_argument("--ncu", action="append", default=[])
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.ncu_metrics:
        print(ncu_metrics())
        return 0
    checks = Checks()
    result: dict = {"tolerance_points": TOLERANCE, "comparison": [], "kernels": []}
    if not args.ws:
        checks.add("warpscope_report", False, "no warpscope sol JSON (recording failed?)")
    else:
        with open(args.ws) as f:
            ws = json.load(f)
        kernels = {r["kernel"]: r for r in ws.get("kernels", [])}
        units: dict[str, dict] = {}
        for r in ws.get("units", []):
            units.setdefault(r["kernel"], {})[r["unit"]] = r
        result["kernels"] = list(kernels.values())
        for spec in args.ncu:
            kernel, path = spec.split("=", 1)
            name = next((k for k in kernels if k.startswith(kernel + "(") or k == kernel), None)
            if name is None:
                checks.add(kernel, False, "not in warpscope's report")
                continue
            compare_kernel(checks, kernel, units.get(name, {}), read_ncu(path),
                           result["comparison"])
        short = next((r for k, r in kernels.items() if k.startswith("ws_sol_short")), None)
        if short is None:
            checks.add("ws_sol_short/reported", False, "the short kernel is not in the report")
        else:
            checks.add("ws_sol_short/reported", short["launches"] == SHORT_LAUNCHES,
                       f"{short['launches']} of {SHORT_LAUNCHES} launches, pooled {short['pooled']}")
            covered = short.get("covered_pct") or 0
            checks.add("ws_sol_short/coverage", covered >= 50,
                       f"covered {covered}% of its time, closest {short.get('closest')} "
                       f"{short.get('closest_pct')}%")
    result["checks"] = checks.items
    result["pass"] = checks.failed == 0
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return min(checks.failed, 100)


if __name__ == "__main__":
    sys.exit(main())
