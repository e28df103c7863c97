"""The CPython frame reader inside the interpreter that runs this test.

The probe library (stack_probe.cc) is called through ctypes.CDLL, which releases the GIL
around the call, as PyTorch does around CUDA calls: the reader must read the frames of a
thread that does not hold the GIL. Lines are checked against the lines Python itself reports.
"""
import ctypes
import inspect
import os
import sys
import threading

import pytest

PROBE = os.environ.get("WARPSCOPE_STACK_PROBE")
pytestmark = pytest.mark.skipif(not PROBE, reason="WARPSCOPE_STACK_PROBE not set")
READY = 4  # PythonSupport::kReady
SUPPORTED = sys.version_info[:2] in ((3, 11), (3, 12))


def _load(kind):
    lib = kind(PROBE)
    lib.warpscope_probe_stack.restype = ctypes.c_longlong
    lib.warpscope_probe_stack.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.warpscope_probe_native_thread_source.argtypes = [ctypes.c_int, ctypes.c_char_p,
                                                         ctypes.c_int]
    lib.warpscope_probe_cost.argtypes = [ctypes.c_int, ctypes.c_int,
                                         ctypes.POINTER(ctypes.c_double),
                                         ctypes.POINTER(ctypes.c_double)]
    return lib


def probe_lib():
    return _load(ctypes.CDLL)


def cut_stack(depth=32, lib=None):
    """(stack id, [(file, line, function, first_line)], truncated, cut) of the caller; cut:
    (index in those frames of the first outermost frame kept past the frames left out, how
    many were left out), or None."""
    lib = lib or probe_lib()
    out = ctypes.create_string_buffer(1 << 16)
    sid = lib.warpscope_probe_stack(depth, out, len(out))
    lines = out.value.decode("utf-8").splitlines()
    truncated = bool(lines) and lines[0] == "truncated"
    frames, cut = [], None
    for line in lines[1:] if truncated else lines:
        if line.startswith("cut "):
            cut = (len(frames) - 1, int(line[4:]))  # less this helper's frame
            continue
        file, lineno, function, first = line.rsplit(":", 3)
        frames.append((file, int(lineno), function, int(first)))
    assert frames and frames[0][2] == "cut_stack", "the innermost frame is this helper's"
    return sid, frames[1:], truncated, cut


def stack(depth=32, lib=None):
    """(stack id, [(file, line, function, first_line)], truncated) of the caller."""
    sid, frames, truncated, _ = cut_stack(depth, lib)
    assert frames and frames[0][2] == "stack", "the innermost frame is this helper's"
    return sid, frames[1:], truncated


def here():
    """The caller's line."""
    return inspect.currentframe().f_back.f_lineno


def test_the_interpreter_is_found_and_its_version_known():
    version = ctypes.c_uint(0)
    support = probe_lib().warpscope_probe_support(ctypes.byref(version))
    assert version.value >> 16 == (sys.version_info.major << 8) | sys.version_info.minor
    assert support == (READY if SUPPORTED else 2)


@pytest.mark.skipif(not SUPPORTED, reason="a Python whose frames the reader does not read")
class TestFrames:
    def test_lines_files_and_functions_of_nested_calls(self):
        def inner():
            line = here() + 1
            return stack(depth=128), line

        def outer():
            result, line = inner(); outer_line = here()  # noqa: E702
            return result, line, outer_line

        (sid, frames, truncated), inner_line, outer_line = outer()
        assert sid > 0 and not truncated
        assert frames[0] == (__file__, inner_line, f"{type(self).__name__}.test_lines_files_and_"
                             "functions_of_nested_calls.<locals>.inner", inner.__code__.co_firstlineno)
        assert frames[1][1:3] == (outer_line, outer.__qualname__)
        assert frames[2][2] == f"{type(self).__name__}.test_lines_files_and_functions_of_nested_calls"
        # Below the test: pytest's own frames, in their own files.
        assert any("pytest" in f[0] or "pluggy" in f[0] for f in frames[3:])

    def test_the_same_call_site_is_one_stack_and_another_line_another(self):
        ids = [stack()[0] for _ in range(3)]
        other = stack()[0]
        assert ids[0] == ids[1] == ids[2] > 0
        assert other not in (0, ids[0])

    def test_a_method_of_a_class_and_a_lambda(self):
        class Model:
            def forward(self):
                return stack()

        _, frames, _ = Model().forward()
        assert frames[0][2].endswith("Model.forward")
        _, frames, _ = (lambda: stack())()
        assert frames[0][2].endswith("<lambda>")

    def test_a_generator_and_a_with_block(self):
        def gen():
            yield stack()

        _, frames, _ = next(gen())
        assert frames[0][2].endswith("gen")

    def test_non_ascii_names_come_back_as_utf8(self):
        namespace = {"stack": stack}
        exec("def größe_ω():\n    return stack()\n", namespace)
        _, frames, _ = namespace["größe_ω"]()
        assert frames[0][2] == "größe_ω"
        assert frames[0][0] == "<string>" and frames[0][1] == 2

    def test_deep_stacks_are_cut_at_the_depth_and_say_so(self):
        def down(n):
            return stack(depth=5) if n == 0 else down(n - 1)

        # 5 kept: the innermost 3 (the two helpers' and one `down`), the outermost 2.
        _, frames, truncated = down(20)
        assert truncated and len(frames) == 3
        assert frames[0][2].endswith("down") and not frames[1][2].endswith("down")

    def test_depth_one_keeps_the_innermost_frame_only(self):
        sid, frames, truncated, cut = cut_stack(depth=1)
        assert sid > 0 and truncated and frames == [] and cut is None

    def test_a_60_frame_stack_keeps_the_programs_outermost_line(self):
        # A thread whose target (the program's line) calls 60 frames of library code, as
        # torch.compile's Dynamo and Inductor frames fill a stack: the 32 frames kept are the
        # innermost 24 (all the library's) and the outermost 8, among them the program's line.
        library = "/usr/lib/python3/site-packages/torch/_dynamo/plumbing.py"
        namespace = {"cut_stack": cut_stack}
        exec(compile("def call(n):\n    return cut_stack() if n == 0 else call(n - 1)\n",
                     library, "exec"), namespace)
        result = {}

        def train_step():
            result["stack"] = namespace["call"](60); result["line"] = here()  # noqa: E702

        t = threading.Thread(target=train_step)
        t.start()
        t.join()
        sid, frames, truncated, cut = result["stack"]
        assert sid > 0 and truncated and cut is not None
        at, left_out = cut
        assert len(frames) == 31 and at == 23  # less the helper's frame
        assert all(f[0] == library for f in frames[:at])
        outermost = frames[at:]
        assert (__file__, result["line"], train_step.__qualname__,
                train_step.__code__.co_firstlineno) in outermost
        assert outermost[-1][2] == "Thread._bootstrap"
        # The helper, 61 library frames (60 calls and the last), the target, Thread.run,
        # _bootstrap_inner and _bootstrap: 66 in all, 32 kept.
        assert left_out == 66 - 32

    def test_a_python_thread_has_its_own_stack(self):
        result = {}

        def worker():
            result["stack"] = stack(); result["line"] = here()  # noqa: E702

        t = threading.Thread(target=worker)
        t.start()
        t.join()
        _, frames, _ = result["stack"]
        assert frames[0][1] == result["line"] and frames[0][2].endswith("worker")
        assert any(f[2] == "Thread.run" for f in frames)
        assert not any(f[2].endswith("test_a_python_thread_has_its_own_stack") for f in frames)

    def test_with_the_gil_held_too(self):
        _, frames, _ = stack(lib=_load(ctypes.PyDLL)); line = here()  # noqa: E702
        assert frames[0][1] == line

    def test_a_thread_that_never_ran_python_has_no_stack(self):
        assert probe_lib().warpscope_probe_native_thread_source(0, None, 0) == 2  # kNone

    def test_a_thread_that_never_ran_python_falls_back_to_its_native_stack(self):
        out = ctypes.create_string_buffer(1 << 16)
        source = probe_lib().warpscope_probe_native_thread_source(1, out, len(out))
        assert source == 1  # StackSource::kNative
        frames = out.value.decode().splitlines()
        # The thread's start in the C and C++ runtimes; the probe (libwarpscope_stack_probe)
        # is left out as the profiler's own frames are.
        assert any("libc.so" in f or "libstdc++" in f for f in frames), frames
        assert not any("libwarpscope" in f for f in frames), frames
