"""warpscope: read `.wst` traces written by the warpscope CUDA profiler.

    import warpscope
    trace = warpscope.open("run.wst")
    frames = trace.to_dataframes()          # dict of pandas DataFrames by event kind
    frames["kernels"].groupby("name").duration_ns.sum()

The reader needs only protobuf; pandas is imported when DataFrames are asked for. With the
``warpscope_native`` extension (built by ``pip install ./python``), ``to_dataframes`` runs on
the C++ reader, and every analysis of the CLI's list (``warpscope help``) is a function that
returns its tables as DataFrames: ``summary``, ``stalls``, ``diff``, ``job``, ... (made from
the list, with the CLI's flags as keywords; docs/python.md), and ``export`` writes what
``warpscope export`` writes. Each takes a path, a ``TraceFile``, several, a folder or a glob
pattern, and raises ``warpscope.Error`` for bad input.

    warpscope.find_stat("pm_sampling.gaps")  # a Stats counter's severity and meaning

``torch_memory(trace, snapshot)`` reads PyTorch's own memory history beside a trace: the
tensors live at each device's peak and at each refused request, with their lines.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

from . import native, schema
from .analyses import ANALYSES, rows, run
from .errors import Error
from .export import export  # the function; the module stays warpscope.export in sys.modules
from .reader import (DEFAULT_MAX_TRACE_BYTES, Notice, PathLike, TraceError, TraceFile,
                     TraceWarning)
from .stats import ALL_STATS, StatDef, find_stat
from .torch_memory import torch_memory  # the function; the module stays in sys.modules

__version__ = "0.1.0"
# Every analysis of the list, by its name: warpscope.summary, warpscope.stalls, ...
globals().update(ANALYSES)
__all__ = sorted(["ALL_STATS", "DEFAULT_MAX_TRACE_BYTES", "Error", "Notice", "StatDef",
                  "TraceError", "TraceFile", "TraceWarning", "concat_dataframes", "export",
                  "find_stat", "native", "open", "open_many", "rows", "run", "schema",
                  "torch_memory", *ANALYSES])


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
