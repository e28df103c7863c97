"""The C++ reader behind ``to_dataframes``, when the ``warpscope_native`` extension is there.

The extension (python/src/, built by ``pip install ./python`` or CMake with
``-DWARPSCOPE_PYTHON=ON``) decodes the trace with the analyzers' reader straight into typed
columns (``TraceColumns``, analyzers/model/trace_columns.h) and hands each column to numpy
without a copy; they become the same DataFrames as the pure-Python reader's
(``warpscope.frames``): the same frames, columns, dtypes, values and counted problems. Without the extension, or with ``WARPSCOPE_PURE_PYTHON=1`` in the environment,
the pure-Python reader is used (docs/python.md, *Two readers, one result*).
"""

from __future__ import annotations

import gc
import os
import re
from typing import Any, Callable, Dict, List, Optional, Sequence

from .errors import Error, TraceError, TraceWarning, _CorruptData
from .metadata import DEPRECATED_ISSUE_NAMES, IssueCounts, enum_label, problem_lines

try:  # the extension is optional: a pure-Python install has the same API, only slower
    import warpscope_native as _native  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the install
    _native = None

# The import counters are issues under their own names (``TraceFile.issues``); the names
# the pure-Python reader gave them before, C++ name -> old name, for code that looked them up.
COUNTER_NAMES = {new: old for old, new in DEPRECATED_ISSUE_NAMES.items()
                 if new != "model.pc_record_length_mismatch"}
# Counters that the pure-Python reader reports elsewhere (truncated, complete) or not at all.
_NOT_ISSUES = {"reader.truncated_bytes", "reader.missing_end_of_trace",
               "reader.packets_with_unknown_fields", "reader.newer_format_minor",
               "model.pm_raw_samples_evaluated", "model.pm_raw_samples_superseded",
               "model.events_with_overflowing_end", "model.devices_out_of_range",
               "model.launch_configs_out_of_range", "model.pm_samples_out_of_range"}
# Counters the pure-Python reader does not count (raw PM samples are evaluated by the C++
# reader only): issues under their C++ name.
PASSED_THROUGH = {"model.pm_raw_sample_evaluation_errors", "model.pm_raw_records_malformed"}
_SEVERITIES = {0: "info", 1: "data_loss", 2: "error"}


def available() -> bool:
    """True when to_dataframes runs on the C++ reader."""
    return has_extension() and os.environ.get("WARPSCOPE_PURE_PYTHON", "") in ("", "0")


def has_extension() -> bool:
    """True when the extension is there: the analyses (summary, job, ...) can run."""
    return _native is not None


def _column(value: Any, enum_label: Any) -> Any:
    import numpy as np
    import pandas as pd
    if isinstance(value, tuple) and value[0] == "zeros":  # a column of zeros, not stored
        return np.zeros(value[1], dtype=value[2])
    if not isinstance(value, tuple):
        # nanobind hands 64-bit integers as C's long long ('q', 'Q'), which numpy treats as
        # equal to int64/uint64 but pandas does not always: view them as the latter.
        if value.dtype.kind in "iu" and value.dtype.itemsize == 8:
            return value.view(np.int64 if value.dtype.kind == "i" else np.uint64)
        return value
    kind = value[0]
    if kind == "bool":
        return value[1].view(np.bool_)
    if kind == "category":
        return _categorical(value[1], list(value[2]))
    # An enum: int32 values named with the schema's labels, categories sorted as the
    # pure-Python reader's are.
    codes, enum_name = value[1], value[2]
    if isinstance(codes, tuple):  # zeros
        codes = np.zeros(codes[1], dtype=codes[2])
    if len(codes) and 0 <= codes.min() and codes.max() < 1 << 16:
        distinct = np.flatnonzero(np.bincount(codes))
        lookup = np.zeros(int(distinct[-1]) + 1, dtype=np.int32)
    else:
        distinct = np.unique(codes)
        lookup = None
    labels = [enum_label(enum_name, int(v)) for v in distinct]
    categories = sorted(set(labels))
    positions = np.array([categories.index(label) for label in labels], dtype=np.int32)
    if lookup is not None:
        lookup[distinct] = positions
        out = lookup[codes]
    else:
        out = positions[np.searchsorted(distinct, codes)] if len(codes) else codes
    return _categorical(out.astype(np.int32, copy=False), categories)


def _categorical(codes: Any, categories: List[str]) -> Any:
    import pandas as pd
    dtype = pd.CategoricalDtype(pd.Index(categories, dtype=str))
    try:
        return pd.Categorical.from_codes(codes, dtype=dtype, validate=False)
    except TypeError:  # pandas < 2.1 has no `validate`
        return pd.Categorical.from_codes(codes, dtype=dtype)


def read(trace: Any, on_chunk: Optional[Callable[[Dict[str, Any]], None]] = None,
         chunk_rows: int = 0) -> Dict[str, Any]:
    """The frames of `trace` (a TraceFile) read by the C++ reader; fills ``trace.issues``
    with the problems met, by the C++ reader's counter names. With `on_chunk`, the event
    frames (kernels, api, ...) and pm_samples go to it about `chunk_rows` rows at a time, as
    they are read, and those returned have no rows: memory holds one chunk of events. But
    where ``trace._native_state.pm_samples_in_chunks`` is false (raw PM samples, which the
    C++ reader evaluates once the whole trace is read), the pm_samples returned are all the
    trace's and those of the chunks are to be dropped."""
    # Building the frames makes no reference cycles, but enough objects to start the cyclic
    # garbage collector, whose full passes walk every object pandas has made (tens of ms).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _read(trace, on_chunk, chunk_rows)
    finally:
        if collecting:
            gc.enable()


def _dataframes(columns_by_frame: Dict[str, Any], metric_names: List[str]) -> Dict[str, Any]:
    """DataFrames of the extension's columns, by frame name, in name order."""
    import pandas as pd
    frames: Dict[str, Any] = {}
    for name, columns in columns_by_frame.items():
        metrics = columns.pop("__metrics__", None)
        frame = pd.DataFrame({c: _column(v, enum_label) for c, v in columns.items()},
                             copy=False)
        if metrics is not None and metric_names:
            from .frames import metric_columns  # only here: that module takes ms to import
            names = metric_columns(metric_names)
            frame = pd.concat([frame, pd.DataFrame(metrics, columns=names, copy=False)],
                              axis=1)
        frames[name] = frame
    return dict(sorted(frames.items()))


def _read(trace: Any, on_chunk: Optional[Callable[[Dict[str, Any]], None]],
          chunk_rows: int) -> Dict[str, Any]:
    try:
        if on_chunk is None:
            result = _native.read_frames(trace.path)
        else:
            result = _native.read_frame_chunks(
                trace.path, chunk_rows,
                lambda columns, metrics: on_chunk(_dataframes(columns, list(metrics))))
    except ValueError as e:
        # The C++ reader's message says where the data went wrong, as the Python reader's does.
        message = str(e) if str(e).startswith("warpscope:") else f"warpscope: {e}"
        corrupt = re.search(r": corrupt data at byte offset (\d+): (.*)$", message)
        if corrupt:
            raise _CorruptData(trace.path, int(corrupt.group(1)), corrupt.group(2)) from e
        at = re.search(r"byte offset (\d+)", message)
        raise TraceError(message, path=trace.path,
                         offset=int(at.group(1)) if at else None) from e
    frames = _dataframes(result["frames"], list(result["pm_metric_names"]))
    issues = IssueCounts()
    for name, value in result["import_counters"].items():
        if name in _NOT_ISSUES or not value:
            continue
        issues[name] = int(value)
    trace._native_state = _NativeState(result, issues)
    trace.issues.clear()
    trace.issues.update(issues)
    return frames


class _NativeState:
    """What the C++ reader found about a trace's completeness, for ``problems()``."""

    def __init__(self, result: Dict[str, Any], issues: Dict[str, int]) -> None:
        self.truncated = bool(result["truncated"])
        self.truncation_offset: Optional[int] = (int(result["truncation_offset"])
                                                 if self.truncated else None)
        self.complete = bool(result["complete"])
        self.stats = {k: int(v) for k, v in result["stats"].items()}
        self.stats_severity = {k: _SEVERITIES.get(int(v), "info")
                               for k, v in result["stats_severity"].items()}
        self.issues = dict(issues)
        self.pm_samples_in_chunks = bool(result.get("pm_samples_in_chunks", False))

    def problems(self) -> List[str]:
        """The lines of ``TraceFile.problems()``, from the C++ reader's findings."""
        return problem_lines(self.truncation_offset, self.complete, self.stats,
                             self.stats_severity, self.issues)


def to_dataframes(trace: Any) -> Dict[str, Any]:
    """``TraceFile.to_dataframes`` on the C++ reader, warning as the pure-Python one does."""
    import warnings
    frames = read(trace)
    problems = trace._native_state.problems()
    if problems:
        warnings.warn(TraceWarning(f"warpscope: {trace.path}: figures may be incomplete: "
                                   + "; ".join(problems)), stacklevel=3)
    return frames


def _require() -> Any:
    if _native is None:
        raise RuntimeError("warpscope: this analysis needs the warpscope_native extension; "
                           "install the package with `pip install ./python` (it builds it)")
    return _native


def _input_error(e: ValueError, paths: Sequence[str]) -> Exception:
    """A failed analysis of the extension as the package's exception: ``TraceError`` when
    its message names one of the traces, else ``Error`` (an option it refused)."""
    message = str(e) if str(e).startswith("warpscope:") else f"warpscope: {e}"
    named = [p for p in paths if p in message]
    if not named:
        return Error(message)
    at = re.search(r"byte offset (\d+)", message)
    return TraceError(message, path=named[0], offset=int(at.group(1)) if at else None)


def run_row(name: str, paths: Sequence[str], options: Dict[str, str]) -> Dict[str, Any]:
    """The CLI's analysis `name` (a row of its list) on `paths` with `options` (flag name ->
    text), as DataFrames."""
    paths = [os.fspath(p) for p in paths]
    try:
        return report_frames(_require().run_row(name, paths, options))
    except ValueError as e:
        raise _input_error(e, paths) from e


def export(format: str, output: str, paths: Sequence[str],  # noqa: A002
           options: Dict[str, str]) -> List[str]:
    """``warpscope export`` in chrome, perfetto or kineto (see ``warpscope.export``); the
    paths written."""
    paths = [os.fspath(p) for p in paths]
    try:
        return list(_require().export(format, output, paths, options))
    except ValueError as e:
        raise _input_error(e, paths) from e


def rows() -> List[Dict[str, Any]]:
    """The CLI's list of analyses, as the extension describes it."""
    return list(_require().rows())


def report_frames(result: Dict[str, Any]) -> Dict[str, Any]:
    """A report from the extension (``ReportColumns``: scalars and typed columns) as
    DataFrames: ``scalars`` one row, then one frame per table. Integer columns with empty
    cells are nullable ``Int64``; empty float cells are NaN."""
    import pandas as pd
    # One row, also for a report without scalars (then no columns).
    frames: Dict[str, Any] = {"scalars": pd.DataFrame({k: [v] for k, v in
                                                      result["scalars"].items()}, index=[0])}
    for name, table in result.items():
        if name == "scalars":
            continue
        columns = {}
        for column, values in table["columns"].items():
            kind = table["types"][column]
            if kind == "int":
                dtype = "Int64" if any(v is None for v in values) else "int64"
            elif kind == "uint64":
                dtype = "UInt64" if any(v is None for v in values) else "uint64"
            elif kind == "float":
                dtype = "float64"
            elif kind == "bool":
                dtype = "boolean" if any(v is None for v in values) else bool
            else:
                dtype = object
            columns[column] = pd.Series(values, dtype=dtype)
        frames[name] = pd.DataFrame(columns)
    return frames
