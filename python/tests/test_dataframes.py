"""Every event kind reaches its DataFrame with ids resolved, enums named, times as int64."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import tracebuilder as tb
import warpscope
from warpscope import schema
from warpscope.frames import FRAME_NAMES


@pytest.fixture
def frames(tmp_path):
    trace = warpscope.open(tb.write(tmp_path / "t.wst", tb.every_kind()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a sound trace must not warn
        return trace.to_dataframes()


def only_row(frame: pd.DataFrame) -> dict:
    assert len(frame) == 1
    return frame.iloc[0].to_dict()


def test_all_frames_present(frames):
    assert tuple(sorted(frames)) == FRAME_NAMES
    for name in ["kernels", "api", "nvtx_ranges", "nvtx_marks", "memcpy", "memset", "sync",
                 "graph_launches", "pm_samples", "pc_samples", "capture_windows", "overhead",
                 "devices"]:
        assert name in frames and len(frames[name]) > 0, name


def test_kernels(frames):
    k = only_row(frames["kernels"])
    assert k["name"] == "gemm_kernel(float*)"
    assert k["mangled_name"] == "_Z11gemm_kernelPf"
    assert (k["start_ns"], k["end_ns"], k["duration_ns"]) == (100, 150, 50)
    assert (k["grid_x"], k["grid_y"], k["grid_z"]) == (128, 2, 1)
    assert (k["block_x"], k["block_y"], k["block_z"]) == (256, 1, 1)
    assert (k["cluster_x"], k["cluster_y"], k["cluster_z"]) == (0, 0, 0)
    assert k["registers_per_thread"] == 32
    assert (k["static_shared_memory"], k["dynamic_shared_memory"]) == (1024, 2048)
    assert (k["device_id"], k["context_id"], k["stream_id"]) == (0, 1, 7)
    assert (k["correlation_id"], k["grid_id"], k["launch_config_id"]) == (11, 99, 1)
    for column in ["start_ns", "end_ns", "duration_ns", "grid_x", "registers_per_thread"]:
        assert frames["kernels"][column].dtype == np.int64, column


def test_api(frames):
    a = only_row(frames["api"])
    assert (a["name"], a["domain"]) == ("cudaLaunchKernel", "runtime")
    assert (a["thread_id"], a["os_tid"], a["thread_name"]) == (1, 5555, "main")
    assert (a["start_ns"], a["end_ns"], a["correlation_id"], a["callback_id"]) == (90, 98, 11,
                                                                                  211)


def test_nvtx(frames):
    ranges = frames["nvtx_ranges"].sort_values("start_ns").reset_index(drop=True)
    outer, inner = ranges.iloc[0].to_dict(), ranges.iloc[1].to_dict()
    assert (outer["name"], outer["domain"], outer["is_push_pop"]) == ("forward", "my_domain",
                                                                      False)
    assert (outer["os_tid"], outer["end_os_tid"], outer["end_thread_name"]) == (5555, 5556,
                                                                                "worker")
    assert (outer["category"], outer["color"], outer["end_ns"]) == (2, 0xFF00FF00, 280)
    assert (inner["domain"], inner["depth"], inner["is_push_pop"]) == ("", 1, True)
    mark = only_row(frames["nvtx_marks"])
    assert (mark["name"], mark["domain"], mark["timestamp_ns"], mark["os_tid"]) == (
        "step_begin", "", 85, 5556)


def test_memory(frames):
    copies = frames["memcpy"].set_index("copy_kind")
    assert sorted(copies.index) == ["HtoD", "PtoP"]
    assert (copies.loc["HtoD", "src_kind"], copies.loc["HtoD", "dst_kind"]) == ("pageable",
                                                                                "device")
    assert copies.loc["HtoD", "bytes"] == 4096 and bool(copies.loc["HtoD", "is_async"])
    assert (copies.loc["PtoP", "src_device_id"], copies.loc["PtoP", "dst_device_id"]) == (0, 1)
    memset = only_row(frames["memset"])
    assert (memset["memory_kind"], memset["bytes"], memset["end_ns"]) == ("pinned", 512, 73)


def test_sync_graph_overhead_capture(frames):
    sync = only_row(frames["sync"])
    assert (sync["kind"], sync["cuda_event_id"], sync["os_tid"]) == ("stream_wait_event", 3,
                                                                     5555)
    graph = only_row(frames["graph_launches"])
    assert (graph["graph_id"], graph["start_ns"], graph["end_ns"]) == (5, 200, 230)
    overhead = only_row(frames["overhead"])
    assert (overhead["kind"], overhead["thread_name"]) == ("CUPTI_BUFFER_FLUSH", "worker")
    windows = frames["capture_windows"]
    assert list(windows["begin"]) == [True, False]
    assert list(windows["trigger"]) == ["process", "process"]
    assert list(windows["timestamp_ns"]) == [10, 400]


def test_pm_samples(frames):
    pm = frames["pm_samples"]
    assert list(pm[tb.WARPS_ACTIVE]) == [12.5, 3.0]
    assert list(pm[tb.CYCLES]) == [1980.0, 1990.0]
    assert list(pm["end_ns"]) == [1100, 2100]
    assert list(pm["device_id"]) == [0, 0]


def test_pc_samples(frames):
    pc = frames["pc_samples"]
    assert len(pc) == 2  # one row per pc x stall reason
    by_reason = pc.set_index("stall_reason")["samples"].to_dict()
    assert by_reason == {tb.LONG_SCOREBOARD: 6, tb.SELECTED: 4}
    assert set(pc["function_name"]) == {"_Z4axpyPf"}
    assert set(pc["pc_offset"]) == {0x40}
    assert pc["cubin_crc"].dtype == np.uint64 and int(pc["cubin_crc"].iloc[0]) == tb.CRC
    batch = only_row(frames["pc_sample_batches"])
    assert (batch["total_samples"], batch["timestamp_ns"]) == (10, 300)


def test_devices_and_contexts(frames):
    device = only_row(frames["devices"])
    assert (device["name"], device["sm_count"], device["compute_capability_major"]) == (
        "NVIDIA H200", 132, 9)
    assert only_row(frames["contexts"])["device_id"] == 0


def test_empty_kinds_have_the_same_columns(tmp_path, frames):
    trace = warpscope.open(tb.write(tmp_path / "empty.wst", [tb.header(), tb.end()]))
    empty = trace.to_dataframes()
    assert sorted(empty) == sorted(frames)
    for name, frame in empty.items():
        assert len(frame) == 0, name
        full = frames[name]
        if name == "pm_samples":  # metric columns come from the trace's metric sets
            full = full.drop(columns=[tb.WARPS_ACTIVE, tb.CYCLES])
        assert list(frame.columns) == list(full.columns), name
        for column in frame.columns:
            if column.endswith("_ns") or column.endswith("_id"):
                assert frame[column].dtype == full[column].dtype, (name, column)


def test_undefined_ids_are_named_and_counted(tmp_path):
    trace = warpscope.open(tb.write(tmp_path / "t.wst", [
        tb.header(),
        tb.packet(kernel=schema.KernelEvent(name_id=77, mangled_name_id=0, launch_config_id=5,
                                            duration_ns=1)),
        tb.packet(api_call=schema.ApiCallEvent(name_id=77, thread_id=9)),
        tb.packet(pc_stall_reasons=schema.PcStallReasons(device_id=0, index=[1], name=["a"])),
        tb.packet(pc_samples=schema.PcSampleBatch(records=[schema.PcSampleRecord(
            function_name_id=3, stall_reason_index=[1, 2], samples=[1, 1])])),
        tb.packet(pm_sample=schema.PmSample(metric_set_id=4, values=[1.0])),
        tb.end()]))
    for _ in range(2):  # a second call must not count twice
        with pytest.warns(warpscope.TraceWarning, match="reader.undefined_string_refs"):
            frames = trace.to_dataframes()
        assert trace.issues == {"reader.undefined_string_refs": 3, "reader.undefined_launch_config_refs": 1,
                                "reader.undefined_thread_refs": 1, "model.undefined_pc_stall_reason_refs": 1,
                                "model.pm_samples_without_metric_set": 1}
    kernel = only_row(frames["kernels"])
    assert (kernel["name"], kernel["mangled_name"], kernel["grid_x"]) == ("<unknown:77>", "", 0)
    api = only_row(frames["api"])
    assert (api["os_tid"], api["thread_name"]) == (0, "<unknown:9>")
    assert list(frames["pc_samples"]["stall_reason"]) == ["a", "<unknown:2>"]
    assert list(frames["pc_samples"]["function_name"]) == ["<unknown:3>"] * 2
    assert len(frames["pm_samples"]) == 0


def test_time_before_time_base_is_negative(tmp_path):
    """A writer that subtracts the time base from an earlier time wraps around in uint64."""
    trace = warpscope.open(tb.write(tmp_path / "t.wst", [
        tb.header(), tb.string(1, "k"),
        tb.packet(kernel=schema.KernelEvent(name_id=1, start_ns=2**64 - 5, duration_ns=10)),
        tb.end()]))
    kernel = only_row(trace.to_dataframes()["kernels"])
    assert (kernel["start_ns"], kernel["end_ns"]) == (-5, 5)


def test_unknown_enum_value_is_labelled(tmp_path):
    trace = warpscope.open(tb.write(tmp_path / "t.wst", [
        tb.header(), tb.packet(memcpy=schema.MemcpyEvent(copy_kind=42)), tb.end()]))
    assert only_row(trace.to_dataframes()["memcpy"])["copy_kind"] == "<unknown:42>"


def test_pm_value_count_mismatch_is_counted(tmp_path):
    trace = warpscope.open(tb.write(tmp_path / "t.wst", [
        tb.header(),
        tb.packet(pm_metric_set=schema.PmMetricSet(id=1, metric_names=["a", "b"])),
        tb.packet(pm_sample=schema.PmSample(metric_set_id=1, values=[1.0])),
        tb.end()]))
    with pytest.warns(warpscope.TraceWarning):
        pm = trace.to_dataframes()["pm_samples"]
    assert pm["a"].iloc[0] == 1.0 and np.isnan(pm["b"].iloc[0])
    assert trace.issues == {"model.pm_sample_value_count_mismatch": 1}


def test_truncated_trace_warns_and_keeps_whole_packets(tmp_path):
    data = tb.encode(tb.every_kind())
    path = tmp_path / "cut.wst"
    path.write_bytes(data[:len(data) - 3])
    trace = warpscope.open(path)
    with pytest.warns(warpscope.TraceWarning, match="cut short"):
        frames = trace.to_dataframes()
    assert len(frames["kernels"]) == 1 and len(frames["pc_samples"]) == 2


def test_concat_dataframes_adds_rank_and_aligns_time(tmp_path):
    rank3 = tb.write(tmp_path / "r3.wst", tb.every_kind())
    packets = tb.every_kind()
    packets[0] = tb.header(rank_env=[schema.KeyValue(key="RANK", value="0")], pid=1,
                           unix_time_base_ns=1_700_000_000_000_000_000 - 1000)
    rank0 = tb.write(tmp_path / "r0.wst", packets)
    traces = warpscope.open_many([rank3, rank0])
    assert [t.rank for t in traces] == [0, 3]
    kernels = warpscope.concat_dataframes(traces)["kernels"]
    assert list(kernels["rank"]) == [0, 3]
    assert list(kernels["pid"]) == [1, 4242]
    assert list(kernels["start_ns"]) == [100, 1100]  # rank 3 started 1000 ns later


def test_concat_dataframes_says_which_file_each_row_came_from(tmp_path):
    first = tb.write(tmp_path / "a.wst", tb.every_kind())
    packets = tb.every_kind()
    packets[0] = tb.header(rank_env=[schema.KeyValue(key="RANK", value="0")], pid=1)
    second = tb.write(tmp_path / "b.wst", packets)
    frames = warpscope.concat_dataframes(warpscope.open_many([first, second]))
    kernels = frames["kernels"]
    assert list(kernels["file"]) == [str(second), str(first)]  # ordered by rank: 0, then 3
    assert list(kernels["rank"]) == [0, 3]
    # Names stay categorical over files whose string tables differ.
    assert isinstance(frames["api"]["name"].dtype, pd.CategoricalDtype)
    assert set(frames["nvtx_ranges"]["file"]) == {str(first), str(second)}


def test_metric_named_like_a_fixed_column_never_replaces_it(tmp_path):
    names = ["start_ns", "metric:start_ns", "device_id", "b"]
    trace = warpscope.open(tb.write(tmp_path / "t.wst", [
        tb.header(),
        tb.packet(pm_metric_set=schema.PmMetricSet(id=1, device_id=3, metric_names=names)),
        tb.packet(pm_sample=schema.PmSample(metric_set_id=1, start_ns=100, duration_ns=10,
                                            values=[1.5, 2.5, 3.5, 4.5])),
        tb.end()]))
    pm = only_row(trace.to_dataframes()["pm_samples"])
    assert list(pm) == ["start_ns", "end_ns", "duration_ns", "metric_set_id", "device_id",
                        "metric:metric:start_ns", "metric:start_ns", "metric:device_id", "b"]
    assert (pm["start_ns"], pm["end_ns"], pm["device_id"]) == (100, 110, 3)
    assert pm["metric:metric:start_ns"] == 1.5  # the metric "start_ns"
    assert pm["metric:start_ns"] == 2.5  # the metric "metric:start_ns" keeps its name
    assert (pm["metric:device_id"], pm["b"]) == (3.5, 4.5)


def test_100k_metric_names(tmp_path):
    """Two sets that share half their names; reading them once took minutes (quadratic)."""
    n = 100_000
    first = [f"m{i}" for i in range(n)]
    second = [f"m{i}" for i in range(n // 2, n + n // 2)]
    trace = warpscope.open(tb.write(tmp_path / "t.wst", [
        tb.header(),
        tb.packet(pm_metric_set=schema.PmMetricSet(id=2, device_id=1, metric_names=second)),
        tb.packet(pm_metric_set=schema.PmMetricSet(id=1, device_id=0, metric_names=first)),
        tb.packet(pm_sample=schema.PmSample(metric_set_id=1, values=range(n))),
        tb.packet(pm_sample=schema.PmSample(metric_set_id=2, values=range(n, 2 * n))),
        tb.end()]))
    pm = trace.to_dataframes()["pm_samples"]
    assert pm.shape == (2, 5 + n + n // 2)
    assert list(pm.columns[5:]) == first + second[n // 2:]  # by set id, then first seen
    assert list(pm["device_id"]) == [0, 1]
    assert (pm["m0"].iloc[0], pm[f"m{n - 1}"].iloc[0]) == (0, n - 1)
    assert np.isnan(pm["m0"].iloc[1]) and np.isnan(pm[f"m{n}"].iloc[0])
    assert (pm[f"m{n // 2}"].iloc[1], pm[f"m{n + n // 2 - 1}"].iloc[1]) == (n, 2 * n - 1)


def kernel(name_id: int, launch_config_id: int = 0, start_ns: int = 0):
    return tb.packet(kernel=schema.KernelEvent(name_id=name_id, start_ns=start_ns,
                                               launch_config_id=launch_config_id))


def test_redefined_ids_apply_from_where_they_are_redefined(tmp_path):
    """As the C++ reader: a later, different definition replaces the earlier one for the
    events after it, and is counted once as redefined_ids; the same value again is not."""
    s = schema

    def definitions_then_events(name, os_tid, grid_x, metric, t):
        return [tb.string(1, name),
                tb.packet(thread=s.ThreadInfo(id=1, os_tid=os_tid, name=f"t{os_tid}")),
                tb.packet(launch_config=s.LaunchConfig(id=1, grid_x=grid_x)),
                tb.packet(pm_metric_set=s.PmMetricSet(id=1, metric_names=[metric])),
                kernel(1, 1, start_ns=t),
                tb.packet(api_call=s.ApiCallEvent(name_id=1, thread_id=1, start_ns=t)),
                tb.packet(pm_sample=s.PmSample(metric_set_id=1, start_ns=t, values=[t]))]

    trace = warpscope.open(tb.write(tmp_path / "t.wst", [tb.header()]
                                    + definitions_then_events("old", 10, 1, "a", 1)
                                    # the writer may emit a definition again: not counted
                                    + [tb.string(1, "old")]
                                    + definitions_then_events("new", 20, 2, "b", 2)
                                    + [tb.end()]))
    with pytest.warns(warpscope.TraceWarning, match="reader.redefined_ids = 3"):
        frames = trace.to_dataframes()
    assert trace.issues == {"reader.redefined_ids": 3, "model.redefined_pm_metric_sets": 1}
    assert trace.strings == {1: "new"} and trace.threads[1].os_tid == 20
    assert trace.launch_configs[1].grid_x == 2
    assert list(trace.pm_metric_sets[1].metric_names) == ["b"]
    kernels = frames["kernels"]
    assert list(kernels["name"]) == ["old", "new"] and list(kernels["grid_x"]) == [1, 2]
    api = frames["api"]
    assert list(api["name"]) == ["old", "new"] and list(api["os_tid"]) == [10, 20]
    assert list(api["thread_name"]) == ["t10", "t20"]
    pm = frames["pm_samples"]
    assert list(pm.columns[5:]) == ["a", "b"]
    assert pm["a"].iloc[0] == 1.0 and np.isnan(pm["b"].iloc[0])
    assert pm["b"].iloc[1] == 2.0 and np.isnan(pm["a"].iloc[1])


def test_many_redefinitions(tmp_path):
    """Every kernel gets the name in force when it was read, however often ids change."""
    packets = [tb.header()]
    for i in range(5000):
        packets += [tb.string(1 + i % 3, f"name{i}"), kernel(1 + i % 3), kernel(1 + (i + 1) % 3)]
    trace = warpscope.open(tb.write(tmp_path / "t.wst", packets + [tb.end()]))
    with pytest.warns(warpscope.TraceWarning):
        names = list(trace.to_dataframes()["kernels"]["name"])
    expected, in_force = [], {}
    for i in range(5000):
        in_force[1 + i % 3] = f"name{i}"
        for ident in (1 + i % 3, 1 + (i + 1) % 3):
            expected.append(in_force.get(ident, f"<unknown:{ident}>"))
    assert names == expected
    assert trace.issues == {"reader.redefined_ids": 4997, "reader.undefined_string_refs": 2}


def test_reference_before_definition_is_undefined(tmp_path):
    """As in C++: an id is defined for the events after its definition, not before."""
    s = schema
    trace = warpscope.open(tb.write(tmp_path / "t.wst", [
        tb.header(),
        kernel(1, 1),
        tb.packet(nvtx_range=s.NvtxRangeEvent(name_id=1, thread_id=4, end_thread_id=4)),
        tb.packet(nvtx_range=s.NvtxRangeEvent(name_id=1, thread_id=4, end_thread_id=5)),
        tb.packet(pm_sample=s.PmSample(metric_set_id=1, values=[1.0])),
        tb.string(1, "k"), tb.string(0, "no string"),
        tb.packet(launch_config=s.LaunchConfig(id=1, grid_x=8)),
        tb.packet(thread=s.ThreadInfo(id=4, os_tid=44)),
        tb.packet(pm_metric_set=s.PmMetricSet(id=1, metric_names=["a"])),
        kernel(1, 1),
        tb.packet(nvtx_range=s.NvtxRangeEvent(name_id=1, domain_id=0, thread_id=4)),
        tb.packet(pm_sample=s.PmSample(metric_set_id=1, values=[2.0])),
        tb.end()]))
    with pytest.warns(warpscope.TraceWarning):
        frames = trace.to_dataframes()
    # A range that ends on the thread it began on refers to one thread: counted once.
    assert trace.issues == {"reader.undefined_string_refs": 3, "reader.undefined_launch_config_refs": 1,
                            "reader.undefined_thread_refs": 3, "model.pm_samples_without_metric_set": 1}
    assert list(frames["kernels"]["name"]) == ["<unknown:1>", "k"]
    assert list(frames["kernels"]["grid_x"]) == [0, 8]
    ranges = frames["nvtx_ranges"]
    assert list(ranges["name"]) == ["<unknown:1>", "<unknown:1>", "k"]
    assert list(ranges["os_tid"]) == [0, 0, 44] and list(ranges["domain"]) == ["", "", ""]
    assert list(ranges["end_thread_name"]) == ["<unknown:4>", "<unknown:5>", ""]
    assert list(frames["pm_samples"]["a"]) == [2.0]
    assert trace.strings == {1: "k"}  # id 0 means "no string" and cannot be defined


def test_event_frames_have_the_columns_of_the_cpp_tables(tmp_path):
    """The pure-Python reader's event frames have the columns, in the order, that the C++
    column tables give (python/warpscope/columns.py, generated from them)."""
    from warpscope.columns import EVENT_TABLES
    trace = warpscope.open(tb.write(tmp_path / "all.wst", tb.every_kind()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", warpscope.TraceWarning)
        frames = trace.to_dataframes()
    assert len(EVENT_TABLES) >= 11
    for frame, _, columns in EVENT_TABLES:
        expected = []
        for name, derive, _, aux, aux2 in columns:
            expected += [name, aux, aux2] if derive == "thread" else [name]
        assert list(frames[frame].columns) == expected, frame
    assert len(frames["kernels"]) and len(frames["api"]) and len(frames["nvtx_ranges"])
