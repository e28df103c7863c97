"""`warpscope job` among many ranks built from the bundled 2-rank recording
(bench/job/scale_job.py): 16 ranks on 2 hosts whose clocks differ, the on-time ranks jittered
so that none of them is last at every collective, one copy of the late rank. The job must name
that copy, with the recording's cause (step_<N>/data_load), and name no one when the late copy
is left out.

    python3 tests/job/scaled_job_test.py SOURCE_DIR BUILD_DIR
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

source, build = Path(sys.argv[1]), Path(sys.argv[2])
recorded = source / "examples" / "traces" / "cuda13.0_sm90" / "ddp_late_rank"
tool = source / "bench" / "job" / "scale_job.py"
cli = build / "bin" / "warpscope"
RANKS, STRAGGLER = 16, 11
failures = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def job(folder):
    r = subprocess.run([str(cli), "job", str(folder), "--format", "json"], capture_output=True,
                       text=True, check=False)
    if r.returncode != 0:
        sys.exit(f"warpscope job {folder} failed ({r.returncode}): {r.stderr[-2000:]}")
    return json.loads(r.stdout)


def scale(folder, *late):
    subprocess.run([sys.executable, str(tool), str(folder), "--ranks", str(RANKS),
                    "--on-time", str(recorded / "rank0.wst"), *late, "--straggler",
                    str(STRAGGLER), "--jitter-us", "1000", "--ranks-per-host", "8"], check=True)


with tempfile.TemporaryDirectory(prefix="ws_scaled_job") as tmp:
    late_job, balanced_job = Path(tmp) / "late", Path(tmp) / "balanced"
    scale(late_job, "--late", str(recorded / "rank1.wst"))
    report = job(late_job)
    s = report["scalars"]
    check(s["ranks"] == RANKS and len(report["ranks"]) == RANKS,
          f"{s['ranks']} ranks read, {RANKS} written")
    check(s["shared_clock"] == "no", "2 hosts: no shared clock assumed")
    check(s["straggler"] == STRAGGLER, f"straggler {s['straggler']!r}, designed {STRAGGLER}: "
          f"{s['verdict']}")
    check(s["cause_kind"] == "host" and "data_load" in s["cause_range"],
          f"cause {s['cause_kind']} {s['cause_range']!r}: {s['cause']}")
    problems = [row["problem"] for row in report["problems"]]
    check(not any("two traces say rank" in p or "no trace of rank" in p for p in problems),
          f"every rank once: {problems}")
    scale(balanced_job)
    s = job(balanced_job)["scalars"]
    check(s["straggler"] in ("", None), f"no straggler without the late rank: {s['verdict']}")

sys.exit(1 if failures else 0)
