"""Traces from the fixture builder (tests/fixtures, the `warpscope-fixture` tool) read by the
Python package: the package sees what the builder's model promises (synthetic_trace.h).

The tool is found through WARPSCOPE_FIXTURE (ctest sets it) or in build/bin/ of the source
tree; without a built tool these tests are skipped (never under ctest).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import warpscope
from warpscope.__main__ import main

SOURCE_DIR = Path(__file__).resolve().parents[2]


def fixture_tool() -> Path:
    configured = os.environ.get("WARPSCOPE_FIXTURE")
    if configured:
        assert Path(configured).is_file(), f"WARPSCOPE_FIXTURE={configured} does not exist"
        return Path(configured)
    built = SOURCE_DIR / "build" / "bin" / "warpscope-fixture"
    if not built.is_file():
        pytest.skip("warpscope-fixture is not built (build/bin/warpscope-fixture)")
    return built


def write_scenario(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.wst"
    subprocess.run([str(fixture_tool()), name, str(path)], check=True)
    return path


@pytest.fixture(scope="module")
def training_loop(tmp_path_factory):
    trace = warpscope.open(write_scenario(tmp_path_factory.mktemp("fixture"), "training_loop"))
    return trace, trace.to_dataframes()


def test_training_loop_is_whole(training_loop):
    trace, _ = training_loop
    assert trace.complete and trace.problems() == []
    assert trace.header.producer == "fixture:training_loop"
    assert [d.name for d in trace.devices.values()] == ["NVIDIA H200"]


def test_every_kernel_follows_its_launch_call(training_loop):
    _, frames = training_loop
    kernels, api = frames["kernels"], frames["api"]
    assert len(kernels) == 6 * 82
    launch_end = api[api["name"] == "cudaLaunchKernel"].set_index("correlation_id")["end_ns"]
    assert launch_end.index.is_unique
    ends = kernels["correlation_id"].map(launch_end)
    assert ends.notna().all()
    assert (ends <= kernels["start_ns"]).all()
    assert kernels["start_ns"].is_monotonic_increasing
    assert set(kernels["stream_id"]) == {7}


def test_ranges_nest_in_each_step(training_loop):
    _, frames = training_loop
    ranges = frames["nvtx_ranges"]
    steps = ranges[ranges["name"] == "train_step"].reset_index(drop=True)
    assert len(steps) == 6 and set(steps["depth"]) == {0}
    for phase in ("data", "forward", "backward", "optimizer"):
        rows = ranges[ranges["name"] == phase].reset_index(drop=True)
        assert len(rows) == 6 and set(rows["depth"]) == {1}, phase
        assert (rows["start_ns"] >= steps["start_ns"]).all(), phase
        assert (rows["end_ns"] <= steps["end_ns"]).all(), phase


def test_pm_samples_are_back_to_back(training_loop):
    _, frames = training_loop
    pm = frames["pm_samples"]
    assert len(pm) > 0 and set(pm["duration_ns"]) == {20_000}
    assert list(pm["start_ns"]) == [i * 20_000 for i in range(len(pm))]
    assert pm["end_ns"].iloc[-1] >= frames["kernels"]["end_ns"].max()


def test_info_explains_the_builders_counters(tmp_path, capsys):
    path = write_scenario(tmp_path, "tail_kernels")
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "producer fixture:tail_kernels" in out
    assert "  stats (final):" in out
    assert ("writer.events_dropped.buffer_full = 0 [data loss]: events dropped because the "
            "write buffers were full") in out
