"""warpscope: read `.wst` traces written by the warpscope CUDA profiler.

    import warpscope
    trace = warpscope.open("run.wst")
    frames = trace.to_dataframes()          # dict of pandas DataFrames by event kind
    frames["kernels"].groupby("name").duration_ns.sum()

The reader needs only protobuf; pandas is imported when DataFrames are asked for. With the
``warpscope_native`` extension (built by ``pip install ./python``), ``to_dataframes`` runs on
the C++ reader and ``summary``, ``occupancy``, ``tail`` and ``advise`` are available, and
``stalls`` runs on the C++ stall report (docs/python.md).

    warpscope.find_stat("pm_sampling.gaps")  # a Stats counter's severity and meaning
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from . import native, schema
from .reader import (DEFAULT_MAX_TRACE_BYTES, Notice, PathLike, TraceError, TraceFile,
                     TraceWarning)
from .stats import ALL_STATS, StatDef, find_stat

__version__ = "0.1.0"
__all__ = ["ALL_STATS", "DEFAULT_MAX_TRACE_BYTES", "Notice", "StatDef", "TraceError",
           "TraceFile", "TraceWarning", "advise", "concat_dataframes", "find_stat", "job",
           "native", "occupancy", "open", "open_many", "schema", "stalls", "summary", "tail"]


def open(path: PathLike,  # noqa: A001 - named like the built-in on purpose
         max_bytes: int = DEFAULT_MAX_TRACE_BYTES) -> TraceFile:
    """Opens a `.wst` file and checks its header; raises ``TraceError`` when it cannot.

    Only regular files are read, and none larger than `max_bytes` (64 GiB by default).
    """
    return TraceFile(path, max_bytes=max_bytes)


def open_many(paths: Sequence[PathLike],
              max_bytes: int = DEFAULT_MAX_TRACE_BYTES) -> List[TraceFile]:
    """Opens one file per rank, ordered by their RANK variable (files without one last)."""
    traces = [TraceFile(p, max_bytes=max_bytes) for p in paths]
    return sorted(traces, key=lambda t: (t.rank is None, t.rank or 0))


def concat_dataframes(traces: Sequence[TraceFile]) -> Dict[str, Any]:
    """The frames of several files stacked, with ``rank`` and ``pid`` columns and times on
    one time base; see ``warpscope.frames.concat_dataframes``."""
    from .frames import concat_dataframes as concat
    return concat(traces)


def advise(trace: Union[TraceFile, PathLike], device: Optional[int] = None,
           top: int = 0, literal_ranges: bool = False, step: str = "") -> Dict[str, Any]:
    """The findings of ``warpscope advise`` as DataFrames: ``findings`` (ranked by the time a
    fix would save: order, rule, cost, where, evidence, fix, one_time), ``summary`` (one row:
    the head line and its figures, the steps found and the warm-up steps), ``devices`` (busy
    time per device) and ``notes`` (rules skipped and why); columns in docs/python.md.
    `device` keeps one device; `top` keeps the costliest findings (0: all); `literal_ranges`
    keeps range names as written (by default ``step_12`` is ``step_<N>``); `step` names the
    NVTX range that marks steps. Needs the extension."""
    return native.advise(trace.path if isinstance(trace, TraceFile) else trace, device, top,
                         literal_ranges, step)


def job(traces: Union[PathLike, Iterable[Union[TraceFile, PathLike]]], step: str = "",
        threads: int = 0) -> Dict[str, Any]:
    """The figures of ``warpscope job`` as DataFrames: every rank's trace of a data-parallel
    job read together (docs/distributed.md). `traces` is a folder of traces or the traces
    (paths or ``TraceFile``). Returns ``scalars`` (one row: the straggler, its evidence and
    cause, time lost waiting), ``ranks`` (medians over the steady steps, ``median_*``; totals
    over the trace, ``total_*``), ``collectives`` (per operation and rank: time, wait,
    transfer, bus bandwidth), ``steps`` (per rank and step: compute, communication, overlap,
    wait), ``instances`` (each collective matched across the ranks) and ``problems``. `step`
    names the NVTX range that marks a step; `threads` how many traces are read at once.
    Needs the extension."""
    if isinstance(traces, (str, bytes)) or hasattr(traces, "__fspath__"):
        traces = [traces]  # type: ignore[list-item]
    paths = [t.path if isinstance(t, TraceFile) else t for t in traces]  # type: ignore[union-attr]
    return native.job(paths, step, threads)


def stalls(traces: Union[TraceFile, PathLike, Iterable[Union[TraceFile, PathLike]]],
           kernel: Optional[str] = None, by: str = "kernel") -> Dict[str, Any]:
    """The figures of ``warpscope stalls`` as DataFrames: why each kernel's warps waited,
    from PC samples (docs/python.md, *Warp stall reasons*; definitions in docs/stalls.md).

    `traces` is one trace (a ``TraceFile`` or a path) or several (one per rank), summed per
    kernel. `kernel` keeps the kernels whose name matches (RE2, as the CLI). Returns
    ``{"kernels": ..., "reasons": ...}``, or with ``by="pc"`` ``{"kernels": ..., "pcs": ...}``;
    each share with its 95% interval (``low_pct``, ``high_pct``) and each kernel with its
    ``sampling_instants`` and ``too_few``. Needs the extension (the CLI's own code)."""
    if by not in ("kernel", "pc"):
        raise ValueError(f"by must be 'kernel' or 'pc', not {by!r}")
    items = [traces] if isinstance(traces, (TraceFile, str, bytes)) or hasattr(
        traces, "__fspath__") else list(traces)
    paths = [t.path if isinstance(t, TraceFile) else t for t in items]
    return native.stalls(paths, kernel or "", by)


def summary(traces: Union[PathLike, Sequence[PathLike]], reports: str = "") -> Dict[str, Any]:
    """The tables of ``warpscope summary`` as DataFrames by report name (``kernels``, ``api``,
    ``memory``, ``nvtx``, ``idle``, ...; `reports` picks some, as ``--report`` does), one
    trace or several (then a combined ``file`` "*" view too). Needs the extension."""
    paths = [traces] if isinstance(traces, (str, bytes)) or hasattr(traces, "__fspath__") \
        else list(traces)
    return native.summary(paths, reports)


def occupancy(trace: PathLike, kernel: str = "") -> Any:
    """``warpscope occupancy`` as a DataFrame, one row per kernel name and launch
    configuration; `kernel` is an RE2 pattern searched in the name. Needs the extension."""
    return native.occupancy(trace, kernel)


def tail(trace: PathLike, kernel: str = "", instances: bool = False) -> Any:
    """``warpscope tail`` as a DataFrame: one row per kernel name, or per launch with
    `instances`. Needs the extension."""
    return native.tail(trace, kernel, instances)
