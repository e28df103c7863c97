#!/usr/bin/env python3
"""Time and peak memory of each warpscope command against trace size.

Writes synthetic traces of growing size with warpscope_bench_trace (bench/python/bench_trace.cc:
NVTX steps of 48 kernel launches, a copy, a memset and a sync; the same with PM samples every
10 us, a PC sample batch and a device block allocated and freed per step for `stalls`,
`occupancy`, `tail` and `memory`; a data-parallel job
of 4 rank traces for `job`; each of the size asked for), runs each command on
each one and records wall seconds, peak RSS (the child's ru_maxrss, from wait4), peak RSS per
MB of trace and events per second. Fits peak RSS against events per command (bytes per event).
Results go to OUT/size_bench.csv, size_bench.md and size_bench.svg. See bench/size/README.md.
"""
import argparse
import csv
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

SIZES_MB = [10, 30, 100, 300, 1000]
MAX_SIZES_MB = SIZES_MB + [3000, 10000]
PM_NS = 10_000  # PM sample interval of the "samples" trace: 2.5 samples per kernel
JOB_RANKS = 4

# name -> (input, argv after the binary); input "trace" is one .wst, "samples" one .wst with PM
# and PC samples, "job" a folder of rank traces; {t} is the input, {o} an output path under
# the work folder. The Chrome, Perfetto and Kineto exports write to standard output (`-o -`),
# which the bench reads and counts: a 10 GB trace's JSON (some 100 GB) takes no disk.
COMMANDS = {
    "info": ("trace", ["info", "{t}"]),
    "summary": ("trace", ["summary", "{t}"]),
    "advise": ("trace", ["advise", "{t}"]),
    "diff": ("trace", ["diff", "{t}", "{t}"]),
    "timeline": ("trace", ["timeline", "{t}", "--svg", "{o}.svg"]),
    "precision": ("trace", ["precision", "{t}"]),
    "stalls": ("samples", ["stalls", "{t}"]),
    "occupancy": ("samples", ["occupancy", "{t}"]),
    "tail": ("samples", ["tail", "{t}"]),
    "memory": ("samples", ["memory", "{t}"]),
    "job": ("job", ["job", "{t}"]),
    "export-chrome": ("trace", ["export", "{t}", "--all", "--format", "chrome", "-o", "-"]),
    "export-perfetto": ("trace", ["export", "{t}", "--all", "--format", "perfetto", "-o", "-"]),
    # Ten steps of the trace (a step is 103 events): the slice read while loading.
    "export-perfetto-steps": ("trace", ["export", "{t}", "--step", "100-109", "--format",
                                        "perfetto", "-o", "-"]),
    "export-kineto": ("trace", ["export", "{t}", "--all", "--format", "kineto", "-o", "-"]),
    "export-parquet": ("trace", ["export", "{t}", "--format", "parquet", "-o", "{o}.parquet"]),
}
OUTPUT_SUFFIXES = (".svg", ".parquet")
KINDS = ("trace", "samples", "job")  # the inputs, each written, measured and deleted in turn


def mem_available_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def disk_free(path):
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def open_temp_bytes(pid, tmp):
    """Bytes of the files under `tmp` that process `pid` has open (its temporary files are
    unlinked as soon as made: the links of /proc/PID/fd still name and size them)."""
    total = 0
    fd_dir = f"/proc/{pid}/fd"
    try:
        fds = os.listdir(fd_dir)
    except OSError:
        return 0
    for fd in fds:
        try:
            if os.readlink(os.path.join(fd_dir, fd)).startswith(tmp):
                total += os.stat(os.path.join(fd_dir, fd)).st_size
        except OSError:
            pass
    return total


class Run:
    """One command's measures: wall and CPU seconds, peak RSS, the bytes it wrote to standard
    output (kept in `out` only when asked), the most bytes of temporary files it held open at
    once (`disk`, sampled every 20 ms) and its exit status (-9: killed at the timeout)."""

    def __init__(self):
        self.seconds = self.cpu = 0.0
        self.rss = self.out_bytes = self.disk = 0
        self.code = 0
        self.out = b""


def run_with_rusage(argv, timeout_s, env=None, keep_output=True, tmp=None):
    """Runs argv to its end (or kills it at timeout_s) and returns its Run. The child is reaped
    here with wait4, so that ru_maxrss and the CPU time are this child's (and its own
    children's). Its standard output is read on a thread as it comes, in 1 MiB reads, and
    counted; kept only with keep_output (an export's whole output is never held)."""
    run = Run()
    chunks = []
    start = time.monotonic()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=devnull, env=env)

    def drain():
        while True:
            chunk = proc.stdout.read1(1 << 20)
            if not chunk:
                return
            run.out_bytes += len(chunk)
            if keep_output:
                chunks.append(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    killed = False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid != 0:
            break
        if tmp:
            run.disk = max(run.disk, open_temp_bytes(proc.pid, tmp))
        if time.monotonic() - start > timeout_s and not killed:
            proc.kill()
            killed = True
        time.sleep(0.02)
    run.seconds = time.monotonic() - start
    reader.join()
    proc.stdout.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    run.code = -9 if killed else proc.returncode
    run.cpu = usage.ru_utime + usage.ru_stime
    run.rss = usage.ru_maxrss * 1024
    run.out = b"".join(chunks)
    return run


def generator_args(kind):
    return {"trace": [], "samples": ["--pm-ns", str(PM_NS), "--pc", "--alloc"],
            "job": ["--ranks", str(JOB_RANKS)]}[kind]


def input_bytes(path):
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
    return os.path.getsize(path)


def make_input(bench_trace, kind, path, rows):
    """Writes the trace (or the job folder) of about `rows` events; its size in bytes."""
    if kind == "job":
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
    # The generator's writer drops events when the disk falls behind (buffer full) and then
    # exits 1; the trace is whole all the same (info counts the drops), so it is used.
    if subprocess.run([bench_trace, path, str(rows)] + generator_args(kind)).returncode != 0:
        if not os.path.exists(path) or input_bytes(path) == 0:
            sys.exit(f"size_bench: {bench_trace} wrote no {path}")
        print(f"size_bench: {path}: the generator dropped events; using it as written",
              file=sys.stderr)
    return input_bytes(path)


def bytes_per_row(bench_trace, kind, work):
    """Bytes per event of the generator, measured once on a small input."""
    probe = os.path.join(work, f"probe_{kind}")
    make_input(bench_trace, kind, probe, 200_000)
    size = input_bytes(probe)
    shutil.rmtree(probe) if kind == "job" else os.remove(probe)
    return size / 200_000


def event_count(cli, path, timeout_s):
    """Events of a trace, or of all rank traces in a folder (info's events table)."""
    paths = ([os.path.join(path, f) for f in sorted(os.listdir(path))]
             if os.path.isdir(path) else [path])
    total = 0
    for p in paths:
        run = run_with_rusage([cli, "info", "--format", "json", p], timeout_s)
        if run.code != 0:
            # Events 0: the rates of its commands are then left out (0).
            print(f"size_bench: info {p} exited {run.code} (peak RSS {run.rss / 2**20:.0f} "
                  "MiB); its events are not counted", file=sys.stderr, flush=True)
            return 0
        total += sum(e["count"] for e in json.loads(run.out)["events"])
    return total


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.environ.get("WARPSCOPE_BUILD_DIR", "build"),
                        help="build folder with bin/warpscope and bin/warpscope_bench_trace")
    parser.add_argument("--work", default="/tmp/warpscope-size-bench",
                        help="folder for the traces and outputs (kept between runs)")
    parser.add_argument("--out", default=None,
                        help="folder for the CSV, table and SVG (default: --work)")
    parser.add_argument("--sizes", default=None,
                        help="comma-separated trace sizes in MB (default: 10,30,100,300,1000)")
    parser.add_argument("--max", action="store_true",
                        help="go on to 3 GB and 10 GB, with no time budget (needs about 2.2x "
                        "the largest size on disk)")
    parser.add_argument("--budget-min", type=float, default=15,
                        help="stop before a size whose predicted time (the last size's, scaled) "
                        "would end the run after this many minutes; 0: no budget")
    parser.add_argument("--commands", default=",".join(COMMANDS),
                        help="comma-separated subset of: " + ",".join(COMMANDS))
    parser.add_argument("--runs", type=int, default=1,
                        help="runs per command and size; the medians are reported")
    parser.add_argument("--timeout", type=float, default=600,
                        help="seconds one command may run; a command that runs out is not run "
                        "on larger traces")
    parser.add_argument("--max-rss-gb", type=float, default=8,
                        help="a command whose peak RSS, scaled from the previous size, would pass "
                        "this (or 80%% of the available memory) is not run")
    parser.add_argument("--keep", action="store_true", help="keep the traces for the next run")
    args = parser.parse_args()
    args.sizes = [float(s) for s in args.sizes.split(",")] if args.sizes else (
        MAX_SIZES_MB if args.max else SIZES_MB)
    if args.max:
        args.budget_min = 0
    args.commands = [c for c in args.commands.split(",") if c]
    for c in args.commands:
        if c not in COMMANDS:
            sys.exit(f"size_bench: unknown command {c!r}; choose from {','.join(COMMANDS)}")
    return args


class Bench:
    """Runs the commands on one size after another, one input at a time, and keeps their
    rows: [command, size MB, trace bytes, events, wall s, peak RSS MiB, peak RSS / trace
    byte, M events per CPU s, note, CPU s, output bytes, disk bytes]."""

    def __init__(self, args):
        self.args = args
        self.cli = os.path.join(args.build, "bin", "warpscope")
        self.bench_trace = os.path.join(args.build, "bin", "warpscope_bench_trace")
        for tool in (self.cli, self.bench_trace):
            if not os.access(tool, os.X_OK):
                sys.exit(f"size_bench: {tool} is missing; "
                         "build warpscope_cli and warpscope_bench_trace")
        # The Parquet export runs the Python package: the build's extension, this checkout's
        # package. Temporary files (the exports' sorts) go to a folder of the work folder,
        # emptied after each command and removed at the end.
        here = os.path.dirname(os.path.abspath(__file__))
        pythonpath = [os.path.join(here, "..", "..", "python"),
                      os.path.join(os.path.abspath(args.build), "python")]
        self.tmp = os.path.join(args.work, "tmp")
        os.makedirs(self.tmp, exist_ok=True)
        self.env = dict(os.environ, TMPDIR=self.tmp, PYTHONPATH=os.pathsep.join(
            pythonpath + [os.environ.get("PYTHONPATH", "")]))
        self.kinds = [k for k in KINDS if any(COMMANDS[c][0] == k for c in args.commands)]
        self.per_row = {k: bytes_per_row(self.bench_trace, k, args.work) for k in self.kinds}
        self.rows = []
        self.inputs = []  # the inputs written and not yet deleted
        self.given_up = {}  # command -> why it is not run on larger traces
        # command -> (peak RSS, wall seconds, disk bytes) per trace byte at the previous size
        self.last_ratio = {}

    def why_not(self, command, trace_bytes):
        """Why a command is not run on this input (scaled from the previous size), or ""."""
        if command in self.given_up:
            return self.given_up[command]
        rss, seconds, disk = (r * trace_bytes for r in self.last_ratio.get(command, (0, 0, 0)))
        if rss > min(0.8 * mem_available_bytes(), self.args.max_rss_gb * 1e9):
            return f"not run (about {rss / 1e9:.0f} GB of memory)"
        if seconds > self.args.timeout:
            return f"not run (about {seconds / 60:.0f} min, past --timeout)"
        free = disk_free(self.args.work)
        if disk > 0.9 * free:
            return (f"not run (about {disk / 1e9:.0f} GB of temporary files and output, "
                    f"{free / 1e9:.0f} GB free)")
        return ""

    @staticmethod
    def output_bytes(out):
        """Bytes of the files a command wrote under the work folder (SVG, Parquet)."""
        return sum(input_bytes(out + suffix) for suffix in OUTPUT_SUFFIXES
                   if os.path.exists(out + suffix))

    def clean_outputs(self, out):
        for suffix in OUTPUT_SUFFIXES:
            if os.path.isdir(out + suffix):
                shutil.rmtree(out + suffix)
            elif os.path.exists(out + suffix):
                os.remove(out + suffix)
        for name in os.listdir(self.tmp):
            path = os.path.join(self.tmp, name)
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)

    def run_command(self, command, size_mb, path, trace_bytes, events):
        first = [command, size_mb, trace_bytes, events]
        why = self.why_not(command, trace_bytes)
        if why:
            if why.startswith("not run (about"):
                self.given_up[command] = why
            print(f"{command:16s} {size_mb:6.0f} MB {why}", flush=True)
            return first + ["", "", "", "", why, "", "", ""]
        out = os.path.join(self.args.work, f"out_{command}")
        argv = [self.cli] + [a.format(t=path, o=out) for a in COMMANDS[command][1]]
        runs, note = [], ""
        for _ in range(self.args.runs):
            run = run_with_rusage(argv, self.args.timeout, self.env, keep_output=False,
                                  tmp=self.tmp)
            run.disk += self.output_bytes(out)
            self.clean_outputs(out)
            runs.append(run)
            if run.code == -9:
                note = f"timed out after {self.args.timeout:.0f} s"
                self.given_up[command] = "not run (timed out on a smaller trace)"
            elif run.code != 0:
                note = f"exit {run.code}"
            if note:
                break
        s, c, r, o, d = (statistics.median(getattr(run, f) for run in runs)
                         for f in ("seconds", "cpu", "rss", "out_bytes", "disk"))
        self.last_ratio[command] = (r / trace_bytes, s / trace_bytes, d / trace_bytes)
        # Events per CPU second: the rate of one core, whatever else the machine runs.
        rate = events / c if c > 0 and not note else 0
        print(f"{command:16s} {size_mb:6.0f} MB {events:11d} events {s:8.2f} s {c:8.2f} cpu s "
              f"{r / 2**20:8.0f} MiB {rate / 1e6:6.2f} M ev/s out {o / 1e6:.0f} MB "
              f"disk {d / 1e6:.0f} MB {note}", flush=True)
        return first + [f"{s:.2f}", f"{r / 2**20:.0f}", f"{r / trace_bytes:.2f}",
                        f"{rate / 1e6:.2f}", note, f"{c:.2f}", str(o), str(d)]

    def run_kind(self, kind, size_mb):
        """Writes the input of `kind` at `size_mb`, runs its commands and deletes it (unless
        --keep); False when the disk is too small for it."""
        if disk_free(self.args.work) < 1.1 * size_mb * 1e6:
            print(f"size_bench: not enough disk for the {size_mb:g} MB {kind}; stopping",
                  file=sys.stderr)
            return False
        path = os.path.join(self.args.work, f"{kind}_{int(size_mb)}MB" +
                            ("" if kind == "job" else ".wst"))
        self.inputs.append(path)
        if not os.path.exists(path):
            made = time.monotonic()
            make_input(self.bench_trace, kind, path, int(size_mb * 1e6 / self.per_row[kind]))
            print(f"size_bench: wrote {path} in {time.monotonic() - made:.0f} s", flush=True)
        trace_bytes = input_bytes(path)
        events = event_count(self.cli, path, self.args.timeout)
        for command in self.args.commands:
            if COMMANDS[command][0] == kind:
                self.rows.append(self.run_command(command, size_mb, path, trace_bytes, events))
        if not self.args.keep:
            self.delete_inputs()
        return True

    def run_size(self, size_mb):
        """Runs every command on inputs of `size_mb`; False when the disk is too small."""
        return all(self.run_kind(kind, size_mb) for kind in self.kinds)

    def delete_inputs(self):
        for path in self.inputs:
            if os.path.isdir(path):
                shutil.rmtree(path)
            elif os.path.exists(path):
                os.remove(path)
        self.inputs = []


def fit(points):
    """Least-squares (slope, intercept) of y against x, or None with fewer than 2 points."""
    if len(points) < 2:
        return None
    mx = statistics.mean(p[0] for p in points)
    my = statistics.mean(p[1] for p in points)
    sxx = sum((p[0] - mx) ** 2 for p in points)
    if sxx == 0:
        return None
    slope = sum((p[0] - mx) * (p[1] - my) for p in points) / sxx
    return slope, my - slope * mx


def measured(rows, command):
    return [r for r in rows if r[0] == command and r[4] != "" and not r[8]]


def table(rows, commands):
    """The Markdown table (one row per command, "CPU s (wall s), peak RSS MiB, M events per CPU
    s" per size) and the
    fit of peak RSS against events (bytes per event and the intercept)."""
    sizes = sorted({r[1] for r in rows})
    lines = ["| command | " + " | ".join(f"{s:g} MB" for s in sizes) +
             " | bytes/event | base MiB |",
             "|---|" + "---|" * (len(sizes) + 2)]
    for command in commands:
        cells = []
        for s in sizes:
            r = next((r for r in rows if r[0] == command and r[1] == s), None)
            if r is None:
                cells.append("")
            elif r[4] == "":
                cells.append(r[8])
            else:
                cells.append(f"{r[9]} s ({r[4]} s), {r[5]} MiB, {r[7]}" +
                             (f" ({r[8]})" if r[8] else ""))
        f = fit([(r[3], float(r[5]) * 2**20) for r in measured(rows, command)])
        cells += [f"{f[0]:.1f}", f"{f[1] / 2**20:.0f}"] if f else ["", ""]
        lines.append(f"| {command} | " + " | ".join(cells) + " |")
    # Inserted in reverse, so that they read trace, samples, job.
    for kind_command, label in (("job", "events (job)"), ("tail", "events (samples)"),
                                ("info", "events")):
        counts = [next((str(r[3]) for r in rows if r[1] == s and r[0] == kind_command), "")
                  for s in sizes]
        if any(counts):
            lines.insert(2, f"| {label} | " + " | ".join(counts) + " | | |")
    return "\n".join(lines) + "\n"


def svg(rows, commands):
    """Peak RSS (MiB) and seconds against trace MB, log-log, one line per command."""
    import math
    width, height, pad = 460, 320, 50
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
              "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#843c39"]
    parts = []
    for panel, (col, label) in enumerate(((5, "peak RSS, MiB"), (4, "seconds"))):
        pts = [(float(r[2]) / 1e6, float(r[col])) for r in rows if r[col] not in ("", "0")]
        if not pts:
            continue
        lx = [math.log10(p[0]) for p in pts]
        ly = [math.log10(max(p[1], 1e-2)) for p in pts]
        x0, x1 = min(lx), max(lx) + 1e-9
        y0, y1 = min(ly), max(ly) + 1e-9
        ox = panel * (width + 20)

        def xy(x, y):
            return (ox + pad + (math.log10(x) - x0) / (x1 - x0) * (width - 2 * pad),
                    height - pad - (math.log10(max(y, 1e-2)) - y0) / (y1 - y0) * (height - 2 * pad))
        parts.append(f'<text x="{ox + pad}" y="20" font-size="13">{label} against trace MB '
                     f'(log-log; {10 ** x0:.0f} to {10 ** x1:.0f} MB, '
                     f'{10 ** y0:.3g} to {10 ** y1:.3g})</text>')
        parts.append(f'<rect x="{ox + pad}" y="{pad}" width="{width - 2 * pad}" '
                     f'height="{height - 2 * pad}" fill="none" stroke="#999"/>')
        for i, command in enumerate(commands):
            line = [(float(r[2]) / 1e6, float(r[col])) for r in measured(rows, command)]
            if not line:
                continue
            coords = " ".join(f"{a:.1f},{b:.1f}" for a, b in (xy(*p) for p in line))
            color = colors[i % len(colors)]
            parts.append(f'<polyline points="{coords}" fill="none" stroke="{color}"/>')
            if panel == 0:
                parts.append(f'<text x="{2 * (width + 20) - 10}" y="{pad + 14 * i}" '
                             f'font-size="11" fill="{color}">{command}</text>')
    total = 2 * (width + 20) + 120
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="{height}" '
            f'font-family="sans-serif">' + "".join(parts) + "</svg>\n")


def write_results(rows, commands, out_dir):
    """The CSV, the table and the SVG of the rows so far."""
    header = ["command", "size_mb", "trace_bytes", "events", "seconds", "peak_rss_mib",
              "rss_per_trace_byte", "m_events_per_cpu_s", "note", "cpu_seconds",
              "output_bytes", "disk_bytes"]
    with open(os.path.join(out_dir, "size_bench.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    text = table(rows, commands)
    with open(os.path.join(out_dir, "size_bench.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out_dir, "size_bench.svg"), "w") as f:
        f.write(svg(rows, commands))
    return text


def main():
    args = parse_args()
    os.makedirs(args.work, exist_ok=True)
    out_dir = args.out or args.work
    os.makedirs(out_dir, exist_ok=True)
    bench = Bench(args)
    # Killed with SIGTERM, the run still deletes its traces and temporary files (finally).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("size_bench: terminated"))
    started = time.monotonic()
    last_size, last_seconds = None, 0.0
    try:
        for size_mb in args.sizes:
            if args.budget_min > 0 and last_size is not None:
                predicted = last_seconds * size_mb / last_size
                if time.monotonic() - started + predicted > 60 * args.budget_min:
                    print(f"size_bench: {size_mb:g} MB would take about {predicted / 60:.0f} "
                          f"min, past --budget-min {args.budget_min:g}; stopping (--max goes on)",
                          file=sys.stderr)
                    break
            size_start = time.monotonic()
            ok = bench.run_size(size_mb)
            # Written after each size, so that a run stopped later keeps what it measured.
            text = write_results(bench.rows, args.commands, out_dir)
            if not ok:
                break
            last_size, last_seconds = size_mb, time.monotonic() - size_start
    finally:
        # The traces, whatever stopped the run (--keep keeps them), and the temporary files.
        if not args.keep:
            bench.delete_inputs()
        shutil.rmtree(bench.tmp, ignore_errors=True)
    print(write_results(bench.rows, args.commands, out_dir))


if __name__ == "__main__":
    main()
