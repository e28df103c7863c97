"""Checks `warpscope advise`'s precision finding (issue 42, point 3) against plain runs of the
held-out programs at fp32, tf32 and bf16 (tests/gpu/precision/check_precision.sh runs them).

Per program (--case NAME:RUNS:FP32_ADVISE:BF16_ADVISE[:TF32_ADVISE]):
  RUNS         the programs' JSON lines (precision_loop.py), one per plain run; lines with
               "recorded": true are the recorded runs, shown and not used in the medians
  FP32_ADVISE  `warpscope advise -f json` of the recorded fp32 run
  BF16_ADVISE  the same of the recorded bf16 run
  TF32_ADVISE  (optional) the same of a recorded tf32 run: its findings are listed, not checked
Checks:
  runs          each precision has at least --min-runs plain runs
  modes         the flags gave the math asked for: every plain fp32 run's probe (the programs'
                --probe) measured a matmul error against float64 under MODE_THRESHOLD, every
                tf32 run's above it (the convolution's error is shown, not checked: cuDNN may
                pick a non-tensor-core algorithm for the probe's small convolution)
  finding       the fp32 advise has a precision finding: one whose rule (or kind, category,
                type) contains "precision" or "tf32"
  saving        the findings' predicted saving per step (summed over them, or the largest
                with --combine max; one-time findings left out) lies within --tolerance (25%)
                of the measured one: the median fp32 step minus the median tf32 step
  phases        every phase the program names as holding its matrix work ("gemm_phases")
                appears in a precision finding (its NVTX path, title or evidence)
  bf16_clean    the bf16 advise has no precision finding
The predicted saving of a finding is, unless --field or --total-field names it: a per-step
figure whose name holds "tf32" and "saving" or "cost", else such a whole-run figure, else the
first of PER_STEP_FIELDS, else of TOTAL_FIELDS; a whole-run figure is divided by the report's
`steps` (a kernel rule costs every launch, warm-up included). Nested objects are searched too
(dotted names). Every precision finding is printed whole, and every finding's rule when none
matched, so that the check can be adapted to the rule's JSON without another GPU run.

    check_precision.py --case transformer:runs.jsonl:fp32.json:bf16.json [--case ...]
                       [--tolerance 0.25] [--min-runs 5] [--field NAME | --total-field NAME]
                       [--combine sum|max] [--json OUT.json]
Exit status: the number of failed checks (at most 100).
"""
import argparse
import json
import statistics
import sys

PRECISIONS = ("fp32", "tf32", "bf16")
RULE_WORDS = ("precision", "tf32", "fp32-matrix")
KIND_KEYS = ("rule", "kind", "category", "type")
PER_STEP_FIELDS = ("saving_per_step_ns", "expected_saving_per_step_ns",
                   "predicted_saving_per_step_ns", "cost_per_step_ns")
TOTAL_FIELDS = ("saving_ns", "expected_saving_ns", "predicted_saving_ns", "cost_ns")
CHECKS = ("runs", "modes", "finding", "saving", "phases", "bf16_clean")
# A matmul's mean relative error against float64 (the programs' --probe): about 1e-7 in FP32,
# 1e-4 with inputs rounded to TF32; this lies between them with a margin of 10 or more.
MODE_THRESHOLD = 1e-5


def finding_kind(finding):
    """The finding's rule and kind fields, joined ('' when it has none)."""
    return " ".join(str(finding[k]) for k in KIND_KEYS if finding.get(k) is not None)


def precision_findings(report):
    return [f for f in report.get("findings", [])
            if any(w in finding_kind(f).lower() for w in RULE_WORDS)]


def flatten(value, prefix=""):
    """{dotted name: value} of a JSON object's leaves (lists left whole)."""
    if not isinstance(value, dict):
        return {prefix: value}
    out = {}
    for key, item in value.items():
        out.update(flatten(item, f"{prefix}.{key}" if prefix else key))
    return out


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def choose_field(flat):
    """(name, per_step) of the figure that predicts the TF32 saving, or (None, None)."""
    keys = [k for k, v in flat.items() if is_number(v) and k.endswith("_ns")]
    tf32 = [k for k in keys if "tf32" in k.lower() and ("saving" in k or "cost" in k)]
    for k in tf32:
        if "step" in k:
            return k, True
    if tf32:
        return tf32[0], False
    for names, per_step in ((PER_STEP_FIELDS, True), (TOTAL_FIELDS, False)):
        for name in names:
            for k in keys:
                if k.rsplit(".", 1)[-1] == name:
                    return k, per_step
    return None, None


def predicted_per_step(finding, steps, field=None, total_field=None):
    """(ns per step or None, how it was read)."""
    flat = flatten(finding)
    if field or total_field:
        name, per_step = (field, True) if field else (total_field, False)
    else:
        name, per_step = choose_field(flat)
    if name is None:
        return None, "no saving figure"
    value = flat.get(name)
    if not is_number(value):
        return None, f"{name} is {value!r}, not a number"
    if per_step:
        return float(value), name
    if not is_number(steps) or steps <= 0:
        return None, f"{name} is for the whole run and the report has no steps ({steps!r})"
    return value / steps, f"{name} / {steps} steps"


def load_json(path):
    """(object, None) or (None, why not)."""
    try:
        with open(path) as f:
            return json.load(f), None
    except (OSError, ValueError) as e:
        return None, f"{path}: {e}"


def load_runs(path):
    """The runs file: {"plain": {precision: [median step ms]}, "probes": {precision: [probe or
    None]} (plain runs), "recorded": [lines], "phases": [gemm phases], "error": why the file
    could not be read, or None}."""
    runs = {"plain": {p: [] for p in PRECISIONS}, "probes": {p: [] for p in PRECISIONS},
            "recorded": [], "phases": [], "error": None}
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        runs["error"] = f"runs unreadable: {path}: {e}"
        lines = []
    for line in lines:
        try:
            run = json.loads(line)
        except ValueError:
            continue
        if not isinstance(run, dict) or run.get("precision") not in PRECISIONS:
            continue
        runs["phases"] += [p for p in run.get("gemm_phases", []) if p not in runs["phases"]]
        if run.get("recorded"):
            runs["recorded"].append(run)
        elif is_number(run.get("step_ms_median")):
            runs["plain"][run["precision"]].append(run["step_ms_median"])
            runs["probes"][run["precision"]].append(run.get("probe"))
    return runs


def modes_hold(probes, threshold):
    """True when every plain fp32 run's matmul error is under the threshold (FP32 math) and
    every tf32 run's above it (TF32 tensor cores)."""
    def errors(precision):
        return [p.get("matmul_error") if isinstance(p, dict) else None for p in probes[precision]]
    fp32, tf32 = errors("fp32"), errors("tf32")
    if not fp32 or not tf32 or not all(is_number(e) for e in fp32 + tf32):
        return False
    return max(fp32) < threshold < min(tf32)


def median_or_none(values):
    return statistics.median(values) if values else None


def check_case(name, runs_path, fp32_path, bf16_path, tf32_path=None, tolerance=0.25,
               min_runs=5, field=None, total_field=None, combine="sum"):
    """One program's figures and checks."""
    runs = load_runs(runs_path)
    plain, phases = runs["plain"], runs["phases"]
    ms = {p: median_or_none(v) for p, v in plain.items()}
    measured = None
    if ms["fp32"] is not None and ms["tf32"] is not None:
        measured = (ms["fp32"] - ms["tf32"]) * 1e6
    r = {"program": name, "runs": {p: len(v) for p, v in plain.items()}, "step_ms": ms,
         "run_ms": plain,
         "recorded_step_ms": {x["precision"]: x.get("step_ms_median") for x in runs["recorded"]},
         "probes": runs["probes"],
         "gemm_phases": phases, "measured_saving_ns": measured,
         "notes": [runs["error"]] if runs["error"] else []}
    checks = {"runs": all(len(v) >= min_runs for v in plain.values()),
              "modes": modes_hold(runs["probes"], MODE_THRESHOLD)}
    fp32, err = load_json(fp32_path)
    if err:
        r["notes"].append(f"fp32 advise unreadable: {err}")
        fp32 = {}
    found = precision_findings(fp32)
    r["findings"] = found
    r["fp32_finding_kinds"] = [finding_kind(f) for f in fp32.get("findings", [])]
    checks["finding"] = bool(found)
    # A finding paid once before the steady state (`one_time`) saves nothing a step.
    figures = [predicted_per_step(f, fp32.get("steps"), field, total_field)
               if not f.get("one_time") else (None, "one-time finding, not counted")
               for f in found]
    r["predicted_by_finding"] = [{"ns": ns, "from": how} for ns, how in figures]
    values = [ns for ns, _ in figures if ns is not None]
    predicted = (sum(values) if combine == "sum" else max(values)) if values else None
    r["predicted_saving_ns"] = predicted
    r["ratio"] = predicted / measured if predicted is not None and measured else None
    checks["saving"] = r["ratio"] is not None and measured > 0 and abs(r["ratio"] - 1) <= tolerance
    text = json.dumps(found)
    r["phases_missing"] = [p for p in phases if p not in text]
    checks["phases"] = bool(found) and bool(phases) and not r["phases_missing"]
    bf16, err = load_json(bf16_path)
    if err:
        r["notes"].append(f"bf16 advise unreadable: {err}")
    r["bf16_readable"] = bf16 is not None
    r["bf16_findings"] = precision_findings(bf16) if bf16 else []
    checks["bf16_clean"] = bf16 is not None and not r["bf16_findings"]
    if tf32_path:
        tf32, err = load_json(tf32_path)
        r["tf32_findings"] = precision_findings(tf32) if tf32 else []
        r["tf32_finding_kinds"] = [finding_kind(f) for f in (tf32 or {}).get("findings", [])]
        if err:
            r["notes"].append(f"tf32 advise unreadable: {err}")
    r["checks"] = checks
    r["pass"] = all(checks.values())
    return r


def fmt(value, scale=1.0, digits=2):
    return "-" if value is None else f"{value * scale:.{digits}f}"


def error_range(r, precision, kind):
    """'lowest to highest' of the plain runs' probe errors ('-' without a probe)."""
    values = [p.get(kind + "_error") for p in r["probes"][precision] if isinstance(p, dict)]
    values = [v for v in values if is_number(v)]
    return f"{min(values):.1e} to {max(values):.1e}" if values else "-"


def detail(r, check, tolerance):
    """The reason shown beside a check's PASS or FAIL."""
    if check == "runs":
        return "plain runs " + ", ".join(f"{p} {n}" for p, n in r["runs"].items())
    if check == "modes":
        return (f"matmul error against float64: fp32 runs {error_range(r, 'fp32', 'matmul')}, "
                f"tf32 runs {error_range(r, 'tf32', 'matmul')} (FP32 under {MODE_THRESHOLD:g}, "
                f"TF32 above); convolution: fp32 {error_range(r, 'fp32', 'conv')}, "
                f"tf32 {error_range(r, 'tf32', 'conv')}")
    if check == "finding":
        return (f"{len(r['findings'])} precision finding(s)" if r["findings"] else
                "no finding whose rule holds 'precision' or 'tf32'; rules: "
                + ", ".join(r["fp32_finding_kinds"] or ["(none)"]))
    if check == "saving":
        return (f"predicted {fmt(r['predicted_saving_ns'], 1e-6, 3)} ms a step, measured "
                f"{fmt(r['measured_saving_ns'], 1e-6, 3)} ms (fp32 - tf32), ratio "
                f"{fmt(r['ratio'])}, tolerance {tolerance:.0%}; from "
                + ("; ".join(p["from"] for p in r["predicted_by_finding"]) or "no finding"))
    if check == "phases":
        return (f"phases {', '.join(r['gemm_phases']) or '(none given)'}"
                + (f"; missing {', '.join(r['phases_missing'])}" if r["phases_missing"] else ""))
    if not r["bf16_readable"]:
        return "the bf16 run's advise is unreadable (see the note)"
    return (f"{len(r['bf16_findings'])} precision finding(s) on the bf16 run"
            if r["bf16_findings"] else "no precision finding on the bf16 run")


def render(results, tolerance):
    head = (f"{'program':<12} {'fp32 ms':>9} {'tf32 ms':>9} {'bf16 ms':>9} {'rec fp32':>9} "
            f"{'measured':>9} {'predicted':>9} {'ratio':>6}  result")
    lines = [head]
    for r in results:
        ms = r["step_ms"]
        lines.append(f"{r['program']:<12} {fmt(ms['fp32']):>9} {fmt(ms['tf32']):>9} "
                     f"{fmt(ms['bf16']):>9} {fmt(r['recorded_step_ms'].get('fp32')):>9} "
                     f"{fmt(r['measured_saving_ns'], 1e-6, 3):>9} "
                     f"{fmt(r['predicted_saving_ns'], 1e-6, 3):>9} {fmt(r['ratio']):>6}  "
                     f"{'PASS' if r['pass'] else 'FAIL'}")
    lines.append("(step medians in ms over the plain runs; measured and predicted: the fp32 to "
                 "tf32 saving in ms a step)")
    for r in results:
        for check in CHECKS:
            ok = "PASS" if r["checks"][check] else "FAIL"
            lines.append(f"{ok} precision_{r['program']}_{check} ({detail(r, check, tolerance)})")
        lines += [f"  note: {n}" for n in r["notes"]]
    for r in results:
        for title, found in (("fp32", r["findings"]), ("bf16", r["bf16_findings"]),
                             ("tf32 (not checked)", r.get("tf32_findings", []))):
            for f in found:
                lines.append(f"{r['program']} {title} precision finding:")
                lines.append(json.dumps(f, indent=2, sort_keys=True))
        if "tf32_finding_kinds" in r:
            lines.append(f"{r['program']} tf32 run's findings: "
                         + (", ".join(r["tf32_finding_kinds"]) or "(none)"))
    return "\n".join(lines)


def parse_case(spec):
    parts = spec.split(":")
    if len(parts) not in (4, 5) or not all(parts):
        raise argparse.ArgumentTypeError(
            f"--case {spec!r}: expected NAME:RUNS:FP32_ADVISE:BF16_ADVISE[:TF32_ADVISE]")
    return parts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", type=parse_case, action="append", required=True)
    parser.add_argument("--tolerance", type=float, default=0.25)
    parser.add_argument("--min-runs", type=int, default=5)
    figure = parser.add_mutually_exclusive_group()
    figure.add_argument("--field", help="a finding's per-step saving figure (dotted name)")
    figure.add_argument("--total-field", help="a finding's whole-run saving figure")
    parser.add_argument("--combine", choices=("sum", "max"), default="sum")
    parser.add_argument("--json", help="write every figure and check here")
    args = parser.parse_args(argv)
    results = [check_case(*case, tolerance=args.tolerance, min_runs=args.min_runs,
                          field=args.field, total_field=args.total_field, combine=args.combine)
               for case in args.case]
    print(render(results, args.tolerance))
    failed = sum(not ok for r in results for ok in r["checks"].values())
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"tolerance": args.tolerance, "min_runs": args.min_runs,
                       "combine": args.combine, "field": args.field,
                       "total_field": args.total_field, "cases": results,
                       "failed_checks": failed, "pass": failed == 0}, f, indent=2)
    print(f"check_precision: {failed} failed checks")
    return min(failed, 100)


if __name__ == "__main__":
    sys.exit(main())
