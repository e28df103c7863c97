"""Checks `warpscope job` on a recorded multi-GPU job against what the job was designed to do
(tests/gpu/distributed/gpu_distributed.sh runs the jobs; tests/gpu/distributed/ddp_job.py plants the problem).

    python3 check_job.py CASE JOB_JSON [--late-rank R] [--late-ms T] [--measured-ms M]
                         [--warmup N] [--slow-rank R] [--cause TEXT]
                         [--ops AllGather,ReduceScatter]

JOB_JSON is `warpscope job DIR --format json`. Prints one PASS/FAIL line per check and exits
with the number of failures:
  - the straggler: the late or slow rank, or nobody for a balanced job;
  - each other rank's time lost waiting per timed step (steps from --warmup on), median and
    total, within 10% of the designed delay (--late-ms), and, with --measured-ms, within 10%
    of what the delay costs a step in plain runs (the late job's step time less the balanced
    job's, measured without warpscope): the independent reference where the late rank falls
    further behind than its stall;
  - the cause names what was planted (--cause, a substring);
  - the collectives present (--ops);
  - on one host, the last arrival by kernel start agrees with the duration rule.
"""
import argparse
import json
import statistics
import sys


def check(results, name, ok, detail):
    results.append(ok)
    print(f"{'PASS' if ok else 'FAIL'} {name} {detail}", flush=True)


def lost_per_step(job, rank, warmup):
    rows = [s for s in job["steps"] if s["rank"] == rank and s["step"] >= warmup]
    return [s["lost_ms"] for s in rows]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case")
    p.add_argument("job_json")
    p.add_argument("--late-rank", type=int)
    p.add_argument("--slow-rank", type=int)
    p.add_argument("--late-ms", type=float, default=0.0)
    p.add_argument("--measured-ms", type=float, default=float("nan"))
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--cause", default="")
    p.add_argument("--ops", default="")
    a = p.parse_args()
    with open(a.job_json) as f:
        job = json.load(f)
    s = job["scalars"]
    results = []
    expected = a.late_rank if a.late_rank is not None else a.slow_rank
    check(results, f"{a.case}/straggler", s["straggler"] == expected,
          f"named {s['straggler']}, planted {expected}: {s['verdict']}")
    if a.cause:
        check(results, f"{a.case}/cause", a.cause in s["cause"], s["cause"])
    if a.late_ms > 0:
        for r in sorted({row["rank"] for row in job["ranks"]}):
            if r == expected:
                continue
            lost = lost_per_step(job, r, a.warmup)
            if not lost:
                check(results, f"{a.case}/lost_rank{r}", False, "no timed steps")
                continue
            median, total = statistics.median(lost), sum(lost)
            designed = a.late_ms * len(lost)
            ok = abs(median - a.late_ms) <= 0.1 * a.late_ms and abs(total - designed) <= 0.1 * designed
            check(results, f"{a.case}/lost_rank{r}", ok,
                  f"median {median:.2f} ms a step, {total:.1f} ms over {len(lost)} steps "
                  f"(designed {a.late_ms:.1f} ms a step, {designed:.1f} ms)")
            if a.measured_ms == a.measured_ms:  # not NaN
                ok = abs(median - a.measured_ms) <= 0.1 * a.measured_ms
                check(results, f"{a.case}/lost_vs_measured_rank{r}", ok,
                      f"median {median:.2f} ms a step against {a.measured_ms:.2f} ms measured "
                      f"(late job's plain step less the balanced job's)")
    # On one host the ranks share a clock: the last arrival by kernel start must agree with the
    # duration rule where the arrivals differ by more than jitter.
    uneven = [i for i in job["instances"]
              if i["clock_last_rank"] is not None and i["spread_ms"] >= 1.0]
    if uneven:
        same = sum(1 for i in uneven if i["clock_last_rank"] == i["last_rank"])
        check(results, f"{a.case}/clock_agrees", same >= 0.9 * len(uneven),
              f"last rank by start time = by duration at {same} of {len(uneven)} collectives "
              f"spread by 1 ms or more")
    if a.ops:
        present = {row["op"] for row in job["collectives"]}
        want = set(a.ops.split(","))
        check(results, f"{a.case}/ops", want <= present, f"{sorted(present)}")
    if job.get("problems"):
        print(f"note {a.case}: " + "; ".join(r["problem"] for r in job["problems"]))
    return sum(1 for ok in results if not ok)


if __name__ == "__main__":
    sys.exit(main())
