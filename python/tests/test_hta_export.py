"""``warpscope export`` on the bundled traces, read by the tools it is for.

The Kineto export is loaded by Holistic Trace Analysis (PyPI ``holistictraceanalysis``): its
temporal and kernel breakdowns must agree with ``warpscope summary --format json`` on the same
trace. The Chrome/Perfetto export is checked against the trace-event format's rules. The CLI is
found through WARPSCOPE_CLI (ctest sets it) or in build/bin/ of the source tree.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path
from typing import Dict, List

import pytest

from test_differential import cli_path

SOURCE_DIR = Path(__file__).resolve().parents[2]
BUNDLED = sorted((SOURCE_DIR / "examples" / "traces").rglob("*.wst"))


@pytest.fixture(scope="module")
def cli() -> Path:
    path = cli_path()
    if path is None:
        pytest.skip("the C++ CLI is not built (build/bin/warpscope); ctest runs this with it")
    return path


def run(cli: Path, *args: str) -> str:
    result = subprocess.run([str(cli), *args], capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr.decode("utf-8", "replace")
    return result.stdout.decode("utf-8")


def summary(cli: Path, trace: Path) -> Dict[str, List[dict]]:
    return json.loads(run(cli, "summary", "--format", "json", "--report", "kernels,memory,idle",
                          str(trace)))


def test_bundled_traces_are_there():
    assert len(BUNDLED) >= 3, BUNDLED


@pytest.mark.parametrize("trace", BUNDLED, ids=lambda p: p.name)
def test_chrome_export_follows_the_trace_event_format(cli: Path, trace: Path, tmp_path: Path):
    out = tmp_path / "trace.json"
    run(cli, "export", str(trace), "--format", "chrome", "-o", str(out))
    events = json.loads(out.read_text())["traceEvents"]
    phases = Counter(e["ph"] for e in events)
    async_open: Counter = Counter()
    flows: Counter = Counter()
    for e in events:
        for key in ("ph", "ts", "pid", "tid", "name"):
            assert key in e, (key, e)
        assert e["ph"] in {"X", "b", "e", "i", "s", "f", "C", "M"}, e
        assert e["ts"] >= 0, e
        if e["ph"] == "X":
            assert e["dur"] >= 0, e
        elif e["ph"] in ("b", "e"):
            async_open[(e["pid"], e["cat"], e["id"])] += 1 if e["ph"] == "b" else -1
        elif e["ph"] in ("s", "f"):
            flows[e["id"]] += 1 if e["ph"] == "s" else -1
            if e["ph"] == "f":
                assert e["bp"] == "e", e
        elif e["ph"] == "C":
            assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values()), e
    assert not [k for k, n in async_open.items() if n], "unbalanced async events"
    assert not [k for k, n in flows.items() if n], "unpaired flow events"

    # Complete events of one track nest (viewers draw them as a stack): none ends inside
    # another that it started after. In whole ns, as the export writes them.
    tracks: Dict[tuple, List[tuple]] = {}
    for e in events:
        if e["ph"] == "X":
            begin = round(e["ts"] * 1000)
            tracks.setdefault((e["pid"], e["tid"]), []).append(
                (begin, begin + round(e["dur"] * 1000), e["name"]))
    for track, slices in tracks.items():
        stack: List[tuple] = []
        for begin, end, name in sorted(slices, key=lambda x: (x[0], -x[1])):
            while stack and stack[-1][1] <= begin:
                stack.pop()
            assert not stack or end <= stack[-1][1], (track, stack[-1], name)
            stack.append((begin, end, name))

    # Every kernel, copy and memset of the trace is there, as summary counts them.
    s = summary(cli, trace)
    gpu = Counter(e["cat"] for e in events if e["ph"] == "X")
    assert gpu["kernel"] == sum(r["instances"] for r in s["kernels"])
    assert gpu["memcpy"] + gpu["memset"] == sum(r["count"] for r in s["memory"])
    if gpu["kernel"]:
        assert phases["s"] > 0, "no launch flows"


@pytest.fixture(scope="module")
def hta_analysis():
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"  # keep the export's ns timestamps whole
    pytest.importorskip("hta", reason="holistictraceanalysis is not installed")
    # Installed: a requirement of HTA that is missing fails here rather than skipping.
    from hta.trace_analysis import TraceAnalysis
    return TraceAnalysis


@pytest.mark.parametrize("trace", BUNDLED, ids=lambda p: p.name)
def test_hta_breakdowns_match_summary(cli: Path, trace: Path, tmp_path: Path, hta_analysis):
    out = tmp_path / "hta"
    run(cli, "export", str(trace), "--format", "kineto", "-o", str(out))
    files = list(out.glob("rank*.trace.json"))
    assert len(files) == 1, files
    analysis = hta_analysis(trace_dir=str(out))
    s = summary(cli, trace)

    kernel_ns = sum(r["total_time_ns"] for r in s["kernels"])
    memory_ns = sum(r["total_time_ns"] for r in s["memory"])
    assert kernel_ns > 0

    # Kernel breakdown: per-type totals (us). No bundled kernel is a NCCL kernel, so the
    # computation total is every kernel's time.
    kernel_types, kernels = analysis.get_gpu_kernel_breakdown(
        visualize=False, duration_ratio=1.0, num_kernels=1000, include_memory_kernels=True)
    by_type = dict(zip(kernel_types["kernel_type"], kernel_types["sum"]))
    assert by_type.get("COMPUTATION", 0) * 1000 == pytest.approx(kernel_ns, rel=0.01)
    assert by_type.get("MEMORY", 0) * 1000 == pytest.approx(memory_ns, rel=0.01)
    compute = kernels[kernels["kernel_type"] == "COMPUTATION"]
    assert len(set(compute["name"])) == len({r["name"] for r in s["kernels"]})

    # Temporal breakdown: HTA's kernel time is the span from the first GPU activity to the
    # last, its idle time the part of it with none: summary's idle report per device.
    [idle_row] = s["idle"]
    temporal = analysis.get_temporal_breakdown(visualize=False)
    assert len(temporal) == 1
    row = temporal.iloc[0]
    assert row["kernel_time(us)"] * 1000 == pytest.approx(idle_row["span_ns"], rel=0.01)
    assert (row["kernel_time(us)"] - row["idle_time(us)"]) * 1000 == pytest.approx(
        idle_row["busy_ns"], rel=0.01)
