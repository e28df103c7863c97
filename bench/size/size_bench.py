#!/usr/bin/env python3
"""Time and peak memory of each warpscope command against trace size.

Writes synthetic traces of growing size with warpscope_bench_trace (bench/python/bench_trace.cc:
NVTX steps of 48 kernel launches, a copy, a memset and a sync), runs each command on each one
and records wall seconds, peak RSS (the child's ru_maxrss, from wait4) and events per second.
Results go to OUT/size_bench.csv and OUT/size_bench.md. See bench/size/README.md.
"""
import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import time

SIZES_MB = [10, 30, 100, 300, 1000]
MAX_SIZES_MB = SIZES_MB + [3000, 10000]

# name -> argv after the binary; {t} is the trace, {o} an output path under the work folder.
COMMANDS = {
    "info": ["info", "{t}"],
    "summary": ["summary", "{t}"],
    "advise": ["advise", "{t}"],
    "diff": ["diff", "{t}", "{t}"],
    "timeline": ["timeline", "{t}", "--svg", "{o}.svg"],
    "export-chrome": ["export", "{t}", "--format", "chrome", "-o", "{o}.json"],
    "export-perfetto": ["export", "{t}", "--format", "perfetto", "-o", "{o}.pftrace"],
    "export-kineto": ["export", "{t}", "--format", "kineto", "-o", "{o}.kineto.json"],
}


def mem_available_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def run_with_rusage(argv, timeout_s):
    """(seconds, peak RSS bytes, exit status, stdout) of argv; status -9 on timeout. The child
    is reaped here with wait4, so that ru_maxrss is this child's alone."""
    start = time.monotonic()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=devnull)
    chunks = []
    deadline = start + timeout_s
    os.set_blocking(proc.stdout.fileno(), False)
    killed = False
    while True:
        try:
            chunk = proc.stdout.read()
        except BlockingIOError:
            chunk = None
        if chunk:
            chunks.append(chunk)
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid != 0:
            break
        if time.monotonic() > deadline and not killed:
            proc.kill()
            killed = True
        time.sleep(0.005)
    rest = proc.stdout.read()
    if rest:
        chunks.append(rest)
    proc.returncode = os.waitstatus_to_exitcode(status)
    code = -9 if killed else proc.returncode
    return time.monotonic() - start, usage.ru_maxrss * 1024, code, b"".join(chunks)


def make_trace(bench_trace, path, target_bytes, bytes_per_row):
    rows = max(1000, int(target_bytes / bytes_per_row))
    # The generator's writer drops events when the disk falls behind (buffer full) and then
    # exits 1; the trace is whole all the same (info counts the drops), so it is used.
    if subprocess.run([bench_trace, path, str(rows)]).returncode != 0:
        if not os.path.exists(path):
            sys.exit(f"size_bench: {bench_trace} wrote no {path}")
        print(f"size_bench: {path}: the generator dropped events; using the trace as written",
              file=sys.stderr)
    return os.path.getsize(path)


def event_count(cli, trace, timeout_s):
    _, _, code, out = run_with_rusage([cli, "info", "--format", "json", trace], timeout_s)
    if code != 0:
        return 0
    return sum(json.loads(out)["event_counts"].values())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.environ.get("WARPSCOPE_BUILD_DIR", "build"),
                        help="build folder with bin/warpscope and bin/warpscope_bench_trace")
    parser.add_argument("--work", default="/tmp/warpscope-size-bench",
                        help="folder for the traces and outputs (kept between runs)")
    parser.add_argument("--out", default=None,
                        help="folder for the CSV and table (default: --work)")
    parser.add_argument("--sizes", default=None,
                        help="comma-separated trace sizes in MB (default: 10,30,100,300,1000)")
    parser.add_argument("--max", action="store_true",
                        help="go on to 3 GB and 10 GB (needs about 2.2x the largest size on disk)")
    parser.add_argument("--commands", default=",".join(COMMANDS),
                        help="comma-separated subset of: " + ",".join(COMMANDS))
    parser.add_argument("--timeout", type=float, default=600,
                        help="seconds one command may run; a command that runs out is not run "
                        "on larger traces")
    parser.add_argument("--max-rss-gb", type=float, default=8,
                        help="a command whose peak RSS, scaled from the previous size, would pass "
                        "this (or 80%% of the available memory) is not run")
    parser.add_argument("--keep", action="store_true", help="keep the traces for the next run")
    args = parser.parse_args()

    cli = os.path.join(args.build, "bin", "warpscope")
    bench_trace = os.path.join(args.build, "bin", "warpscope_bench_trace")
    for tool in (cli, bench_trace):
        if not os.access(tool, os.X_OK):
            sys.exit(f"size_bench: {tool} is missing; "
                     "build warpscope_cli and warpscope_bench_trace")
    sizes = [float(s) for s in args.sizes.split(",")] if args.sizes else (
        MAX_SIZES_MB if args.max else SIZES_MB)
    commands = [c for c in args.commands.split(",") if c]
    for c in commands:
        if c not in COMMANDS:
            sys.exit(f"size_bench: unknown command {c!r}; choose from {','.join(COMMANDS)}")
    os.makedirs(args.work, exist_ok=True)
    out_dir = args.out or args.work
    os.makedirs(out_dir, exist_ok=True)

    # Bytes per event of the generator, measured once on a small trace.
    probe = os.path.join(args.work, "probe.wst")
    subprocess.run([bench_trace, probe, "100000"], check=True)
    bytes_per_row = os.path.getsize(probe) / 100000
    os.remove(probe)

    rows = []
    given_up = {}  # command -> why it is not run on larger traces
    last_ratio = {}  # command -> peak RSS / trace bytes at the previous size
    for size_mb in sizes:
        trace = os.path.join(args.work, f"trace_{int(size_mb)}MB.wst")
        free = os.statvfs(args.work)
        if not os.path.exists(trace):
            if free.f_bavail * free.f_frsize < 2.2 * size_mb * 1e6:
                print(f"size_bench: not enough disk for {size_mb} MB; stopping", file=sys.stderr)
                break
            make_trace(bench_trace, trace, size_mb * 1e6, bytes_per_row)
        trace_bytes = os.path.getsize(trace)
        events = event_count(cli, trace, args.timeout)
        for command in commands:
            if command in given_up:
                rows.append([command, size_mb, trace_bytes, events, "", "", "", given_up[command]])
                continue
            # A command whose memory grows with the trace is not started when it would not fit.
            predicted = last_ratio.get(command, 0) * trace_bytes
            if predicted > min(0.8 * mem_available_bytes(), args.max_rss_gb * 1e9):
                given_up[command] = f"skipped: needs about {predicted / 1e9:.1f} GB"
                rows.append([command, size_mb, trace_bytes, events, "", "", "", given_up[command]])
                continue
            out = os.path.join(args.work, f"out_{command}")
            argv = [cli] + [a.format(t=trace, o=out) for a in COMMANDS[command]]
            seconds, rss, code, _ = run_with_rusage(argv, args.timeout)
            note = ""
            if code == -9:
                note = f"timed out after {args.timeout:.0f} s"
                given_up[command] = "skipped: timed out on a smaller trace"
            elif code != 0:
                note = f"exit {code}"
            last_ratio[command] = rss / trace_bytes
            rate = events / seconds if seconds > 0 and not note else 0
            rows.append([command, size_mb, trace_bytes, events, f"{seconds:.2f}",
                         f"{rss / 2**20:.0f}", f"{rate / 1e6:.2f}", note])
            print(f"{command:16s} {size_mb:6.0f} MB {events:11d} events {seconds:8.2f} s "
                  f"{rss / 2**20:8.0f} MiB {rate / 1e6:6.2f} M ev/s {note}", flush=True)
            for suffix in (".svg", ".json", ".pftrace", ".kineto.json"):
                if os.path.exists(out + suffix):
                    os.remove(out + suffix)
        if not args.keep:
            os.remove(trace)

    header = ["command", "size_mb", "trace_bytes", "events", "seconds", "peak_rss_mib",
              "m_events_per_s", "note"]
    with open(os.path.join(out_dir, "size_bench.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    # The table: one row per command, one column per size, "s / MiB / M ev/s" in each cell.
    sizes_done = sorted({r[1] for r in rows})
    lines = ["| command | " + " | ".join(f"{s:g} MB" for s in sizes_done) + " |",
             "|---|" + "---|" * len(sizes_done)]
    for command in commands:
        cells = []
        for s in sizes_done:
            r = next((r for r in rows if r[0] == command and r[1] == s), None)
            if r is None:
                cells.append("")
            elif r[4] == "":
                cells.append(r[7])
            else:
                cells.append(f"{r[4]} s, {r[5]} MiB, {r[6]} M/s" + (f" ({r[7]})" if r[7] else ""))
        lines.append(f"| {command} | " + " | ".join(cells) + " |")
    events_line = "| events | " + " | ".join(
        str(next(r[3] for r in rows if r[1] == s)) for s in sizes_done) + " |"
    lines.insert(2, events_line)
    with open(os.path.join(out_dir, "size_bench.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
