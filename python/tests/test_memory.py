"""Memory events: the ``memory`` event frame with every reader (pure Python and the
extension's columnar decoder), and ``warpscope.memory`` against the CLI's tables, on
tests/data/synthetic/memory.textproto (ten steps, a leak at train.py:57, a pool, a free of a
block from before the recording, a refused 80 GiB request)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest
from google.protobuf import text_format

import tracebuilder as tb
import warpscope
from warpscope import native, schema
from warpscope.frames import trace_to_dataframes
from test_differential import cli_path
from test_rows_parity import cell_text, cli_table

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "synthetic"
MiB = 1 << 20
READERS = [
    "python",
    pytest.param("columns", marks=pytest.mark.skipif(not native.has_extension(),
                                                     reason="needs warpscope_native")),
]


@pytest.fixture
def memory_trace(tmp_path) -> Path:
    trace = text_format.Parse((DATA / "memory.textproto").read_text(), schema.Trace())
    return tb.write(tmp_path / "memory.wst", trace.packet)


@pytest.mark.parametrize("reader", READERS)
def test_memory_frame_has_one_row_per_event(memory_trace, reader):
    trace = warpscope.open(memory_trace)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", warpscope.TraceWarning)
        frames = trace_to_dataframes(trace) if reader == "python" else native.to_dataframes(trace)
    memory = frames["memory"]
    assert list(memory.columns) == [
        "timestamp_ns", "operation", "memory_kind", "address", "bytes", "device_id",
        "context_id", "stream_id", "correlation_id", "thread_id", "os_tid", "thread_name",
        "pool_address", "pool_reserved_bytes", "pool_used_bytes", "source", "result"]
    assert len(memory) == 39
    ops = memory["operation"].astype(str).tolist()
    assert ops.count("allocate") == 25 and ops.count("release") == 12
    assert ops.count("allocate_failed") == 1 and ops.count("pool_create") == 1
    first = memory.iloc[1]
    assert (first["operation"], first["memory_kind"], first["bytes"], first["source"],
            first["os_tid"], first["thread_name"]) == (
        "allocate", "device", 1 << 30,
        "/opt/venv/lib/python3.12/site-packages/torch/lib/libc10_cuda.so", 6161, "python")
    failed = memory[memory["operation"] == "allocate_failed"].iloc[0]
    assert (failed["bytes"], failed["result"], failed["address"]) == (80 << 30, 2, 0)
    for column in ("timestamp_ns", "address", "bytes", "pool_reserved_bytes", "result"):
        assert memory[column].dtype == "int64", column
    assert int(memory["bytes"].sum()) > 0
    assert isinstance(memory["source"].dtype, pd.CategoricalDtype)


@pytest.mark.skipif(not native.available(), reason="the warpscope_native extension is not built")
def test_memory_tables_equal_the_cli(memory_trace):
    frames = warpscope.memory(memory_trace)
    scalars = frames["scalars"].iloc[0]
    assert scalars["peak_bytes"] == 1412 * MiB and bool(scalars["leak"])
    assert scalars["growth_per_step_bytes"] == 4 * MiB
    devices = frames["devices"]
    assert devices["peak_ns"].tolist() == [10_100_000]
    sites = frames["growing_sites"]
    assert sites.iloc[0]["call_site"] == "train.py:57 train_step"
    assert sites.iloc[0]["growth_bytes"] == 40 * MiB
    assert frames["failures"].iloc[0]["pool_free_bytes"] == 128 * MiB
    cli = cli_path()
    if cli is None:
        pytest.skip("the C++ CLI is not built (build/bin/warpscope); ctest runs this with it")
    for table, frame in frames.items():
        rows = cli_table(cli, "memory", [memory_trace], table)
        assert [[r[c] for c in frame.columns] for r in rows] == [
            [cell_text(v) for v in row] for row in frame.itertuples(index=False)], table
