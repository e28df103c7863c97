"""warpscope: read `.wst` traces written by the warpscope CUDA profiler.

    import warpscope
    trace = warpscope.open("run.wst")
    frames = trace.to_dataframes()          # dict of pandas DataFrames by event kind
    frames["kernels"].groupby("name").duration_ns.sum()

The reader needs only protobuf; pandas is imported when DataFrames are asked for.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

from . import schema
from .reader import Notice, PathLike, TraceError, TraceFile, TraceWarning

__version__ = "0.1.0"
__all__ = ["Notice", "TraceError", "TraceFile", "TraceWarning", "concat_dataframes", "open",
           "open_many", "schema"]


def open(path: PathLike) -> TraceFile:  # noqa: A001 - named like the built-in on purpose
    """Opens a `.wst` file and checks its header; raises ``TraceError`` when it cannot."""
    return TraceFile(path)


def open_many(paths: Sequence[PathLike]) -> List[TraceFile]:
    """Opens one file per rank, ordered by their RANK variable (files without one last)."""
    traces = [TraceFile(p) for p in paths]
    return sorted(traces, key=lambda t: (t.rank is None, t.rank or 0))


def concat_dataframes(traces: Sequence[TraceFile]) -> Dict[str, Any]:
    """The frames of several files stacked, with ``rank`` and ``pid`` columns and times on
    one time base; see ``warpscope.frames.concat_dataframes``."""
    from .frames import concat_dataframes as concat
    return concat(traces)
