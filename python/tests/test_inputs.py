"""Every function of the package takes its traces alike (a path, a TraceFile, several, a folder
or a glob pattern) and raises one exception type, ``warpscope.Error``, for bad input."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import tracebuilder as tb
import warpscope
from warpscope.inputs import one_trace_path, trace_paths

ANALYSES = ("summary", "occupancy", "tail", "advise", "stalls", "job")


def write_ranks(folder: Path, n: int = 2) -> list:
    folder.mkdir()
    return [tb.write(folder / f"rank{i}.wst", tb.every_kind()) for i in range(n)]


def test_one_trace_several_a_folder_or_a_glob(tmp_path):
    paths = [str(p) for p in write_ranks(tmp_path / "job")]
    (tmp_path / "job" / "notes.txt").write_text("not a trace")
    assert trace_paths(paths[0]) == paths[:1]
    assert trace_paths(Path(paths[0])) == paths[:1]
    assert trace_paths(warpscope.open(paths[1])) == paths[1:]
    assert trace_paths(paths[::-1]) == paths[::-1]
    assert trace_paths(tmp_path / "job") == paths
    assert trace_paths(str(tmp_path / "job" / "rank*.wst")) == paths
    assert one_trace_path([paths[1]], "tail") == paths[1]


def test_bad_input_is_one_exception_type(tmp_path):
    (tmp_path / "empty").mkdir()
    for bad, message in ((tmp_path / "empty", "folder without .wst traces"),
                         (str(tmp_path / "none*.wst"), "no file matches"),
                         ([], "no trace given"), (42, "not int")):
        with pytest.raises(warpscope.Error, match=message):
            trace_paths(bad)
    paths = write_ranks(tmp_path / "job")
    with pytest.raises(warpscope.Error, match="reads one trace, not 2"):
        one_trace_path(tmp_path / "job", "tail")
    assert issubclass(warpscope.TraceError, warpscope.Error)
    assert issubclass(warpscope.Error, ValueError)  # what some functions raised before
    with pytest.raises(warpscope.Error):
        warpscope.open(tmp_path / "empty")
    assert paths


@pytest.mark.skipif(not warpscope.native.has_extension(), reason="needs warpscope_native")
@pytest.mark.parametrize("analysis", ANALYSES)
def test_every_analysis_takes_a_folder_and_refuses_an_empty_file_alike(tmp_path, analysis):
    function = getattr(warpscope, analysis)
    empty = tmp_path / "empty.wst"
    empty.write_bytes(b"")
    with pytest.raises(warpscope.TraceError, match="empty") as error:
        function(empty)
    assert error.value.path == str(empty)
    write_ranks(tmp_path / "job", 1 if analysis in ("occupancy", "tail", "advise") else 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", warpscope.TraceWarning)
        frames = function(tmp_path / "job")
    assert "scalars" in frames and len(frames["scalars"]) == 1
