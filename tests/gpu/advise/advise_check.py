#!/usr/bin/env python3
"""Checks `warpscope advise` against measured savings (tests/gpu/advise/gpu_advise.sh).

For each case (a program with one problem on purpose):
  - the top finding of `warpscope advise --format json` on its recorded trace must be the
    rule the program was written to show (EXPECTED_RULE);
  - that finding's cost per recorded step must be within --tolerance (10%) of the time the fix
    saves per step: (median loop time of the problem runs - median of the --fixed runs) /
    timed steps, from interleaved plain runs;
  - where that finding reports a range (a wait whose cost_max_ns, the saving should the host
    keep up with the GPU, lies more than --tolerance above its cost), a second check: the
    saving must lie in the range, widened by --tolerance at both ends. This is the case of a
    program whose fixed version has host and GPU time per step about equal: recording slows
    the host (CUPTI's own work in every CUDA call: 1.4% and 13.6% in two sets of runs of
    the fixed PyTorch loop), so the trace cannot tell which one will set the fixed
    program's pace.

  advise_check.py --case NAME:ADVISE_JSON[,...]:RECORD_LOG[,...]:RUNS_JSONL[:FIXED_JSONL] ...
                  [--json OUT] [--tolerance 0.1]

ADVISE_JSON and RECORD_LOG: one pair per recorded run, comma-separated in the same order.
The top finding must be the expected rule in every recording; the cost is the median over
the recordings, as the saving is from medians of the plain runs.

RECORD_LOG holds the program's JSON line from the recorded run ("steps": steps recorded,
warm-up included, as the trace holds them). A finding's cost covers the steady state: it is
divided by the steady steps advise found (its `steps` less `warmup_steps`), or, where the
program has no NVTX steps, by the recorded steps. Where that line has the
recorded loop's time, the JSON gets record_overhead_per_step_ns: how much longer a recorded
step took than a plain one, a bound on how much recording lengthened host-side gaps (the
table's last column).
The `one-off` finding (gaps far longer than the usual gap of their cause, beyond that usual
gap) is shown per recorded step beside it, with how much of it the trace's overhead records
cover (warpscope's flushes): recording time, not the program's.
RUNS_JSONL one JSON line per plain run ({"fixed": bool, "timed_steps": N, "loop_ns": T}).
FIXED_JSONL (optional) the same lines from recorded runs of the fix: with the recorded runs
of the problem they give the saving as the recording sees it (recorded_saving_per_step_ns,
the table's "vs rec." column), not checked: where the cost matches that but not the plain
saving, the rule is right and recording moved the program (it slows the host).
Prints a table and PASS/FAIL lines; the exit status is the number of failed checks.
"""
import argparse
import json
import re
import statistics
import sys

EXPECTED_RULE = {
    "item": "blocking-read",
    "pageable": "pageable-copy",
    "loader": "host-range",
    "launch": "launch-bound",
    "serial": "copy-no-overlap",
    "torch_item": "blocking-read",
    # Held-out programs (tests/gpu/advise/heldout.py and heldout.cu), written after the rules;
    # a case "h_loader@constant" is program h_loader with its steps marked that way.
    "h_pageable": "pageable-copy",
    "h_loader": "host-range",
    "h_tiny": "launch-bound",
    "h_item": "blocking-read",
    "h_serial": "copy-no-overlap",
    "h_sync": "sync-idle",
    "h_graph": "launch-bound",
    "h_compiled": "blocking-read",
    "c_tinyloop": "launch-bound",
    "c_readback": "blocking-read",
    "c_devsync": "sync-idle",
}


def expected_rule(case):
    """The rule case NAME or NAME@RANGES was written to show."""
    return EXPECTED_RULE.get(case.split("@")[0])


def program_line(text):
    """The program's own JSON line in a log (the last line that parses and has "problem")."""
    found = None
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and "problem" in obj:
            found = obj
    return found


_COVER = re.compile(r"cover ([0-9.]+) (ns|us|ms|s) of these gaps")
_UNIT_NS = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def one_off(findings):
    """The one-off findings' cost, and how much of it overhead records cover (ns; None where
    the evidence names none)."""
    cost, covered = 0, None
    for f in findings:
        if f.get("rule") != "one-off":
            continue
        cost += f.get("cost_ns", 0)
        m = _COVER.search(f.get("evidence", ""))
        if m:
            covered = (covered or 0) + float(m.group(1)) * _UNIT_NS[m.group(2)]
    return cost, covered


def recording_figures(advise, record_log, expected):
    """One recorded run's figures: its top rule and cost, the expected finding's cost per
    recorded step, its one-off cost and covered overhead per step, and its loop time."""
    findings = advise.get("findings", [])
    top = findings[0] if findings else None
    finding = next((f for f in findings if f.get("rule") == expected), None)
    recorded = program_line(record_log)
    out = {"top_rule": top.get("rule") if top else None,
           "top_cost_ns": top.get("cost_ns") if top else None,
           "gpu_busy_percent": advise.get("gpu_busy_percent"),
           "finding": finding, "recorded": recorded}
    if finding is not None and recorded is not None and recorded.get("steps"):
        one_off_ns, covered_ns = one_off(findings)
        # A finding covers the steady steps: the NVTX steps advise found less its warm-up
        # steps; without steps, every recorded step (warm-up included).
        steady = advise.get("steps", 0) - advise.get("warmup_steps", 0)
        steps = steady if steady > 0 else recorded["steps"]
        out["steps_divided_by"] = steps
        out["cost_per_step_ns"] = finding["cost_ns"] / steps
        # The most the fix could save by the finding's own account (cost_max_ns: a wait's idle
        # beyond its lead, should the host keep up); checked where it makes a range.
        out["cost_max_per_step_ns"] = (finding.get("cost_max_ns") or finding["cost_ns"]) / steps
        out["one_off_per_step_ns"] = one_off_ns / steps
        out["one_off_overhead_covered_ns"] = covered_ns
    return out


def spread_of(values):
    """(max - min) / median, the run-to-run spread of a list of times."""
    return (max(values) - min(values)) / statistics.median(values)


def check_case(name, recordings, runs, tolerance, recorded_fixed=()):
    """One case's figures and verdicts, as a dict. `recordings`: (advise report, record log)
    of each recorded run. The top finding must be the expected rule in every recording; the
    cost compared with the saving is the median over the recordings of the expected
    finding's cost per recorded step, so one recording's luck (this program's pageable copies
    vary 10-30% from run to run) weighs as little as one plain run's."""
    expected = expected_rule(name)
    each = [recording_figures(a, log, expected) for a, log in recordings]
    problem = [r["loop_ns"] for r in runs if not r.get("fixed")]
    fixed = [r["loop_ns"] for r in runs if r.get("fixed")]
    timed = runs[0]["timed_steps"] if runs else 0
    tops = [e["top_rule"] for e in each]
    first = each[0] if each else {}
    result = {
        "case": name,
        "expected_rule": expected,
        "recordings": len(each),
        "top_rules": tops,
        # The rule most recordings put first (the first recording's on a tie).
        "top_rule": max(tops, key=tops.count) if tops else None,
        "top_cost_ns": first.get("top_cost_ns"),
        "runs_problem": len(problem),
        "runs_fixed": len(fixed),
        "gpu_busy_percent": first.get("gpu_busy_percent"),
    }
    checks = {"top_finding": bool(tops) and all(t == expected for t in tops)}
    costs = [e["cost_per_step_ns"] for e in each if "cost_per_step_ns" in e]
    if len(costs) != len(each) or not each or not problem or not fixed or timed <= 0:
        result["problem"] = (
            "no recording" if not each else
            "no finding of the expected rule" if any(e["finding"] is None for e in each) else
            "no program line in the record log" if any(e["recorded"] is None for e in each) else
            "no runs of both modes")
        checks["cost_within_tolerance"] = False
        result["checks"] = checks
        return result
    cost_per_step = statistics.median(costs)
    med_problem = statistics.median(problem)
    med_fixed = statistics.median(fixed)
    saving_per_step = (med_problem - med_fixed) / timed
    error = (cost_per_step - saving_per_step) / saving_per_step if saving_per_step > 0 else None
    result.update({
        "finding_cost_ns": statistics.median(e["finding"]["cost_ns"] for e in each),
        "steps_recorded": first["recorded"]["steps"],
        "timed_steps": timed,
        "cost_per_step_ns": cost_per_step,
        "cost_per_step_each_ns": costs,
        "cost_max_per_step_ns": statistics.median(e["cost_max_per_step_ns"] for e in each),
        "cost_spread": spread_of(costs) if cost_per_step > 0 else None,
        "median_problem_ns": med_problem,
        "median_fixed_ns": med_fixed,
        "saving_per_step_ns": saving_per_step,
        "relative_error": error,
        "run_spread": max(spread_of(v) for v in (problem, fixed)),
        "one_off_per_step_ns": statistics.median(e["one_off_per_step_ns"] for e in each),
    })
    covered = [e["one_off_overhead_covered_ns"] for e in each
               if e["one_off_overhead_covered_ns"] is not None]
    result["one_off_overhead_covered_ns"] = statistics.median(covered) if covered else None
    loops = [e["recorded"]["loop_ns"] for e in each
             if e["recorded"].get("loop_ns") and e["recorded"].get("timed_steps") == timed]
    if loops:
        # What recording added to each timed step: host-side gaps (catch-up after a wait,
        # launch gaps) read longer in the trace than in the plain runs by about this much.
        result["record_overhead_per_step_ns"] = (statistics.median(loops) - med_problem) / timed
        fixed_loops = [r["loop_ns"] for r in recorded_fixed
                       if r.get("loop_ns") and r.get("timed_steps") == timed]
        if fixed_loops:
            recorded_saving = (statistics.median(loops) - statistics.median(fixed_loops)) / timed
            result["recorded_fixed_runs"] = len(fixed_loops)
            result["recorded_saving_per_step_ns"] = recorded_saving
            result["recorded_error"] = ((cost_per_step - recorded_saving) / recorded_saving
                                        if recorded_saving > 0 else None)
    checks["cost_within_tolerance"] = error is not None and abs(error) <= tolerance
    cost_max = result["cost_max_per_step_ns"]
    if cost_max > cost_per_step * (1 + tolerance):
        checks["saving_within_range"] = (
            cost_per_step * (1 - tolerance) <= saving_per_step <= cost_max * (1 + tolerance))
    result["checks"] = checks
    return result


def fmt_us(ns):
    return "-" if ns is None else f"{ns / 1000:.1f}"


def render(results):
    lines = [f"{'case':<9} {'top finding':<16} {'expected':<16} {'cost/step us':>13} "
             f"{'max/step us':>12} {'saved/step us':>14} {'error':>7} {'spread':>7} "
             f"{'cost spread':>11} {'rec. added/step us':>18} {'one-off/step us':>15} "
             f"{'vs rec.':>8}"]
    for r in results:
        err = r.get("relative_error")
        spread = r.get("run_spread")
        cost_spread = r.get("cost_spread")
        rec_err = "-" if r.get("recorded_error") is None else f"{100 * r['recorded_error']:+.1f}%"
        lines.append(
            f"{r['case']:<9} {str(r['top_rule']):<16} {str(r['expected_rule']):<16} "
            f"{fmt_us(r.get('cost_per_step_ns')):>13} {fmt_us(r.get('cost_max_per_step_ns')):>12} "
            f"{fmt_us(r.get('saving_per_step_ns')):>14} "
            f"{'-' if err is None else f'{100 * err:+.1f}%':>7} "
            f"{'-' if spread is None else f'{100 * spread:.1f}%':>7} "
            f"{'-' if cost_spread is None else f'{100 * cost_spread:.1f}%':>11} "
            f"{fmt_us(r.get('record_overhead_per_step_ns')):>18} "
            f"{fmt_us(r.get('one_off_per_step_ns')):>15} "
            f"{rec_err:>8}")
    for r in results:
        for check, ok in r["checks"].items():
            if check == "top_finding":
                detail = (f"(top: {', '.join(map(str, r['top_rules']))}; "
                          f"expected: {r['expected_rule']})")
            elif "problem" in r:
                detail = f"({r['problem']})"
            elif check == "saving_within_range":
                detail = (f"(saved {fmt_us(r['saving_per_step_ns'])} us a step; reported "
                          f"{fmt_us(r['cost_per_step_ns'])} to "
                          f"{fmt_us(r['cost_max_per_step_ns'])} us)")
            elif r["relative_error"] is not None:
                detail = f"(error {100 * r['relative_error']:+.1f}%)"
            else:
                detail = "(no saving measured)"
            lines.append(f"{'PASS' if ok else 'FAIL'} advise_{r['case']}_{check} {detail}".rstrip())
    return "\n".join(lines)


def load_advise(path):
    """An advise JSON report, its head figures ("scalars") at the top level beside the tables;
    one with no findings and the error where it cannot be read."""
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
        return {**report.get("scalars", {}), **report}
    except (OSError, ValueError) as e:
        return {"findings": [], "error": str(e)}


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def load_jsonl(path):
    runs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            obj = program_line(line)
            if obj is not None:
                runs.append(obj)
    return runs


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", default=[],
                        help="NAME:ADVISE_JSON[,...]:RECORD_LOG[,...]:RUNS_JSONL[:FIXED_JSONL]")
    parser.add_argument("--json", help="write every figure here")
    parser.add_argument("--tolerance", type=float, default=0.1)
    args = parser.parse_args(argv)
    results = []
    for spec in args.case:
        name, advise_paths, log_paths, runs_path, *fixed_path = spec.split(":", 4)
        advise_paths, log_paths = advise_paths.split(","), log_paths.split(",")
        if len(advise_paths) != len(log_paths):
            parser.error(f"--case {name}: {len(advise_paths)} advise reports but "
                         f"{len(log_paths)} record logs; give one of each per recording")
        recordings = [(load_advise(a), read_text(log)) for a, log in zip(advise_paths, log_paths)]
        try:
            runs = load_jsonl(runs_path)
        except OSError:
            runs = []
        recorded_fixed = []
        if fixed_path:
            try:
                recorded_fixed = load_jsonl(fixed_path[0])
            except OSError:
                pass
        results.append(check_case(name, recordings, runs, args.tolerance, recorded_fixed))
    print(render(results))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
    return sum(1 for r in results for ok in r["checks"].values() if not ok)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
