"""PyTorch's memory history beside a trace (warpscope.torch_memory): the replay of a snapshot's
history up to the moments `warpscope memory` singles out, the program's line of each tensor,
and the snapshot refused when it is not one (or could run code)."""

from __future__ import annotations

import datetime
import pickle
from pathlib import Path

import pandas as pd
import pytest
from google.protobuf import text_format

import tracebuilder as tb
import warpscope
from warpscope import native, schema
from warpscope.torch_memory import join_history, load_snapshot, site_of

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "synthetic"
MiB = 1 << 20
BASE_NS = 1_700_000_000_000_000_000  # the trace's time 0 since the epoch


def frames(*where):
    """Innermost first, as PyTorch lists them: a library frame, then the program's lines."""
    return [{"filename": "/venv/lib/python3.12/site-packages/torch/nn/functional.py",
             "line": 2000, "name": "linear"}] + [
        {"filename": f, "line": n, "name": "fn"} for f, n in where]


def entry(action, ms, addr, size, *where):
    return {"action": action, "time_us": (BASE_NS + ms * 1_000_000) // 1000, "addr": addr,
            "size": size, "stream": 0, "frames": frames(*where)}


def history():
    """Device 0: weights at 1 ms (train.py:10), activations at 5 ms (train.py:20) freed
    (completed) at 9 ms, a kept tensor at 6 ms (train.py:30); the peak is at 8 ms."""
    return {"segments": [], "device_traces": [[
        entry("segment_alloc", 1, 0x1000, 64 * MiB),
        entry("alloc", 1, 0x1000, 16 * MiB, ("train.py", 10)),
        entry("alloc", 5, 0x2000, 32 * MiB, ("train.py", 20)),
        entry("alloc", 6, 0x3000, 4 * MiB, ("train.py", 30)),
        entry("free_requested", 7, 0x2000, 32 * MiB, ("train.py", 20)),
        entry("free_completed", 9, 0x2000, 32 * MiB, ("train.py", 20)),
    ]]}


def tables(peak_ms=8, failure_ms=None):
    memory = {"devices": pd.DataFrame({"device": [0], "peak_ns": [peak_ms * 1_000_000]}),
              "failures": pd.DataFrame({"device": [], "timestamp_ns": []})}
    if failure_ms is not None:
        memory["failures"] = pd.DataFrame({"device": [0], "timestamp_ns": [failure_ms * 1_000_000]})
    return memory


def test_the_live_tensors_at_the_peak_with_their_lines():
    out = join_history(history(), tables(peak_ms=8), BASE_NS)
    live = out["live_tensors"]
    # The activations' free was asked for at 7 ms but completed at 9: still held at 8.
    assert live["bytes"].tolist() == [32 * MiB, 16 * MiB, 4 * MiB]
    assert live["site"].tolist() == ["train.py:20 (fn)", "train.py:10 (fn)", "train.py:30 (fn)"]
    assert live["allocated_ms"].tolist() == pytest.approx([5.0, 1.0, 6.0])
    sites = out["sites"]
    assert sites.iloc[0]["site"] == "train.py:20 (fn)"
    assert sites["percent"].sum() == pytest.approx(100.0)
    coverage = out["coverage"].iloc[0]
    assert coverage["covered"] and coverage["history_entries"] == 6
    assert coverage["history_from_ms"] == pytest.approx(1.0)


def test_a_later_moment_and_a_history_without_completions():
    out = join_history(history(), tables(peak_ms=10, failure_ms=9.5), BASE_NS)
    peak = out["live_tensors"][out["live_tensors"]["moment"] == "peak"]
    assert peak["bytes"].tolist() == [16 * MiB, 4 * MiB]
    assert (out["live_tensors"]["moment"] == "failed request 1").sum() == 2
    # Without free_completed entries a block ends when its free is asked for.
    h = history()
    h["device_traces"][0] = [e for e in h["device_traces"][0] if e["action"] != "free_completed"]
    out = join_history(h, tables(peak_ms=8), BASE_NS)
    assert out["live_tensors"]["bytes"].tolist() == [16 * MiB, 4 * MiB]


def test_the_plateau_begins_at_the_moments_segment_and_ends_at_the_next():
    """PyTorch's entries of the peak's segment come 300 µs after the trace's peak (clocks and
    the allocator's order): the tensor made in it counts; the next segment event (12 ms) ends
    the plateau, so a tensor made at 13 ms does not."""
    h = {"segments": [], "device_traces": [[
        entry("alloc", 1, 0x1000, 16 * MiB, ("train.py", 10)),
        {**entry("segment_alloc", 8, 0x9000, 1024 * MiB), "time_us": (BASE_NS + 8_300_000) // 1000},
        {**entry("alloc", 8, 0x9000, 1024 * MiB, ("train.py", 40)),
         "time_us": (BASE_NS + 8_310_000) // 1000},
        entry("segment_alloc", 12, 0xA000, 64 * MiB),
        entry("alloc", 13, 0xA000, 64 * MiB, ("train.py", 50)),
    ]]}
    memory = tables(peak_ms=8)
    memory["largest_blocks"] = pd.DataFrame({"device": [0], "allocated_ns": [8_000_000],
                                             "address": ["0x9000"]})
    out = join_history(h, memory, BASE_NS)
    assert out["live_tensors"]["site"].tolist() == ["train.py:40 (fn)", "train.py:10 (fn)"]
    assert out["coverage"].iloc[0]["clock_offset_us"] == 300
    # Without the peak block's address, the first segment made in the millisecond after the
    # moment is taken for its own.
    del memory["largest_blocks"]
    out = join_history(h, memory, BASE_NS)
    assert out["live_tensors"]["bytes"].tolist() == [1024 * MiB, 16 * MiB]
    assert out["coverage"].iloc[0]["clock_offset_us"] == 300
    # A moment 2 ms before that segment is a plateau of its own, which the segment ends.
    out = join_history(h, tables(peak_ms=6.3), BASE_NS)
    assert out["live_tensors"]["bytes"].tolist() == [16 * MiB]
    assert out["coverage"].iloc[0]["clock_offset_us"] == 0


def test_a_moment_outside_the_history_is_not_joined():
    # The ring kept nothing before 1 ms: a peak at 0.5 ms cannot be joined, and is said so.
    out = join_history(history(), tables(peak_ms=0.5), BASE_NS)
    assert out["live_tensors"].empty and out["sites"].empty
    assert not out["coverage"].iloc[0]["covered"]
    # A device the history does not have.
    memory = tables()
    memory["devices"] = pd.DataFrame({"device": [3], "peak_ns": [8_000_000]})
    out = join_history(history(), memory, BASE_NS)
    assert out["coverage"].iloc[0]["history_entries"] == 0 and out["live_tensors"].empty


def test_the_site_is_the_innermost_program_line():
    assert site_of(frames(("/home/u/model.py", 7), ("/home/u/train.py", 99))) == \
        "/home/u/model.py:7 (fn)"
    lib_only = [{"filename": "/usr/lib/python3.12/site-packages/torch/x.py", "line": 3,
                 "name": "f"}, {"filename": "??", "line": 0, "name": "c10::alloc"}]
    assert site_of(lib_only) == "/usr/lib/python3.12/site-packages/torch/x.py:3 (f)"
    # Native frames only (the autograd thread): the autograd node, else the first frame past
    # PyTorch's capture and the allocator.
    native = [{"filename": "??", "line": 0, "name": n} for n in (
        "torch::unwind::unwind()", "c10::cuda::CUDACachingAllocator::Native::malloc(unsigned long)",
        "at::cuda::setWorkspaceForHandle(cublasContext*)",
        "torch::autograd::generated::AddmmBackward0::apply(std::vector<at::Tensor>&&)",
        "torch::autograd::Engine::thread_main()")]
    assert site_of(native) == "torch::autograd::generated::AddmmBackward0::apply"
    assert site_of(native[:3]) == "at::cuda::setWorkspaceForHandle"
    assert site_of(native[:2]) == "torch::unwind::unwind"
    assert site_of([]) == "no stack"


def test_bad_snapshots_are_refused_without_running_code(tmp_path):
    missing = tmp_path / "none.pickle"
    with pytest.raises(warpscope.Error, match="cannot read the snapshot"):
        load_snapshot(str(missing))
    not_pickle = tmp_path / "text.pickle"
    not_pickle.write_text("hello")
    with pytest.raises(warpscope.Error, match="not a PyTorch memory snapshot"):
        load_snapshot(str(not_pickle))
    # A pickle that names a class (it could name os.system) is refused before making it.
    hostile = tmp_path / "object.pickle"
    hostile.write_bytes(pickle.dumps({"device_traces": [[datetime.date(2026, 1, 1)]]}))
    with pytest.raises(warpscope.Error, match="names datetime.date"):
        load_snapshot(str(hostile))
    empty = tmp_path / "empty.pickle"
    empty.write_bytes(pickle.dumps({"segments": [], "device_traces": [[]]}))
    with pytest.raises(warpscope.Error, match="_record_memory_history"):
        load_snapshot(str(empty))
    no_traces = tmp_path / "dict.pickle"
    no_traces.write_bytes(pickle.dumps({"segments": []}))
    with pytest.raises(warpscope.Error, match="no device_traces"):
        load_snapshot(str(no_traces))


@pytest.mark.skipif(not native.has_extension(), reason="needs warpscope_native")
def test_torch_memory_on_a_trace(tmp_path):
    """End to end on tests/data/synthetic/memory.textproto: the snapshot's times put on the
    trace's clock, the peak and the refused request joined."""
    trace = text_format.Parse((DATA / "memory.textproto").read_text(), schema.Trace())
    path = tb.write(tmp_path / "memory.wst", trace.packet)
    memory = warpscope.memory(str(path))
    with warpscope.open(path) as t:
        base = t.header.unix_time_base_ns
    peak_ms = int(memory["devices"]["peak_ns"].iloc[0]) / 1e6
    device = int(memory["devices"]["device"].iloc[0])
    snap = {"segments": [], "device_traces": [[] for _ in range(device)] + [[
        {"action": "alloc", "time_us": (base + int(peak_ms * 1e6) // 2) // 1000, "addr": 1,
         "size": 8 * MiB, "stream": 0, "frames": frames(("train.py", 57))}]]}
    snapshot = tmp_path / "snap.pickle"
    snapshot.write_bytes(pickle.dumps(snap))
    out = warpscope.torch_memory(str(path), str(snapshot), top=5)
    peak = out["live_tensors"][out["live_tensors"]["moment"] == "peak"]
    assert peak["site"].tolist() == ["train.py:57 (fn)"]
    assert peak["allocated_ms"].iloc[0] == pytest.approx(peak_ms / 2, abs=1e-3)
    assert (out["coverage"]["moment"] == "failed request 1").any()
    with pytest.raises(warpscope.Error, match="top must be 1 or more"):
        warpscope.torch_memory(str(path), str(snapshot), top=0)
