"""Slices (docs/cli.md, *Slices*): every analysis and export given ``--step N-M`` of a bundled
trace gives what it gives on the trace cut to those steps, written here packet by packet with
the schema's own classes (every timed event that overlaps the steps' span, every other packet);
Python's keywords go through the same rows; an empty slice and a bad range are one
``warpscope:`` error each; an export of a slice loads in Holistic Trace Analysis."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import List, Tuple

import pytest

import warpscope
from warpscope import schema
from test_hta_export import cli  # noqa: F401  (the fixture: the CLI, else skip)

SOURCE_DIR = Path(__file__).resolve().parents[2]
TRACES = SOURCE_DIR / "examples" / "traces" / "cuda13.0_sm90"
PIPELINE = TRACES / "pipeline_pm.wst"  # 300 steps
STEPS = "10-19"

# Timed events and PM samples, by their start and duration, and instants and PC sample
# batches, by their time.
SPANNED = ("kernel", "memcpy", "memset", "synchronization", "api_call", "graph_launch",
           "overhead", "nvtx_range", "nccl_call", "pm_sample")
INSTANTS = ("nvtx_mark", "api_stack", "pc_samples")


def run(cli: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([str(cli), *map(str, args)], capture_output=True, timeout=300,
                            text=True)
    assert (result.returncode == 0) == ok, result.stderr
    return result


def report(cli: Path, args: List[str], traces: List[Path], *more: str) -> str:
    """The JSON report of `args` on `traces`, the traces' paths replaced by TRACE."""
    out = run(cli, *args, *traces, *more, "--format", "json").stdout
    for trace in traces:
        out = out.replace(str(trace), "TRACE")
    return out


def step_span(cli: Path, trace: Path, steps: str, tmp_path: Path) -> Tuple[int, int]:
    """The span of the steps, as the picture of them gives it."""
    out = run(cli, "timeline", trace, "--step", steps, "--svg", tmp_path / "t.svg",
              "--format", "json").stdout
    scalars = json.loads(out)["scalars"]
    return int(scalars["begin_ns"]), int(scalars["end_ns"])


def cut(trace: Path, begin: int, end: int, out: Path) -> Path:
    """`trace` with only the timed events and samples that overlap [begin, end)."""
    whole = schema.Trace()
    whole.ParseFromString(trace.read_bytes())
    kept = schema.Trace()
    for packet in whole.packet:
        kind = packet.WhichOneof("data")
        if kind in SPANNED:
            event = getattr(packet, kind)
            start, stop = event.start_ns, event.start_ns + event.duration_ns
            if not (start < end and (stop > begin or start >= begin)):
                continue
        elif kind in INSTANTS:
            if not begin <= getattr(packet, kind).timestamp_ns < end:
                continue
        kept.packet.append(packet)
    assert len(kept.packet) < len(whole.packet)
    out.write_bytes(kept.SerializeToString())
    return out


@pytest.fixture(scope="module")
def pipeline_cut(cli: Path, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("cut")
    begin, end = step_span(cli, PIPELINE, STEPS, tmp)
    return cut(PIPELINE, begin, end, tmp / "steps.wst")


# stalls needs PC samples, which no bundled trace with steps has; its load is the same.
ANALYSES = [["summary"], ["occupancy"], ["tail"], ["advise"], ["precision"]]


@pytest.mark.parametrize("args", ANALYSES, ids=lambda a: a[0])
def test_analysis_of_steps_equals_analysis_of_the_cut_trace(cli: Path, pipeline_cut: Path,
                                                            args: List[str]):
    sliced = report(cli, args, [PIPELINE], "--step", STEPS)
    assert sliced == report(cli, args, [pipeline_cut])
    assert sliced != report(cli, args, [PIPELINE])


def test_diff_of_steps_equals_diff_of_the_cut_traces(cli: Path, pipeline_cut: Path):
    sliced = report(cli, ["diff"], [PIPELINE, PIPELINE], "--step", STEPS)
    assert sliced == report(cli, ["diff"], [pipeline_cut, pipeline_cut])


@pytest.mark.parametrize("fmt", ["chrome", "perfetto", "kineto"])
def test_export_of_steps_equals_export_of_the_cut_trace(cli: Path, pipeline_cut: Path,
                                                        tmp_path: Path, fmt: str):
    suffix = "pftrace" if fmt == "perfetto" else "json"
    sliced, of_cut = tmp_path / f"sliced.{suffix}", tmp_path / f"cut.{suffix}"
    run(cli, "export", PIPELINE, "--step", STEPS, "-f", fmt, "-o", sliced)
    run(cli, "export", pipeline_cut, "-f", fmt, "-o", of_cut)
    assert (sliced.read_bytes().replace(str(PIPELINE).encode(), b"TRACE") ==
            of_cut.read_bytes().replace(str(pipeline_cut).encode(), b"TRACE"))
    whole = tmp_path / f"whole.{suffix}"
    run(cli, "export", PIPELINE, "-f", fmt, "-o", whole)
    assert sliced.stat().st_size < whole.stat().st_size / 5


def test_python_keywords_go_through_the_rows(cli: Path, pipeline_cut: Path):
    of_cut = warpscope.run("summary", str(pipeline_cut))
    for sliced in (warpscope.summary(str(PIPELINE), step=STEPS),
                   warpscope.run("summary", str(PIPELINE), step=STEPS)):
        assert sliced["kernels"].drop(columns="file").equals(of_cut["kernels"].drop(columns="file"))
    whole = warpscope.run("summary", str(PIPELINE))
    early = warpscope.run("summary", str(PIPELINE), from_=360, to=370)
    assert early["kernels"]["instances"].sum() < whole["kernels"]["instances"].sum()
    with pytest.raises(warpscope.Error, match="has no option 'steps'"):
        warpscope.summary(str(PIPELINE), steps=STEPS)


@pytest.mark.parametrize("args, says", [
    (["--step", "400-410"], "are numbered 0 to 299"),
    (["--from", "100000"], "its events run from"),
    (["--window", "3"], "has capture windows 1"),
])
def test_an_empty_slice_is_one_error(cli: Path, args: List[str], says: str):
    result = run(cli, "summary", PIPELINE, *args, ok=False)
    assert result.returncode == 1
    assert result.stderr.startswith("warpscope: ") and says in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("args, says", [
    (["--step", "19-10"], "the last step comes before the first"),
    (["--step", "ten"], "expected a step N or steps N-M"),
    (["--from", "5", "--to", "2"], "the end is not after the start"),
    (["--from", "-1"], "expected milliseconds"),
    (["--step", "2", "--from", "1"], "give one of --from/--to, --step or --window"),
])
def test_a_bad_range_is_a_usage_error(cli: Path, args: List[str], says: str):
    for command in (["summary", PIPELINE], ["export", PIPELINE, "-f", "chrome", "-o", "-"]):
        result = run(cli, *command, *args, ok=False)
        assert result.returncode == 2 and says in result.stderr, result.stderr
    with pytest.raises(warpscope.Error, match=says.split(" ")[0]):
        warpscope.run("summary", str(PIPELINE),
                      **{k.lstrip("-").replace("from", "from_"): v
                         for k, v in zip(args[::2], args[1::2])})


def test_a_large_trace_is_exported_whole_only_when_asked(cli: Path, tmp_path: Path):
    big = tmp_path / "big.wst"
    with open(big, "wb") as f:
        f.truncate(65 << 20)  # sparse: the size is checked before the trace is read
    result = run(cli, "export", big, "-f", "perfetto", "-o", tmp_path / "o.pftrace", ok=False)
    assert "--all" in result.stderr and "--step N-M" in result.stderr
    assert not (tmp_path / "o.pftrace").exists()
    # With --all it is read (and this one is not a trace).
    result = run(cli, "export", big, "--all", "-f", "perfetto", "-o", tmp_path / "o.pftrace",
                 ok=False)
    assert "--all" not in result.stderr


def test_hta_loads_the_kineto_export_of_ten_steps(cli: Path, tmp_path: Path):
    pytest.importorskip("hta", reason="holistictraceanalysis is not installed")
    from hta.trace_analysis import TraceAnalysis
    out = tmp_path / "hta"
    run(cli, "export", PIPELINE, "--step", "100-109", "-f", "kineto", "-o", out)
    analysis = TraceAnalysis(trace_dir=str(out), include_last_profiler_step=True)
    trace = analysis.t.get_trace(0)
    names = set(analysis.t.symbol_table.get_sym_table()[i] for i in trace["name"].unique())
    steps = {n for n in names if n.startswith("ProfilerStep#")}
    assert len(steps) == 10
    assert not analysis.get_temporal_breakdown(visualize=False).empty
