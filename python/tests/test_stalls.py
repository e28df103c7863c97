"""``warpscope.stalls``: hand-worked figures of tests/data/synthetic/pc_stalls.textproto, and
the same figures as the C++ ``warpscope stalls -f csv|json`` on the recorded H200 trace and on
random synthetic traces (several ranks, ties, unnamed reasons, ``_not_issued`` variants).

The CLI is found as in test_differential.py; without it the differential tests skip.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import random
import subprocess
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import pandas as pd
import pytest
from google.protobuf import text_format

import tracebuilder as tb
import warpscope
from test_differential import SOURCE_DIR, cli_path
from warpscope import schema

DATA = SOURCE_DIR / "tests" / "data"
H200_TRACE = DATA / "cuda13.0_sm90" / "pc_kernels.wst"
STALLED = "smsp__pcsamp_warps_issue_stalled_"
# Mangled -> demangled as __cxa_demangle (the C++ side's DemangleKernelName) gives them.
DEMANGLED = {
    "_Z7stencilPdPKd": "stencil(double*, double const*)",
    "_Z6reducePKdPd": "reduce(double const*, double*)",
    "_Z4gemmIfLi128EEvPKT_": "void gemm<float, 128>(float const*)",
    "_ZN2ns6detail9transposeILi32EEEvPfPKfii":
        "void ns::detail::transpose<32>(float*, float const*, int, int)",
    "_Z5emptyv": "empty()",
    "plain_c_kernel": "plain_c_kernel",
}


def fixture_packets() -> List[Any]:
    """pc_stalls.textproto's packets: two kernels, no kernel events."""
    trace = text_format.Parse((DATA / "synthetic" / "pc_stalls.textproto").read_text(),
                              schema.Trace())
    return list(trace.packet)


def with_kernel_events(packets: List[Any], mangled_ids: Dict[str, int]) -> List[Any]:
    """The packets with one kernel event per function before the end, naming it both ways as
    the collector does."""
    extra = []
    for n, (mangled, ident) in enumerate(sorted(mangled_ids.items())):
        extra += [tb.string(1000 + n, DEMANGLED[mangled]),
                  tb.packet(kernel=schema.KernelEvent(name_id=1000 + n, mangled_name_id=ident,
                                                      start_ns=10 * n, duration_ns=5))]
    return packets[:-1] + extra + packets[-1:]


pytestmark = pytest.mark.skipif(not warpscope.native.available(),
                                reason="warpscope.stalls needs the warpscope_native extension")


def quiet_stalls(*args: Any, **kwargs: Any) -> Dict[str, pd.DataFrame]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", warpscope.TraceWarning)
        return warpscope.stalls(*args, **kwargs)


def rows(frame: pd.DataFrame) -> List[tuple]:
    return [tuple(r) for r in frame.itertuples(index=False)]


# -- Python alone ----------------------------------------------------------------------------

def test_fixture_figures(tmp_path):
    path = tb.write(tmp_path / "pc.wst", fixture_packets())
    frames = quiet_stalls(path)
    # No kernel events: the functions' names are demangled as the CLI does, and without the
    # kernels' time (or the device's SMs) each sample counts as a sampling instant.
    stencil, reduce = DEMANGLED["_Z7stencilPdPKd"], DEMANGLED["_Z6reducePKdPd"]
    coverage = ["launches", "covered_launches", "covered_time_pct", "low_coverage"]
    kernels = frames["kernels"].drop(columns=["too_few", "hottest_line"] + coverage)
    assert rows(kernels) == [
        (stencil, 125, pytest.approx(100 * 125 / 175), 20, 50, 6.25, 125.0),
        (reduce, 50, pytest.approx(100 * 50 / 175), 0, 0, pytest.approx(math.nan, nan_ok=True),
         50.0)]
    assert "--pc-period 12" in frames["kernels"]["too_few"][1]
    # Without kernel events nothing says what the shares rest on, and nothing is flagged.
    assert frames["kernels"][coverage[:3]].isna().all().all()
    assert list(frames["kernels"]["low_coverage"]) == ["", ""]
    reasons = frames["reasons"]
    assert rows(reasons[["kernel", "reason", "samples", "pct"]]) == [
        (stencil, "long_scoreboard", 80, 64.0),
        (stencil, "barrier", 25, 20.0),
        (stencil, "selected", 20, 16.0),
        (reduce, "math_pipe_throttle", 32, 64.0),
        (reduce, "not_selected", 10, 20.0),
        (reduce, "reason_9", 8, 16.0)]
    # The 95% Wilson interval of 80 in 125: [55.28, 71.88].
    assert reasons["low_pct"][0] == pytest.approx(55.28, abs=0.01)
    assert reasons["high_pct"][0] == pytest.approx(71.88, abs=0.01)

    named = tb.write(tmp_path / "named.wst", with_kernel_events(
        fixture_packets(), {"_Z7stencilPdPKd": 1, "_Z6reducePKdPd": 2}))
    frames = quiet_stalls(warpscope.open(named), by="pc")
    stencil, reduce = "stencil(double*, double const*)", "reduce(double const*, double*)"
    assert list(frames["kernels"]["kernel"]) == [stencil, reduce]
    # Each kernel's one launch ran before the last read, with no capture window: covered.
    assert rows(frames["kernels"][["launches", "covered_launches", "covered_time_pct",
                                   "low_coverage"]]) == [(1, 1, 100.0, ""), (1, 1, 100.0, "")]
    # (kernel, PC, its samples, their share of the kernel's, reason, samples)
    expected = [(stencil, 0x100, 95, 76.0, "long_scoreboard", 80),
                (stencil, 0x100, 95, 76.0, "selected", 15),
                (stencil, 0x180, 30, 24.0, "barrier", 25),
                (stencil, 0x180, 30, 24.0, "selected", 5),
                (reduce, 0x40, 48, 96.0, "math_pipe_throttle", 30),
                (reduce, 0x40, 48, 96.0, "not_selected", 10),
                (reduce, 0x40, 48, 96.0, "reason_9", 8),
                (reduce, 0x80, 2, 4.0, "math_pipe_throttle", 2)]
    assert rows(frames["pcs"].drop(columns=["source"])) == [
        (k, 3735928559, pc, n, share, r, m, pytest.approx(100 * m / n))
                                   for k, pc, n, share, r, m in expected]

    # Two ranks sum per kernel; the filter is a regular expression searched in the name.
    frames = quiet_stalls([named, str(named)], kernel=r"^sten")
    assert rows(frames["kernels"][["kernel", "samples", "pct", "selected", "not_issued",
                                   "cycles_per_issue"]]) == [
        ("stencil(double*, double const*)", 250, 100.0, 40, 100, 6.25)]
    assert list(frames["reasons"]["samples"]) == [160, 50, 40]


def test_no_samples_and_bad_arguments(tmp_path):
    """A trace without PC samples is refused as the CLI refuses it, saying how to record them."""
    path = tb.write(tmp_path / "t.wst", [tb.header(), tb.end()])
    for by in ("kernel", "pc", "line"):
        with pytest.raises(warpscope.Error, match="no PC samples; record them with"):
            quiet_stalls(path, by=by)
    with pytest.raises(warpscope.Error, match="--by must be kernel, pc or line"):
        warpscope.stalls(path, by="file")


def test_by_line_is_the_clis_lines_table():
    """``by="line"`` runs the CLI's row: its ``lines`` table, row for row."""
    trace = SOURCE_DIR / "tests" / "data" / "cuda13.0_sm90" / "pc_kernels.wst"
    frames = warpscope.stalls(trace, by="line")
    assert {"kernels", "reasons", "lines"} <= set(frames)
    assert len(frames["lines"]) > 0
    cli = cli_tables([trace], "--by", "line")
    for column in ("file", "line", "samples"):
        assert [r[column] for r in cli["lines"]] == [
            csv_text(v) for v in frames["lines"][column]], column


# -- against the C++ CLI ---------------------------------------------------------------------

def g9(value: float) -> str:
    return "%.9g" % value  # the CLI's CSV reals


def run_cli(paths: Sequence[Path], *flags: str) -> str:
    cli = cli_path()
    if cli is None:
        pytest.skip("the C++ CLI is not built (build/bin/warpscope); ctest runs this with it")
    result = subprocess.run([str(cli), "stalls", *map(str, paths), "-n", "0", *flags],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def cli_tables(paths: Sequence[Path], *flags: str) -> Dict[str, List[Dict[str, str]]]:
    """The CLI's CSV: its tables by name, each block after its "# report: NAME" line."""
    tables: Dict[str, List[Dict[str, str]]] = {}
    text = run_cli(paths, "-f", "csv", *flags)
    for block in text.split("# report: ")[1:]:
        name, _, body = block.partition("\n")
        tables[name] = list(csv.DictReader(io.StringIO(body.strip("\n") + "\n")))
    return tables


def csv_text(value: Any) -> str:
    """A frame's cell as the CLI's CSV writes it: reals %.9g, empty for NaN and NA."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    return g9(value) if isinstance(value, float) else str(value)


def json_value(value: Any) -> Any:
    """A frame's cell as the CLI's JSON writes it: None for NaN and NA, Python numbers."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def same_json(cli: Any, python: Any) -> bool:
    """Reals to the last bits (the JSON writer's %.17g, Python's own arithmetic); the rest
    equal and of one type."""
    if isinstance(cli, float) or isinstance(python, float):
        return (isinstance(cli, (int, float)) and isinstance(python, (int, float)) and
                math.isclose(cli, python, rel_tol=1e-12, abs_tol=1e-12))
    return type(cli) is type(python) and cli == python


SOURCE_COLUMNS = ("hottest_line", "source")


def compare_tables(paths: Sequence[Path], frames: Dict[str, pd.DataFrame], *flags: str) -> None:
    """The CLI's CSV and JSON are the frames: one layout, the same tables, columns and rows."""
    cli = cli_tables(paths, *flags)
    report = json.loads(run_cli(paths, "-f", "json", *flags))
    assert set(report) == set(frames) == set(cli) | {"scalars"}
    for name, frame in frames.items():
        if name == "scalars":
            assert report[name] == {c: json_value(v) for c, v in frame.iloc[0].items()}
            continue
        assert [list(r) for r in cli[name][:1]] in ([], [list(frame.columns)]), name
        assert [list(r) for r in report[name][:1]] in ([], [list(frame.columns)]), name
        # Source lines come from CUPTI's SASS-to-source mapping, which the CLI of a CUDA build
        # has and the Python extension does not: where Python left them empty, the CLI's are
        # empty or a file:line.
        columns = [c for c in frame.columns
                   if c not in SOURCE_COLUMNS or frame[c].fillna("").astype(str).ne("").any()]
        for c in set(frame.columns) - set(columns):
            assert all(r[c] == "" or re.fullmatch(r".+:\d+", r[c]) for r in cli[name]), c
        rows = list(frame[columns].itertuples(index=False))
        assert [[r[c] for c in columns] for r in cli[name]] == [
            [csv_text(v) for v in row] for row in rows], name
        assert len(report[name]) == len(rows), name
        for cli_row, row in zip(report[name], rows):
            for c, value in zip(columns, row):
                assert same_json(cli_row[c], json_value(value)), (name, c, cli_row[c], value)


def compare_by_kernel(paths: Sequence[Path], kernel: Optional[str] = None) -> None:
    flags = ["-k", kernel] if kernel else []
    frames = quiet_stalls([warpscope.open(p) for p in paths], kernel=kernel)
    compare_tables(paths, frames, *flags)
    # A kernel's share is of all samples, a reason's of its kernel's (0 of none).
    def share(part: int, whole: int) -> float:
        return 100 * part / whole if whole else 0.0

    kernels, reasons = frames["kernels"], frames["reasons"]
    total = int(kernels["samples"].sum())
    assert list(kernels["pct"]) == pytest.approx([share(n, total) for n in kernels["samples"]])
    samples = dict(zip(kernels["kernel"], kernels["samples"]))
    assert list(reasons["pct"]) == pytest.approx(
        [share(n, samples[k]) for k, n in zip(reasons["kernel"], reasons["samples"])])


def compare_by_pc(paths: Sequence[Path], kernel: Optional[str] = None) -> None:
    flags = ["-k", kernel] if kernel else []
    frames = quiet_stalls([str(p) for p in paths], kernel=kernel, by="pc")
    compare_tables(paths, frames, "--by", "pc", *flags)


def test_recorded_h200_trace_as_the_cli():
    compare_by_kernel([H200_TRACE])
    compare_by_pc([H200_TRACE])
    compare_by_kernel([H200_TRACE], kernel="math|short")
    compare_by_pc([H200_TRACE], kernel="^ws_pc_(atomics|barrier)")


def test_fixture_as_the_cli(tmp_path):
    named = tb.write(tmp_path / "named.wst", with_kernel_events(
        fixture_packets(), {"_Z7stencilPdPKd": 1, "_Z6reducePKdPd": 2}))
    compare_by_kernel([named])
    compare_by_pc([named])
    compare_by_kernel([named, H200_TRACE, named])  # three ranks


def random_trace(rng: random.Random, rank: int) -> List[Any]:
    """PC samples of a few kernels on two devices whose reason tables differ, in batches
    (some split into continuations), with small counts so that ties are common, zero
    counts, an index no table names, a kernel seen only in `_not_issued` samples and one
    with nothing but zero counts."""
    s = schema
    states = ["long_scoreboard", "barrier", "wait", "selected", "not_selected",
              "math_pipe_throttle", "no_instructions", "lg_throttle", "drain"]
    names = [STALLED + x for x in states] + [STALLED + x + "_not_issued" for x in states]
    tables = {0: dict(enumerate(names, start=1)),
              1: dict(enumerate(reversed(names), start=3))}
    functions = [f for f in DEMANGLED if f != "_Z5emptyv"]
    rng.shuffle(functions)
    functions = functions[:rng.randint(2, len(functions))]
    functions.append("_Z5emptyv")  # only zero counts: no row, as in the CLI
    ids = {f: 10 + i for i, f in enumerate(functions)}
    packets = [tb.header(pid=1000 + rank, rank_env=[s.KeyValue(key="RANK", value=str(rank))])]
    packets += [tb.string(i, f) for f, i in ids.items()]
    for device, table in tables.items():
        packets.append(tb.packet(pc_stall_reasons=s.PcStallReasons(
            device_id=device, index=list(table), name=list(table.values()))))
    only_not_issued = functions[-2]
    for batch in range(rng.randint(1, 6)):
        device = rng.choice([0, 1])
        table = tables[device]
        not_issued = [i for i, n in table.items() if n.endswith("_not_issued")]
        records = []
        for _ in range(rng.randint(1, 8)):
            function = rng.choice(functions)
            pool = not_issued if function == only_not_issued else list(table) + [99]
            reasons = rng.sample(pool, rng.randint(1, 4))
            records.append(s.PcSampleRecord(
                cubin_crc=rng.choice([0xDEADBEEF, tb.CRC]), function_name_id=ids[function],
                pc_offset=rng.choice([0, 0x10, 0x20, 0x180]), stall_reason_index=reasons,
                samples=[0 if function == "_Z5emptyv" else rng.choice([0, 1, 2, 3, 5, 8])
                         for _ in reasons]))
        split = rng.randint(1, len(records))
        for part, chunk in enumerate((records[:split], records[split:])):
            if chunk:
                packets.append(tb.packet(pc_samples=s.PcSampleBatch(
                    device_id=device, context_id=1 + device, timestamp_ns=100 * batch,
                    continuation=part == 1, dropped_samples=rng.choice([0, 2]),
                    records=chunk)))
    for n, function in enumerate(functions):
        packets += [tb.string(600 + n, DEMANGLED[function]),
                    tb.packet(kernel=s.KernelEvent(name_id=600 + n, mangled_name_id=ids[function],
                                                   start_ns=n, duration_ns=1))]
    return packets + [tb.end(1000)]


@pytest.mark.parametrize("seed", range(24))
def test_random_traces_as_the_cli(tmp_path, seed):
    if cli_path() is None:
        pytest.skip("the C++ CLI is not built (build/bin/warpscope); ctest runs this with it")
    rng = random.Random(seed)
    paths = [tb.write(tmp_path / f"rank{rank}.wst", random_trace(rng, rank))
             for rank in range(rng.randint(1, 3))]
    compare_by_kernel(paths)
    compare_by_pc(paths)
    compare_by_kernel(paths, kernel=r"^(void|re)")


def test_patterns_and_damaged_traces(tmp_path):
    path = tb.write(tmp_path / "pc.wst", fixture_packets())
    lookbehind = "(?<=_Z7)sten"  # Python's re takes it, RE2 (the CLI's) does not
    with pytest.raises(ValueError, match="not a valid regular expression"):
        quiet_stalls(path, kernel=lookbehind)
    damaged = tmp_path / "damaged.wst"
    damaged.write_bytes(path.read_bytes() + b"\x12\x00")  # field 2: not a packet
    with pytest.raises(warpscope.TraceError, match="corrupt data"):
        quiet_stalls(damaged)
