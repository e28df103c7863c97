"""``python -m warpscope export --format parquet``: one Parquet file per event kind with
``rank``, ``host``, ``pid`` and ``file`` columns, collectives.parquet for jobs with NCCL
kernels, and the DuckDB straggler example over them (examples/duckdb_straggler.py) on
synthetic data-parallel jobs (the `warpscope-fixture ddp_job` tool)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest

import tracebuilder as tb
from script_module import load_script
import warpscope
from warpscope import native, schema
from warpscope.__main__ import main
from warpscope.export import FILE_STEMS

pq = pytest.importorskip("pyarrow.parquet")

SOURCE_DIR = Path(__file__).resolve().parents[2]
s = schema


def rank_trace(rank: Any, kernels: int, kernel_ns: int, pid: int) -> List[Any]:
    """One rank of a job: `kernels` kernels of `kernel_ns` each, an API call per kernel."""
    env = [] if rank is None else [s.KeyValue(key="RANK", value=str(rank))]
    packets = [tb.header(rank_env=env, pid=pid, hostname=f"node{pid % 2}",
                         unix_time_base_ns=1_700_000_000_000_000_000 + pid),
               tb.string(1, "gemm"), tb.string(2, "cudaLaunchKernel"),
               tb.packet(thread=s.ThreadInfo(id=1, os_tid=pid, name="main")),
               tb.packet(device=s.Device(id=0, name="NVIDIA H200", sm_count=132))]
    for i in range(kernels):
        t = 1000 + i * 2 * kernel_ns
        packets += [tb.packet(api_call=s.ApiCallEvent(name_id=2, start_ns=t, duration_ns=5,
                                                      thread_id=1, correlation_id=i + 1)),
                    tb.packet(kernel=s.KernelEvent(name_id=1, start_ns=t + 10,
                                                   duration_ns=kernel_ns, stream_id=7,
                                                   correlation_id=i + 1))]
    return packets + [tb.end()]


@pytest.fixture
def job(tmp_path) -> List[Path]:
    """Four ranks, written in an order other than their ranks; rank 2 is slower."""
    return [tb.write(tmp_path / f"r{rank}.wst",
                     rank_trace(rank, kernels=20, kernel_ns=1500 if rank == 2 else 1000,
                                pid=100 + rank))
            for rank in (3, 1, 2, 0)]


def test_one_file_per_kind_with_rank_host_pid_file(tmp_path, job, capsys):
    out = tmp_path / "parquet"
    assert main(["export", "--format", "parquet", "-o", str(out)] + [str(p) for p in job]) == 0
    written = capsys.readouterr().out.split()
    assert sorted(Path(p).name for p in written) == sorted(f"{v}.parquet"
                                                           for v in FILE_STEMS.values())
    kernels = pq.read_table(out / "kernels.parquet").to_pandas()
    assert list(kernels.columns[:4]) == ["rank", "host", "pid", "file"]
    assert len(kernels) == 80
    assert sorted(set(kernels["rank"])) == [0, 1, 2, 3]
    by_rank = kernels.groupby("rank").agg(pid=("pid", "first"), host=("host", "first"),
                                          file=("file", "first"))
    for rank, row in by_rank.iterrows():
        assert row["pid"] == 100 + rank and row["host"] == f"node{(100 + rank) % 2}"
        assert row["file"] == str(job[[3, 1, 2, 0].index(rank)])
    # Times on one base: the earliest unix_time_base_ns (rank 0's, pid 100).
    first = kernels.groupby("rank")["start_ns"].min()
    assert list(first) == [1010, 1011, 1012, 1013]
    api = pq.read_table(out / "api_calls.parquet").to_pandas()
    assert len(api) == 80 and set(api["name"]) == {"cudaLaunchKernel"}
    assert set(api["thread_name"]) == {"main"}
    devices = pq.read_table(out / "devices.parquet").to_pandas()
    assert len(devices) == 4 and set(devices["name"]) == {"NVIDIA H200"}


def test_rank_comes_from_the_file_order_without_rank_variables(tmp_path):
    paths = [tb.write(tmp_path / f"p{i}.wst", rank_trace(None, 2, 100, pid=7 + i))
             for i in range(3)]
    out = tmp_path / "parquet"
    assert main(["export", "-o", str(out)] + [str(p) for p in paths]) == 0
    kernels = pq.read_table(out / "kernels.parquet").to_pandas()
    assert kernels.groupby("rank")["pid"].first().to_dict() == {0: 7, 1: 8, 2: 9}


def test_pm_samples_get_the_metrics_of_every_trace(tmp_path):
    def trace(metric: str, value: float) -> List[Any]:
        return [tb.header(),
                tb.packet(pm_metric_set=s.PmMetricSet(id=1, metric_names=[metric])),
                tb.packet(pm_sample=s.PmSample(metric_set_id=1, start_ns=1, duration_ns=2,
                                               values=[value])),
                tb.end()]
    paths = [tb.write(tmp_path / "a.wst", trace("a", 1.0)),
             tb.write(tmp_path / "b.wst", trace("b", 2.0))]
    out = tmp_path / "parquet"
    assert main(["export", "-o", str(out)] + [str(p) for p in paths]) == 0
    pm = pq.read_table(out / "pm_samples.parquet").to_pandas().sort_values("rank")
    assert list(pm["a"].fillna(-1)) == [1.0, -1] and list(pm["b"].fillna(-1)) == [-1, 2.0]


@pytest.mark.skipif(not native.available(), reason="chunks are read by the warpscope_native "
                    "extension")
def test_events_read_in_chunks_give_the_tables_read_whole(tmp_path, job):
    from warpscope.export import export_parquet
    whole, chunked = tmp_path / "whole", tmp_path / "chunked"
    names = [Path(p).name for p in export_parquet(job, whole, chunk_rows=1 << 20)]
    assert names == [Path(p).name for p in export_parquet(job, chunked, chunk_rows=7)]
    assert "kernels.parquet" in names
    for name in names:
        assert pq.read_table(chunked / name).equals(pq.read_table(whole / name)), name
    # 40 events a trace (20 API calls, 20 kernels) in chunks of 7 rows: row groups of a few
    # rows each, every kernel there once.
    kernels = pq.ParquetFile(chunked / "kernels.parquet")
    assert kernels.metadata.num_row_groups >= 4 * 20 // 7
    assert max(kernels.metadata.row_group(i).num_rows
               for i in range(kernels.metadata.num_row_groups)) <= 7
    assert kernels.metadata.num_rows == 4 * 20


@pytest.mark.skipif(not native.available(), reason="chunks are read by the warpscope_native "
                    "extension")
def test_pm_samples_read_in_chunks_give_the_table_read_whole(tmp_path):
    def trace(pid: int, sets: List[List[str]], samples: int) -> List[Any]:
        packets = [tb.header(pid=pid), tb.string(1, "gemm")]
        for i in range(samples):
            if i == samples // 2 or i == 0:  # a second metric set midway
                set_id = 1 if i == 0 else 2
                packets.append(tb.packet(pm_metric_set=s.PmMetricSet(
                    id=set_id, metric_names=sets[set_id - 1])))
            packets += [tb.packet(kernel=s.KernelEvent(name_id=1, start_ns=100 * i,
                                                       duration_ns=50, correlation_id=i + 1)),
                        tb.packet(pm_sample=s.PmSample(
                            metric_set_id=1 if i < samples // 2 else 2, start_ns=100 * i + 10,
                            duration_ns=20, values=[float(i)] * len(
                                sets[0 if i < samples // 2 else 1])))]
        if not samples:
            packets.append(tb.packet(pm_metric_set=s.PmMetricSet(id=1, metric_names=sets[0])))
        return packets + [tb.end()]
    paths = [tb.write(tmp_path / "a.wst", trace(1, [["a"], ["b", "a"]], 9)),
             tb.write(tmp_path / "b.wst", trace(2, [["c"]], 0)),
             tb.write(tmp_path / "c.wst", trace(3, [["a"], ["d"]], 6))]
    from warpscope.export import export_parquet
    whole, chunked = tmp_path / "whole", tmp_path / "chunked"
    export_parquet(paths, whole, chunk_rows=1 << 20)
    export_parquet(paths, chunked, chunk_rows=3)
    assert sorted(p.name for p in chunked.iterdir()) == sorted(p.name for p in whole.iterdir())
    pm = pq.read_table(chunked / "pm_samples.parquet")

    def cells(table: Any) -> Dict[str, List[Any]]:  # NaN and null told apart, each equal
        return {name: ["nan" if v != v else v for v in table.column(name).to_pylist()]
                for name in table.column_names}
    assert cells(pm) == cells(pq.read_table(whole / "pm_samples.parquet"))
    assert pm.schema.equals(pq.read_table(whole / "pm_samples.parquet").schema)
    assert pq.read_table(chunked / "kernels.parquet").equals(
        pq.read_table(whole / "kernels.parquet"))
    frame = pm.to_pandas()
    assert [c for c in frame.columns if len(c) == 1] == ["a", "b", "c", "d"]
    assert len(frame) == 15 and list(frame["rank"].value_counts().sort_index()) == [9, 6]
    assert list(frame["b"].fillna(-1))[:9] == [-1] * 4 + [4.0, 5.0, 6.0, 7.0, 8.0]
    assert pq.ParquetFile(chunked / "pm_samples.parquet").metadata.num_row_groups > 2


@pytest.mark.skipif(not native.available(), reason="chunks are read by the warpscope_native "
                    "extension")
def test_a_sampled_trace_read_in_chunks_gives_the_tables_read_whole(tmp_path):
    build = Path(os.environ.get("WARPSCOPE_BUILD_DIR", SOURCE_DIR / "build"))
    bench_trace = build / "bin" / "warpscope_bench_trace"
    if not bench_trace.exists():
        pytest.skip(f"{bench_trace} is not built")
    trace = tmp_path / "sampled.wst"  # PM samples every 10 us, a PC sample batch per step
    subprocess.run([str(bench_trace), str(trace), "20000", "--pm-ns", "10000", "--pc"],
                   check=True)
    from warpscope.export import export_parquet
    whole, chunked = tmp_path / "whole", tmp_path / "chunked"
    names = [Path(p).name for p in export_parquet([trace], whole, chunk_rows=1 << 20)]
    assert names == [Path(p).name for p in export_parquet([trace], chunked, chunk_rows=1000)]
    for name in names:
        assert pq.read_table(chunked / name).equals(pq.read_table(whole / name)), name
    for name in ("kernels", "pm_samples", "pc_samples", "pc_sample_batches"):
        metadata = pq.ParquetFile(chunked / f"{name}.parquet").metadata
        assert metadata.num_rows > 0 and metadata.num_row_groups > 2, name


@pytest.mark.skipif(not native.available(), reason="chunks are read by the warpscope_native "
                    "extension")
def test_raw_pm_samples_come_once_when_read_in_chunks(tmp_path):
    # Raw PM samples are evaluated by the trace model, once the trace is read: its PM samples
    # replace the chunks' (none twice); the PC samples are the chunks'.
    kernels = [tb.packet(kernel=s.KernelEvent(name_id=5, start_ns=t, duration_ns=10))
               for t in (100, 300, 500)]
    path = tb.write(tmp_path / "raw_pm.wst", [
        tb.header(), tb.string(5, "k"), kernels[0],
        tb.packet(pm_metric_set=s.PmMetricSet(id=1, metric_names=["m"])),
        tb.packet(pm_sample=s.PmSample(metric_set_id=1, start_ns=120, duration_ns=5,
                                       values=[1.0])),
        tb.packet(pc_stall_reasons=s.PcStallReasons(device_id=0, index=[1], name=["wait"])),
        tb.packet(pc_samples=s.PcSampleBatch(timestamp_ns=130, total_samples=2, records=[
            s.PcSampleRecord(pc_offset=16, stall_reason_index=[1], samples=[2])])),
        kernels[1],
        tb.packet(pm_counter_data=s.PmCounterData(metric_set_id=1, image=b"\x00",
                                                  sample_index=[0], start_ns=[150],
                                                  duration_ns=[10])),
        kernels[2], tb.end()])
    from warpscope.export import export_parquet
    whole, chunked = tmp_path / "whole", tmp_path / "chunked"
    names = [Path(p).name for p in export_parquet([path], whole, chunk_rows=1 << 20)]
    assert names == [Path(p).name for p in export_parquet([path], chunked, chunk_rows=1)]
    for name in names:
        assert pq.read_table(chunked / name).equals(pq.read_table(whole / name)), name
    assert pq.read_table(chunked / "kernels.parquet").num_rows == 3
    assert pq.read_table(chunked / "pc_samples.parquet").num_rows == 1
    assert pq.read_table(chunked / "pm_samples.parquet").num_rows >= 1
    assert not [p.name for p in chunked.iterdir() if p.name.startswith(".")]


@pytest.mark.skipif(not native.available(), reason="chunks are read by the warpscope_native "
                    "extension")
def test_an_error_in_the_chunk_sink_stops_the_reading(job):
    seen = []

    def sink(frames):
        seen.append(len(frames["kernels"]) + len(frames["api"]))
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        native.read(warpscope.TraceFile(job[0]), sink, 5)
    assert seen == [5]


def test_a_failure_midway_removes_the_files_begun(tmp_path, job, monkeypatch):
    import importlib
    # The module: the package's `export` is the function.
    export_module = importlib.import_module("warpscope.export")
    calls = []
    write = export_module._ParquetSink.write

    def failing_write(self, frames):
        calls.append(1)
        if len(calls) == 3:  # the first trace written, the second begun
            raise OSError("No space left on device")
        write(self, frames)

    monkeypatch.setattr(export_module._ParquetSink, "write", failing_write)
    out = tmp_path / "parquet"
    with pytest.raises(OSError, match="No space left"):
        export_module.export_parquet(job, out, chunk_rows=1 << 20)
    assert out.is_dir() and not list(out.iterdir())


def test_a_bad_file_fails_before_anything_is_written(tmp_path, job, capsys):
    bad = tmp_path / "junk.wst"
    bad.write_bytes(b"junk")
    out = tmp_path / "parquet"
    assert main(["export", "-o", str(out), str(job[0]), str(bad)]) == 1
    assert "junk.wst: not a warpscope trace" in capsys.readouterr().err
    assert not list(out.glob("*.parquet"))


def test_a_folder_stands_for_its_traces_by_name(tmp_path, job, capsys):
    folder = tmp_path / "run"
    folder.mkdir()
    for path in job:
        path.rename(folder / path.name)
    (folder / "notes.txt").write_text("not a trace")
    out = tmp_path / "parquet"
    assert main(["export", "-o", str(out), str(folder) + "/"]) == 0
    kernels = pq.read_table(out / "kernels.parquet").to_pandas()
    files = list(dict.fromkeys(kernels["file"]))
    assert files == [str(folder / f"r{r}.wst") for r in range(4)]  # by name
    assert kernels.groupby("file")["rank"].first().to_dict() == {
        str(folder / f"r{r}.wst"): r for r in range(4)}
    capsys.readouterr()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["export", "-o", str(tmp_path / "other"), str(empty)]) == 1
    assert capsys.readouterr().err == f"warpscope: {empty} is a folder without .wst traces\n"
    assert not (tmp_path / "other").exists()


def test_the_output_folder_is_checked_as_every_output(tmp_path, job, capsys):
    deep = tmp_path / "a" / "b" / "parquet"
    assert main(["export", "-o", str(deep), str(job[0])]) == 2
    assert capsys.readouterr().err == (f"warpscope: -o '{deep}': directory '{deep.parent}' does "
                                       "not exist; create it first or choose another path\n")
    assert not (tmp_path / "a").exists()
    taken = tmp_path / "taken"
    taken.write_text("a file")
    assert main(["export", "-o", str(taken), str(job[0])]) == 2
    assert capsys.readouterr().err == (f"warpscope: -o '{taken}' is a file, not a directory; "
                                       "choose another path\n")
    new = tmp_path / "new"
    assert main(["export", "-o", str(new) + "/", str(job[0])]) == 0
    assert (new / "kernels.parquet").is_file()


def test_a_cut_trace_gets_the_line_every_command_prints(tmp_path, job, capsys):
    whole = job[0].read_bytes()
    cut = tmp_path / "cut.wst"
    cut.write_bytes(whole[:-1])  # inside the end-of-trace packet
    out = tmp_path / "parquet"
    assert main(["export", "-o", str(out), str(cut), str(job[1])]) == 0
    err = capsys.readouterr().err.splitlines()
    cut_lines = [line for line in err if "cut short" in line]
    assert len(cut_lines) == 1 and str(job[1]) not in cut_lines[0]
    assert cut_lines[0].startswith(f"warpscope: {cut} was cut short: ended without an "
                                   "end-of-trace marker (process killed?); the last packet, at "
                                   "byte ")
    assert cut_lines[0].endswith(" bytes lost); figures cover what was written")
    cli = os.environ.get("WARPSCOPE_CLI")
    if cli:  # the C++ CLI's own line for the same file
        summary = subprocess.run([cli, "summary", str(cut)], capture_output=True, text=True)
        assert cut_lines[0] in summary.stderr.splitlines()


COLLECTIVE_COLUMNS = ["rank", "host", "pid", "file", "comm", "seq", "op", "bytes", "step",
                      "start_ns", "duration_ns", "wait_ns", "lost_ns", "arrived_last"]
needs_extension = pytest.mark.skipif(not native.has_extension(),
                                     reason="collectives.parquet needs the warpscope_native "
                                            "extension")


@pytest.fixture(scope="module")
def ddp_jobs(tmp_path_factory) -> Dict[str, Dict[str, Any]]:
    """Four ranks, six steps: rank 2's host 15 ms late every step (it spends the least time
    in its AllReduces: the others wait inside theirs), and the same job balanced. Each
    exported to Parquet, written with the ranks given in an order other than theirs."""
    from test_fixture_traces import fixture_tool
    jobs = {}
    for name, extra in {"late": ["--late-rank", "2", "--late-ms", "15"], "balanced": []}.items():
        folder = tmp_path_factory.mktemp(name)
        subprocess.run([str(fixture_tool()), "ddp_job", str(folder), "--ranks", "4", "--steps",
                        "6", *extra], check=True)
        traces = [folder / f"rank_{r}.wst" for r in (3, 1, 0, 2)]
        out = folder / "parquet"
        assert main(["export", "-o", str(out)] + [str(p) for p in traces]) == 0
        jobs[name] = {"traces": traces, "parquet": out}
    return jobs


def example() -> Any:
    return load_script(SOURCE_DIR / "examples" / "duckdb_straggler.py")


@needs_extension
def test_collectives_parquet_holds_every_ranks_collectives(ddp_jobs):
    job = ddp_jobs["late"]
    collectives = pq.read_table(job["parquet"] / "collectives.parquet").to_pandas()
    assert list(collectives.columns) == COLLECTIVE_COLUMNS
    assert len(collectives) == 4 * 6 * 2  # ranks x steps x gradient buckets
    assert set(collectives["op"]) == {"AllReduce"}
    # Each instance (communicator, order) on every rank, one of them the last to arrive.
    instances = collectives.groupby(["comm", "seq"])
    assert (instances.size() == 4).all()
    assert (instances["arrived_last"].sum() == 1).all()
    # Ranks, files and times as in kernels.parquet: each collective is an NCCL kernel there.
    kernels = pq.read_table(job["parquet"] / "kernels.parquet").to_pandas()
    nccl = kernels[kernels["name"].str.startswith("ncclDevKernel_")]
    merged = collectives.merge(nccl, on=["rank", "host", "pid", "file", "start_ns",
                                         "duration_ns"], how="left", indicator=True)
    assert (merged["_merge"] == "both").all()
    assert dict(zip(collectives["rank"], collectives["file"])) == {
        r: str(p) for r, p in zip((3, 1, 0, 2), job["traces"])}
    # The job view's figures (warpscope.job), row for row.
    view = warpscope.job(job["traces"])["rank_collectives"]
    theirs = view.sort_values(["rank", "seq"]).reset_index(drop=True)
    ours = collectives.sort_values(["rank", "seq"]).reset_index(drop=True)
    for column in ["comm", "seq", "step", "duration_ns", "wait_ns", "lost_ns", "arrived_last"]:
        assert list(ours[column]) == list(theirs[column]), column


@needs_extension
def test_duckdb_names_the_late_rank_though_it_has_the_least_kernel_time(ddp_jobs):
    pytest.importorskip("duckdb")
    job = ddp_jobs["late"]
    kernels = pq.read_table(job["parquet"] / "kernels.parquet").to_pandas()
    kernel_ns = kernels.groupby("rank")["duration_ns"].sum()
    assert kernel_ns.idxmin() == 2  # ranking by kernel time would name another rank
    rows = example().ranks_by_last_arrivals(str(job["parquet"]))
    assert example().straggler(rows) == 2
    # Last at every uneven AllReduce: the first bucket of each step. The second, queued behind
    # it, spreads by 1 ms, under a tenth of the 15 ms lead: not uneven, as in warpscope job.
    assert rows[0][:3] == (2, 6, 6)
    # What it costs: the others' lost time, as warpscope job counts it.
    lost = sum(r[3] for r in rows if r[0] != 2)
    scalars = warpscope.job(job["traces"])["scalars"]
    assert int(scalars["straggler"][0]) == 2
    assert int(scalars["uneven_collectives"][0]) == rows[0][2]
    assert int(scalars["straggler_last_arrivals"][0]) == rows[0][1]
    assert lost / 1e6 == pytest.approx(float(scalars["lost_ms"][0]), rel=1e-9)


@needs_extension
def test_duckdb_names_nobody_on_a_balanced_job(ddp_jobs):
    pytest.importorskip("duckdb")
    rows = example().ranks_by_last_arrivals(str(ddp_jobs["balanced"]["parquet"]))
    assert sorted(r[0] for r in rows) == [0, 1, 2, 3]
    assert all(r[2] == 0 for r in rows)  # no instance is uneven: none reaches the threshold
    assert example().straggler(rows) is None
    scalars = warpscope.job(ddp_jobs["balanced"]["traces"])["scalars"]
    assert int(scalars["uneven_collectives"][0]) == 0


def test_kernels_only_query_agrees(ddp_jobs):
    pytest.importorskip("duckdb")
    late = example().ranks_by_last_arrivals_from_kernels(str(ddp_jobs["late"]["parquet"]))
    assert late[0] == (2, 6, 6)
    assert example().straggler(late) == 2
    balanced = example().ranks_by_last_arrivals_from_kernels(
        str(ddp_jobs["balanced"]["parquet"]))
    assert example().straggler(balanced) is None


def test_the_example_says_what_a_folder_lacks(tmp_path, capsys, monkeypatch):
    """A folder without collectives.parquet (a job without NCCL kernels, or written without the
    extension) gets one line saying what is missing and how to write it, and status 2, not a
    DuckDB traceback; --kernels asks for kernels.parquet instead."""
    pytest.importorskip("duckdb")
    for argv, missing in ((["x", str(tmp_path)], "collectives.parquet"),
                          (["x", "--kernels", str(tmp_path)], "kernels.parquet")):
        monkeypatch.setattr("sys.argv", argv)
        assert example().main() == 2
        err = capsys.readouterr().err
        assert f"no {tmp_path / missing}" in err
        assert "warpscope export --format parquet" in err
        assert "Traceback" not in err


def test_the_docs_show_the_examples_queries():
    """docs/export.md shows the example's two queries, with a folder and the threshold."""
    doc = (SOURCE_DIR / "docs" / "export.md").read_text()
    shown = [" ".join(b.split()) for b in re.findall(r"```sql\n(.*?)```", doc, re.S)]
    for query in (example().QUERY, example().KERNELS_QUERY):
        text = query.format(folder="job_parquet", min_spread=example().MIN_SPREAD_NS)
        assert " ".join(text.split()) in shown


def test_without_the_extension_collectives_are_left_out_and_said(ddp_jobs, tmp_path,
                                                                 monkeypatch, capsys):
    monkeypatch.setattr(native, "_native", None)
    out = tmp_path / "parquet"
    stale = out / "collectives.parquet"
    out.mkdir()
    stale.write_bytes(b"from an earlier export")
    assert main(["export", "-o", str(out)] + [str(p) for p in ddp_jobs["late"]["traces"]]) == 0
    assert not stale.exists()
    err = capsys.readouterr().err
    assert "collectives.parquet not written" in err and "pip install ./python" in err


@needs_extension
def test_collectives_are_left_out_when_two_traces_claim_one_rank(ddp_jobs, tmp_path, capsys):
    first = ddp_jobs["late"]["traces"][2]  # rank 0
    again = tmp_path / "again.wst"
    again.write_bytes(first.read_bytes())
    out = tmp_path / "parquet"
    assert main(["export", "-o", str(out), str(first), str(again)]) == 0
    assert not (out / "collectives.parquet").exists()
    assert "several traces say they are rank 0" in capsys.readouterr().err
