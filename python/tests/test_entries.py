"""One Python entry per row of the CLI's list of analyses, and ``warpscope.export``.

Every row is a function ``warpscope.NAME`` whose keywords are the flags of ``warpscope NAME``
(dashes as underscores), made from the package's copy of the rows, which must equal the
extension's; every function raises ``warpscope.Error`` for bad input; ``export`` writes what
the CLI writes.
"""

from __future__ import annotations

import inspect
import re
import subprocess
import warnings
from pathlib import Path
from typing import List

import pytest

import warpscope
from warpscope import native, rows_table
from warpscope.analyses import keyword_of
from test_differential import cli_path

SOURCE_DIR = Path(__file__).resolve().parents[2]
TRAINING = SOURCE_DIR / "examples" / "traces" / "synthetic_training_loop.wst"
STALLS = SOURCE_DIR / "examples" / "traces" / "cuda13.0_sm90" / "stall_kernels.wst"
JOB = SOURCE_DIR / "examples" / "traces" / "cuda13.0_sm90" / "ddp_late_rank"
# Flags every command has that are not options of the analysis: how the CLI renders.
RENDER_FLAGS = {"format", "table", "output", "help"}

needs_extension = pytest.mark.skipif(not native.available(),
                                     reason="the warpscope_native extension is not built")


def cli_flags(cli: Path, command: str) -> List[str]:
    """The long flags `warpscope COMMAND --help` lists, in order."""
    result = subprocess.run([str(cli), command, "--help"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    return re.findall(r"^\s+(?:-\w, )?--([\w-]+)", result.stdout, re.MULTILINE)


def keywords(function) -> List[str]:
    return [p.name for p in inspect.signature(function).parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY]


@needs_extension
def test_rows_table_is_the_extensions():
    rows, slice_options, export_options = rows_table.from_extension()
    assert rows_table.ROWS == rows, ("python/warpscope/rows_table.py is out of date: "
                                     "python3 -m warpscope.rows_table --write")
    assert rows_table.SLICE_OPTIONS == slice_options
    assert rows_table.EXPORT_OPTIONS == export_options


def test_every_row_is_a_function_with_its_options():
    assert [r["name"] for r in rows_table.ROWS][:3] == ["info", "summary", "occupancy"]
    for row in rows_table.ROWS:
        function = getattr(warpscope, row["name"])
        assert function.__name__ == row["name"] and row["name"] in warpscope.__all__
        names = [o["name"] for o in row["options"]] + (
            ["from", "to", "step", "window"] if row["slice"] else [])
        assert keywords(function) == [keyword_of(n) for n in names], row["name"]
        assert row["summary"] in function.__doc__


def test_every_functions_keywords_are_the_clis_flags():
    cli = cli_path()
    if cli is None:
        pytest.skip("the C++ CLI is not built (build/bin/warpscope); ctest runs this with it")
    for row in rows_table.ROWS:
        flags = [f for f in cli_flags(cli, row["name"]) if f not in RENDER_FLAGS]
        assert keywords(getattr(warpscope, row["name"])) == [keyword_of(f) for f in flags], (
            row["name"])
    export_flags = [f for f in cli_flags(cli, "export") if f not in RENDER_FLAGS]
    assert export_flags == [o["name"] for o in rows_table.EXPORT_OPTIONS]


@needs_extension
@pytest.mark.parametrize("name", [r["name"] for r in rows_table.ROWS])
def test_every_function_refuses_bad_input_with_one_error(tmp_path, name):
    function = getattr(warpscope, name)
    row = rows_table.ROW_BY_NAME[name]
    pair = row["input"] == "pair"

    def call(traces, **options):
        required = {keyword_of(o["name"]): str(tmp_path / f"{name}.svg")
                    for o in row["options"] if o["required"]}
        return function(traces, traces, **required, **options) if pair else function(
            traces, **required, **options)

    empty = tmp_path / "empty.wst"
    empty.write_bytes(b"")
    missing = tmp_path / "missing.wst"
    (tmp_path / "no_traces").mkdir()
    for bad, message in ((empty, "empty"), (missing, "missing|No such file"),
                         (tmp_path / "no_traces", "without .wst traces|no .wst")):
        with pytest.raises(warpscope.Error, match=message):
            call(str(bad))
    with pytest.raises(warpscope.Error, match="has no option 'no_such_option'"):
        call(str(TRAINING), no_such_option=1)
    if row["input"] == "one":  # a folder of several where one trace is read
        with pytest.raises(warpscope.Error, match="one trace"):
            call(str(JOB))


@needs_extension
def test_scalars_always_come_first():
    for frames in (warpscope.info(TRAINING), warpscope.diff(TRAINING, TRAINING),
                   warpscope.stalls(STALLS, by="line"), warpscope.job(JOB),
                   warpscope.summary(TRAINING)):
        assert list(frames)[0] == "scalars" and len(frames["scalars"]) == 1


@needs_extension
def test_timeline_writes_its_picture(tmp_path):
    svg = tmp_path / "timeline.svg"
    frames = warpscope.timeline(TRAINING, svg=str(svg))
    assert "scalars" in frames
    assert "<svg" in svg.read_text()[:200]


@needs_extension
def test_stalls_by_line_has_the_lines_table():
    frames = warpscope.stalls(STALLS, by="line")
    assert {"kernels", "lines"} <= set(frames)
    assert len(frames["kernels"]) > 0


@needs_extension
def test_old_keywords_still_work_with_a_warning():
    with pytest.warns(DeprecationWarning, match="report="):
        old = warpscope.summary(TRAINING, reports="kernels")
    assert list(old) == list(warpscope.summary(TRAINING, report="kernels"))
    with pytest.warns(DeprecationWarning, match="step_range="):
        warpscope.job(JOB, step="")


@needs_extension
@pytest.mark.parametrize("fmt,name", [("chrome", "trace.json"), ("perfetto", "trace.pftrace"),
                                      ("kineto", "trace.json")])
def test_export_writes_what_the_cli_writes(tmp_path, fmt, name):
    written = warpscope.export(TRAINING, format=fmt, output=tmp_path / name)
    assert written == [str(tmp_path / name)]
    cli = cli_path()
    if cli is None:
        return
    (tmp_path / "cli").mkdir()
    result = subprocess.run([str(cli), "export", str(TRAINING), "--format", fmt, "-o",
                             str(tmp_path / "cli" / name)], capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()


@needs_extension
def test_export_takes_a_folder_and_a_slice(tmp_path):
    written = warpscope.export(JOB, format="kineto", output=tmp_path / "kineto")
    assert len(written) == len(list(JOB.glob("*.wst"))) and all(Path(p).is_file()
                                                                for p in written)
    sliced = warpscope.export(TRAINING, format="chrome", output=tmp_path / "step.json",
                              step="1")
    whole = tmp_path / "whole.json"
    warpscope.export(TRAINING, format="chrome", output=whole)
    assert Path(sliced[0]).stat().st_size < whole.stat().st_size


def test_export_refuses_bad_input_with_one_error(tmp_path):
    with pytest.raises(warpscope.Error, match="format must be one of"):
        warpscope.export(TRAINING, format="svg", output=tmp_path / "x")
    with pytest.raises(warpscope.Error, match="has no option 'kernel'"):
        warpscope.export(TRAINING, format="chrome", output=tmp_path / "x.json", kernel="a")
    with pytest.raises(warpscope.Error, match="parquet writes whole traces"):
        warpscope.export(TRAINING, format="parquet", output=tmp_path / "p", step="1")
    if not native.available():
        return
    with pytest.raises(warpscope.Error, match="does not exist"):
        warpscope.export(TRAINING, format="chrome", output=tmp_path / "no" / "x.json")
    empty = tmp_path / "empty.wst"
    empty.write_bytes(b"")
    with pytest.raises(warpscope.TraceError, match="empty"):
        warpscope.export(empty, format="perfetto", output=tmp_path / "x.pftrace")
    with pytest.raises(warpscope.Error, match="--step"):
        warpscope.export(TRAINING, format="chrome", output=tmp_path / "x.json", step="9-1")


def test_export_writes_parquet(tmp_path):
    pytest.importorskip("pyarrow")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", warpscope.TraceWarning)
        written = warpscope.export(str(JOB / "*.wst"), format="parquet", output=tmp_path / "pq")
    assert str(tmp_path / "pq" / "kernels.parquet") in written
    import pyarrow.parquet as pq
    ranks = set(pq.read_table(tmp_path / "pq" / "kernels.parquet").column("rank").to_pylist())
    assert len(ranks) == len(list(JOB.glob("*.wst")))
