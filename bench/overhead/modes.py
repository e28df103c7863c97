"""The environments the overhead drivers run a program under, defined once.

Every driver compares the same program run plain, under the CUPTI floor
(bench/overhead/cupti_floor.cc: the activity kinds warpscope enables, records only counted)
and under warpscope; these functions give the variables each mode adds to the environment.

    recording_env(build, output, **settings)  # warpscope through LD_PRELOAD
    floor_env(build, timestamps=False, kinds=None, quiet=True)
                                              # the floor through CUDA_INJECTION64_PATH

and how the drivers that compare modes run them:

    add_build_args(parser, runs=5)            # --build, --out, --runs
    interleaved_runs(modes, runs, run, seed)  # every mode `runs` times, shuffled; medians
    pinned(cmd, cores)                        # a command held to a fixed set of CPU cores
    run_child(cmd, env, timeout, cores)       # runs it: exit status, output, peak RSS
    spread(values)                            # median, min, max, (max - min) / median
"""
import json
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time


def shim_path(build):
    """The injected library of a build or staged copy (a folder with bin/ and lib/)."""
    return f"{build}/lib/libwarpscope.so"


def recording_env(build, output, quiet=True, **settings):
    """warpscope injected with LD_PRELOAD, writing `output` over any earlier file.

    Each keyword is a setting without its prefix: pm_sampling="1" sets
    WARPSCOPE_PM_SAMPLING=1. quiet=False keeps warpscope's stderr lines."""
    env = {"LD_PRELOAD": shim_path(build), "WARPSCOPE_OUTPUT": output,
           "WARPSCOPE_FORCE_OVERWRITE": "1"}
    if quiet:
        env["WARPSCOPE_QUIET"] = "1"
    env.update({f"WARPSCOPE_{name.upper()}": str(value) for name, value in settings.items()})
    return env


def floor_env(build, timestamps=False, kinds=None, quiet=True):
    """The CUPTI floor injected for CUDA and NVTX; timestamps=True also takes a timestamp in
    every API callback, as warpscope's callbacks do. kinds: WS_FLOOR_KINDS ("kernel,launch"),
    None for the floor's default (the kinds warpscope recorded per API call). quiet=False
    keeps the floor's stderr line with its counts ("ws_cupti_floor: N records, M launch
    callbacks ...")."""
    floor = f"{build}/lib/libws_cupti_floor.so"
    env = {"CUDA_INJECTION64_PATH": floor, "NVTX_INJECTION64_PATH": floor}
    if quiet:
        env["WS_FLOOR_QUIET"] = "1"
    if timestamps:
        env["WS_FLOOR_TIMESTAMP_CALLBACK"] = "1"
    if kinds is not None:
        env["WS_FLOOR_KINDS"] = kinds
    return env


def add_build_args(parser, runs=5):
    """The arguments every mode-comparing driver takes: the build, where results go, runs."""
    parser.add_argument("--build", required=True,
                        help="a folder with bin/ and lib/ (staged .gpu)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--runs", type=int, default=runs)


def interleaved_runs(modes, runs, run, seed, log_path=None, deadline=None):
    """Runs each mode `runs` times in one shuffled order (a fixed seed: a rerun repeats it), so
    that drift over the call falls on every mode alike. `run(mode, i)` returns the run's figure,
    or None for a failed run, which is left out. With `log_path`, each run is appended there as
    a JSON line when it ends, so that a time limit keeps what ran. With `deadline` (a
    time.monotonic() value), runs not started by then are not run, and logged as skipped.
    Returns ({mode: [figures]}, {mode: median}) for the modes with at least one figure."""
    order = [(m, i) for i in range(runs) for m in modes]
    random.Random(seed).shuffle(order)
    figures = {m: [] for m in modes}
    for mode, i in order:
        if deadline is not None and time.monotonic() >= deadline:
            if log_path:
                with open(log_path, "a") as f:
                    f.write(json.dumps({"mode": mode, "run": i, "skipped": "time"}) + "\n")
            continue
        figure = run(mode, i)
        if figure is not None:
            figures[mode].append(figure)
        if log_path:
            with open(log_path, "a") as f:
                f.write(json.dumps({"mode": mode, "run": i, "figure": figure}) + "\n")
    medians = {m: statistics.median(v) for m, v in figures.items() if v}
    return figures, medians


def pinned(cmd, cores):
    """`cmd` held to the CPU cores `cores` ("2-5", "2,3"), so that runs do not wander between
    cores: through taskset where it is installed, else with os.sched_setaffinity in the child
    before it runs the command. Returns (command, preexec_fn for subprocess)."""
    if not cores:
        return list(cmd), None
    if shutil.which("taskset"):
        return ["taskset", "-c", cores] + list(cmd), None
    cpus = parse_cores(cores)
    return list(cmd), lambda: os.sched_setaffinity(0, cpus)


def parse_cores(cores):
    """The set of CPUs in a taskset-style list: "2-5" -> {2, 3, 4, 5}; "1,3" -> {1, 3}."""
    cpus = set()
    for part in filter(None, cores.split(",")):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def run_child(cmd, env_extra, timeout=None, cores=None):
    """Runs `cmd` with `env_extra` added to this environment, on `cores` (see pinned), and
    kills it after `timeout` seconds. Returns {"rc", "stdout", "stderr", "wall_s",
    "maxrss_kb", "result"}: rc is None when it was killed for time; maxrss_kb is the child's
    own peak RSS (wait4); result is the last line of stdout that parses as a JSON object, or
    None. Output goes through files, so a chatty child cannot block on a full pipe."""
    env = dict(os.environ)
    env.update(env_extra)
    cmd, preexec = pinned(cmd, cores)
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, text=True,
                             preexec_fn=preexec)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if timeout is not None and time.monotonic() - t0 > timeout:
                p.kill()
                _, status, usage = os.wait4(p.pid, 0)
                timed_out = True
                break
            time.sleep(0.05)
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    result = None
    for line in stdout.splitlines():
        if line.startswith("{"):
            try:
                result = json.loads(line)
            except ValueError:
                pass
    return {"rc": None if timed_out else p.returncode, "stdout": stdout, "stderr": stderr,
            "wall_s": wall, "maxrss_kb": usage.ru_maxrss, "result": result}


def spread(values):
    """Median, min and max of a mode's figures, and (max - min) / median: the spread a
    difference between two modes must exceed to mean something."""
    if not values:
        return None
    med = statistics.median(values)
    return {"n": len(values), "median": med, "min": min(values), "max": max(values),
            "spread": (max(values) - min(values)) / med if med else None}
