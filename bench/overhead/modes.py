"""The environments the overhead drivers run a program under, defined once.

Every driver compares the same program run plain, under the CUPTI floor
(bench/overhead/cupti_floor.cc: the activity kinds warpscope enables, records only counted)
and under warpscope; these functions give the variables each mode adds to the environment.

    recording_env(build, output, **settings)  # warpscope through LD_PRELOAD
    floor_env(build, timestamps=False)        # the floor through CUDA_INJECTION64_PATH

and how the drivers that compare modes run them:

    add_build_args(parser, runs=5)            # --build, --out, --runs
    interleaved_runs(modes, runs, run, seed)  # every mode `runs` times, shuffled; medians
"""
import json
import random
import statistics


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


def floor_env(build, timestamps=False):
    """The CUPTI floor injected for CUDA and NVTX; timestamps=True also takes a timestamp in
    every API callback, as warpscope's callbacks do."""
    floor = f"{build}/lib/libws_cupti_floor.so"
    env = {"CUDA_INJECTION64_PATH": floor, "NVTX_INJECTION64_PATH": floor, "WS_FLOOR_QUIET": "1"}
    if timestamps:
        env["WS_FLOOR_TIMESTAMP_CALLBACK"] = "1"
    return env


def add_build_args(parser, runs=5):
    """The arguments every mode-comparing driver takes: the build, where results go, runs."""
    parser.add_argument("--build", required=True,
                        help="a folder with bin/ and lib/ (staged .gpu)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--runs", type=int, default=runs)


def interleaved_runs(modes, runs, run, seed, log_path=None):
    """Runs each mode `runs` times in one shuffled order (a fixed seed: a rerun repeats it), so
    that drift over the call falls on every mode alike. `run(mode, i)` returns the run's figure,
    or None for a failed run, which is left out. With `log_path`, each run is appended there as
    a JSON line when it ends, so that a time limit keeps what ran. Returns ({mode: [figures]},
    {mode: median}) for the modes with at least one figure."""
    order = [(m, i) for i in range(runs) for m in modes]
    random.Random(seed).shuffle(order)
    figures = {m: [] for m in modes}
    for mode, i in order:
        figure = run(mode, i)
        if figure is not None:
            figures[mode].append(figure)
        if log_path:
            with open(log_path, "a") as f:
                f.write(json.dumps({"mode": mode, "run": i, "figure": figure}) + "\n")
    medians = {m: statistics.median(v) for m, v in figures.items() if v}
    return figures, medians
