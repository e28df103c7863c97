"""``warpscope.job``: every rank's trace of a data-parallel job as DataFrames, from the C++ job
view through the one report-to-columns path (python/src/native_reports.cc ReportColumns), equal
to ``warpscope job --format json``. Jobs come from the fixture tool (``warpscope-fixture
ddp_job``, tests/fixtures/synthetic_job.h). Needs the extension."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

import warpscope
from test_differential import cli_path
from test_fixture_traces import fixture_tool

pytest.importorskip("warpscope_native")


def write_job(tmp_path: Path, *flags: str) -> Path:
    subprocess.run([str(fixture_tool()), "ddp_job", str(tmp_path), "--steps", "6", *flags],
                   check=True)
    return tmp_path


def test_a_late_rank_is_named_with_typed_tables(tmp_path):
    frames = warpscope.job(write_job(tmp_path, "--late-rank", "2", "--late-ms", "10"))
    assert set(frames) == {"scalars", "ranks", "collectives", "steps", "instances",
                           "rank_collectives", "problems"}
    scalars = frames["scalars"].iloc[0]
    assert scalars["straggler"] == 2
    assert scalars["verdict"].startswith("Straggler: rank 2 arrives last")
    ranks = frames["ranks"]
    assert list(ranks["rank"]) == [0, 1, 2, 3]
    assert ranks["rank"].dtype == "int64" and ranks["total_lost_ms"].dtype == "float64"
    lost = ranks.set_index("rank")["total_lost_ms"]
    assert lost[2] == 0
    per_step = ranks.set_index("rank")["median_lost_ms"]  # over the steady steps
    for rank in (0, 1, 3):  # 10 ms a step, 6 steps
        assert lost[rank] == pytest.approx(60.0, rel=0.05)
        assert per_step[rank] == pytest.approx(10.0, rel=0.05)
    per = frames["rank_collectives"]
    assert len(per) == 4 * len(frames["instances"])
    assert (per.loc[per["rank"] == 2, "arrived_last"] == 1).all()
    assert frames["problems"].empty


def test_empty_cells_are_nullable(tmp_path):
    frames = warpscope.job(write_job(tmp_path))  # balanced: no straggler
    assert pd.isna(frames["scalars"].iloc[0]["straggler"])
    assert frames["scalars"].iloc[0]["verdict"].startswith("No straggler")


def test_the_frames_equal_the_clis_json(tmp_path):
    job = write_job(tmp_path, "--slow-rank", "1")
    cli = cli_path()
    if cli is None:
        pytest.skip("the C++ CLI is not built (build/bin/warpscope); ctest runs this with it")
    out = subprocess.run([str(cli), "job", str(job), "--format", "json"], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    expected = json.loads(out)
    frames = warpscope.job([str(p) for p in sorted(job.glob("*.wst"))])
    scalars = frames["scalars"].iloc[0]
    assert scalars["straggler"] == expected["scalars"]["straggler"] == 1
    assert scalars["verdict"] == expected["scalars"]["verdict"]
    assert scalars["cause"] == expected["scalars"]["cause"]
    for table in ("ranks", "collectives", "steps", "instances"):
        pd.testing.assert_frame_equal(frames[table], pd.DataFrame(expected[table]),
                                      check_dtype=False, obj=table)


def test_a_trace_that_cannot_be_read_is_a_trace_error(tmp_path):
    bad = tmp_path / "rank_0.wst"
    bad.write_text("not a trace")
    with pytest.raises(warpscope.TraceError, match="rank_0.wst"):
        warpscope.job([bad])


def test_the_three_readers_agree_on_nccl_calls(tmp_path):
    """The columnar decoder, the model and the pure-Python reader give the same nccl_calls
    frame (sint32 fields decoded from zigzag: -1 for a root or peer the call has none of)."""
    from test_native import assert_readers_agree
    job = write_job(tmp_path, "--late-rank", "1")
    trace = job / "rank_0.wst"
    assert assert_readers_agree(trace) > 0
    calls = warpscope.open(trace).to_dataframes()["nccl_calls"]
    assert len(calls) == 12  # 2 buckets x 6 steps
    assert set(calls["name"]) == {"ncclAllReduce"}
    assert (calls["root"] == -1).all() and (calls["reduction_op"] == 0).all()
    assert (calls["bytes"] == 25 << 20).all()
