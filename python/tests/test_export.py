"""``python -m warpscope export --format parquet``: one Parquet file per event kind with
``rank``, ``host``, ``pid`` and ``file`` columns, and the DuckDB straggler example over it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List

import pytest

import tracebuilder as tb
from script_module import load_script
import warpscope
from warpscope import schema
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


def test_a_bad_file_fails_before_anything_is_written(tmp_path, job, capsys):
    bad = tmp_path / "junk.wst"
    bad.write_bytes(b"junk")
    out = tmp_path / "parquet"
    assert main(["export", "-o", str(out), str(job[0]), str(bad)]) == 1
    assert "junk.wst: not a warpscope trace" in capsys.readouterr().err
    assert not list(out.glob("*.parquet"))


def test_duckdb_finds_the_straggler(tmp_path, job):
    pytest.importorskip("duckdb")
    out = tmp_path / "parquet"
    assert main(["export", "-o", str(out)] + [str(p) for p in job]) == 0
    example = load_script(SOURCE_DIR / "examples" / "duckdb_straggler.py")
    rows = example.ranks_slowest_first(str(out))
    assert [r[0] for r in rows][0] == 2  # the rank made slower on purpose
    assert rows[0][3] == 20 * 1500 and all(r[3] == 20 * 1000 for r in rows[1:])
