"""Every analysis of the CLI's list, from Python and from the CLI, gives the same tables.

``warpscope.run(NAME, traces)`` runs the row NAME through the extension; ``warpscope NAME
TRACES --table T --format csv`` (and ``--format json``) renders table T of the same Report.
For every row on every bundled trace that fits it (``timeline`` with the SVG it needs), each table of the Python result equals the CLI's, column by column and row by
row: in CSV as text, in JSON as typed values (the column's declared kind).
"""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
from pathlib import Path
from typing import Any, List

import pytest

import warpscope
from warpscope import native
from test_differential import cli_path

SOURCE_DIR = Path(__file__).resolve().parents[2]
TRACES = [SOURCE_DIR / "examples" / "traces" / "synthetic_training_loop.wst",
          SOURCE_DIR / "examples" / "traces" / "cuda13.0_sm90" / "pipeline_pm.wst",
          SOURCE_DIR / "examples" / "traces" / "cuda13.0_sm90" / "stall_kernels.wst"]
JOB = SOURCE_DIR / "examples" / "traces" / "cuda13.0_sm90" / "ddp_late_rank"
# Rows whose report needs an option without a default (timeline: --svg FILE): a file under
# the test's temporary folder, for Python and the CLI alike.
NEEDS_OPTIONS = {"timeline": "svg"}
# Rows whose report is its head figures alone (timeline's: what the picture holds).
SCALARS_ONLY = {"timeline"}

pytestmark = pytest.mark.skipif(not native.available(),
                                reason="the warpscope_native extension is not built")


def cases() -> List[Any]:
    if not native.available():
        return []
    out = []
    for row in warpscope.rows():
        name = row["name"]
        if name == "job":
            out.append(pytest.param(name, [JOB], id=f"{name}-ddp_late_rank"))
        elif name == "diff":
            out.append(pytest.param(name, [TRACES[0], TRACES[0]], id=f"{name}-same"))
        else:
            out += [pytest.param(name, [t], id=f"{name}-{t.stem}") for t in TRACES]
    return out


def cell_text(value: Any) -> str:
    """A frame's cell as the CLI's CSV writes it: reals %.9g, true/false, empty for none."""
    if value is None or value is pd_na() or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "true" if value else "false"
    if isinstance(value, float):
        return "%.9g" % value
    return str(value)


def pd_na() -> Any:
    import pandas as pd
    return pd.NA


def run_cli(cli: Path, name: str, traces: List[Path], *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli), name, *map(str, traces), *flags], capture_output=True,
                          text=True, timeout=300)


def cli_table(cli: Path, name: str, traces: List[Path], table: str, *flags: str) -> List[dict]:
    result = run_cli(cli, name, traces, "--table", table, "--format", "csv", *flags)
    assert result.returncode == 0, result.stderr
    lines = list(csv.reader(io.StringIO(result.stdout)))
    if not lines:
        return []
    header = lines[0]
    # A row of one empty cell is a blank line.
    return [dict(zip(header, r if r else [""] * len(header))) for r in lines[1:]]


def cell_value(value: Any) -> Any:
    """A frame's cell as the CLI's JSON writes it: None for empty, Python ints, floats, bools."""
    if value is None or value is pd_na() or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    return value


def same_json(cli: Any, python: Any) -> bool:
    if isinstance(cli, float) or isinstance(python, float):
        return (cli is not None and python is not None and
                not isinstance(cli, (bool, str)) and not isinstance(python, (bool, str)) and
                math.isclose(cli, python, rel_tol=1e-12, abs_tol=1e-12))
    return type(cli) is type(python) and cli == python


def test_every_row_is_a_python_function():
    names = {row["name"] for row in warpscope.rows()}
    assert {"info", "summary", "occupancy", "tail", "stalls", "diff", "advise", "job",
            "precision"} <= names
    for name in names:
        assert callable(getattr(warpscope, name)), name


@pytest.mark.parametrize("name,traces", cases())
def test_python_tables_equal_the_cli(name: str, traces: List[Path], tmp_path: Path):
    cli = cli_path()
    if cli is None:
        pytest.skip("the C++ CLI is not built (build/bin/warpscope); ctest runs this with it")
    needed = NEEDS_OPTIONS.get(name)
    options = {needed: str(tmp_path / f"{name}.{needed}")} if needed else {}
    flags = [f"--{needed}", str(tmp_path / f"cli.{needed}")] if needed else []
    try:
        frames = warpscope.run(name, [str(t) for t in traces], **options)
    except warpscope.Error as e:  # a trace the analysis cannot read: the CLI refuses alike
        refused = run_cli(cli, name, traces, *flags)
        assert refused.returncode != 0 and str(e) in refused.stderr, (name, refused.stderr)
        return
    assert "scalars" in frames and len(frames["scalars"]) == 1
    assert len(frames) >= 2 or name in SCALARS_ONLY, f"{name}: no table besides the scalars"
    for table, frame in frames.items():
        rows = cli_table(cli, name, traces, table, *flags)
        if len(frame.columns) == 0:  # a report without scalars: one empty row
            assert not any(rows), (name, table)
            continue
        if rows:
            assert list(rows[0]) == list(frame.columns), (name, table)
        assert [[r[c] for c in frame.columns] for r in rows] == [
            [cell_text(v) for v in row] for row in frame.itertuples(index=False)], (name, table)
        result = run_cli(cli, name, traces, "--table", table, "--format", "json", *flags)
        assert result.returncode == 0, result.stderr
        objects = json.loads(result.stdout)
        assert len(objects) == len(frame), (name, table)
        for cli_row, row in zip(objects, frame.to_dict("records")):
            assert list(cli_row) == list(frame.columns), (name, table)
            for column, value in cli_row.items():
                assert same_json(value, cell_value(row[column])), (name, table, column, value,
                                                                   row[column])


def test_bad_input_is_one_error_type(tmp_path: Path):
    empty = tmp_path / "empty.wst"
    empty.write_bytes(b"")
    with pytest.raises(warpscope.Error):
        warpscope.run("precision", str(empty))
    with pytest.raises(warpscope.Error, match="has no option"):
        warpscope.run("precision", str(TRACES[0]), no_such_option=1)
    with pytest.raises(warpscope.Error, match="no analysis named"):
        warpscope.run("no_such_analysis", str(TRACES[0]))
    with pytest.raises(warpscope.Error, match="reads one trace"):
        warpscope.run("precision", [str(TRACES[0]), str(TRACES[1])])
