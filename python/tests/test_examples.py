"""Reads the example traces that the C++ writer produced (examples/traces/*.wst).

The files are looked for when the test runs, not when it is collected: an empty folder
fails instead of turning into an empty parameter list that pytest would skip quietly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tracebuilder as tb
import warpscope
from warpscope import schema

TRACES = Path(__file__).resolve().parents[2] / "examples" / "traces"


def check_traces_in(folder: Path) -> None:
    """Every .wst in folder is complete, whole, and names all its kernels."""
    paths = sorted(folder.glob("*.wst"))
    assert paths, f"{folder} exists but holds no .wst file: the example traces are missing"
    for path in paths:
        with warpscope.open(path) as trace:
            frames = trace.to_dataframes()
            assert trace.complete, f"{path}: no EndOfTrace ({trace.problems()})"
            assert not trace.truncated, f"{path}: cut at byte {trace.truncation_offset}"
            kernels = frames["kernels"]
            assert len(kernels) > 0, f"{path}: no kernels"
            unresolved = kernels[kernels["name"].str.startswith("<unknown:")
                                 | (kernels["name"] == "")]
            assert unresolved.empty, f"{path}: kernels without a name: {unresolved.head()}"
            assert trace.issues == {}, f"{path}: {trace.issues}"


def test_example_traces_read_fully():
    if not TRACES.is_dir():
        pytest.skip(f"{TRACES} does not exist (not a warpscope source tree)")
    check_traces_in(TRACES)


def test_the_check_itself(tmp_path):
    with pytest.raises(AssertionError, match="holds no .wst file"):
        check_traces_in(tmp_path)
    tb.write(tmp_path / "good.wst", tb.every_kind())
    check_traces_in(tmp_path)
    tb.write(tmp_path / "unnamed.wst", [tb.header(), tb.packet(
        kernel=schema.KernelEvent(name_id=5)), tb.end()])
    with pytest.warns(warpscope.TraceWarning, match="reader.undefined_string_refs"):
        with pytest.raises(AssertionError, match="kernels without a name"):
            check_traces_in(tmp_path)
