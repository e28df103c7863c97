"""Time and peak memory of `warpscope job` as a job grows in ranks and in trace size.

Writes synthetic data-parallel jobs with the fixture tool (`warpscope-fixture ddp_job`,
tests/fixtures/synthetic_job.h: every step a data_load, forward and backward of
--kernels kernels each with their API records and NVTX ranges, two gradient-bucket AllReduces
with their NCCL calls, an optimizer kernel and a loss read; one rank late), then runs
`warpscope job DIR --format json` on each, --runs times, and reports the median wall time and
the median peak RSS (the child's own, from wait4), with the traces' size and event count.
With --late and --on-time, the jobs are built from recorded rank traces instead
(bench/job/scale_job.py: copies of the on-time ranks, jittered, and one of the late rank, on
hosts of 8 ranks), and `job` must name that copy; --kernels is then not used.

    python3 bench/job/job_bench.py [--build build] [--ranks 4,16,64,256] [--kernels 100]
                                   [--steps 50] [--threads 0] [--runs 3] [--out DIR]
                                   [--late LATE.wst --on-time ON_TIME.wst...]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--ranks", default="4,16,64,256")
ap.add_argument("--kernels", default="100", help="kernels per phase, comma list")
ap.add_argument("--steps", type=int, default=50)
ap.add_argument("--threads", type=int, default=0, help="job -j (0: the cores)")
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--out", default="")
ap.add_argument("--keep", action="store_true")
ap.add_argument("--late", default="", help="a recorded late rank's trace (scale_job.py)")
ap.add_argument("--on-time", nargs="*", default=[], help="recorded on-time rank traces")
args = ap.parse_args()
if bool(args.late) != bool(args.on_time):
    sys.exit("warpscope: --late and --on-time go together")
scale_job = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scale_job.py")
fixture = os.path.join(args.build, "bin", "warpscope-fixture")
cli = os.path.join(args.build, "bin", "warpscope")
work = tempfile.mkdtemp(prefix="ws_job_bench")


def measure(cmd):
    """Wall time, the child's own peak RSS (MiB) and its output (through a file: a pipe
    would fill up while wait4 waits)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"failed: {' '.join(cmd)}\n{err.read().decode()[-2000:]}")
        return wall, usage.ru_maxrss / 1024.0, out.read()


rows = []
for kernels in [int(k) for k in args.kernels.split(",")]:
    for ranks in [int(r) for r in args.ranks.split(",")]:
        job = os.path.join(work, f"k{kernels}_r{ranks}")
        os.makedirs(job)
        straggler = 1
        if args.late:
            straggler = ranks // 2 + 1
            subprocess.run([sys.executable, scale_job, job, "--ranks", str(ranks), "--late",
                            args.late, "--straggler", str(straggler), "--on-time",
                            *args.on_time], check=True, stdout=subprocess.DEVNULL)
        else:
            subprocess.run([fixture, "ddp_job", job, "--ranks", str(ranks), "--steps",
                            str(args.steps), "--kernels", str(kernels), "--late-rank", "1"],
                           check=True)
        files = [os.path.join(job, f) for f in os.listdir(job)]
        size = sum(os.path.getsize(f) for f in files)
        walls, rss = [], []
        for _ in range(args.runs):
            wall, peak, out = measure([cli, "job", job, "--format", "json", "-j",
                                       str(args.threads)])
            walls.append(wall)
            rss.append(peak)
        report = json.loads(out)
        assert report["scalars"]["straggler"] == straggler, report["scalars"]["verdict"]
        rows.append({"ranks": ranks, "kernels_per_phase": kernels, "steps": args.steps,
                     "trace_mib": size / ranks / 2**20, "job_mib": size / 2**20,
                     "seconds": statistics.median(walls), "peak_rss_mib": statistics.median(rss),
                     "collectives_matched": report["scalars"]["collectives_matched"]})
        r = rows[-1]
        print(f"ranks {ranks:4d}  kernels/phase {kernels:4d}  trace {r['trace_mib']:6.2f} MiB  "
              f"job {r['job_mib']:8.1f} MiB  {r['seconds']:7.2f} s  peak RSS "
              f"{r['peak_rss_mib']:7.1f} MiB", flush=True)
        if not args.keep:
            shutil.rmtree(job)
if args.out:
    with open(os.path.join(args.out, "job_bench.json"), "w") as f:
        json.dump({"threads": args.threads, "cores": os.cpu_count(), "rows": rows}, f, indent=1)
