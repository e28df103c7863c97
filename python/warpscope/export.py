"""``warpscope.export``: the CLI's ``warpscope export`` as a function. Chrome, Perfetto and
Kineto are written by the CLI's own C++ (analyzers/analyses/export_run.h) through the
extension; Parquet by this module.

Parquet export: the DataFrames of several traces (one per rank), one Parquet file per
event kind, with ``rank``, ``host``, ``pid`` and ``file`` columns, for DuckDB, Polars, Spark
or Dask (``python -m warpscope export --format parquet -o DIR TRACE...``, a folder standing
for the ``.wst`` files in it; docs/export.md describes every column). When the traces hold NCCL kernels, also
``collectives.parquet``: every rank's collectives from the job view (``warpscope.job``),
matched across the ranks, with each one's wait and who arrived last.

Traces are read one at a time, and with the extension each trace's events and PM samples a
chunk of rows at a time, appended to each kind's file as row groups: memory holds one chunk's
frames, not a trace's. PM samples go through part files in DIR first, since their table has a
column per metric of any trace. Times are moved onto one time base as in
``concat_dataframes``: the earliest ``Header.unix_time_base_ns`` of all the files, when
every file knows its own.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .errors import Error, TraceError, TraceWarning
from .reader import PathLike, TraceFile

# Frames that are not events of the run: they are written too (devices, contexts) so a
# query can join on device_id; frame name -> Parquet file stem.
FILE_STEMS = {"api": "api_calls", "memcpy": "memcpy", "memset": "memset", "memory": "memory",
              "sync": "sync",
              "kernels": "kernels", "nvtx_ranges": "nvtx_ranges", "nvtx_marks": "nvtx_marks",
              "nccl_calls": "nccl_calls", "api_stacks": "api_stacks", "stacks": "stacks",
              "graph_launches": "graph_launches", "overhead": "overhead",
              "capture_windows": "capture_windows", "pm_samples": "pm_samples",
              "pc_samples": "pc_samples", "pc_sample_batches": "pc_sample_batches",
              "devices": "devices", "contexts": "contexts"}
_TIME_COLUMNS = ("start_ns", "end_ns", "timestamp_ns")
COLLECTIVES_STEM = "collectives"
# How NCCL names its kernels (analyzers/analyses/collectives.cc, kPrefixes): NCCL 2.19 and
# later, and before.
_NCCL_KERNEL_PREFIXES = ("ncclDevKernel_", "ncclKernel_")


class OutputError(Error):
    """The output folder cannot be written; the message is one line, worded as the CLI's
    checks of its output paths word it (analyzers/render/output_path.cc)."""


def trace_paths(paths: Sequence[PathLike]) -> List[PathLike]:
    """Files as given; a folder stands for the ``.wst`` files in it, by name (as for
    ``warpscope job``). A folder without any is a ``TraceError``."""
    files: List[PathLike] = []
    for path in paths:
        if not os.path.isdir(path):
            files.append(path)
            continue
        names = sorted(n for n in os.listdir(path) if len(n) > 4 and n.endswith(".wst"))
        if not names:
            raise TraceError(f"warpscope: {os.fspath(path)} is a folder without .wst traces",
                             path=os.fspath(path))
        files += [os.path.join(os.fspath(path), n) for n in names]
    return files


def make_output_folder(out_dir: PathLike) -> None:
    """Makes `out_dir` unless it is a folder already; the folder it goes into must exist, as
    for every output of warpscope (no tree of folders is made for a mistyped path)."""
    path = os.fspath(out_dir)
    shown = f"-o '{path}'"
    folder = path.rstrip("/") or "/"
    if os.path.isdir(folder):
        if not os.access(folder, os.W_OK | os.X_OK):
            raise OutputError(f"warpscope: {shown}: cannot create files in it (Permission "
                              "denied); choose another path")
        return
    if os.path.exists(folder):
        raise OutputError(f"warpscope: {shown} is a file, not a directory; choose another path")
    parent = os.path.dirname(folder) or "."
    if not os.path.isdir(parent):
        raise OutputError(f"warpscope: {shown}: directory '{parent}' does not exist; create it "
                          "first or choose another path")
    try:
        os.mkdir(folder)
    except OSError as e:
        raise OutputError(f"warpscope: {shown}: {e.strerror}; choose another path") from e


def cut_notice(trace: TraceFile) -> Optional[str]:
    """The line every warpscope command prints for a trace that was cut short (the C++
    TruncationInfo::Describe), None for a whole trace. Called once the trace was read: what
    the reader that read it found (the C++ one's, without a second pass in Python)."""
    found = getattr(trace, "_native_state", None) or trace
    if found.complete and not found.truncated:
        return None
    parts = [] if found.complete else ["ended without an end-of-trace marker (process killed?)"]
    if found.truncated:
        offset = found.truncation_offset
        lost = os.path.getsize(trace.path) - offset
        parts.append(f"the last packet, at byte {offset}, is incomplete ({lost} bytes lost)")
    return (f"warpscope: {trace.path} was cut short: {'; '.join(parts)}; figures cover what "
            "was written")


def rank_of(trace: TraceFile, position: int) -> int:
    """The trace's RANK variable, else its position among the files given."""
    return trace.rank if trace.rank is not None else position


def _arrow_table(frame: Any, extra: Dict[str, Any]) -> Any:
    """The frame as an Arrow table with `extra` constant columns first. Categorical columns
    become plain strings (Parquet dictionary-encodes them on its own), so that every file's
    row groups share one schema."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    n = len(frame)
    arrays, names = [], []
    for name, value in extra.items():
        arrays.append(pa.array(np.full(n, value)) if not isinstance(value, str)
                      else pa.DictionaryArray.from_arrays(np.zeros(n, dtype=np.int32),
                                                          pa.array([value])).cast(pa.string()))
        names.append(name)
    for name in frame.columns:
        column = frame[name]
        if isinstance(column.dtype, pd.CategoricalDtype):
            categories = pa.array(list(column.cat.categories), type=pa.string())
            codes = np.asarray(column.cat.codes, dtype=np.int32)
            array = pa.DictionaryArray.from_arrays(codes, categories).cast(pa.string())
        elif isinstance(column.dtype, pd.api.extensions.ExtensionDtype):
            # Nullable integers (the job view's columns): missing values become nulls.
            array = pa.array(column.to_numpy(dtype=object, na_value=None))
        else:
            array = pa.array(column.to_numpy())
        arrays.append(array)
        names.append(str(name))
    return pa.Table.from_arrays(arrays, names=names)


def has_nccl_kernels(kernels: Any) -> bool:
    """Whether a ``kernels`` frame holds one of NCCL's kernels."""
    names = kernels["name"]
    values = names.cat.categories if hasattr(names, "cat") else names.unique()
    return any(p in str(v) for v in values for p in _NCCL_KERNEL_PREFIXES)


def _write_collectives(sources: List[Dict[str, Any]], out_dir: PathLike,
                       notes: Optional[List[str]]) -> List[str]:
    """``collectives.parquet``: the job view's ``rank_collectives`` table, each row with the
    ``rank``, ``host``, ``pid`` and ``file`` of its trace (as in the other files, which the
    job view may number otherwise) and its start on the files' shared time base. Returns the
    path written, or none (and a note) where two traces claim one rank: the table tells
    traces apart by rank only."""
    import pandas as pd
    import pyarrow.parquet as pq
    from . import native
    frames = native.run_row("job", [s["path"] for s in sources], {})
    collectives = frames["rank_collectives"]
    job_rank = dict(zip(frames["ranks"]["trace"], frames["ranks"]["rank"]))
    claimed = [r for r in job_rank.values() if list(job_rank.values()).count(r) > 1]
    if claimed:
        if notes is not None:
            notes.append(f"warpscope: collectives.parquet not written: several traces say they "
                         f"are rank {claimed[0]}; export the traces of one job together")
        return []
    parts = []
    for source in sources:
        rows = collectives[collectives["rank"] == job_rank[source["path"]]]
        parts.append(rows.assign(**source["extra"], start_ns=rows["start_ns"] + source["shift"]))
    # One table, so that a rank without collectives does not give a column another type.
    table = pd.concat(parts, ignore_index=True)
    table = table[list(sources[0]["extra"]) + [c for c in collectives if c != "rank"]]
    path = os.path.join(os.fspath(out_dir), COLLECTIVES_STEM + ".parquet")
    pq.write_table(_arrow_table(table, {}), path)
    return [path]


class _ParquetSink:
    """Writes frames of the traces as they come: each kind's rows appended to its file as
    row groups (a chunk of a trace's events, or a trace's small frames). PM samples go to
    part files first: pm_samples.parquet has a column per metric of any trace, known once
    every trace was read (``finish_pm_samples``)."""

    def __init__(self, out_dir: PathLike) -> None:
        self.out_dir = os.fspath(out_dir)
        self.writers: Dict[str, Any] = {}
        self.pm_schemas: List[Tuple[int, Any]] = []  # (trace, schema) of every pm table
        self.pm_parts: List[Tuple[int, str]] = []    # (trace, part file) of those with rows
        self.nccl = False
        self.trace = 0
        self.extra: Dict[str, Any] = {}
        self.shift = 0

    def write(self, frames: Dict[str, Any]) -> None:
        import pyarrow.parquet as pq
        for name, frame in frames.items():
            if name == "kernels":
                self.nccl = self.nccl or has_nccl_kernels(frame)
            stem = FILE_STEMS.get(name, name)
            writer = self.writers.get(stem)
            if writer is not None and len(frame) == 0:
                continue  # a chunk without this kind: no empty row group
            if self.shift:
                frame = frame.copy()
                for column in _TIME_COLUMNS:
                    if column in frame:
                        frame[column] = frame[column] + self.shift
            table = _arrow_table(frame, self.extra)
            if name == "pm_samples":
                self._pm_part(table)
                continue
            if writer is None:
                writer = pq.ParquetWriter(os.path.join(self.out_dir, stem + ".parquet"),
                                          table.schema)
                self.writers[stem] = writer
            writer.write_table(table.cast(writer.schema))

    def _pm_part(self, table: Any) -> None:
        import pyarrow.parquet as pq
        self.pm_schemas.append((self.trace, table.schema))
        if table.num_rows:
            path = os.path.join(self.out_dir, f".pm_samples.{len(self.pm_parts)}.parquet")
            pq.write_table(table, path)
            self.pm_parts.append((self.trace, path))

    def drop_pm_samples(self) -> None:
        """Forgets the current trace's PM samples (its chunks' samples, superseded)."""
        for trace, path in self.pm_parts:
            if trace == self.trace:
                os.remove(path)
        self.pm_parts = [(t, p) for t, p in self.pm_parts if t != self.trace]
        self.pm_schemas = [(t, s) for t, s in self.pm_schemas if t != self.trace]

    def finish_pm_samples(self) -> bool:
        """Writes pm_samples.parquet from the parts; False when no trace gave a pm_samples
        frame. Its columns are those of the traces' frames in order, as read whole: each
        trace's last pm table (its small frames, read at the end) has every metric column
        of the trace. A part read before one of its trace's metric sets was defined gets
        NaN in that column, as the trace read whole has; a metric of other traces only is
        null."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.parquet as pq
        if not self.pm_schemas:
            return False
        whole = dict(self.pm_schemas)  # per trace, its last schema: every column of it
        schema = pa.unify_schemas(list(whole.values()))

        def column(table: Any, trace: int, field: Any) -> Any:
            if field.name in table.column_names:
                return table.column(field.name)
            if field.name in whole[trace].names:
                return pa.array(np.full(table.num_rows, np.nan), type=field.type)
            return pa.nulls(table.num_rows, field.type)

        with pq.ParquetWriter(os.path.join(self.out_dir, "pm_samples.parquet"), schema) as out:
            if not self.pm_parts:
                out.write_table(schema.empty_table())
            for trace, path in self.pm_parts:
                part = pq.ParquetFile(path)
                for group in range(part.num_row_groups):
                    table = part.read_row_group(group)
                    out.write_table(pa.Table.from_arrays(
                        [column(table, trace, f) for f in schema], schema=schema))
        self.remove_pm_parts()
        return True

    def remove_pm_parts(self) -> None:
        for _, path in self.pm_parts:
            if os.path.exists(path):
                os.remove(path)
        self.pm_parts = []

    def close(self) -> None:
        for writer in self.writers.values():
            writer.close()  # a second close does nothing


# Events read at a time (all kinds together) with the extension: one chunk's columns,
# DataFrames and Arrow tables are what the export holds of a trace's events.
CHUNK_ROWS = 1 << 17


def export_parquet(paths: Sequence[PathLike], out_dir: PathLike,
                   notes: Optional[List[str]] = None, chunk_rows: int = CHUNK_ROWS) -> List[str]:
    """Writes ``DIR/<kind>.parquet`` for every kind (``FILE_STEMS``), rows of all `paths` (a
    folder: its ``.wst`` files), and ``DIR/collectives.parquet`` when they hold NCCL kernels;
    returns the paths written. pm_samples gets one float column per metric name of any trace
    (null where a trace has no such metric). DIR is made when missing, in a folder that
    exists (``OutputError`` otherwise). The line for each trace that was cut short, and why a
    file was not written (collectives.parquet without the extension), are appended to
    `notes`. With the extension, each trace's events are read and written `chunk_rows` at a
    time (row groups of at most that many rows)."""
    from . import native
    paths = trace_paths(paths)
    traces = [TraceFile(p) for p in paths]  # headers only: fails early on a bad file
    make_output_folder(out_dir)
    bases = [t.header.unix_time_base_ns for t in traces]
    first = min(bases) if bases and all(bases) else None
    sink = _ParquetSink(out_dir)
    sources: List[Dict[str, Any]] = []
    try:
        for position, trace in enumerate(traces):
            sink.trace = position
            sink.shift = bases[position] - first if first is not None else 0
            sink.extra = {"rank": rank_of(trace, position), "host": trace.header.hostname,
                          "pid": int(trace.header.pid), "file": str(os.fspath(trace.path))}
            sources.append({"path": os.fspath(paths[position]), "extra": sink.extra,
                            "shift": sink.shift})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # problems are the reader's to show (info)
                if native.available():
                    frames = native.read(trace, sink.write, chunk_rows)
                    if not trace._native_state.pm_samples_in_chunks:
                        sink.drop_pm_samples()  # those in `frames` are the trace's
                else:
                    frames = trace.to_dataframes()
            notice = cut_notice(trace)
            if notice is not None and notes is not None:
                notes.append(notice)
            sink.write(frames)
            trace.close()
        pm_written = sink.finish_pm_samples()
    except BaseException:
        # Rows of a trace that then failed to read (or of the traces before it): not files
        # of the traces asked for.
        sink.close()
        sink.remove_pm_parts()
        for stem in sink.writers:
            os.remove(os.path.join(os.fspath(out_dir), stem + ".parquet"))
        raise
    finally:
        sink.close()
        for trace in traces:
            trace.close()
    stems = sorted(set(sink.writers) | ({"pm_samples"} if pm_written else set()))
    written = [os.path.join(os.fspath(out_dir), s + ".parquet") for s in stems]
    stale = os.path.join(os.fspath(out_dir), COLLECTIVES_STEM + ".parquet")
    if os.path.exists(stale):  # from an earlier export into this folder: not these traces'
        os.remove(stale)
    if sink.nccl:
        if native.has_extension():
            written += _write_collectives(sources, out_dir, notes)
        elif notes is not None:
            notes.append("warpscope: collectives.parquet not written: matching NCCL's "
                         "collectives across the ranks needs the warpscope_native "
                         "extension; install the package with `pip install ./python`")
    return written


FORMATS = ("chrome", "perfetto", "kineto", "parquet")


def export(traces: Any, format: str, output: PathLike,  # noqa: A002 - the CLI's flag
           **options: Any) -> List[str]:
    """``warpscope export TRACES --format FORMAT -o OUTPUT``: the traces (as every function
    takes them: paths, ``TraceFile``\\ s, a folder, a glob pattern) in `format` (chrome,
    perfetto, kineto or parquet; docs/export.md), written to `output`; returns the paths
    written. `options` as the export's flags: the slice (``from_``, ``to``, ``step``,
    ``window``), ``step_range`` and ``all`` (chrome, perfetto and kineto write a whole trace
    above 64 MB only with it); Parquet takes whole traces only. ``Error`` for bad input, an
    output that cannot be written or an option it does not take; a trace cut short is
    warned about (``TraceWarning``)."""
    from . import native
    from .analyses import export_flags
    from .inputs import trace_arguments, trace_paths as expanded_paths
    if format not in FORMATS:
        raise Error(f"warpscope: format must be one of {', '.join(FORMATS)}, not {format!r}")
    flags = export_flags(options)
    if format != "parquet":
        return list(native.export(format, os.fspath(output), trace_arguments(traces), flags))
    sliced = [f"--{k}" for k in flags if k in ("from", "to", "step", "window")]
    if sliced:
        raise Error(f"warpscope: {' '.join(sliced)}: parquet writes whole traces (filter the "
                    "tables in Python); a slice is for chrome, perfetto and kineto")
    notes: List[str] = []
    written = export_parquet(expanded_paths(traces), output, notes)
    for note in notes:
        warnings.warn(TraceWarning(note), stacklevel=2)
    return written
