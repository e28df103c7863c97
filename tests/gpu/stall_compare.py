#!/usr/bin/env python3
"""Compares `warpscope stalls` with Nsight Compute's warp-state breakdown (tests/gpu/gpu_stalls.sh).

    stall_compare.py check  --ws WS.json --ncu NCU.csv --source stall_kernels.cu
                            [--ws-lines LINES.json] [--pcs PCS.json --sass SASS.txt]
                            [--tolerance 5]
    stall_compare.py report --ws WS.json [--ncu NCU.csv] [--top 5]
    stall_compare.py ncu-filter --ws WS.json [--top 5]

WS.json is `warpscope stalls TRACE -f json --top 0` (every reason: tables "kernels" and
"reasons"), LINES.json the same with `--by line --top 3` (also table "lines": a row per kernel
and line, hottest first), PCS.json `--by pc --top 0` (table "pcs": a row per PC and state), NCU.csv `ncu --import R --csv --page
raw` of a report with the metrics `smsp__average_warps_issue_stalled_*_per_issue_active.ratio`
(and `smsp__issue_active.sum` to weigh several launches of one kernel). Nsight Compute's shares
are each ratio over the sum of all ratios with the `_not_issued` variants left out, in percent;
that sum is its warp cycles per issued instruction. SASS.txt is `nvdisasm -g` of the program's
cubin: with PCS.json it maps the hot PCs to lines without warpscope's line view (shown, not
checked).

`check` (the kernels of tests/gpu/stall_kernels.cu), per kernel: the top state equals Nsight
Compute's; it is the state the kernel is built for; every state in either side's top three is
within --tolerance points; the hottest line (warpscope's line view) is the line marked
`// ws-stall-line: <name>` in the source. Prints a table per kernel; exit status: failed checks.
`report` (any program, no verdicts): the top kernels side by side. `ncu-filter`: a regex for
`ncu -k regex:...` that picks the top kernels by function name.

Python 3 standard library only: it runs on the GPU machine.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import sys
from collections import defaultdict

# What each kernel of tests/gpu/stall_kernels.cu is built to stall on (any of the states).
DESIGNED = {
    "long_scoreboard": ("long_scoreboard",),
    "barrier": ("barrier",),
    "wait": ("wait",),
    "bank_conflict": ("mio_throttle", "short_scoreboard"),
    "fma_saturated": ("not_selected", "math_pipe_throttle"),
}
KERNEL_PREFIX = "ws_stall_"
MARKER = re.compile(r"//\s*ws-stall-line:\s*(\w+)")
NCU_STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio$")
NCU_WEIGHT = "smsp__issue_active.sum"
NCU_DURATION = "gpu__time_duration.sum"


# --- kernel names -------------------------------------------------------------------------

def _function_prefix(name: str) -> str:
    """The demangled name up to its parameter list: `void f<int>(float*)` -> `void f<int>`."""
    depth = 0
    i = 0
    while i < len(name):
        if name.startswith("(anonymous namespace)", i):
            i += len("(anonymous namespace)")
            continue
        ch = name[i]
        if ch == "<":
            depth += 1
        elif ch == ">" and depth > 0:
            depth -= 1
        elif ch == "(" and depth == 0:
            return name[:i]
        i += 1
    return name


# Nsight Compute's own demangled names spell some things differently from warpscope's
# (abi::__cxa_demangle): `(bool)1` for `true`, `(int)128` for `128`, `<unnamed>` for
# `(anonymous namespace)`, `[lambda(float) (instance 1)]` for `{lambda(float)#1}`.
_SPELLINGS = [
    (re.compile(r"\(bool\)1"), "true"),
    (re.compile(r"\(bool\)0"), "false"),
    (re.compile(r"\((?:unsigned |signed )?(?:char|short|int|long|long long)\)(-?\d+)"), r"\1"),
    (re.compile(r"\b(\d+)(?:ull|ul|ll|u|l)\b", re.I), r"\1"),
    (re.compile(r"<unnamed>"), "(anonymous namespace)"),
    (re.compile(r"\[lambda\(([^()]*)\) \(instance (\d+)\)\]"), r"{lambda(\1)#\2}"),
]


def kernel_key(name: str) -> str:
    """What identifies a kernel on both sides: the name before its parameters, without the
    return type, in one spelling and without white space (the demanglers space differently)."""
    for pattern, replacement in _SPELLINGS:
        name = pattern.sub(replacement, name)
    prefix = _function_prefix(name.strip())
    prefix = re.sub(r"^void\s+", "", prefix)
    return re.sub(r"\s+", "", prefix)


def base_name(name: str) -> str:
    """The function's own identifier: `void ns::f<int>(float*)` -> `f`."""
    prefix = re.sub(r"<.*", "", kernel_key(name))
    return prefix.rsplit("::", 1)[-1]


def loose_key(name: str) -> str:
    """The key without namespaces, casts or true/false: Nsight Compute's report shortens names
    (`engines_precompiled::nchwToNhwcKernel<float, float, float, 0, 1, 0>` for
    `cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, false, true,
    (cudnnKernelDataType_t)0>`)."""
    key = kernel_key(name).replace("(anonymousnamespace)::", "")
    key = re.sub(r"\btrue\b", "1", re.sub(r"\bfalse\b", "0", key))
    key = re.sub(r"\([A-Za-z_][\w:]*\)(?=-?\d)", "", key)
    return re.sub(r"\b[A-Za-z_]\w*::", "", key)


def ncu_name_filter(names: list[str], limit: int = 40) -> str:
    """A regex for `ncu -k regex:` that picks these kernels by function name (at most `limit`
    characters of it; ncu searches the name, so any --kernel-name-base works); other instances
    of the same function are profiled too and left out when matching."""
    special = set("\\^$.|?*+()[]{}")
    parts = []
    for name in names:
        ident = "".join("\\" + ch if ch in special else ch for ch in base_name(name)[:limit])
        if ident and ident not in parts:
            parts.append(ident)
    return "|".join(parts)


# --- inputs -------------------------------------------------------------------------------

def load_ws(path: str) -> list[dict]:
    """Kernel rows of `warpscope stalls -f json`, in its order (most samples first), with their
    shares (table "reasons") and, from `--by line`, their lines (table "lines")."""
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    shares: dict[str, dict[str, float]] = defaultdict(dict)
    for r in report.get("reasons", []):
        shares[r["kernel"]][r["reason"]] = float(r["pct"])
    lines: dict[str, list[dict]] = defaultdict(list)
    for r in report.get("lines", []):
        if r["file"]:  # the samples at PCs without a line have a row of their own
            lines[r["kernel"]].append({"file": r["file"], "line": r["line"],
                                       "samples": r["samples"], "pct": r["kernel_pct"]})
    out = []
    for row in report["kernels"]:
        out.append({
            "name": row["kernel"],
            "key": kernel_key(row["kernel"]),
            "samples": int(row.get("samples") or 0),
            "pct": row.get("pct"),
            "cpi": row.get("cycles_per_issue"),
            "shares": shares[row["kernel"]],
            "lines": lines[row["kernel"]] if "lines" in report else None,
        })
    return out


def _number(text: str) -> float | None:
    text = text.strip().replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None


def load_ncu(path: str) -> dict[str, dict]:
    """Nsight Compute's launches from `--csv --page raw`, summed per kernel key.

    Several launches of one kernel are weighed by their issue-active cycles, so the result is
    stalled warp cycles over issue cycles of all of them, as one long launch would give.
    """
    with open(path, encoding="utf-8", newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # drops ==PROF== and program lines
    rows = list(csv.reader(lines))
    if not rows:
        return {}
    header = rows[0]
    col = {name: i for i, name in enumerate(header)}
    if "Kernel Name" not in col:
        raise ValueError(f"{path}: no 'Kernel Name' column; is this `ncu --csv --page raw`?")
    stall_cols = {}
    for name, i in col.items():
        m = NCU_STALL.match(name)
        if m and not m.group(1).endswith("_not_issued"):
            stall_cols[m.group(1)] = i
    to_ns = 1.0
    if NCU_DURATION in col and len(rows) > 1 and not rows[1][col["Kernel Name"]].strip():
        unit = rows[1][col[NCU_DURATION]].strip()  # the units row
        to_ns = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6,
                 "msecond": 1e6, "s": 1e9, "second": 1e9}.get(unit, 1.0)
    acc: dict[str, dict] = {}
    for row in rows[1:]:
        if len(row) != len(header) or not row[col["Kernel Name"]].strip():
            continue  # the units row
        if "ID" in col and _number(row[col["ID"]]) is None:
            continue
        ratios = {}
        for reason, i in stall_cols.items():
            value = _number(row[i])
            if value is not None:
                ratios[reason] = value
        if not ratios:
            continue
        weight = _number(row[col[NCU_WEIGHT]]) if NCU_WEIGHT in col else None
        weight = weight if weight and weight > 0 else 1.0
        duration = _number(row[col[NCU_DURATION]]) if NCU_DURATION in col else None
        name = row[col["Kernel Name"]]
        entry = acc.setdefault(kernel_key(name), {
            "name": name, "launches": 0, "weight": 0.0, "weighted": defaultdict(float),
            "duration_ns": 0.0})
        entry["launches"] += 1
        entry["weight"] += weight
        entry["duration_ns"] += (duration or 0.0) * to_ns
        for reason, value in ratios.items():
            entry["weighted"][reason] += value * weight
    out = {}
    for key, entry in acc.items():
        ratios = {r: v / entry["weight"] for r, v in entry["weighted"].items()}
        total = sum(ratios.values())
        out[key] = {
            "name": entry["name"],
            "loose": loose_key(entry["name"]),
            "base": base_name(entry["name"]),
            "launches": entry["launches"],
            "duration_ns": entry["duration_ns"],
            "cpi": total,
            "shares": {r: 100.0 * v / total for r, v in ratios.items()} if total > 0 else {},
        }
    return out


def load_markers(source: str) -> dict[str, int]:
    """`// ws-stall-line: NAME` markers of the source: NAME -> line number (from 1)."""
    markers = {}
    with open(source, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = MARKER.search(line)
            if m:
                markers[m.group(1)] = number
    return markers


_SASS_FUNCTION = re.compile(r"^\s*\.text\.([^\s:\"]+):\s*$")
_SASS_LINE = re.compile(r'//## File "([^"]+)", line (\d+)')
_SASS_PC = re.compile(r"/\*([0-9a-fA-F]{4,})\*/")


def load_sass_lines(path: str) -> dict[str, dict[int, tuple[str, int]]]:
    """`nvdisasm -g` output -> mangled function -> PC offset -> (file, line)."""
    out: dict[str, dict[int, tuple[str, int]]] = {}
    function = None
    where = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for text in f:
            m = _SASS_FUNCTION.match(text)
            if m:
                function, where = m.group(1), None
                out.setdefault(function, {})
                continue
            m = _SASS_LINE.search(text)
            if m:
                where = (m.group(1), int(m.group(2)))
                continue
            m = _SASS_PC.search(text)
            if m and function is not None and where is not None:
                out[function][int(m.group(1), 16)] = where
    return out


def lines_from_pcs(pcs_path: str, sass: dict) -> dict[str, list[dict]]:
    """Kernel key -> its lines, hottest first, from `--by pc --top 0` and the SASS line table."""
    with open(pcs_path, encoding="utf-8") as f:
        rows = json.load(f)["pcs"]  # a row per PC and warp state
    per_kernel: dict[str, dict] = defaultdict(lambda: defaultdict(int))
    totals: dict[str, int] = defaultdict(int)
    seen = set()
    for pc in rows:
        ident_pc = (pc["kernel"], pc["cubin_crc"], pc["pc_offset"])
        if ident_pc in seen:
            continue
        seen.add(ident_pc)
        key = kernel_key(pc["kernel"])
        ident = base_name(pc["kernel"])
        functions = [fn for fn in sass if f"{len(ident)}{ident}" in fn]
        where = None
        if len(functions) == 1:
            where = sass[functions[0]].get(int(pc["pc_offset"]))
        samples = int(pc["pc_samples"])
        totals[key] += samples
        per_kernel[key][where or ("?", 0)] += samples
    out = {}
    for key, by_line in per_kernel.items():
        ranked = sorted(by_line.items(), key=lambda kv: -kv[1])
        out[key] = [{"file": f, "line": l, "samples": s, "pct": 100.0 * s / totals[key]}
                    for (f, l), s in ranked]
    return out


# --- output -------------------------------------------------------------------------------

def match_ncu(ws: dict, ncu: dict[str, dict]) -> dict | None:
    """Nsight Compute's entry for a warpscope kernel: the same key, else the only one with the
    same loose key, else the only one with the same function name."""
    if ws["key"] in ncu:
        return ncu[ws["key"]]
    for field, value in (("loose", loose_key(ws["name"])), ("base", base_name(ws["name"]))):
        same = [entry for entry in ncu.values() if entry[field] == value]
        if len(same) == 1:
            return same[0]
    return None


def _top(shares: dict[str, float], n: int) -> list[str]:
    """The n largest states with a share above zero, largest first."""
    ranked = sorted((kv for kv in shares.items() if kv[1] > 0), key=lambda kv: -kv[1])
    return [r for r, _ in ranked[:n]]


def _fmt(value, spec=".2f") -> str:
    return "-" if value is None else format(value, spec)


def side_by_side(ws: dict, ncu: dict | None, top: int) -> str:
    """Both sides' shares of the states in either side's top `top`, and cycles per issue."""
    reasons = _top(ws["shares"], top)
    reasons += [r for r in (_top(ncu["shares"], top) if ncu else []) if r not in reasons]
    out = [f"    {'state':<22} {'warpscope':>9} {'ncu':>9} {'delta':>8}"]
    for r in reasons:
        w = ws["shares"].get(r, 0.0)
        if ncu is None:
            out.append(f"    {r:<22} {w:9.2f} {'-':>9} {'-':>8}")
        else:
            n = ncu["shares"].get(r, 0.0)
            out.append(f"    {r:<22} {w:9.2f} {n:9.2f} {w - n:+8.2f}")
    w = ws.get("cpi")
    n = ncu["cpi"] if ncu else None
    rel = f" ({100.0 * (w - n) / n:+.1f}%)" if w and n else ""
    out.append(f"    {'cycles_per_issue':<22} {_fmt(w):>9} {_fmt(n):>9}{rel}")
    return "\n".join(out)


def kernel_checks(key, designed, ws, nc, marked, source_base, lines, tolerance):
    """The four checks of one kernel, (what, ok, detail) each, and the top states of warpscope
    and Nsight Compute."""
    results = []
    # 1. top state equal to Nsight Compute's
    ws_top = _top(ws["shares"], 1)[0] if ws and ws["shares"] else None
    nc_top = _top(nc["shares"], 1)[0] if nc and nc["shares"] else None
    ok = ws_top is not None and ws_top == nc_top
    results.append(("top state equals ncu's", ok, f"{ws_top} vs {nc_top}"))
    # 2. the state it is built for
    ok = ws_top in designed
    results.append(("top state is the designed one", ok, f"{ws_top}"))
    # 3. top-three shares within the tolerance
    if ws and nc:
        reasons = list(dict.fromkeys(_top(ws["shares"], 3) + _top(nc["shares"], 3)))
        worst = max(reasons, key=lambda r: abs(ws["shares"].get(r, 0) - nc["shares"].get(r, 0)))
        delta = ws["shares"].get(worst, 0) - nc["shares"].get(worst, 0)
        ok = abs(delta) <= tolerance
        detail = f"largest |delta| {abs(delta):.2f} ({worst})"
    else:
        ok, detail = False, "no data on one side"
    results.append((f"top-3 shares within {tolerance:g} points", ok, detail))
    # 4. hottest line is the marked one
    if lines is None or lines.get(key) is None:
        ok, detail = False, "not available (no \"lines\" in warpscope stalls --by line)"
    elif not lines[key]:
        ok, detail = False, "no line for any sample"
    else:
        hot = lines[key][0]
        where = f"{os.path.basename(hot['file'])}:{hot['line']}"
        ok = os.path.basename(hot["file"]) == source_base and hot["line"] == marked
        detail = f"{where} ({float(hot['pct']):.1f}% of samples) vs marked {marked}"
    results.append(("hottest line is the marked one", ok, detail))
    return results, ws_top, nc_top


def load_line_rows(path):
    """`warpscope stalls --by line` rows by kernel, or None when there are none."""
    if path and os.path.exists(path) and os.path.getsize(path) > 0:
        try:
            return {row["key"]: row["lines"] for row in load_ws(path)}
        except (ValueError, KeyError):
            return None
    return None


def check(args) -> int:
    ws_rows = {row["key"]: row for row in load_ws(args.ws)}
    ncu = load_ncu(args.ncu) if args.ncu and os.path.exists(args.ncu) else {}
    markers = load_markers(args.source)
    source_base = os.path.basename(args.source)
    lines = load_line_rows(args.ws_lines)
    pc_lines = {}
    if args.pcs and args.sass and os.path.exists(args.pcs) and os.path.exists(args.sass):
        pc_lines = lines_from_pcs(args.pcs, load_sass_lines(args.sass))

    failed = 0
    passed = 0
    summary = []
    print(f"tolerance: {args.tolerance:g} points; shares in % of the kernel's samples "
          "(warpscope) or of the sum of stall ratios without _not_issued (ncu)")
    for short, designed in DESIGNED.items():
        key = KERNEL_PREFIX + short
        ws = ws_rows.get(key)
        nc = match_ncu(ws, ncu) if ws else ncu.get(key)
        marked = markers.get(short)
        print()
        print(f"{key}  (built for: {' / '.join(designed)}; marked line "
              f"{source_base}:{marked if marked else '?'})")
        if ws is None:
            print("    warpscope: no samples for this kernel")
        if nc is None:
            print("    ncu: no row for this kernel")
        if ws is not None:
            print(side_by_side(ws, nc, 3))
            extra = f"; ncu launches {nc['launches']}, {nc['duration_ns'] / 1e6:.2f} ms" \
                if nc and nc["duration_ns"] else (f"; ncu launches {nc['launches']}" if nc else "")
            print(f"    warpscope samples {ws['samples']}{extra}")

        results, ws_top, nc_top = kernel_checks(key, designed, ws, nc, marked, source_base,
                                                lines, args.tolerance)
        for what, ok, detail in results:
            print(f"    {'PASS' if ok else 'FAIL'}  {what}: {detail}")
            failed += 0 if ok else 1
            passed += 1 if ok else 0
        if key in pc_lines and pc_lines[key]:
            hot = pc_lines[key][0]
            print(f"    info  hottest line from PCs and the nvdisasm line table: "
                  f"{os.path.basename(hot['file'])}:{hot['line']} ({hot['pct']:.1f}%)")
        summary.append((key, ws_top, nc_top, all(ok for _, ok, _ in results)))

    print()
    print(f"{'kernel':<28} {'warpscope top':<20} {'ncu top':<20} result")
    for key, wt, nt, ok in summary:
        print(f"{key:<28} {str(wt):<20} {str(nt):<20} {'PASS' if ok else 'FAIL'}")
    print(f"{passed} of {passed + failed} checks passed")
    return min(failed, 100)


def report(args) -> int:
    ws_rows = load_ws(args.ws)
    ncu = load_ncu(args.ncu) if args.ncu and os.path.exists(args.ncu) else {}
    total = sum(row["samples"] for row in ws_rows) or 1
    print(f"top {args.top} kernels by PC samples ({total} samples in all); shares in %. warpscope: "
          "every launch sampled; ncu: the launches it profiled, weighed by issue-active cycles")
    for rank, ws in enumerate(ws_rows[: args.top], 1):
        nc = match_ncu(ws, ncu)
        print()
        print(f"[{rank}] {ws['name'][:160]}")
        where = (f"ncu: {nc['launches']} launch(es) profiled, {nc['duration_ns'] / 1e6:.3f} ms"
                 if nc else "ncu: no profiled launch of this kernel")
        print(f"    warpscope samples {ws['samples']} ({100.0 * ws['samples'] / total:.1f}% of all); {where}")
        print(side_by_side(ws, nc, 5))
        if nc:
            same = _top(ws["shares"], 1) == _top(nc["shares"], 1)
            print(f"    top state: {'same' if same else 'differs'}")
    return 0


def ncu_filter(args) -> int:
    print(ncu_name_filter([row["name"] for row in load_ws(args.ws)[: args.top]]))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("check", help="the stall kernels against ncu: PASS/FAIL per check")
    p.add_argument("--ws", required=True)
    p.add_argument("--ws-lines")
    p.add_argument("--ncu")
    p.add_argument("--source", required=True)
    p.add_argument("--pcs")
    p.add_argument("--sass")
    p.add_argument("--tolerance", type=float, default=5.0)
    p.set_defaults(run=check)
    p = sub.add_parser("report", help="the top kernels side by side, no verdicts")
    p.add_argument("--ws", required=True)
    p.add_argument("--ncu")
    p.add_argument("--top", type=int, default=5)
    p.set_defaults(run=report)
    p = sub.add_parser("ncu-filter", help="a kernel-name regex for ncu: the top kernels")
    p.add_argument("--ws", required=True)
    p.add_argument("--top", type=int, default=5)
    p.set_defaults(run=ncu_filter)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
