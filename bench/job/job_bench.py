"""Time and peak memory of `warpscope job` as a job grows in ranks and in trace size.

Writes synthetic data-parallel jobs with the fixture tool (`warpscope-fixture ddp_job`,
tests/fixtures/synthetic_job.h: every step a data_load, forward and backward of
--kernels kernels each with their API records and NVTX ranges, two gradient-bucket AllReduces
with their NCCL calls, an optimizer kernel and a loss read; one rank late), then runs
`warpscope job DIR --format json` on each, --runs times, and reports the median wall time and
the median peak RSS (the child's own, from wait4), with the traces' size and event count.

    python3 bench/job/job_bench.py [--build build] [--ranks 4,16,64,256] [--kernels 100]
                                   [--steps 50] [--threads 0] [--runs 3] [--out DIR]
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
ap.add_argument("--threads", type=int, default=0, help="job -j (0: cores, at most 8)")
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--out", default="")
ap.add_argument("--keep", action="store_true")
args = ap.parse_args()
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
        assert report["scalars"]["straggler"] == 1, report["scalars"]["verdict"]
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
