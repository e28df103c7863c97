"""The cost of one stack capture inside CPython, as the launch log takes it in a CUDA
callback: the frame walk and the interning lookup, the call site seen before. Times 200,000
captures at Python depths 5, 20, 40, 60 and 120 (32 frames kept, the default: the deeper
stacks are cut, and their outermost frames read past the cut) through the probe
library (tests/stacks/stack_probe.cc, path in WARPSCOPE_STACK_PROBE), called with the GIL
released as PyTorch releases it. Then the whole of what a launch costs its thread in the launch
log (collectors/api_calls: entry and exit, two clock reads, the stack, one log entry), with and
without the stack: CUPTI's own work per callback comes on top.
Prints one JSON object: median and p99 ns per depth.
"""
import ctypes
import json
import os
import sys

lib = ctypes.CDLL(os.environ["WARPSCOPE_STACK_PROBE"])
lib.warpscope_probe_cost.argtypes = [ctypes.c_int, ctypes.c_int,
                                     ctypes.POINTER(ctypes.c_double),
                                     ctypes.POINTER(ctypes.c_double)]


def at_depth(n, captures):
    if n > 0:
        return at_depth(n - 1, captures)
    median, p99 = ctypes.c_double(), ctypes.c_double()
    rc = lib.warpscope_probe_cost(32, captures, ctypes.byref(median), ctypes.byref(p99))
    return {"median_ns": median.value, "p99_ns": p99.value, "ok": rc == 0}


lib.warpscope_probe_launch_cost.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                            ctypes.POINTER(ctypes.c_double),
                                            ctypes.POINTER(ctypes.c_double)]


def launch_at_depth(n, launches, stacks):
    if n > 0:
        return launch_at_depth(n - 1, launches, stacks)
    median, p99 = ctypes.c_double(), ctypes.c_double()
    rc = lib.warpscope_probe_launch_cost(32, launches, stacks, ctypes.byref(median),
                                         ctypes.byref(p99))
    return {"median_ns": median.value, "p99_ns": p99.value, "ok": rc == 0}


result = {"python": sys.version.split()[0]}
for depth in (5, 20, 40, 60, 120):
    result[f"depth_{depth}"] = at_depth(depth, 200000)
for depth in (5, 20):
    result[f"launch_log_depth_{depth}"] = launch_at_depth(depth, 200000, 1)
result["launch_log_no_stack"] = launch_at_depth(5, 200000, 0)
print(json.dumps(result))
