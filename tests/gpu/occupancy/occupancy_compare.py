#!/usr/bin/env python3
"""Checks `warpscope occupancy` against Nsight Compute on one kernel (tests/gpu/occupancy/check_occupancy.sh).

    occupancy_compare.py --kernel REGEX --ncu NCU.csv --ws LABEL=WS.json [--ws LABEL=WS.json ...]
                         [--design DESIGN.json] [--slack 0.5] --out RESULT.json

WS.json is `warpscope occupancy TRACE -f json` (table "occupancy": row objects; the row is the one
whose `kernel` matches REGEX with the most launches), LABEL names the recording (its PM
interval, e.g. 200us). NCU.csv is `ncu --csv --print-units base --metrics ...` (the details
page: one line per kernel launch and metric, columns "Kernel Name", "Metric Name", "Metric
Value"); every launch of the kernel in it is compared. DESIGN.json is what the program wrote
about the kernel it ran (designed figures; shown, not checked).

Checks, per recording (LABEL) and per profiled launch:
  achieved_bounds_hold_ncu  achieved_low_pct - slack <= sm__warps_active.avg.pct_of_peak_sustained_active
                            <= achieved_high_pct + slack
  elapsed_bounds_hold_ncu   the same for achieved_elapsed_*_pct and ..._pct_of_peak_sustained_elapsed
  figure_present            the row exists, has an achieved figure, samples of its own and an
                            elapsed figure
--slack (points, default 0.5) allows for Nsight Compute's rounding and replay, as
tests/gpu_pm/gpu_pm_check.cc does. The distances |warpscope - Nsight Compute| are reported, not
checked: the bounds are the claim.

Writes RESULT.json: {"kernel", "ncu": {per metric: [values]}, "design", "recordings": {LABEL:
{warpscope's figures}}, "checks": [{"name", "recording", "pass", "detail"}], "failed", "pass"};
prints one PASS/FAIL line per check. Exit status: failed checks (max 100).

Python 3 standard library only: it runs on the GPU machine.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys

NCU_ACTIVE = "sm__warps_active.avg.pct_of_peak_sustained_active"
NCU_ELAPSED = "sm__warps_active.avg.pct_of_peak_sustained_elapsed"
NCU_INFO = (
    "sm__warps_active.avg.per_cycle_active",
    "sm__cycles_active.avg",
    "sm__cycles_elapsed.avg",
    "gpu__time_duration.sum",
    "sm__maximum_warps_per_active_cycle_pct",
)
WS_FIELDS = (
    "launches", "total_ns", "theoretical_pct", "achieved_pct", "achieved_low_pct",
    "achieved_high_pct", "achieved_elapsed_pct", "achieved_elapsed_low_pct",
    "achieved_elapsed_high_pct", "unseen_pct", "covered_launches", "covered_time_pct", "samples",
    "shared_samples", "shared_pct", "launches_from_shared", "note",
)


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except (AttributeError, ValueError):
        return None


def read_ncu(path: str, kernel: re.Pattern[str]) -> dict[str, list[float]]:
    """Per metric, its value in each profiled launch of the kernel, in launch order."""
    values: dict[str, list[float]] = {}
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        # ncu prints its own lines ("==PROF==") before the CSV header.
        lines = [line for line in f if line.startswith('"')]
    for row in csv.DictReader(lines):
        name = row.get("Kernel Name") or ""
        if not kernel.search(name):
            continue
        value = _number(row.get("Metric Value", ""))
        if value is not None:
            values.setdefault(row.get("Metric Name", ""), []).append(value)
    return values


def read_ws(path: str, kernel: re.Pattern[str]) -> dict | None:
    """The row of `warpscope occupancy -f json` for the kernel (most launches), or None."""
    try:
        with open(path, encoding="utf-8") as f:
            rows = json.load(f).get("occupancy", [])
    except (OSError, ValueError, AttributeError):
        return None
    matching = [r for r in rows if isinstance(r, dict) and kernel.search(str(r.get("kernel", "")))]
    if not matching:
        return None
    row = max(matching, key=lambda r: r.get("launches") or 0)
    return {k: row.get(k) for k in ("kernel",) + WS_FIELDS}


def _bounds_check(low, high, values, slack) -> tuple[bool, str]:
    if low is None or high is None or not values:
        return False, f"bounds [{low}, {high}], Nsight Compute {values}: a figure is missing"
    held = all(low - slack <= v <= high + slack for v in values)
    shown = ", ".join(f"{v:.2f}" for v in values)
    return held, f"warpscope bounds [{low:.2f}, {high:.2f}]%, Nsight Compute {shown}% (slack {slack})"


def compare(kernel: re.Pattern[str], ncu: dict[str, list[float]], recordings: dict[str, dict | None],
            slack: float) -> list[dict]:
    checks = []

    def add(name, label, ok, detail):
        checks.append({"name": name, "recording": label, "pass": bool(ok), "detail": detail})

    active = ncu.get(NCU_ACTIVE, [])
    elapsed = ncu.get(NCU_ELAPSED, [])
    add("ncu_profiled", "-", bool(active) and bool(elapsed),
        f"{len(active)} launch(es) of /{kernel.pattern}/ with {NCU_ACTIVE}, {len(elapsed)} with "
        f"{NCU_ELAPSED}")
    if not recordings:
        add("recorded", "-", False, "no warpscope occupancy JSON to compare (--ws)")
    for label, row in recordings.items():
        if row is None:
            add("figure_present", label, False, f"no row matches /{kernel.pattern}/")
            continue
        present = (row.get("achieved_pct") is not None and row.get("achieved_elapsed_pct") is not None
                   and (row.get("launches_from_shared") or 0) < (row.get("covered_launches") or 0))
        add("figure_present", label, present,
            f"achieved {row.get('achieved_pct')}%, elapsed {row.get('achieved_elapsed_pct')}%, "
            f"{row.get('covered_launches')} of {row.get('launches')} launches with samples, "
            f"{row.get('launches_from_shared')} only on shared ones")
        ok, detail = _bounds_check(row.get("achieved_low_pct"), row.get("achieved_high_pct"), active,
                                   slack)
        add("achieved_bounds_hold_ncu", label, ok, detail)
        ok, detail = _bounds_check(row.get("achieved_elapsed_low_pct"),
                                   row.get("achieved_elapsed_high_pct"), elapsed, slack)
        add("elapsed_bounds_hold_ncu", label, ok, detail)
    return checks


def _mean(values):
    return sum(values) / len(values) if values else None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--kernel", required=True, help="regex for the kernel's name")
    parser.add_argument("--ncu", required=True)
    parser.add_argument("--ws", action="append", default=[], metavar="LABEL=WS.json")
    parser.add_argument("--design")
    parser.add_argument("--slack", type=float, default=0.5)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    kernel = re.compile(args.kernel)
    try:
        ncu = read_ncu(args.ncu, kernel)
    except OSError as e:
        print(f"occupancy_compare.py: cannot read {args.ncu}: {e}", file=sys.stderr)
        ncu = {}
    recordings = {}
    for item in args.ws:
        label, _, path = item.partition("=")
        recordings[label] = read_ws(path, kernel)
    design = None
    if args.design:
        try:
            with open(args.design, encoding="utf-8") as f:
                design = json.load(f)
        except (OSError, ValueError):
            design = None
    checks = compare(kernel, ncu, recordings, args.slack)
    failed = sum(not c["pass"] for c in checks)
    ncu_active, ncu_elapsed = _mean(ncu.get(NCU_ACTIVE, [])), _mean(ncu.get(NCU_ELAPSED, []))
    for row in recordings.values():
        if row is None:
            continue
        # Distances from Nsight Compute's mean over the profiled launches: shown, not checked.
        if ncu_active is not None and row.get("achieved_pct") is not None:
            row["minus_ncu_pts"] = round(row["achieved_pct"] - ncu_active, 2)
        if ncu_elapsed is not None and row.get("achieved_elapsed_pct") is not None:
            row["elapsed_minus_ncu_pts"] = round(row["achieved_elapsed_pct"] - ncu_elapsed, 2)
    result = {
        "kernel": args.kernel,
        "ncu": {m: ncu.get(m, []) for m in (NCU_ACTIVE, NCU_ELAPSED) + NCU_INFO},
        "design": design,
        "recordings": recordings,
        "slack_pts": args.slack,
        "checks": checks,
        "failed": failed,
        "pass": failed == 0,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    for label, row in recordings.items():
        if row is None:
            continue
        print(f"{label:>8}: warpscope {row.get('achieved_pct')}% "
              f"[{row.get('achieved_low_pct')}, {row.get('achieved_high_pct')}] per active cycle, "
              f"{row.get('achieved_elapsed_pct')}% [{row.get('achieved_elapsed_low_pct')}, "
              f"{row.get('achieved_elapsed_high_pct')}] per elapsed cycle; unseen up to "
              f"{row.get('unseen_pct')}% of active cycles")
    if ncu_active is not None:
        print(f"{'ncu':>8}: {ncu_active:.2f}% per active cycle, "
              f"{ncu_elapsed if ncu_elapsed is None else round(ncu_elapsed, 2)}% per elapsed cycle "
              f"(mean of {len(ncu.get(NCU_ACTIVE, []))} launch(es))")
    if design:
        print(f"{'design':>8}: {design.get('designed_active_pct')}% per active cycle, "
              f"{design.get('designed_elapsed_pct')}% per elapsed cycle")
    for c in checks:
        print(f"{'PASS' if c['pass'] else 'FAIL'} {c['recording']}/{c['name']} {c['detail']}")
    print(f"occupancy_compare.py: {len(checks) - failed} passed, {failed} failed -> {args.out}")
    return min(failed, 100)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
