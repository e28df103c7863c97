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

import bisect
import operator
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
from google.protobuf.descriptor import FieldDescriptor

from . import schema
from .columns import EVENT_TABLES
from .errors import TraceWarning
from .metadata import enum_label

_MESSAGE_OF = {f.name: f.message_type.name
               for f in schema.TracePacket.DESCRIPTOR.oneofs_by_name["data"].fields}
# Frame name -> (TracePacket oneof member, message type, columns): the event frames with the
# columns the C++ decoder gives them (columns.EVENT_TABLES, generated from its tables)...
_EVENT_FRAMES: Dict[str, Tuple[str, str, Sequence[Tuple[str, str, str, str, str]]]] = {
    frame: (member, _MESSAGE_OF[member], columns) for frame, member, columns in EVENT_TABLES}
# ... and two small tables, a column per scalar field of their message, in this order.
_FIELD_FRAMES: Dict[str, Tuple[str, str, List[str]]] = {
    "capture_windows": ("capture_window", "CaptureWindowEdge", [
        "timestamp_ns", "window_id", "begin", "trigger"]),
    "pc_sample_batches": ("pc_samples", "PcSampleBatch", [
        "timestamp_ns", "device_id", "context_id", "total_samples", "dropped_samples",
        "non_user_kernel_samples", "hardware_buffer_full"]),
}
_LAUNCH_CONFIG_COLUMNS = [f.name for f in schema.LaunchConfig.DESCRIPTOR.fields if f.name != "id"]
_TIMES = ["start_ns", "end_ns", "duration_ns"]
_UNSIGNED_COLUMNS = {"cubin_crc"}  # a hash, not a quantity: keep all 64 bits
_PM_COLUMNS = _TIMES + ["metric_set_id", "device_id"]
FRAME_NAMES = tuple(sorted(list(_EVENT_FRAMES) + list(_FIELD_FRAMES) + [
    "pm_samples", "pc_samples", "devices", "contexts", "stacks"]))
_PC_COLUMNS = ["timestamp_ns", "device_id", "context_id", "function_name", "pc_offset",
               "cubin_crc", "stall_reason", "stall_reason_index", "samples", "correlation_id"]
_STACK_COLUMNS = ["stack_id", "depth", "kind", "filename", "line", "function", "first_line",
                  "module_offset", "truncated", "outermost"]
# What a reference to an undefined id of each kind counts, as the C++ reader names it.
_UNDEFINED_ISSUES = {"pm_metric_set": "model.pm_samples_without_metric_set",
                     "pc_stall_reason": "model.undefined_pc_stall_reason_refs"}


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
    """A categorical column whose categories are its distinct values, sorted (both readers
    give the same categoricals; the categories are str: object on pandas 1.x, the string
    dtype on pandas 3)."""
    values = list(values)
    categories = pd.Index(sorted(set(values)), dtype=str)
    return pd.Series(pd.Categorical(values, dtype=pd.CategoricalDtype(categories)))


_NEVER = np.iinfo(np.int64).max  # "defined at" of an id the file never defines


def _string_value(strings: Dict[int, str], ident: int) -> str:
    """A string id as the readers name it: "" for 0, "<unknown:ID>" when not defined."""
    value = strings.get(ident)
    if value is None:
        return "" if ident == 0 else f"<unknown:{ident}>"
    return value


class _Resolver:
    """Resolves id columns against the definitions in force when each row's event was read,
    as the C++ reader does, and counts references to ids not defined before them.

    Columns are resolved in bulk: each distinct id is looked up once, and only rows whose id
    was defined again with another value are looked at one by one.
    """

    def __init__(self) -> None:
        self.undefined: Dict[str, int] = {}
        self.index: Any = None  # the pass's index, once the pass is over

    def miss(self, what: str, n: int = 1) -> None:
        key = _UNDEFINED_ISSUES.get(what, f"reader.undefined_{what}_refs")
        self.undefined[key] = self.undefined.get(key, 0) + n

    def string_now(self, index: Any, ident: int) -> str:
        """One string, resolved while the pass is at the packet that refers to it."""
        if ident != 0 and ident not in index.strings:
            self.miss("string")
        return _string_value(index.strings, ident)

    def _in_force(self, table: str, ids: Sequence[int], seqs: Sequence[int]) -> Tuple[
            List[int], np.ndarray, List[Any], np.ndarray, Dict[int, Any]]:
        """(distinct ids, each row's position among them, last value of each distinct id or
        None, rows whose non-zero id had no definition yet, {row: value} for rows that saw
        an earlier value than the last)."""
        index = self.index
        last = getattr(index, table)
        first_defined = index.first_defined[table]
        distinct, inverse = np.unique(np.array(ids, dtype=np.uint64), return_inverse=True)
        inverse = inverse.reshape(-1)
        distinct_ids = distinct.tolist()
        values = [last.get(i) for i in distinct_ids]
        defined_at = np.array([-1 if i == 0 else first_defined.get(i, _NEVER)
                               for i in distinct_ids], dtype=np.int64)
        row_seqs = np.array(seqs, dtype=np.int64)
        undefined = row_seqs < defined_at[inverse]
        earlier: Dict[int, Any] = {}
        all_versions = index.versions[table]
        if all_versions:
            redefined = np.array([i in all_versions for i in distinct_ids], dtype=bool)
            for row in np.flatnonzero(redefined[inverse] & ~undefined).tolist():
                k = inverse[row]
                versions = all_versions[distinct_ids[k]]
                # The last definition before the row's packet (the first one came before it).
                at = bisect.bisect_left(versions, (row_seqs[row],)) - 1
                if versions[at][1] is not values[k]:
                    earlier[row] = versions[at][1]
        return distinct_ids, inverse, values, undefined, earlier

    def strings(self, ids: Sequence[int], seqs: Sequence[int]) -> pd.Series:
        distinct, inverse, values, undefined, earlier = self._in_force("strings", ids, seqs)
        names = np.array(["" if v is None else v for v in values] or [""],
                         dtype=object)[inverse]
        if undefined.any():
            self.miss("string", int(np.count_nonzero(undefined)))
            unknown = np.array([f"<unknown:{i}>" for i in distinct], dtype=object)
            names[undefined] = unknown[inverse[undefined]]
        for row, value in earlier.items():
            names[row] = value
        return _strings(names)

    def threads(self, ids: Sequence[int], seqs: Sequence[int],
                counted: Optional[np.ndarray] = None) -> Tuple[np.ndarray, pd.Series]:
        """(os_tid, thread name) columns; `counted` masks the rows whose reference counts
        (an NVTX range that ends on the thread it began on refers to one thread)."""
        distinct, inverse, values, undefined, earlier = self._in_force("threads", ids, seqs)
        os_tids = np.array([0 if v is None else v.os_tid for v in values] or [0],
                           dtype=np.int64)[inverse]
        names = np.array(["" if v is None else v.name for v in values] or [""],
                         dtype=object)[inverse]
        if undefined.any():
            missed = undefined if counted is None else undefined & counted
            if missed.any():
                self.miss("thread", int(np.count_nonzero(missed)))
            unknown = np.array([f"<unknown:{i}>" for i in distinct], dtype=object)
            os_tids[undefined] = 0
            names[undefined] = unknown[inverse[undefined]]
        for row, thread in earlier.items():
            os_tids[row], names[row] = thread.os_tid, thread.name
        return os_tids, _strings(names)

    def stack_definition(self, index: Any, kind: str, message: Any) -> None:
        """Counts what a StackFrame (its strings) or a CallStack (its frames; id 0 is never
        one) refers to that is not defined before it, where it stands, as the C++ reader
        does."""
        if kind == "stack_frame":
            self.string_now(index, message.file_id)
            self.string_now(index, message.function_id)
            return
        missing = sum(1 for f in message.frame_ids if f == 0 or f not in index.stack_frames)
        if missing:
            self.miss("stack_frame", missing)

    def call_stacks(self, ids: Sequence[int], seqs: Sequence[int]) -> None:
        """Counts the references to call stacks not defined before them; the ids stay."""
        undefined = self._in_force("call_stacks", ids, seqs)[3]
        if undefined.any():
            self.miss("stack", int(np.count_nonzero(undefined)))

    def launch_configs(self, ids: Sequence[int], seqs: Sequence[int]) -> Dict[str, np.ndarray]:
        _, inverse, values, undefined, earlier = self._in_force("launch_configs", ids, seqs)
        if undefined.any():
            self.miss("launch_config", int(np.count_nonzero(undefined)))
        none = schema.LaunchConfig()
        configs = [none if v is None else v for v in values] or [none]
        columns = {}
        for name in _LAUNCH_CONFIG_COLUMNS:
            column = np.array([getattr(c, name) for c in configs], dtype=np.int64)[inverse]
            column[undefined] = 0
            for row, config in earlier.items():
                column[row] = getattr(config, name)
            columns[name] = column
        return columns


class _EventRows:
    """The rows of one event frame (the message's scalar fields) and the packet number of
    each, so that ids resolve to what was defined before the event."""

    def __init__(self, message_name: str) -> None:
        self.fields = _scalar_fields(message_name)
        self.getter = operator.attrgetter(*[f.name for f in self.fields])
        self.rows: List[Any] = []
        self.seqs: List[int] = []

    def _raw(self) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        """(values by field name, field descriptor by name)."""
        rows = self.rows if len(self.fields) > 1 else [(r,) for r in self.rows]
        values = list(zip(*rows)) if rows else [()] * len(self.fields)
        return ({f.name: column for f, column in zip(self.fields, values)},
                {f.name: f for f in self.fields})

    def frame(self, columns: Sequence[Tuple[str, str, str, str, str]],
              resolver: _Resolver) -> pd.DataFrame:
        """The frame with `columns` (columns.EVENT_TABLES: name, derive, field, aux, aux2)."""
        raw, fields = self._raw()
        typed = lambda name: _typed(raw[name], fields[name])  # noqa: E731
        out: Dict[str, Any] = {}
        launch: Optional[Dict[str, np.ndarray]] = None
        for name, derive, field, aux, aux2 in columns:
            if derive == "string":
                out[name] = resolver.strings(raw[field], self.seqs)
            elif derive == "end":
                out[name] = typed("start_ns") + typed("duration_ns")
            elif derive == "launch":
                if launch is None:
                    launch = resolver.launch_configs(raw["launch_config_id"], self.seqs)
                out[name] = launch[field]
            elif derive == "thread":
                out[name] = typed(field)
                # An NVTX range that ends on the thread it began on refers to one thread.
                counted = out[name] != typed("thread_id") if field == "end_thread_id" else None
                out[aux], out[aux2] = resolver.threads(raw[field], self.seqs, counted)
            else:  # int, sint, bool, enum, stack
                out[name] = typed(field)
                if derive == "stack":
                    resolver.call_stacks(raw[field], self.seqs)
        return pd.DataFrame(out)

    def field_frame(self, order: List[str]) -> pd.DataFrame:
        """The scalar fields named in `order` (no ids to resolve), as columns."""
        raw, fields = self._raw()
        return pd.DataFrame({name: _typed(raw[name], fields[name]) for name in order})


def _frame(columns: Dict[str, Any], order: List[str]) -> pd.DataFrame:
    ordered = set(order)
    names = [c for c in order if c in columns] + [c for c in columns if c not in ordered]
    return pd.DataFrame({c: columns[c] for c in names})


def _message_frame(message_name: str, messages: List[Any]) -> pd.DataFrame:
    """Devices, contexts: every scalar field, one row per message."""
    fields = _scalar_fields(message_name)
    return _frame({f.name: _typed([getattr(m, f.name) for m in messages], f)
                   for f in fields}, [f.name for f in fields])


def metric_columns(metric_names: Sequence[str]) -> List[str]:
    """The pm_samples column of each metric name: the name itself, or ``metric:NAME`` for a
    metric named like a fixed column (``start_ns``, ...), the prefix repeated until the
    column is taken by no fixed column and no other metric."""
    taken = set(_PM_COLUMNS) | set(metric_names)
    columns = []
    for name in metric_names:
        if name in _PM_COLUMNS:
            name = "metric:" + name
            while name in taken:
                name = "metric:" + name
            taken.add(name)
        columns.append(name)
    return columns


def _pm_frame(trace: Any, metric_sets: List[Any],
              samples: List[Tuple[Any, Any]]) -> pd.DataFrame:
    """One row per PmSample whose metric set was defined before it, one float column per
    metric name of any metric set. `samples` pairs each sample with its set."""
    ordered_sets = sorted(metric_sets, key=lambda s: s.id)  # stable: file order within an id
    metric_names = list(dict.fromkeys(n for s in ordered_sets for n in s.metric_names))
    column_of = {name: i for i, name in enumerate(metric_names)}
    values = np.full((len(samples), len(metric_names)), np.nan)
    positions: Dict[int, np.ndarray] = {}  # by id() of a set message, alive in `samples`
    for row, (sample, metric_set) in enumerate(samples):
        where = positions.get(id(metric_set))
        if where is None:
            where = np.array([column_of[n] for n in metric_set.metric_names], dtype=np.intp)
            positions[id(metric_set)] = where
        count = len(sample.values)
        if count != len(where):
            trace.count_issue("model.pm_sample_value_count_mismatch")
            count = min(count, len(where))
        if count:
            values[row, where[:count]] = np.asarray(sample.values[:count], dtype=np.float64)
    start_ns = np.array([s.start_ns for s, _ in samples], dtype=np.uint64).astype(np.int64)
    duration_ns = np.array([s.duration_ns for s, _ in samples],
                           dtype=np.uint64).astype(np.int64)
    fixed = pd.DataFrame({
        "start_ns": start_ns, "end_ns": start_ns + duration_ns, "duration_ns": duration_ns,
        "metric_set_id": np.array([s.metric_set_id for s, _ in samples], dtype=np.int64),
        "device_id": np.array([m.device_id for _, m in samples], dtype=np.int64)})
    if not metric_names:
        return fixed
    metrics = pd.DataFrame(values, columns=metric_columns(metric_names))
    return pd.concat([fixed, metrics], axis=1)


def _pc_frame(trace: Any, batches: List[Tuple[Any, Any, List[str]]],
              resolver: _Resolver) -> pd.DataFrame:
    """One row per (batch, PC, stall reason) with the reason's name for that device.
    `batches` holds each packet's batch (the first packet of a split batch), records and
    their function names."""
    rows = []
    for batch, records, function_names in batches:
        reasons = trace.pc_stall_reasons.get(batch.device_id, {})
        for record, function_name in zip(records, function_names):
            if len(record.stall_reason_index) != len(record.samples):
                trace.count_issue("model.pc_record_length_mismatch")
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


def _definition_frames(trace: Any, index: Any) -> Dict[str, pd.DataFrame]:
    """The frames of what the trace describes rather than records: devices, contexts (the
    first description of each) and call stacks (the last definition of each)."""
    return {"devices": _message_frame("Device", sorted(trace.devices.values(),
                                                       key=lambda d: d.id)),
            "contexts": _message_frame("ContextInfo", sorted(trace.contexts.values(),
                                                             key=lambda c: c.id)),
            "stacks": _stacks_frame(index)}


def _stacks_frame(index: Any) -> pd.DataFrame:
    """One row per (call stack, frame) from the last definition of each stack and frame, as
    the C++ reader keeps them once the file is read: stacks by id, frames innermost first
    (depth 0), a frame never defined left out; names resolve to the strings' last values. The
    outermost frames of a stack cut in the middle (``outermost``) count their depth past the
    frames left out."""
    rows = []
    for stack_id, stack in sorted(index.call_stacks.items()):
        ids = list(stack.frame_ids)
        cut = (len(ids) - stack.outermost if stack.truncated and 0 < stack.outermost <= len(ids)
               else len(ids))
        kept = [(index.stack_frames[f], i >= cut) for i, f in enumerate(ids)
                if f in index.stack_frames]
        for depth, (frame, outer) in enumerate(kept):
            rows.append((stack_id, depth + (stack.left_out if outer else 0),
                         enum_label("FrameKind", frame.kind),
                         _string_value(index.strings, frame.file_id), frame.line,
                         _string_value(index.strings, frame.function_id),
                         frame.first_line, frame.module_offset, stack.truncated, outer))
    cols = dict(zip(_STACK_COLUMNS, zip(*rows))) if rows else {c: () for c in _STACK_COLUMNS}
    columns: Dict[str, Any] = {
        name: np.array(cols[name], dtype=np.int64)
        for name in ("stack_id", "depth", "line", "first_line")}
    columns["module_offset"] = np.array(cols["module_offset"], dtype=np.uint64).astype(np.int64)
    columns["truncated"] = np.array(cols["truncated"], dtype=bool)
    columns["outermost"] = np.array(cols["outermost"], dtype=bool)
    for name in ("kind", "filename", "function"):
        columns[name] = _strings(cols[name])
    return _frame(columns, _STACK_COLUMNS)


def trace_to_dataframes(trace: Any) -> Dict[str, pd.DataFrame]:
    """Reads the whole trace once and returns its DataFrames, keyed as ``FRAME_NAMES``.

    Warns (``TraceWarning``) when the trace was cut short, lost events, or had ids that
    were never defined: the figures computed from these frames are then incomplete.
    """
    rows = {kind: (frame, _EventRows(message))
            for frame, (kind, message, _) in {**_EVENT_FRAMES, **_FIELD_FRAMES}.items()}
    resolver = _Resolver()
    metric_sets: List[Any] = []
    pm_samples: List[Tuple[Any, Any]] = []
    pc_batches: List[Tuple[Any, Any, List[str]]] = []
    raw_pm_samples = 0  # PmCounterData: values only the analyzers' CUPTI evaluation gives
    index = None
    events = {kind: (event_rows.getter, event_rows.rows.append, event_rows.seqs.append)
              for kind, (_, event_rows) in rows.items()}
    batch = None  # the PC sample batch that continuation packets add records to
    orphans = 0  # continuations with no batch of their device and context before them
    for kind, message, index in trace._pass():
        if kind == "pc_samples":
            # A batch the writer split over several packets is one batch, as in the C++
            # reader: its continuations add records under the first packet's fields.
            if message.continuation:
                if batch is not None and (batch.device_id, batch.context_id) == (
                        message.device_id, message.context_id):
                    pc_batches.append((batch, message.records,
                                       [resolver.string_now(index, r.function_name_id)
                                        for r in message.records]))
                    continue
                orphans += 1
            batch = message
        event = events.get(kind)
        if event is not None:
            event[1](event[0](message))
            event[2](index.packets)
        if kind == "pm_sample":
            metric_set = index.pm_metric_sets.get(message.metric_set_id)
            if metric_set is None:
                resolver.miss("pm_metric_set")  # the sample is left out
            else:
                pm_samples.append((message, metric_set))
        elif kind == "pm_metric_set":
            metric_sets.append(message)
        elif kind == "pm_counter_data":
            raw_pm_samples += len(message.sample_index)
        elif kind == "pc_samples":
            pc_batches.append((message, message.records,
                               [resolver.string_now(index, r.function_name_id)
                                for r in message.records]))
        elif kind in ("stack_frame", "call_stack"):
            resolver.stack_definition(index, kind, message)
    resolver.index = index if index is not None else trace._ensure_indexed()

    for name in ("model.pm_sample_value_count_mismatch", "model.pc_record_length_mismatch",
                 "model.pm_raw_samples_not_evaluated", "model.orphan_pc_sample_continuations"):
        trace.issues.pop(name, None)  # recounted below; a second call must not double them
    if raw_pm_samples:
        # Recorded with WARPSCOPE_PM_EVALUATE=offline: the values need CUPTI's host API, which
        # `warpscope occupancy/tail` use; they are not in the pm_samples frame.
        trace.count_issue("model.pm_raw_samples_not_evaluated", raw_pm_samples)
    if orphans:
        trace.count_issue("model.orphan_pc_sample_continuations", orphans)
    frames = {frame: (event_rows.frame(_EVENT_FRAMES[frame][2], resolver)
                      if frame in _EVENT_FRAMES else
                      event_rows.field_frame(_FIELD_FRAMES[frame][2]))
              for frame, event_rows in rows.values()}
    frames["pm_samples"] = _pm_frame(trace, metric_sets, pm_samples)
    frames["pc_samples"] = _pc_frame(trace, pc_batches, resolver)
    frames.update(_definition_frames(trace, resolver.index))
    for key in [k for k in trace.issues if "undefined_" in k or "without_metric_set" in k]:
        del trace.issues[key]
    trace.issues.update(resolver.undefined)

    problems = trace.problems()
    if problems:
        warnings.warn(TraceWarning(f"warpscope: {trace.path}: figures may be incomplete: "
                                   + "; ".join(problems)), stacklevel=3)
    return dict(sorted(frames.items()))


def concat_dataframes(traces: Sequence[Any]) -> Dict[str, pd.DataFrame]:
    """Stacks the frames of several files (one per rank) and adds ``rank``, ``pid`` and
    ``file`` (the path the trace was opened with: which file each row came from).

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
            frame.insert(0, "file", pd.Categorical([trace.path] * len(frame),
                                                   categories=[trace.path]))
            frame.insert(0, "pid", np.int64(trace.header.pid))
            frame.insert(0, "rank", -1 if trace.rank is None else trace.rank)
            stacked.setdefault(key, []).append(frame)
    return {key: pd.concat(_common_categories(parts), ignore_index=True)
            for key, parts in stacked.items()}


def _common_categories(parts: List[pd.DataFrame]) -> List[pd.DataFrame]:
    """The parts with each string column's categories made the same (their sorted union),
    so that the stacked column stays categorical."""
    if len(parts) < 2:
        return parts
    columns = [c for c in parts[0].columns
               if all(isinstance(p[c].dtype, pd.CategoricalDtype) for p in parts if c in p)]
    unified = [p.copy(deep=False) for p in parts]
    for column in columns:
        values = sorted(set().union(*(p[column].cat.categories for p in parts if column in p)))
        dtype = pd.CategoricalDtype(pd.Index(values, dtype=str))
        for p in unified:
            if column in p:
                p[column] = p[column].astype(dtype)
    return unified
