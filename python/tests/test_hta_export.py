"""``warpscope export`` on the bundled traces, read by the tools it is for.

The Kineto export is loaded by Holistic Trace Analysis (PyPI ``holistictraceanalysis``): it
must keep every kernel, copy and memset, its temporal and kernel breakdowns must agree with
``warpscope summary --format json`` on the same trace, and its computation time and
communication overlap with ``warpscope job --format json``. The Chrome/Perfetto export is
checked against the trace-event format's rules. The CLI is found through WARPSCOPE_CLI (ctest
sets it) or in build/bin/ of the source tree.
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
    # Traces with steps get ProfilerStep#N ranges, and HTA then leaves the last one out unless
    # told to keep it: the figures are the whole trace's.
    analysis = hta_analysis(trace_dir=str(out), include_last_profiler_step=True)
    s = summary(cli, trace)

    # HTA counts kernels whose name holds "nccl" as communication, the rest as computation.
    nccl = [r for r in s["kernels"] if "nccl" in r["name"].lower()]
    computing = [r for r in s["kernels"] if r not in nccl]
    kernel_ns = sum(r["total_time_ns"] for r in computing)
    nccl_ns = sum(r["total_time_ns"] for r in nccl)
    memory_ns = sum(r["total_time_ns"] for r in s["memory"])
    if not s["kernels"]:
        # A trace without kernels (the out-of-memory dump) gives HTA no GPU work to break down:
        # the export holds no kernel either.
        events = json.loads(files[0].read_text())["traceEvents"]
        assert not [e for e in events if e.get("cat") == "kernel"]
        return
    assert kernel_ns > 0

    # Every kernel, copy and memset reaches HTA, once. Once a file has steps HTA keeps only GPU
    # work whose launch (same correlation) is in it: the export gives work whose launch was not
    # recorded (the driver API's cuBLASLt, cutlass and NCCL kernels) a stand-in launch. HTA also
    # leaves out work launched after the last step; no bundled trace launches any.
    [rank] = analysis.t.get_ranks()
    trace_df = analysis.t.get_trace(rank)
    gpu_events = trace_df[trace_df["stream"].ne(-1)]
    assert len(gpu_events) == (sum(r["instances"] for r in s["kernels"]) +
                               sum(r["count"] for r in s["memory"]))

    # Kernel breakdown: per kernel, HTA sums the durations (us); by type, summary's totals.
    kernel_types, kernels = analysis.get_gpu_kernel_breakdown(
        visualize=False, duration_ratio=1.0, num_kernels=1000, include_memory_kernels=True)
    per_kernel = kernels.groupby("kernel_type")["sum (us)"].sum()
    assert per_kernel.get("COMPUTATION", 0) * 1000 == pytest.approx(kernel_ns, rel=0.01)
    assert per_kernel.get("COMMUNICATION", 0) * 1000 == pytest.approx(nccl_ns, rel=0.01)
    assert per_kernel.get("MEMORY", 0) * 1000 == pytest.approx(memory_ns, rel=0.01)
    compute = kernels[kernels["kernel_type"] == "COMPUTATION"]
    assert len(set(compute["name"])) == len({r["name"] for r in computing})
    # HTA's types count time, not kernels (work that runs at once on several streams, or of
    # two types at once, counts once): together they are the union of the GPU work, after HTA
    # has cut events of ns resolution to whole µs (start rounded up, end down, on its own time
    # base: hta/common/trace_parser.py), which takes less than 2 µs off each event. The
    # exported events' exact union is summary's busy time; HTA's sum lies below it by less
    # than that cut. On the bundled 2-rank job's rank 1 (1849 short GPU events) the cut takes
    # 1.7% off.
    [idle_row] = s["idle"]
    by_type = dict(zip(kernel_types["kernel_type"], kernel_types["sum"]))
    events = json.loads(files[0].read_text())["traceEvents"]
    work = [(e["ts"], e["ts"] + e["dur"]) for e in events
            if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    assert union_us(work) * 1000 == pytest.approx(idle_row["busy_ns"], rel=1e-6)
    assert union_us(work) - 2 * len(work) <= sum(by_type.values()) <= union_us(work) + 1

    # Temporal breakdown: HTA's kernel time is the span from the first GPU activity to the
    # last, its idle time the part of it with none: summary's idle report per device.
    temporal = analysis.get_temporal_breakdown(visualize=False)
    assert len(temporal) == 1
    row = temporal.iloc[0]
    assert row["kernel_time(us)"] * 1000 == pytest.approx(idle_row["span_ns"], rel=0.01)
    assert (row["kernel_time(us)"] - row["idle_time(us)"]) * 1000 == pytest.approx(
        idle_row["busy_ns"], rel=0.01)


def union_us(intervals) -> float:
    """The length of the union of (start, end) intervals; those with end <= start add nothing."""
    total, current = 0.0, None
    for a, b in sorted(i for i in intervals if i[1] > i[0]):
        if current is None or a > current[1]:
            total += 0 if current is None else current[1] - current[0]
            current = [a, b]
        else:
            current[1] = max(current[1], b)
    return total + (0 if current is None else current[1] - current[0])


def job_tables(cli: Path, traces: List[Path], *flags: str) -> Dict[str, List[dict]]:
    return json.loads(run(cli, "job", "--format", "json", *flags, *map(str, traces)))


# Each bundled trace, and each bundled job (a folder of rank<R>.wst) exported together.
BUNDLED_RUNS = [[p] for p in BUNDLED] + [
    sorted(folder.glob("rank*.wst"))
    for folder in sorted({p.parent for p in BUNDLED if p.name.startswith("rank")})]
# A --step-range that no NVTX range is named: the job view then finds no steps, and its ranks table
# gives each rank's figures over the whole trace.
WHOLE_TRACE = ("--step-range", "no range is named this")


def comm_overlap_pct(comm_ms: float, overlap_ms: float) -> float:
    return 100 * overlap_ms / comm_ms


@pytest.mark.parametrize("traces", BUNDLED_RUNS,
                         ids=lambda t: t[0].name if len(t) == 1 else t[0].parent.name)
def test_hta_compute_and_overlap_equal_warpscope(cli: Path, traces: List[Path], tmp_path: Path,
                                                 hta_analysis):
    out = tmp_path / "hta"
    run(cli, "export", *map(str, traces), "--format", "kineto", "-o", str(out))

    # Kept to its last step's end, HTA reads all of a bundled trace's GPU work (as the test
    # above checks): its computation time and overlap are warpscope's over the whole trace.
    whole = {r["rank"]: r for r in job_tables(cli, traces, *WHOLE_TRACE)["ranks"]}
    if all(r["total_compute_ms"] == 0 and r["total_comm_ms"] == 0 for r in whole.values()):
        # No GPU work (the out-of-memory dump): HTA's breakdowns fail on such a trace, and
        # there is nothing to compare; the export holds no kernel either.
        for f in out.glob("rank*.trace.json"):
            events = json.loads(f.read_text())["traceEvents"]
            assert not [e for e in events if e.get("cat") == "kernel"]
        return
    analysis = hta_analysis(trace_dir=str(out), include_last_profiler_step=True)
    temporal = analysis.get_temporal_breakdown(visualize=False).set_index("rank")
    overlap = analysis.get_comm_comp_overlap(visualize=False).set_index("rank")
    assert sorted(temporal.index) == sorted(whole)
    for rank, r in whole.items():
        assert temporal.loc[rank, "compute_time(us)"] / 1e3 == pytest.approx(
            r["total_compute_ms"], rel=0.01)
        if r["total_comm_ms"] > 0:  # HTA rounds the percentage to two decimals
            assert overlap.loc[rank, "comp_comm_overlap_pctg"] == pytest.approx(
                comm_overlap_pct(r["total_comm_ms"],
                                 r["total_comm_ms"] - r["total_exposed_comm_ms"]),
                rel=0.01, abs=0.005)

    # Per step, where the export wrote steps (a guessed step is not written: docs/export.md).
    # HTA puts GPU work in the step its launch falls in, stand-ins included, and also keeps the
    # work launched before the first step, which no step of the job view counts: it is read
    # here over the work it put in steps. With its defaults it leaves out the last step.
    if not analysis.get_profiler_steps():
        return
    steps = job_tables(cli, traces)["steps"]
    for keep_last in (True, False):
        in_steps = hta_analysis(trace_dir=str(out), include_last_profiler_step=keep_last)
        for rank, df in in_steps.t.get_all_traces().items():
            in_steps.t.traces[rank] = df[df["stream"].eq(-1) | df["iteration"].ge(0)]
        temporal = in_steps.get_temporal_breakdown(visualize=False).set_index("rank")
        overlap = in_steps.get_comm_comp_overlap(visualize=False).set_index("rank")
        for rank in whole:
            counted = [s for s in steps if s["rank"] == rank]
            counted = counted if keep_last else counted[:-1]
            compute = sum(s["compute_ms"] for s in counted)
            comm = sum(s["comm_ms"] for s in counted)
            assert temporal.loc[rank, "compute_time(us)"] / 1e3 == pytest.approx(compute,
                                                                                  rel=0.01)
            if comm > 0:
                assert overlap.loc[rank, "comp_comm_overlap_pctg"] == pytest.approx(
                    comm_overlap_pct(comm, sum(s["overlap_ms"] for s in counted)),
                    rel=0.01, abs=0.005)


# A synthetic 4-rank data-parallel job (tests/fixtures/synthetic_job.h): rank 2's host is late
# by 15 ms in every step, so it spends the least time in its AllReduces; and the same job
# balanced. Six steps, numbered step_0 ... step_5.
JOB_STEPS = 6


@pytest.fixture(scope="module")
def ddp_jobs(tmp_path_factory) -> Dict[str, Path]:
    from test_fixture_traces import fixture_tool
    jobs = {"late": ["--late-rank", "2", "--late-ms", "15"], "balanced": []}
    out = {}
    for name, extra in jobs.items():
        folder = tmp_path_factory.mktemp(name)
        subprocess.run([str(fixture_tool()), "ddp_job", str(folder), "--ranks", "4",
                        "--steps", str(JOB_STEPS), *extra], check=True)
        out[name] = folder
    return out


def job_traces(folder: Path) -> List[Path]:
    return sorted(folder.glob("rank_*.wst"))


@pytest.fixture(scope="module")
def kineto_jobs(cli: Path, ddp_jobs, tmp_path_factory) -> Dict[str, Path]:
    out = {}
    for name, folder in ddp_jobs.items():
        target = tmp_path_factory.mktemp(f"kineto_{name}")
        run(cli, "export", *map(str, job_traces(folder)), "--format", "kineto", "-o", str(target))
        out[name] = target
    return out


def test_hta_reads_every_rank_and_step(kineto_jobs, hta_analysis):
    assert sorted(p.name for p in kineto_jobs["late"].iterdir()) == [
        f"rank{r}.trace.json" for r in range(4)]
    analysis = hta_analysis(trace_dir=str(kineto_jobs["late"]))
    assert analysis.t.get_ranks() == [0, 1, 2, 3]
    # HTA leaves out the last step unless told to keep it.
    assert analysis.get_profiler_steps() == list(range(JOB_STEPS - 1))
    keep_last = hta_analysis(trace_dir=str(kineto_jobs["late"]), include_last_profiler_step=True)
    assert keep_last.get_profiler_steps() == list(range(JOB_STEPS))


def by_rank(rows: List[dict], key: str) -> Dict[int, float]:
    sums: Dict[int, float] = {}
    for row in rows:
        sums[row["rank"]] = sums.get(row["rank"], 0) + row[key]
    return sums


# HTA's figures are unions of kernel intervals, as warpscope's are, over the same kernels; with
# HTA_DISABLE_NS_ROUNDING=1 it reads the exported nanoseconds exactly, so the two agree up to
# floating-point sums: 1e-6 relative (1 ns in 1 ms).
EXACT = 1e-6


@pytest.mark.parametrize("job", ["late", "balanced"])
def test_hta_temporal_breakdown_and_overlap_equal_warpscope(cli: Path, ddp_jobs, kineto_jobs,
                                                            hta_analysis, job: str):
    tables = json.loads(run(cli, "job", "--format", "json", str(ddp_jobs[job])))
    steps = tables["steps"]
    assert len(steps) == 4 * JOB_STEPS
    compute = by_rank(steps, "compute_ms")
    comm = by_rank(steps, "comm_ms")
    overlap = by_rank(steps, "overlap_ms")
    exposed = by_rank(steps, "exposed_comm_ms")
    analysis = hta_analysis(trace_dir=str(kineto_jobs[job]), include_last_profiler_step=True)
    temporal = analysis.get_temporal_breakdown(visualize=False).set_index("rank")
    overlap_pct = analysis.get_comm_comp_overlap(visualize=False).set_index("rank")
    assert sorted(temporal.index) == [0, 1, 2, 3]
    for rank, trace in enumerate(job_traces(ddp_jobs[job])):
        [idle] = summary(cli, trace)["idle"]
        row = temporal.loc[rank]
        assert row["kernel_time(us)"] * 1e3 == pytest.approx(idle["span_ns"], rel=EXACT)
        assert (row["kernel_time(us)"] - row["idle_time(us)"]) * 1e3 == pytest.approx(
            idle["busy_ns"], rel=EXACT)
        assert row["compute_time(us)"] / 1e3 == pytest.approx(compute[rank], rel=EXACT)
        assert row["non_compute_time(us)"] / 1e3 == pytest.approx(exposed[rank], rel=EXACT)
        # HTA rounds the percentage to two decimals.
        assert overlap_pct.loc[rank, "comp_comm_overlap_pctg"] == pytest.approx(
            100 * overlap[rank] / comm[rank], abs=0.005)
    if job == "late":  # the late rank's GPU sits idle while the others wait in NCCL
        assert temporal["idle_time_pctg"].idxmax() == 2
        assert temporal.loc[2, "idle_time_pctg"] > 50

    # With HTA's defaults the last step, and the work launched in it, is left out.
    default = hta_analysis(trace_dir=str(kineto_jobs[job]))
    temporal = default.get_temporal_breakdown(visualize=False).set_index("rank")
    last = JOB_STEPS - 1
    for rank in range(4):
        before_last = sum(s["compute_ms"] for s in steps if s["rank"] == rank and s["step"] != last)
        assert temporal.loc[rank, "compute_time(us)"] / 1e3 == pytest.approx(before_last, rel=EXACT)


def test_hta_straggler_analysis_finds_steps_but_not_current_nccl_kernels(kineto_jobs,
                                                                         hta_analysis,
                                                                         tmp_path: Path):
    analysis = hta_analysis(trace_dir=str(kineto_jobs["late"]))
    assert analysis.get_profiler_steps()
    # HTA 0.5 looks for kernels named ncclKernel* (NCCL 2.18 and older); NCCL 2.19 and later
    # name them ncclDevKernel_*, and it finds none after finding the steps.
    with pytest.raises(ValueError) as failure:
        analysis.get_potential_stragglers(num_candidates=1)
    assert "available profiler steps" not in str(failure.value)
    assert "empty sequence" in str(failure.value)
    # With the older names (a copy renamed here, not an export option) its rule still misses
    # the late rank: it keeps the communication kernels longer than 1% of a step, and the late
    # rank's are the short ones (the others wait inside theirs).
    renamed = tmp_path / "renamed"
    renamed.mkdir()
    for path in kineto_jobs["late"].iterdir():
        (renamed / path.name).write_text(
            path.read_text().replace("ncclDevKernel_", "ncclKernel_"))
    assert hta_analysis(trace_dir=str(renamed)).get_potential_stragglers(num_candidates=1) != [2]


def test_chrome_export_names_every_rank(cli: Path, ddp_jobs, tmp_path: Path):
    out = tmp_path / "job.json"
    run(cli, "export", *map(str, job_traces(ddp_jobs["late"])), "--format", "chrome", "-o",
        str(out))
    events = json.loads(out.read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    order = {e["pid"]: e["args"]["sort_index"] for e in events
             if e["name"] == "process_sort_index"}
    assert sorted(names.values()) == [f"rank {r}: synthetic-node (pid {5000 + 2 * r})"
                                      for r in range(4)]
    assert sorted(order.values()) == [0, 1, 2, 3]
