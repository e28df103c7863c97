"""``warpscope.advise``: the C++ advise analysis' result as DataFrames, equal to what
``warpscope advise --format json`` prints for the bundled traces (the CLI is found as in
test_differential.py; without it those comparisons skip). Needs the extension."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tracebuilder as tb
import warpscope
from test_differential import SOURCE_DIR, cli_path

pytest.importorskip("warpscope_native")

TRACES = sorted((SOURCE_DIR / "examples" / "traces").rglob("*.wst"))


def cli_advise(path: Path, *flags: str) -> dict:
    cli = cli_path()
    if cli is None:
        pytest.skip("the C++ CLI is not built (build/bin/warpscope); ctest runs this with it")
    result = subprocess.run([str(cli), "advise", str(path), "--format", "json", *flags],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("path", TRACES, ids=[p.name for p in TRACES])
def test_advise_frames_equal_the_cli_json(path):
    frames = warpscope.advise(path)
    report = cli_advise(path)
    # A trace with device memory findings (the out-of-memory dump) adds the `memory` table.
    memory = ["memory"] if "memory" in report else []
    assert sorted(frames) == sorted(["devices", "findings", "notes", "scalars", "summary", *memory])
    assert frames["summary"] is frames["scalars"]  # the old key, for one release

    summary = frames["summary"]
    assert len(summary) == 1
    head = summary.iloc[0]
    scalars = report["scalars"]
    assert head["trace"] == scalars["trace"] == str(path)
    assert head["headline"] == scalars["headline"]
    for column in ("wall_ns", "gpu_span_ns", "gpu_busy_ns", "gpu_idle_ns", "idle_attributed_ns",
                   "steps", "warmup_steps"):
        assert int(head[column]) == scalars[column], column
    assert head["step_rule"] == scalars["step_rule"]
    assert head["gpu_busy_percent"] == pytest.approx(scalars["gpu_busy_percent"], abs=1e-9)

    findings = frames["findings"]
    assert len(findings) == len(report["findings"])
    if report["findings"]:
        assert list(findings.columns) == list(report["findings"][0])
    for row, cli in zip(findings.to_dict("records"), report["findings"]):
        for column, value in cli.items():
            if value is None:  # an empty cell: NaN or <NA> in the frame
                assert pd.isna(row[column]), column
            elif isinstance(value, float):
                assert row[column] == pytest.approx(value, abs=1e-9), column
            else:
                assert row[column] == value, column
    assert list(findings["order"]) == list(range(1, len(findings) + 1))
    assert findings["cost_ns"].dtype == np.int64
    assert findings["one_time"].dtype == bool

    assert frames["devices"].to_dict("records") == [
        {"device": d["device"], "begin_ns": d["begin_ns"], "end_ns": d["end_ns"],
         "busy_ns": d["busy_ns"]} for d in report["devices"]]
    assert list(frames["notes"]["note"]) == [n["note"] for n in report["notes"]]


def test_advise_options_and_errors(tmp_path):
    path = SOURCE_DIR / "examples" / "traces" / "synthetic_training_loop.wst"
    every = warpscope.advise(warpscope.open(path))["findings"]
    assert len(every) >= 2
    top = warpscope.advise(path, top=1)["findings"]
    pd.testing.assert_frame_equal(top, every.head(1))
    with pytest.raises(warpscope.Error, match="no such device"):  # as the CLI refuses it
        warpscope.advise(path, device=12345)
    damaged = tb.write(tmp_path / "bad.wst", [tb.header(), tb.end()])
    damaged.write_bytes(damaged.read_bytes() + b"\x12\x00")  # field 2: not a packet
    with pytest.raises(warpscope.TraceError, match="corrupt data") as error:
        warpscope.advise(damaged)
    assert error.value.path == str(damaged) and error.value.offset is not None


def test_numbered_ranges_are_one_place_unless_literal():
    """On rank 0 of the bundled job (ranges step_0, step_1, ...), findings name step_<N>;
    literal_ranges keeps one finding per step's name, as the CLI's --literal-ranges."""
    path = SOURCE_DIR / "examples" / "traces" / "cuda13.0_sm90" / "ddp_late_rank" / "rank1.wst"
    grouped = warpscope.advise(path)
    literal = warpscope.advise(path, literal_ranges=True)
    paths = set(grouped["findings"]["nvtx_path"])
    assert any("step_<N>" in p for p in paths)
    assert not any("step_1" in p for p in paths)
    assert any(p.startswith("step_1") for p in literal["findings"]["nvtx_path"])
    assert len(literal["findings"]) > len(grouped["findings"])
    assert int(grouped["summary"]["steps"][0]) > 0
    cli = cli_advise(path, "--literal-ranges")
    assert list(literal["findings"]["nvtx_path"]) == [f["nvtx_path"] for f in cli["findings"]]
