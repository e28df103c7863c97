#!/usr/bin/env python3
"""Compares `warpscope sol` on a real model's trace with Nsight Compute's figures for one step
of the same program (tests/gpu/sol/gpu_sol_model.sh), and reads `advise`'s speed-of-light
findings against them.

    sol_model_compare.py --ws WS_SOL.json --ncu NCU.csv [--advise ADVISE.json] [--top 5]
                         [--out RESULT.json]

Per kernel among warpscope's --top kernels by GPU time: its Nsight Compute rows are found by
name (whitespace aside; else by the function's name alone where that names one kernel), each
unit's reference is the median over the profiled launches, and the check is that warpscope's
verdict (class and bound unit) equals the one docs/sol.md's rule gives on Nsight Compute's
figures. Per-unit differences are printed for reading; kernels of a ResNet step run for tens of
µs, shorter than the 1 ms sampling interval, so their figures are pooled over launches and the
±5-point test of gpu_sol.sh (kernels of 1 ms or more) is not applied. Each `latency-bound` or
`memory-bound-gemm` finding of advise is checked the same way: Nsight Compute's figures must
give its kernel the same class. Exit status: failed checks.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys

from sol_compare import JUDGED, UNITS, Checks, ncu_rows, number, verdict


def squash(name: str) -> str:
    return re.sub(r"\s+", "", name)


# Words of a kernel name that one tool writes and the other leaves out: Nsight Compute drops
# `native::` from PyTorch's names, writes `[lambda(float) (instance 1)]` for `{lambda(float)#1}`,
# `3` for `3ul`.
IGNORED_WORDS = {"void", "native", "anonymous", "namespace", "unnamed", "instance", "const"}


def words_of(name: str) -> tuple[str, ...]:
    """The name's identifier words, parameters left out, as a sorted tuple (a matching key)."""
    depth, head = 0, []
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0:
            break
        head.append(ch)
    text = re.sub(r"\b([0-9]+)[uUlL]+\b", r"\1", "".join(head))
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+", text)
    return tuple(sorted(w for w in words if w not in IGNORED_WORDS))


def function_of(name: str) -> str:
    """The function's own name: no return type, template arguments or parameters."""
    depth, out = 0, []
    for ch in name:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    words = "".join(out).split()
    return words[-1] if words else name


def ncu_by_kernel(path: str) -> dict[str, dict[str, float]]:
    """Kernel name -> per unit the median over its profiled launches (plus 'launches')."""
    groups: dict[str, list[dict[str, str]]] = {}
    for r in ncu_rows(path):
        groups.setdefault(r.get("Kernel Name", ""), []).append(r)
    out = {}
    for name, rows in groups.items():
        figures: dict[str, float] = {"launches": float(len(rows))}
        for unit, metrics in UNITS.items():
            for m in metrics:
                values = [v for v in (number(r.get(m, "")) for r in rows) if v is not None]
                if values:
                    figures[unit] = statistics.median(values)
                    break
        out[name] = figures
    return out


def match(kernel: str, ncu: dict[str, dict[str, float]]) -> str | None:
    """Nsight Compute's name for warpscope's: the same text but for spaces; else the same
    words outside the parameters; else the function's own name where one kernel has it."""
    want = squash(kernel)
    for name in ncu:
        if squash(name) == want:
            return name
    words = words_of(kernel)
    same = [n for n in ncu if words_of(n) == words]
    if len(same) == 1:
        return same[0]
    base = function_of(kernel).split("::")[-1]
    same = [n for n in ncu if function_of(n).split("::")[-1] == base]
    return same[0] if len(same) == 1 else None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ws", required=True)
    ap.add_argument("--ncu", required=True)
    ap.add_argument("--advise")
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--out")
    args = ap.parse_args()
    with open(args.ws) as f:
        ws = json.load(f)
    ncu = ncu_by_kernel(args.ncu)
    units: dict[str, dict[str, float]] = {}
    for r in ws.get("units", []):
        if r.get("value_pct") is not None:
            units.setdefault(r["kernel"], {})[r["unit"]] = r["value_pct"]
    kernels = sorted(ws.get("kernels", []), key=lambda r: -r.get("total_ns", 0))
    checks, rows = Checks(), []
    print(f"Nsight Compute profiled {sum(int(v['launches']) for v in ncu.values())} launches "
          f"of {len(ncu)} kernels")
    for k in kernels[:args.top]:
        name = k["kernel"]
        short = function_of(name)[:60]
        theirs_name = match(name, ncu)
        if theirs_name is None:
            checks.add(f"{short}/found", False, "no Nsight Compute rows of this name")
            continue
        theirs = ncu[theirs_name]
        mine = (k.get("verdict"), k.get("bound_by") or "")
        ref = verdict({u: v for u, v in theirs.items() if u != "launches"})
        ref = (ref[0], ref[1] if ref[0] != "latency-bound" else "")
        mine = (mine[0], mine[1] if mine[0] != "latency-bound" else "")
        diffs = {u: round(units.get(name, {}).get(u, float("nan")) - theirs[u], 1)
                 for u in JUDGED if u in theirs}
        rows.append({"kernel": name, "time_pct": k.get("time_pct"), "launches": k.get("launches"),
                     "covered_pct": k.get("covered_pct"), "warpscope": mine, "ncu": ref,
                     "ncu_launches": theirs["launches"], "unit_diffs": diffs})
        checks.add(f"{short}/verdict", mine == ref,  # "mixed" is no verdict: a failure here
                   f"{k.get('time_pct')}% of GPU time, covered {k.get('covered_pct')}%: warpscope "
                   f"{mine}, Nsight Compute's figures {ref}; unit diffs {diffs}")
    if args.advise:
        with open(args.advise) as f:
            findings = json.load(f).get("findings", [])
        want = {"latency-bound": "latency-bound", "memory-bound-gemm": "memory-bound"}
        sol_findings = [x for x in findings if x.get("rule") in want]
        print(f"advise: {len(sol_findings)} speed-of-light finding(s) of {len(findings)}")
        for x in sol_findings:
            theirs_name = match(x.get("kernel", ""), ncu)
            if theirs_name is None:
                checks.add(f"advise/{x['rule']}/{function_of(x.get('kernel', ''))[:50]}", False,
                           "its kernel is not among Nsight Compute's rows")
                continue
            ref = verdict({u: v for u, v in ncu[theirs_name].items() if u != "launches"})
            checks.add(f"advise/{x['rule']}/{function_of(x['kernel'])[:50]}",
                       ref[0] == want[x["rule"]],
                       f"{x.get('title', '')[:120]}; Nsight Compute's figures: {ref}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"kernels": rows, "checks": checks.items}, f, indent=1)
    print(f"sol on a model: {checks.failed} failed of {len(checks.items)}")
    return min(checks.failed, 100)


if __name__ == "__main__":
    sys.exit(main())
