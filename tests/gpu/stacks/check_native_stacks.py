"""Checks the native stacks of a ws_stack_sites trace: every sync or copy API call carries a
stack, and the stack names the program's own function that made it (WaitForTheDevice for
cudaDeviceSynchronize, ReadResultsBack for cudaMemcpy, WaitForTheStream for
cudaStreamSynchronize), although the program exports none of them.

usage: check_native_stacks.py TRACE
"""
import json
import os
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stack_trace import StackTrace  # noqa: E402

EXPECTED = {"cudaDeviceSynchronize": "WaitForTheDevice", "cudaMemcpy": "ReadResultsBack",
            "cudaStreamSynchronize": "WaitForTheStream"}


def main():
    t = StackTrace(sys.argv[1])
    seen, right = Counter(), Counter()
    for _, _, _, corr, full_name in t.calls:
        name = full_name.split("_v")[0]
        if name not in EXPECTED:
            continue
        seen[name] += 1
        functions = [t.string(f.function_id) for f in t.frames_of(corr)]
        if any(EXPECTED[name] in f for f in functions):
            right[name] += 1
    result = {"calls": dict(seen), "named_right": dict(right)}
    print(json.dumps(result))
    ok = bool(seen) and all(right[n] == seen[n] > 0 for n in EXPECTED)
    print(("PASS" if ok else "FAIL") + " native_stacks_name_the_calling_function")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
