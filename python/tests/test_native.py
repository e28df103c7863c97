"""The two readers behind ``to_dataframes`` give the same frames and count the same problems:
the C++ reader through the ``warpscope_native`` extension, and the pure-Python reader.
Also the analyses the extension exposes (summary, occupancy, tail).

Skipped where the extension is not built (``cmake -DWARPSCOPE_PYTHON=ON``, or
``pip install ./python``): the pure-Python reader is then the only one.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List

import numpy as np
import pandas as pd
import pytest

import tracebuilder as tb
import warpscope
from test_stacks import stacks_out_of_order
from warpscope import native, schema
from warpscope.frames import trace_to_dataframes

pytest.importorskip("warpscope_native")

SOURCE_DIR = Path(__file__).resolve().parents[2]
s = schema


def kernel(name_id: int, launch_config_id: int = 0, start_ns: int = 0) -> Any:
    return tb.packet(kernel=s.KernelEvent(name_id=name_id, launch_config_id=launch_config_id,
                                          start_ns=start_ns, duration_ns=5))


def redefinitions() -> List[Any]:
    """Every interned table defined twice, with the same value and with another one."""
    def block(name: str, os_tid: int, grid_x: int, metric: str, t: int) -> List[Any]:
        return [tb.string(1, name),
                tb.packet(thread=s.ThreadInfo(id=1, os_tid=os_tid, name=f"t{os_tid}")),
                tb.packet(launch_config=s.LaunchConfig(id=1, grid_x=grid_x)),
                tb.packet(pm_metric_set=s.PmMetricSet(id=1, metric_names=[metric])),
                tb.packet(device=s.Device(id=0, name=f"gpu{os_tid}")),
                tb.packet(context=s.ContextInfo(id=1, device_id=0, sm_count=os_tid)),
                kernel(1, 1, start_ns=t),
                tb.packet(api_call=s.ApiCallEvent(name_id=1, thread_id=1, start_ns=t)),
                tb.packet(synchronization=s.SyncEvent(thread_id=1, start_ns=t)),
                tb.packet(pm_sample=s.PmSample(metric_set_id=1, start_ns=t, values=[t]))]
    return ([tb.header()] + block("old", 10, 1, "a", 1) + block("old", 10, 1, "a", 2)
            + block("new", 20, 2, "b", 3) + [tb.end()])


def before_definition() -> List[Any]:
    return [tb.header(),
            kernel(1, 1),
            tb.packet(nvtx_range=s.NvtxRangeEvent(name_id=1, thread_id=4, end_thread_id=4)),
            tb.packet(nvtx_range=s.NvtxRangeEvent(name_id=1, thread_id=4, end_thread_id=5)),
            tb.packet(overhead=s.OverheadEvent(kind_id=2, thread_id=4)),
            tb.packet(nvtx_mark=s.NvtxMarkEvent(name_id=1, thread_id=4)),
            tb.packet(pm_sample=s.PmSample(metric_set_id=1, values=[1.0])),
            tb.string(1, "k"), tb.string(2, "flush"),
            tb.packet(launch_config=s.LaunchConfig(id=1, grid_x=8)),
            tb.packet(thread=s.ThreadInfo(id=4, os_tid=44, name="w")),
            tb.packet(pm_metric_set=s.PmMetricSet(id=1, metric_names=["a", "start_ns"])),
            kernel(1, 1),
            tb.packet(nvtx_range=s.NvtxRangeEvent(name_id=1, thread_id=4, end_thread_id=4)),
            tb.packet(overhead=s.OverheadEvent(kind_id=2, thread_id=4)),
            tb.packet(nvtx_mark=s.NvtxMarkEvent(name_id=1, thread_id=4)),
            tb.packet(pm_sample=s.PmSample(metric_set_id=1, values=[2.0, 3.0, 4.0])),
            tb.end()]


def split_pc_batches() -> List[Any]:
    """A PC sample batch split over two packets, and a continuation that follows nothing."""
    def batch(continuation: bool, context_id: int, pc: int) -> Any:
        return tb.packet(pc_samples=s.PcSampleBatch(
            device_id=0, context_id=context_id, timestamp_ns=300 + pc, total_samples=10,
            continuation=continuation,
            records=[s.PcSampleRecord(cubin_crc=tb.CRC, function_name_id=8, pc_offset=pc,
                                      stall_reason_index=[1, 9], samples=[6, 4])]))
    return [tb.header(), tb.string(8, "_Z4axpyPf"),
            tb.packet(pc_stall_reasons=s.PcStallReasons(device_id=0, index=[1],
                                                         name=[tb.LONG_SCOREBOARD])),
            batch(False, 1, 0x10), batch(True, 1, 0x20), batch(True, 2, 0x30), tb.end()]


def odd_values() -> List[Any]:
    """An enum value newer than the schema, a time before the time base, a uint64 CRC."""
    return [tb.header(),
            tb.packet(memcpy=s.MemcpyEvent(copy_kind=77, start_ns=2**64 - 5, duration_ns=10)),
            tb.packet(api_call=s.ApiCallEvent(domain=s.API_DOMAIN_DRIVER, start_ns=3)),
            tb.packet(capture_window=s.CaptureWindowEdge(window_id=2, begin=True,
                                                         timestamp_ns=5, trigger=9)),
            tb.end()]


def zeros_then_values() -> List[Any]:
    """Columns that stay 0 (not stored by the columnar decoder), columns that are 0 for some
    rows and then not (written out at the first other value), and varints of every length
    from 1 to 10 bytes (the decoder reads those of up to 8 bytes at once)."""
    out = [tb.header(), tb.string(1, "k")]
    for i, value in enumerate([0, 0, 1, 0] + [(1 << (7 * n)) - 1 for n in range(2, 10)]
                              + [1 << 63, (1 << 64) - 1]):
        graph_id = value & 0xFFFFFFFF if i > 1 else 0
        out.append(tb.packet(kernel=s.KernelEvent(name_id=1, start_ns=value, duration_ns=i,
                                                  graph_id=graph_id, grid_id=value)))
        out.append(tb.packet(memcpy=s.MemcpyEvent(bytes=value, start_ns=i, is_async=i == 3,
                                                  copy_kind=1 if i == 5 else 0)))
    return out + [tb.end()]


FIXTURES: Dict[str, Callable[[], List[Any]]] = {
    "zeros_then_values": zeros_then_values,
    "every_kind": tb.every_kind,
    "redefinitions": redefinitions,
    "before_definition": before_definition,
    "split_pc_batches": split_pc_batches,
    "odd_values": odd_values,
    "stacks_out_of_order": stacks_out_of_order,
    "empty": lambda: [tb.header(), tb.end()],
    "no_end": lambda: tb.every_kind()[:-1],
}


def read_both(path: Path):
    with warnings.catch_warnings(record=True) as python_warnings:
        warnings.simplefilter("always")
        python_trace = warpscope.open(path)
        python = trace_to_dataframes(python_trace)
    with warnings.catch_warnings(record=True) as cpp_warnings:
        warnings.simplefilter("always")
        cpp_trace = warpscope.open(path)
        cpp = native.to_dataframes(cpp_trace)
    return ((python, python_trace, [str(w.message) for w in python_warnings]),
            (cpp, cpp_trace, [str(w.message) for w in cpp_warnings]))


def assert_same(python: Dict[str, pd.DataFrame], cpp: Dict[str, pd.DataFrame]) -> None:
    assert list(python) == list(cpp)
    for name in python:
        pd.testing.assert_frame_equal(python[name], cpp[name], obj=name)


@pytest.mark.parametrize("fixture", sorted(FIXTURES))
def test_both_readers_give_the_same_frames(tmp_path, fixture):
    path = tb.write(tmp_path / f"{fixture}.wst", FIXTURES[fixture]())
    (python, python_trace, python_warnings), (cpp, cpp_trace, cpp_warnings) = read_both(path)
    assert_same(python, cpp)
    assert python_trace.issues == cpp_trace.issues
    assert python_warnings == cpp_warnings
    assert python_trace.problems() == cpp_trace.problems()


def test_a_cut_trace_reads_the_same(tmp_path):
    data = tb.encode(tb.every_kind())
    for cut in (len(data) - 3, len(data) // 2):
        path = tmp_path / f"cut{cut}.wst"
        path.write_bytes(data[:cut])
        (python, python_trace, python_warnings), (cpp, cpp_trace, _) = read_both(path)
        assert_same(python, cpp)
        assert python_trace.truncated and cpp_trace.problems() == python_trace.problems()


def test_the_duplicate_id_rule(tmp_path):
    """docs/format.md, *Interned definitions*: both readers give each event the definition
    in force where it stands; the same value again is no problem, another value is counted;
    devices and contexts keep their first description."""
    path = tb.write(tmp_path / "t.wst", redefinitions())
    for frames, trace, _ in read_both(path):
        assert trace.issues == {"reader.redefined_ids": 3, "model.redefined_pm_metric_sets": 1,
                                "model.redefined_devices": 1, "model.redefined_contexts": 1}
        kernels = frames["kernels"]
        assert list(kernels["name"]) == ["old", "old", "new"]
        assert list(kernels["grid_x"]) == [1, 1, 2]
        for table in ("api", "sync"):
            assert list(frames[table]["os_tid"]) == [10, 10, 20], table
            assert list(frames[table]["thread_name"]) == ["t10", "t10", "t20"], table
        pm = frames["pm_samples"]
        assert list(pm["a"].fillna(-1)) == [1.0, 2.0, -1] and pm["b"].iloc[2] == 3.0
        assert list(frames["devices"]["name"]) == ["gpu10"]
        assert list(frames["contexts"]["sm_count"]) == [10]


def test_to_dataframes_runs_on_the_extension(tmp_path, monkeypatch):
    path = tb.write(tmp_path / "t.wst", tb.every_kind())
    monkeypatch.delenv("WARPSCOPE_PURE_PYTHON", raising=False)
    trace = warpscope.open(path)
    trace.to_dataframes()
    assert native.available() and trace._native_state is not None
    monkeypatch.setenv("WARPSCOPE_PURE_PYTHON", "1")
    trace = warpscope.open(path)
    trace.to_dataframes()
    assert not native.available() and trace._native_state is None


def test_string_columns_are_categorical_codes(tmp_path):
    path = tb.write(tmp_path / "t.wst", tb.every_kind())
    frames = native.to_dataframes(warpscope.open(path))
    names = frames["kernels"]["name"]
    assert isinstance(names.dtype, pd.CategoricalDtype)
    assert list(names.cat.categories) == ["gemm_kernel(float*)"]
    assert frames["kernels"]["start_ns"].dtype == np.int64


TRAINING_LOOP = SOURCE_DIR / "examples" / "traces" / "synthetic_training_loop.wst"


def test_summary_matches_the_frames():
    tables = warpscope.summary([TRAINING_LOOP])
    kernels = tables["kernels"]
    frames = warpscope.open(TRAINING_LOOP).to_dataframes()["kernels"]
    assert int(kernels["instances"].sum()) == len(frames)
    assert int(kernels["total_time_ns"].sum()) == int(frames["duration_ns"].sum())
    by_name = frames.groupby("name", observed=True)["duration_ns"].sum()
    assert kernels.iloc[0]["name"] == by_name.idxmax()
    assert int(kernels.iloc[0]["total_time_ns"]) == int(by_name.max())


def test_occupancy_and_tail_return_frames():
    occupancy = warpscope.occupancy(TRAINING_LOOP)["occupancy"]
    frames = warpscope.open(TRAINING_LOOP).to_dataframes()["kernels"]
    assert set(occupancy["kernel"]) <= set(frames["name"])
    assert len(occupancy) > 0 and occupancy["launches"].sum() == len(frames)
    tail = warpscope.tail(TRAINING_LOOP)["kernels"]
    assert len(tail) > 0 and set(tail["kernel"]) <= set(frames["name"])
    only = warpscope.tail(TRAINING_LOOP, kernel="flash")["kernels"]
    assert 0 < len(only) < len(tail)


def test_report_frames_are_typed_and_named_after_their_reports():
    """The analyses' tables reach pandas as typed columns, not through CSV: one report keeps
    its name, integers are int64, and the bounds columns are there."""
    one = warpscope.summary(TRAINING_LOOP, report="nvtx")
    assert list(one) == ["scalars", "nvtx"]
    assert one["nvtx"]["instances"].dtype == np.int64
    with pytest.warns(DeprecationWarning, match="report="):
        assert list(warpscope.summary(TRAINING_LOOP, reports="nvtx")) == ["scalars", "nvtx"]
    occupancy = warpscope.occupancy(TRAINING_LOOP)["occupancy"]
    assert {"achieved_low_pct", "achieved_high_pct", "achieved_elapsed_pct",
            "achieved_elapsed_low_pct", "achieved_elapsed_high_pct",
            "unseen_pct"} <= set(occupancy.columns)
    assert occupancy["launches"].dtype == np.int64
    tail = warpscope.tail(TRAINING_LOOP)["kernels"]
    assert {"tail_low_pct", "tail_high_pct"} <= set(tail.columns)
    per_launch = warpscope.tail(TRAINING_LOOP, instances=True)["instances"]
    assert "start_ns" in per_launch.columns and len(per_launch) >= len(tail)


def test_occupancy_per_active_and_per_elapsed_cycle_on_a_recorded_trace():
    """pipeline_pm.wst (H200): achieved occupancy per active SM cycle (Nsight Compute's
    pct_of_peak_sustained_active) with the figure per elapsed cycle beside it, lower, each
    inside its own bounds."""
    pm = SOURCE_DIR / "examples" / "traces" / "cuda13.0_sm90" / "pipeline_pm.wst"
    occupancy = warpscope.occupancy(str(pm))["occupancy"]
    assert len(occupancy) == 3
    for _, row in occupancy.iterrows():
        assert row["achieved_elapsed_pct"] < row["achieved_pct"]
        assert row["achieved_low_pct"] <= row["achieved_pct"] <= row["achieved_high_pct"]
        assert (row["achieved_elapsed_low_pct"] <= row["achieved_elapsed_pct"]
                <= row["achieved_elapsed_high_pct"])
        assert 0 < row["unseen_pct"] < 50


# ---------------------------------------------------------------------------------------
# The columnar decoder (TraceColumns, behind read_frames) against the pure-Python reader,
# on real traces and on damaged ones.

BUNDLED = sorted((SOURCE_DIR / "examples" / "traces").rglob("*.wst"))


def read_each(path: Path):
    """(frames or the TraceError raised, issues, problems) per reader: pure Python, then the
    columnar decoder."""
    results = []
    for reader in ("python", "columns"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                trace = warpscope.open(path)
                frames = (trace_to_dataframes(trace) if reader == "python"
                          else native.to_dataframes(trace))
            except warpscope.TraceError as e:
                results.append((e, None, None))
                continue
        results.append((frames, dict(trace.issues), trace.problems()))
    return results


def assert_readers_agree(path: Path) -> int:
    """Asserts that both readers agree on `path`; the number of rows read."""
    (python, *python_rest), (frames, *rest) = read_each(path)
    if isinstance(python, Exception):
        assert type(frames) is type(python), (python, frames)
        assert (frames.offset, str(frames)) == (python.offset, str(python))
    else:
        assert not isinstance(frames, Exception), frames
        assert_same(python, frames)
        assert rest == python_rest
    return 0 if isinstance(python, Exception) else sum(len(f) for f in python.values())


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
def test_the_columnar_decoder_reads_the_bundled_traces_as_both_readers(path):
    assert assert_readers_agree(path) > 0


@pytest.mark.parametrize("scenario", ["training_loop", "tail_kernels"])
def test_the_columnar_decoder_reads_the_fixture_scenarios(tmp_path, scenario):
    from test_fixture_traces import write_scenario
    assert assert_readers_agree(write_scenario(tmp_path, scenario)) > 0


@pytest.mark.parametrize("fixture", sorted(FIXTURES))
def test_the_columnar_decoder_reads_the_fixtures(tmp_path, fixture):
    assert_readers_agree(tb.write(tmp_path / f"{fixture}.wst", FIXTURES[fixture]()))


def packet_offsets(data: bytes) -> List[int]:
    """Where each packet of a trace starts (tag byte, varint length)."""
    offsets, pos = [], 0
    while pos < len(data):
        offsets.append(pos)
        length, shift, pos = 0, 0, pos + 1
        while True:
            byte = data[pos]
            length |= (byte & 0x7F) << shift
            pos, shift = pos + 1, shift + 7
            if byte < 0x80:
                break
        pos += length
    return offsets


def test_cut_traces_keep_the_same_rows(tmp_path):
    """A trace cut anywhere (inside a packet, between two, inside its header) gives the
    same rows, truncation and problems, or the same error, with every reader."""
    data = tb.encode(tb.every_kind())
    starts = packet_offsets(data)
    cuts = sorted({c for s in starts for c in (s, s + 1, s + 3)} | {len(data) - 1})
    kept = []
    for cut in cuts:
        if 0 < cut < len(data):
            path = tmp_path / f"cut{cut}.wst"
            path.write_bytes(data[:cut])
            kept.append(assert_readers_agree(path))
    assert kept == sorted(kept) and kept[-1] > kept[0]  # more bytes, more rows


def test_damaged_traces_give_the_same_error_or_rows(tmp_path):
    """Bytes overwritten inside event packets and in their framing: the same error (class
    and byte offset) or the same frames and problems with every reader."""
    data = tb.encode(tb.every_kind())
    starts = packet_offsets(data)
    errors = 0
    for i, start in enumerate(starts[1:], 1):
        end = starts[i + 1] if i + 1 < len(starts) else len(data)
        for pos, value in ((start, 0x12), (start + 1, 0xFF), (start + 2, 0x0F),
                           ((start + end) // 2, 0xFF), (end - 1, 0x80)):
            if pos >= len(data):
                continue
            damaged = bytearray(data)
            damaged[pos] = value
            path = tmp_path / f"damaged{pos}_{value}.wst"
            path.write_bytes(bytes(damaged))
            (python, *_), _ = read_each(path)
            errors += isinstance(python, Exception)
            assert_readers_agree(path)
    assert errors > 0


def test_event_packets_the_fast_path_leaves_to_protobuf(tmp_path):
    """Events with a field this reader does not know, a field in another wire type, or two
    members in one packet are parsed by protobuf; rows and counters stay those of both
    readers."""
    kernel_bytes = s.TracePacket(kernel=s.KernelEvent(name_id=1, start_ns=7,
                                                      duration_ns=3)).SerializeToString()
    unknown_field = kernel_bytes[:1] + bytes([kernel_bytes[1] + 2]) + kernel_bytes[2:] + \
        bytes([0x78, 0x05])  # field 15, varint 5
    packed_like = kernel_bytes[:1] + bytes([kernel_bytes[1] + 3]) + kernel_bytes[2:] + \
        bytes([0x22, 0x01, 0x09])  # start_ns (field 4) as length-delimited
    twice = kernel_bytes + kernel_bytes.replace(bytes([0x20, 0x07]), bytes([0x20, 0x08]))
    path = tmp_path / "odd.wst"
    raw = [tb.encode([tb.header(), tb.string(1, "k")])]
    for payload in (kernel_bytes, unknown_field, packed_like, twice):
        raw.append(bytes([0x0A, len(payload)]) + payload)
    raw.append(tb.encode([tb.end()]))
    path.write_bytes(b"".join(raw))
    assert assert_readers_agree(path) == 4


def test_native_is_an_attribute_of_the_package_without_importing_it():
    """`warpscope.native.available()` right after `import warpscope`, in a fresh interpreter."""
    import subprocess
    import sys
    code = "import warpscope; print(warpscope.native.available() in (True, False))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"


def test_a_trace_with_raw_pm_samples_keeps_every_event(tmp_path):
    """Raw PM samples (WARPSCOPE_PM_EVALUATE=offline) send the small tables through the trace
    model, which evaluates them; the events still come from the column decoder, whole: those
    after the raw samples too."""
    kernels = [tb.packet(kernel=schema.KernelEvent(name_id=5, start_ns=s, duration_ns=10))
               for s in (100, 300)]
    path = tb.write(tmp_path / "raw_pm.wst", [
        tb.header(), tb.string(5, "k"), kernels[0],
        tb.packet(pm_metric_set=schema.PmMetricSet(id=1, metric_names=["m"])),
        tb.packet(pm_counter_data=schema.PmCounterData(metric_set_id=1, image=b"\x00",
                                                       sample_index=[0], start_ns=[150],
                                                       duration_ns=[10])),
        kernels[1], tb.end()])
    (python, *_), (cpp, *_) = read_each(path)
    assert list(cpp["kernels"]["start_ns"]) == [100, 300]
    pd.testing.assert_frame_equal(python["kernels"], cpp["kernels"])
