"""Turns a trace into pandas DataFrames, one per event kind, with every id resolved.

Columns follow the schema's field names so that ``docs/format.md`` explains them, with
three changes that analysis scripts always want: interned ids become strings (``name_id``
-> ``name``), ``ThreadInfo`` ids gain ``os_tid``/``thread_name``, and a kernel's
``LaunchConfig`` is spread into columns (``grid_x`` ... ``shmem_limit_config``). Times are
int64 ns since ``Header.time_base_ns``; ``end_ns = start_ns + duration_ns``. The schema's
uint64 times are read as two's complement, so an event that a writer placed before the
time base (a wrapped subtraction) comes out as a small negative number, not as 1.8e19.
Enums become labels: ``"HtoD"``, ``"pinned"``, ``"runtime"``, ``"stream_wait_event"``.
"""

from __future__ import annotations

import operator
import warnings
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np
import pandas as pd
from google.protobuf.descriptor import FieldDescriptor

from . import schema
from .reader import TraceFile, TraceWarning, enum_label

# Frame name -> (TracePacket oneof member, message type, column order). Columns the schema
# gains later and this list does not name are appended after these.
_LAUNCH_CONFIG_COLUMNS = [f.name for f in schema.LaunchConfig.DESCRIPTOR.fields if f.name != "id"]
_TIMES = ["start_ns", "end_ns", "duration_ns"]
_THREAD = ["thread_id", "os_tid", "thread_name"]
_EVENT_FRAMES: Dict[str, Tuple[str, str, List[str]]] = {
    "kernels": ("kernel", "KernelEvent", _TIMES + [
        "name", "mangled_name", "device_id", "context_id", "stream_id", "correlation_id",
        "graph_id", "graph_node_id", "grid_id", "launch_config_id"] + _LAUNCH_CONFIG_COLUMNS),
    "api": ("api_call", "ApiCallEvent", _TIMES + [
        "name", "domain"] + _THREAD + ["correlation_id", "result", "callback_id"]),
    "nvtx_ranges": ("nvtx_range", "NvtxRangeEvent", _TIMES + [
        "name", "domain", "category", "color", "depth", "is_push_pop"] + _THREAD + [
        "end_thread_id", "end_os_tid", "end_thread_name"]),
    "nvtx_marks": ("nvtx_mark", "NvtxMarkEvent", [
        "timestamp_ns", "name", "domain", "category", "color"] + _THREAD),
    "memcpy": ("memcpy", "MemcpyEvent", _TIMES + [
        "copy_kind", "src_kind", "dst_kind", "bytes", "device_id", "context_id", "stream_id",
        "correlation_id", "is_async", "src_device_id", "dst_device_id", "graph_node_id"]),
    "memset": ("memset", "MemsetEvent", _TIMES + [
        "value", "bytes", "memory_kind", "device_id", "context_id", "stream_id",
        "correlation_id", "is_async"]),
    "sync": ("synchronization", "SyncEvent", _TIMES + [
        "kind", "context_id", "stream_id", "cuda_event_id", "correlation_id"] + _THREAD),
    "graph_launches": ("graph_launch", "GraphLaunchEvent", _TIMES + [
        "graph_id", "device_id", "context_id", "stream_id", "correlation_id"]),
    "overhead": ("overhead", "OverheadEvent", _TIMES + ["kind"] + _THREAD),
    "capture_windows": ("capture_window", "CaptureWindowEdge", [
        "timestamp_ns", "window_id", "begin", "trigger"]),
    "pc_sample_batches": ("pc_samples", "PcSampleBatch", [
        "timestamp_ns", "device_id", "context_id", "total_samples", "dropped_samples",
        "non_user_kernel_samples", "hardware_buffer_full"]),
}
_STRING_ID_COLUMNS = {"name_id": "name", "mangled_name_id": "mangled_name",
                      "domain_id": "domain", "kind_id": "kind",
                      "function_name_id": "function_name"}
_THREAD_ID_COLUMNS = {"thread_id": ("os_tid", "thread_name"),
                      "end_thread_id": ("end_os_tid", "end_thread_name")}
_UNSIGNED_COLUMNS = {"cubin_crc"}  # a hash, not a quantity: keep all 64 bits
_PM_COLUMNS = _TIMES + ["metric_set_id", "device_id"]
FRAME_NAMES = tuple(sorted(list(_EVENT_FRAMES) + ["pm_samples", "pc_samples", "devices",
                                                 "contexts"]))
_PC_COLUMNS = ["timestamp_ns", "device_id", "context_id", "function_name", "pc_offset",
               "cubin_crc", "stall_reason", "stall_reason_index", "samples", "correlation_id"]


def _is_repeated(field: Any) -> bool:
    # protobuf 7 replaced FieldDescriptor.label with is_repeated; 3.x has only label.
    repeated = getattr(field, "is_repeated", None)
    return bool(repeated) if repeated is not None else field.label == field.LABEL_REPEATED


def _scalar_fields(message_name: str) -> List[Any]:
    return [f for f in getattr(schema, message_name).DESCRIPTOR.fields if not _is_repeated(f)]


def _typed(values: Sequence[Any], field: Any) -> Any:
    """A column in the dtype its proto type calls for (see the module docstring)."""
    cpp = field.cpp_type
    if cpp == FieldDescriptor.CPPTYPE_UINT64:
        column = np.array(values, dtype=np.uint64)
        return column if field.name in _UNSIGNED_COLUMNS else column.astype(np.int64)
    if cpp in (FieldDescriptor.CPPTYPE_UINT32, FieldDescriptor.CPPTYPE_INT32,
               FieldDescriptor.CPPTYPE_INT64):
        return np.array(values, dtype=np.int64)
    if cpp == FieldDescriptor.CPPTYPE_BOOL:
        return np.array(values, dtype=bool)
    if cpp in (FieldDescriptor.CPPTYPE_DOUBLE, FieldDescriptor.CPPTYPE_FLOAT):
        return np.array(values, dtype=np.float64)
    if cpp == FieldDescriptor.CPPTYPE_ENUM:
        return _strings([enum_label(field.enum_type.name, v) for v in values])
    return _strings(list(values))


def _strings(values: Sequence[str]) -> pd.Series:
    # dtype=str: object on pandas 1.x, the string dtype on pandas 3; empty frames match.
    return pd.Series(list(values), dtype=str)


class _Resolver:
    """Looks ids up in the trace's tables and counts references to ids never defined."""

    def __init__(self, trace: TraceFile) -> None:
        self.trace = trace
        self.undefined: Dict[str, int] = {}

    def miss(self, what: str) -> None:
        key = f"undefined_{what}_refs"
        self.undefined[key] = self.undefined.get(key, 0) + 1

    def string(self, ident: int) -> str:
        value = self.trace.strings.get(ident)
        if value is None:
            if ident == 0:
                return ""
            self.miss("string")
            return f"<unknown:{ident}>"
        return value

    def strings(self, ids: Sequence[int]) -> pd.Series:
        return _strings([self.string(i) for i in ids])

    def threads(self, ids: Sequence[int]) -> Tuple[np.ndarray, pd.Series]:
        os_tids, names = [], []
        for ident in ids:
            thread = self.trace.threads.get(ident)
            if thread is None:
                if ident != 0:
                    self.miss("thread")
                os_tids.append(0)
                names.append(f"<unknown:{ident}>" if ident else "")
            else:
                os_tids.append(thread.os_tid)
                names.append(thread.name)
        return np.array(os_tids, dtype=np.int64), _strings(names)

    def launch_configs(self, ids: Sequence[int]) -> Dict[str, np.ndarray]:
        empty = schema.LaunchConfig()
        configs = []
        for ident in ids:
            config = self.trace.launch_configs.get(ident)
            if config is None:
                if ident != 0:
                    self.miss("launch_config")
                config = empty
            configs.append(config)
        return {name: np.array([getattr(c, name) for c in configs], dtype=np.int64)
                for name in _LAUNCH_CONFIG_COLUMNS}


def _frame(columns: Dict[str, Any], order: List[str]) -> pd.DataFrame:
    names = [c for c in order if c in columns] + [c for c in columns if c not in order]
    return pd.DataFrame({c: columns[c] for c in names})


def _event_frame(message_name: str, rows: List[Tuple[Any, ...]], order: List[str],
                 resolver: _Resolver) -> pd.DataFrame:
    fields = _scalar_fields(message_name)
    values = list(zip(*rows)) if rows else [()] * len(fields)
    columns: Dict[str, Any] = {}
    for field, column in zip(fields, values):
        name = field.name
        if name in _STRING_ID_COLUMNS:
            columns[_STRING_ID_COLUMNS[name]] = resolver.strings(column)
            continue
        columns[name] = _typed(column, field)
        if name in _THREAD_ID_COLUMNS:
            os_tid, thread_name = _THREAD_ID_COLUMNS[name]
            columns[os_tid], columns[thread_name] = resolver.threads(column)
        elif name == "launch_config_id":
            columns.update(resolver.launch_configs(column))
    if "start_ns" in columns and "duration_ns" in columns:
        columns["end_ns"] = columns["start_ns"] + columns["duration_ns"]
    return _frame(columns, order)


def _message_frame(message_name: str, messages: List[Any]) -> pd.DataFrame:
    """Devices, contexts: every scalar field, one row per message."""
    fields = _scalar_fields(message_name)
    return _frame({f.name: _typed([getattr(m, f.name) for m in messages], f)
                   for f in fields}, [f.name for f in fields])


def _pm_frame(trace: TraceFile, samples: List[Any], resolver: _Resolver) -> pd.DataFrame:
    """One row per PmSample, one float column per metric name of any metric set."""
    metric_names: List[str] = []
    for metric_set in sorted(trace.pm_metric_sets.values(), key=lambda s: s.id):
        metric_names += [n for n in metric_set.metric_names if n not in metric_names]
    metrics = {n: np.full(len(samples), np.nan) for n in metric_names}
    rows, kept = [], []
    for i, sample in enumerate(samples):
        metric_set = trace.pm_metric_sets.get(sample.metric_set_id)
        if metric_set is None:
            resolver.miss("pm_metric_set")
            continue
        if len(sample.values) != len(metric_set.metric_names):
            trace.count_issue("pm_sample_value_count_mismatch")
        for name, value in zip(metric_set.metric_names, sample.values):
            metrics[name][i] = value
        rows.append((sample.start_ns, sample.duration_ns, sample.metric_set_id,
                     metric_set.device_id))
        kept.append(i)
    start, duration, set_id, device = (list(c) for c in zip(*rows)) if rows else ([],) * 4
    start_ns = np.array(start, dtype=np.uint64).astype(np.int64)
    duration_ns = np.array(duration, dtype=np.uint64).astype(np.int64)
    columns: Dict[str, Any] = {
        "start_ns": start_ns, "end_ns": start_ns + duration_ns, "duration_ns": duration_ns,
        "metric_set_id": np.array(set_id, dtype=np.int64),
        "device_id": np.array(device, dtype=np.int64)}
    for name in metric_names:
        columns[name] = metrics[name][kept]
    return _frame(columns, _PM_COLUMNS + metric_names)


def _pc_frame(trace: TraceFile, batches: List[Any], resolver: _Resolver) -> pd.DataFrame:
    """One row per (batch, PC, stall reason) with the reason's name for that device."""
    rows = []
    for batch in batches:
        reasons = trace.pc_stall_reasons.get(batch.device_id, {})
        for record in batch.records:
            if len(record.stall_reason_index) != len(record.samples):
                trace.count_issue("pc_record_length_mismatch")
            function_name = resolver.string(record.function_name_id)
            for index, count in zip(record.stall_reason_index, record.samples):
                reason = reasons.get(index)
                if reason is None:
                    resolver.miss("pc_stall_reason")
                    reason = f"<unknown:{index}>"
                rows.append((batch.timestamp_ns, batch.device_id, batch.context_id,
                             function_name, record.pc_offset, record.cubin_crc, reason, index,
                             count, record.correlation_id))  # in _PC_COLUMNS order
    cols = dict(zip(_PC_COLUMNS, zip(*rows))) if rows else {c: () for c in _PC_COLUMNS}
    fields = {f.name: f for f in schema.PcSampleRecord.DESCRIPTOR.fields}
    fields.update({f.name: f for f in _scalar_fields("PcSampleBatch")})
    columns: Dict[str, Any] = {
        "timestamp_ns": _typed(cols["timestamp_ns"], fields["timestamp_ns"]),
        "device_id": np.array(cols["device_id"], dtype=np.int64),
        "context_id": np.array(cols["context_id"], dtype=np.int64),
        "function_name": _strings(cols["function_name"]),
        "pc_offset": _typed(cols["pc_offset"], fields["pc_offset"]),
        "cubin_crc": _typed(cols["cubin_crc"], fields["cubin_crc"]),
        "stall_reason": _strings(cols["stall_reason"]),
        "stall_reason_index": np.array(cols["stall_reason_index"], dtype=np.int64),
        "samples": np.array(cols["samples"], dtype=np.uint64).astype(np.int64),
        "correlation_id": np.array(cols["correlation_id"], dtype=np.int64)}
    return _frame(columns, _PC_COLUMNS)


def trace_to_dataframes(trace: TraceFile) -> Dict[str, pd.DataFrame]:
    """Reads the whole trace once and returns its DataFrames, keyed as ``FRAME_NAMES``.

    Warns (``TraceWarning``) when the trace was cut short, lost events, or had ids that
    were never defined: the figures computed from these frames are then incomplete.
    """
    getters: Dict[str, Tuple[str, Callable[[Any], Any]]] = {
        kind: (frame, operator.attrgetter(*[f.name for f in _scalar_fields(message)]))
        for frame, (kind, message, _) in _EVENT_FRAMES.items()}
    rows: Dict[str, List[Any]] = {frame: [] for frame in _EVENT_FRAMES}
    pm_samples: List[Any] = []
    pc_batches: List[Any] = []
    for kind, message in trace.scan():
        getter = getters.get(kind)
        if getter is not None:
            row = getter[1](message)
            rows[getter[0]].append(row if isinstance(row, tuple) else (row,))
        if kind == "pm_sample":
            pm_samples.append(message)
        elif kind == "pc_samples":
            pc_batches.append(message)

    resolver = _Resolver(trace)
    for name in ("pm_sample_value_count_mismatch", "pc_record_length_mismatch"):
        trace.issues.pop(name, None)  # recounted below; a second call must not double them
    frames = {frame: _event_frame(message, rows[frame], order, resolver)
              for frame, (_, message, order) in _EVENT_FRAMES.items()}
    frames["pm_samples"] = _pm_frame(trace, pm_samples, resolver)
    frames["pc_samples"] = _pc_frame(trace, pc_batches, resolver)
    frames["devices"] = _message_frame("Device", sorted(trace.devices.values(),
                                                        key=lambda d: d.id))
    frames["contexts"] = _message_frame("ContextInfo", sorted(trace.contexts.values(),
                                                              key=lambda c: c.id))
    for key in [k for k in trace.issues if k.startswith("undefined_")]:
        del trace.issues[key]
    trace.issues.update(resolver.undefined)

    problems = trace.problems()
    if problems:
        warnings.warn(TraceWarning(f"warpscope: {trace.path}: figures may be incomplete: "
                                   + "; ".join(problems)), stacklevel=3)
    return dict(sorted(frames.items()))


def concat_dataframes(traces: Sequence[TraceFile]) -> Dict[str, pd.DataFrame]:
    """Stacks the frames of several files (one per rank) and adds ``rank`` and ``pid``.

    Each file counts time from its own time base; here times move to the earliest
    ``unix_time_base_ns`` of all files so that ranks line up (as well as the hosts' clocks
    agree). When a file does not know its Unix time base, times are left as they are.
    """
    per_file = [t.to_dataframes() for t in traces]
    bases = [t.header.unix_time_base_ns for t in traces]
    align = all(bases)
    first = min(bases) if align and bases else 0
    stacked: Dict[str, List[pd.DataFrame]] = {}
    for trace, base, file_frames in zip(traces, bases, per_file):
        shift = base - first if align else 0
        for key, frame in file_frames.items():
            frame = frame.copy()
            for column in ("start_ns", "end_ns", "timestamp_ns"):
                if column in frame:
                    frame[column] = frame[column] + shift
            frame.insert(0, "pid", np.int64(trace.header.pid))
            frame.insert(0, "rank", -1 if trace.rank is None else trace.rank)
            stacked.setdefault(key, []).append(frame)
    return {key: pd.concat(parts, ignore_index=True) for key, parts in stacked.items()}
