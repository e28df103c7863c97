"""The environments the overhead drivers run a program under, defined once.

Every driver compares the same program run plain, under the CUPTI floor
(bench/overhead/cupti_floor.cc: the activity kinds warpscope enables, records only counted)
and under warpscope; these functions give the variables each mode adds to the environment.

    recording_env(build, output, **settings)  # warpscope through LD_PRELOAD
    floor_env(build, timestamps=False)        # the floor through CUDA_INJECTION64_PATH
"""


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
