"""The call stack frames: ``api_stacks`` (one row per API call whose stack was recorded) and
``stacks`` (one row per frame of each interned stack), with every reader: the pure-Python
one, and with the extension the columnar decoder and the C++ trace model.

The trace is tests/data/synthetic/stacks.textproto (docs/stacks.md's example: a training
step whose waits and launches carry the Python line behind them); a hand-made trace checks
the problems the readers count (stacks and frames used before their definition).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pandas as pd
import pytest
from google.protobuf import text_format

import tracebuilder as tb
import warpscope
from warpscope import native, schema
from warpscope.frames import trace_to_dataframes

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "synthetic"
s = schema

TRAIN = "/home/me/proj/train.py"
MODEL = "/home/me/proj/model.py"
TORCH = "/opt/venv/lib/python3.12/site-packages/torch"
READERS = [
    "python",
    pytest.param("columns", marks=pytest.mark.skipif(not native.has_extension(),
                                                     reason="needs warpscope_native")),
]


def read(path: Path, reader: str) -> Tuple[Dict[str, pd.DataFrame], Any]:
    """(frames, trace) of `path` read by `reader`."""
    trace = warpscope.open(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", warpscope.TraceWarning)
        if reader == "python":
            return trace_to_dataframes(trace), trace
        return native.to_dataframes(trace), trace


def rows(frame: pd.DataFrame) -> List[tuple]:
    return [tuple(r) for r in frame.astype(object).itertuples(index=False)]


@pytest.fixture
def stacks_trace(tmp_path) -> Path:
    trace = text_format.Parse((DATA / "stacks.textproto").read_text(), schema.Trace())
    return tb.write(tmp_path / "stacks.wst", trace.packet)


@pytest.mark.parametrize("reader", READERS)
def test_api_stacks_has_one_row_per_recorded_call(stacks_trace, reader):
    frames, trace = read(stacks_trace, reader)
    api_stacks = frames["api_stacks"]
    assert list(api_stacks.columns) == ["timestamp_ns", "correlation_id", "stack_id", "name",
                                        "domain", "callback_id"]
    assert rows(api_stacks) == [
        (1000, 1, 2, "cudaLaunchKernel", "runtime", 211),
        (2000, 2, 3, "cudaLaunchKernel", "runtime", 211),
        (5000, 3, 1, "cudaMemcpyAsync", "runtime", 41),
        (31000, 4, 2, "cudaLaunchKernel", "runtime", 211),
        (34000, 5, 4, "cudaStreamSynchronize", "runtime", 131),
        (62000, 6, 1, "cudaMemcpyAsync", "runtime", 41),
    ]
    for column in ("timestamp_ns", "correlation_id", "stack_id", "callback_id"):
        assert api_stacks[column].dtype == "int64", column
    assert isinstance(api_stacks["name"].dtype, pd.CategoricalDtype)
    assert trace.issues == {} and trace.problems() == []


@pytest.mark.parametrize("reader", READERS)
def test_stacks_has_one_row_per_frame_of_each_stack(stacks_trace, reader):
    stacks = read(stacks_trace, reader)[0]["stacks"]
    assert list(stacks.columns) == ["stack_id", "depth", "kind", "filename", "line", "function",
                                    "first_line", "module_offset", "truncated", "outermost"]
    assert rows(stacks) == [
        (1, 0, "python", f"{TORCH}/_tensor.py", 1030, "Tensor.item", 1010, 0, False, False),
        (1, 1, "python", TRAIN, 57, "train_step", 50, 0, False, False),
        (1, 2, "python", TRAIN, 80, "<module>", 1, 0, False, False),
        (2, 0, "python", MODEL, 12, "Net.forward", 10, 0, False, False),
        (2, 1, "python", f"{TORCH}/nn/modules/module.py", 1750, "Module._call_impl", 1740, 0,
         False, False),
        (2, 2, "python", TRAIN, 52, "train_step", 50, 0, False, False),
        (2, 3, "python", TRAIN, 80, "<module>", 1, 0, False, False),
        (3, 0, "native", f"{TORCH}/lib/libtorch_cuda.so", 0, "", 0, 4660, False, False),
        (3, 1, "native", "/lib/x86_64-linux-gnu/libc.so.6", 0, "", 0, 608963, False, False),
        (4, 0, "python", TRAIN, 61, "train_step", 50, 0, False, False),
        (4, 1, "python", TRAIN, 80, "<module>", 1, 0, False, False),
    ]
    assert list(stacks["kind"].cat.categories) == ["native", "python"]
    assert stacks["truncated"].dtype == bool and stacks["module_offset"].dtype == "int64"


@pytest.mark.parametrize("reader", READERS)
def test_the_line_behind_each_kernel_copy_and_wait(stacks_trace, reader):
    """api_stacks joins the GPU work and the API calls by correlation id, stacks the line."""
    frames = read(stacks_trace, reader)[0]
    stacks = frames["stacks"]
    innermost = stacks[stacks["depth"] == 0].set_index("stack_id")
    sites = frames["api_stacks"].join(innermost[["filename", "line", "function"]],
                                      on="stack_id")[["correlation_id", "filename", "line"]]
    kernels = frames["kernels"].merge(sites, on="correlation_id")
    assert rows(kernels[["name", "filename", "line"]]) == [
        ("gemm_kernel", MODEL, 12),
        ("relu_kernel", f"{TORCH}/lib/libtorch_cuda.so", 0),
        ("gemm_kernel", MODEL, 12),
    ]
    copies = frames["memcpy"].merge(sites, on="correlation_id")
    assert rows(copies[["copy_kind", "filename", "line"]]) == [
        ("DtoH", f"{TORCH}/_tensor.py", 1030)] * 2
    waits = frames["sync"].merge(sites, on="correlation_id")
    assert rows(waits[["kind", "filename", "line"]]) == [("stream", TRAIN, 61)]
    # Every API call with a stack has one; the device synchronize was recorded without.
    api = frames["api"].merge(sites, on="correlation_id", how="left")
    assert rows(api[["name", "line"]].fillna(-1)) == [
        ("cudaLaunchKernel", 12), ("cudaLaunchKernel", 0), ("cudaMemcpyAsync", 1030),
        ("cudaLaunchKernel", 12), ("cudaStreamSynchronize", 61), ("cudaMemcpyAsync", 1030),
        ("cudaDeviceSynchronize", -1)]


@pytest.mark.skipif(not native.has_extension(), reason="needs warpscope_native")
def test_the_three_readers_agree_on_the_stacks_trace(stacks_trace):
    from test_native import assert_readers_agree
    assert assert_readers_agree(stacks_trace) > 0


def stacks_out_of_order() -> List[Any]:
    """Stacks and frames used before their definition, a frame id 0, a frame defined again
    with another line, a native offset above 2**63, a truncated stack and a call without a
    stack: what both readers count and keep (docs/format.md, *Interning*)."""
    return [
        tb.header(), tb.string(1, "cudaLaunchKernel"), tb.string(2, "a.py"),
        # Function 3 is not defined yet: one undefined string reference.
        tb.packet(stack_frame=s.StackFrame(id=1, kind=s.FRAME_KIND_PYTHON, file_id=2,
                                           function_id=3, line=5, first_line=1)),
        # Frame 2 is not defined yet: one undefined frame reference, the frame kept at the end.
        tb.packet(call_stack=s.CallStack(id=1, frame_ids=[1, 2], truncated=True)),
        # Stack 2 is not defined yet: one undefined stack reference, the id kept.
        tb.packet(api_stack=s.ApiStackEvent(correlation_id=1, stack_id=2, timestamp_ns=10,
                                            domain=s.API_DOMAIN_DRIVER, callback_id=7,
                                            name_id=1)),
        tb.string(3, "f"),
        tb.packet(stack_frame=s.StackFrame(id=2, kind=s.FRAME_KIND_NATIVE, file_id=2,
                                           module_offset=(1 << 63) + 5)),
        tb.packet(call_stack=s.CallStack(id=2, frame_ids=[2, 0])),  # 0 names no frame
        tb.packet(api_stack=s.ApiStackEvent(correlation_id=2, stack_id=2, timestamp_ns=20,
                                            name_id=4)),  # name 4 never defined
        tb.packet(api_stack=s.ApiStackEvent(correlation_id=3, timestamp_ns=30, name_id=1)),
        tb.packet(stack_frame=s.StackFrame(id=1, kind=s.FRAME_KIND_PYTHON, file_id=2,
                                           function_id=3, line=6, first_line=1)),
        tb.end(),
    ]


@pytest.mark.parametrize("reader", READERS)
def test_stacks_used_before_their_definition_are_counted(tmp_path, reader):
    frames, trace = read(tb.write(tmp_path / "t.wst", stacks_out_of_order()), reader)
    assert trace.issues == {"reader.undefined_stack_refs": 1, "reader.undefined_stack_frame_refs": 2,
                            "reader.undefined_string_refs": 2, "reader.redefined_ids": 1}
    assert rows(frames["api_stacks"]) == [
        (10, 1, 2, "cudaLaunchKernel", "driver", 7),
        (20, 2, 2, "<unknown:4>", "unknown", 0),
        (30, 3, 0, "cudaLaunchKernel", "unknown", 0),
    ]
    # The last definition of each stack and frame, names as last defined.
    offset = (1 << 63) + 5 - (1 << 64)  # uint64 read as int64, as every id column
    assert rows(frames["stacks"]) == [
        (1, 0, "python", "a.py", 6, "f", 1, 0, True, False),
        (1, 1, "native", "a.py", 0, "", 0, offset, True, False),
        (2, 0, "native", "a.py", 0, "", 0, offset, False, False),
    ]


@pytest.mark.parametrize("reader", READERS)
def test_a_stack_cut_in_the_middle_counts_the_depth_of_its_outermost_frames(tmp_path, reader):
    """A stack deeper than the recorder's depth keeps its innermost and its outermost frames
    (CallStack.outermost, left_out): the outermost are marked, their depth past the frames
    left out; a frame never defined is left out without moving the cut."""
    frame = [tb.packet(stack_frame=s.StackFrame(id=i, kind=s.FRAME_KIND_PYTHON, file_id=1,
                                                line=i)) for i in range(1, 5)]
    packets = [tb.header(), tb.string(1, "a.py"), *frame,
               tb.packet(call_stack=s.CallStack(id=1, frame_ids=[1, 2, 3, 4], truncated=True,
                                                outermost=2, left_out=10)),
               tb.packet(call_stack=s.CallStack(id=2, frame_ids=[1, 9, 4], truncated=True,
                                                outermost=2, left_out=5)),
               tb.end()]
    frames, _ = read(tb.write(tmp_path / "t.wst", packets), reader)
    assert rows(frames["stacks"][["stack_id", "depth", "line", "truncated", "outermost"]]) == [
        (1, 0, 1, True, False), (1, 1, 2, True, False),
        (1, 12, 3, True, True), (1, 13, 4, True, True),
        (2, 0, 1, True, False), (2, 6, 4, True, True),
    ]
    assert frames["stacks"]["outermost"].dtype == bool


def test_a_trace_without_stacks_has_empty_frames(tmp_path):
    frames, _ = read(tb.write(tmp_path / "t.wst", [tb.header(), tb.end()]), "python")
    assert frames["api_stacks"].empty and frames["stacks"].empty
    assert list(frames["stacks"].columns)[:3] == ["stack_id", "depth", "kind"]
