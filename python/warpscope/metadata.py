"""What one pass over a trace learns besides events: interned definitions (as in force at
each packet), devices, contexts, stall reason names, cubins, stats, notices, and the issues
counted on the way."""

from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from . import schema

# Packet kinds that TraceFile keeps (the rest are events, for to_dataframes).
_METADATA_KINDS = frozenset([
    "interned_string", "launch_config", "thread", "device", "context", "pm_metric_set",
    "pc_stall_reasons", "cubin", "stats", "notice", "end_of_trace", "stack_frame",
    "call_stack"])
_NOT_EVENT_KINDS = _METADATA_KINDS | {None, "header"}  # None: a kind newer than the schema
# Interned definitions (packet kind -> table): a later, different definition replaces the
# earlier one from that packet on, and is counted. Strings, launch configs, threads, stack
# frames and call stacks count as the C++ reader's reader.redefined_ids.
_INTERNED_TABLES = {"interned_string": "strings", "launch_config": "launch_configs",
                    "thread": "threads", "pm_metric_set": "pm_metric_sets",
                    "stack_frame": "stack_frames", "call_stack": "call_stacks"}
_REDEFINITION_ISSUES = {"interned_string": "reader.redefined_ids",
                        "launch_config": "reader.redefined_ids",
                        "thread": "reader.redefined_ids",
                        "pm_metric_set": "model.redefined_pm_metric_sets",
                        "stack_frame": "reader.redefined_ids", "call_stack": "reader.redefined_ids"}
# Described once; a different description of the same id is counted and ignored.
_FIRST_DEFINITION_KEPT = {"device": "model.redefined_devices",
                          "context": "model.redefined_contexts"}

# The issues' names before they became the C++ reader's import counter names
# (analyzers/model/import_counters.h): still accepted by ``TraceFile.issues`` lookups, with a
# DeprecationWarning, for one release. ``model.pc_record_length_mismatch`` is counted by the
# pure-Python reader alone.
DEPRECATED_ISSUE_NAMES = {
    "undefined_string_refs": "reader.undefined_string_refs",
    "undefined_launch_config_refs": "reader.undefined_launch_config_refs",
    "undefined_thread_refs": "reader.undefined_thread_refs",
    "undefined_stack_refs": "reader.undefined_stack_refs",
    "undefined_stack_frame_refs": "reader.undefined_stack_frame_refs",
    "redefined_ids": "reader.redefined_ids",
    "invalid_utf8_strings": "reader.invalid_utf8_strings",
    "extra_headers": "reader.extra_headers",
    "packets_after_end_of_trace": "reader.packets_after_end_of_trace",
    "unknown_packet_kinds": "reader.unknown_packets",
    "undefined_pm_metric_set_refs": "model.pm_samples_without_metric_set",
    "pm_sample_value_count_mismatch": "model.pm_sample_value_count_mismatch",
    "pc_stall_reasons_length_mismatch": "model.pc_stall_reasons_length_mismatch",
    "undefined_pc_stall_reason_refs": "model.undefined_pc_stall_reason_refs",
    "pm_raw_samples_not_evaluated": "model.pm_raw_samples_not_evaluated",
    "orphan_pc_sample_continuations": "model.orphan_pc_sample_continuations",
    "incomplete_cubins": "model.incomplete_cubins",
    "unmatched_capture_window_ends": "model.unmatched_capture_window_ends",
    "redefined_pm_metric_sets": "model.redefined_pm_metric_sets",
    "redefined_devices": "model.redefined_devices",
    "redefined_contexts": "model.redefined_contexts",
    "pc_record_length_mismatch": "model.pc_record_length_mismatch",
}


def _current_name(name: Any) -> Any:
    new = DEPRECATED_ISSUE_NAMES.get(name) if isinstance(name, str) else None
    if new is None:
        return name
    warnings.warn(f"warpscope: the issue {name!r} is now named {new!r} (as the C++ reader and "
                  "`warpscope info` name it); the old name goes in the next release",
                  DeprecationWarning, stacklevel=3)
    return new


class IssueCounts(Dict[str, int]):
    """``TraceFile.issues``: counted problems by the C++ reader's counter names; a lookup by
    an old name (``DEPRECATED_ISSUE_NAMES``) still works, with a DeprecationWarning."""

    def __getitem__(self, name: str) -> int:
        return super().__getitem__(_current_name(name))

    def __contains__(self, name: object) -> bool:
        return super().__contains__(_current_name(name))

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(_current_name(name), default)


def problem_lines(truncation_offset: Optional[int], complete: bool, stats: Dict[str, int],
                  stats_severity: Dict[str, str], issues: Dict[str, int]) -> List[str]:
    """The lines of ``TraceFile.problems()`` (both readers' findings are worded so)."""
    lines = []
    if truncation_offset is not None:
        lines.append(f"the file was cut short: the packet at byte {truncation_offset} "
                     "is incomplete (the profiled process was probably killed)")
    elif not complete:
        lines.append("the file has no EndOfTrace packet: the writer did not finish it")
    for name, value in sorted(stats.items()):
        severity = stats_severity.get(name)
        if value and severity in ("data_loss", "error"):
            lines.append(f"{name} = {value} ({severity.replace('_', ' ')})")
    for name, value in sorted(issues.items()):
        lines.append(f"{name} = {value}")
    return lines


@dataclass(frozen=True)
class Notice:
    """A message a collector left for the user (``Notice`` packet)."""

    timestamp_ns: int
    severity: str
    source: str
    message: str


@functools.lru_cache(maxsize=None)
def enum_label(enum_name: str, number: int) -> str:
    """Readable label of an enum value: ``COPY_KIND_HTOD`` -> ``HtoD``, else lower case.

    Built from the descriptor so that values added by a newer minor still get a name;
    numbers this schema does not know become ``<unknown:N>``.
    """
    enum = schema.TracePacket.DESCRIPTOR.file.enum_types_by_name[enum_name]
    value = enum.values_by_number.get(number)
    if value is None:
        return f"<unknown:{number}>"
    prefix = os.path.commonprefix([v.name for v in enum.values]) if len(enum.values) > 1 else ""
    prefix = prefix[:prefix.rfind("_") + 1]
    label = str(value.name)[len(prefix):]
    if enum_name == "CopyKind" and len(label) == 4 and label[1:3] == "TO":
        return f"{label[0]}to{label[3]}"  # CUPTI's spelling: HtoD, DtoH, PtoP
    return label.lower()


class _Index:
    """Definitions, metadata and counted issues, as one pass over the file finds them.

    Events are resolved against the definitions in force when they were read: ``packets``
    numbers the packets of the pass, ``first_defined`` says at which packet each interned
    id was first defined, and ``versions`` keeps every (packet, value) of the rare ids that
    were defined again with another value. The tables hold the last value of each id.
    """

    def __init__(self) -> None:
        self.packets = 0
        self.first_defined: Dict[str, Dict[int, int]] = {
            table: {} for table in _INTERNED_TABLES.values()}
        self.versions: Dict[str, Dict[int, List[Tuple[int, Any]]]] = {
            table: {} for table in _INTERNED_TABLES.values()}
        self.strings: Dict[int, str] = {}
        self.launch_configs: Dict[int, Any] = {}
        self.threads: Dict[int, Any] = {}
        self.devices: Dict[int, Any] = {}
        self.contexts: Dict[int, Any] = {}
        self.pm_metric_sets: Dict[int, Any] = {}
        self.stack_frames: Dict[int, Any] = {}
        self.call_stacks: Dict[int, Any] = {}
        self.pc_stall_reasons: Dict[int, Dict[int, str]] = {}
        self.cubins: Dict[int, bytes] = {}
        self._partial_cubins: Dict[int, Tuple[int, bytearray]] = {}  # crc -> (total, bytes)
        self.stats: Dict[str, int] = {}
        self.stats_severity: Dict[str, str] = {}
        self.stats_final = False
        self.notices: List[Notice] = []
        self.end_of_trace: Any = None
        self.truncated = False
        self.truncation_offset: Optional[int] = None
        self.issues = IssueCounts()

    def count(self, name: str, n: int = 1) -> None:
        self.issues[name] = self.issues.get(name, 0) + n

    def record(self, kind: str, msg: Any) -> None:
        """Keeps a metadata packet (a kind of _METADATA_KINDS)."""
        if kind in _INTERNED_TABLES:
            if kind == "interned_string" and msg.id == 0:
                return  # id 0 means "no string" and cannot be defined
            self._define(kind, msg.id, msg.value if kind == "interned_string" else msg)
        elif kind in _FIRST_DEFINITION_KEPT:
            table = self.devices if kind == "device" else self.contexts
            old = table.get(msg.id)
            if old is None:
                table[msg.id] = msg
            elif old != msg:
                self.count(_FIRST_DEFINITION_KEPT[kind])
        elif kind == "pc_stall_reasons":
            if len(msg.index) != len(msg.name):
                self.count("model.pc_stall_reasons_length_mismatch")
            self.pc_stall_reasons.setdefault(msg.device_id, {}).update(zip(msg.index, msg.name))
        elif kind == "cubin":
            self._add_cubin_part(msg)
        elif kind == "stats":
            if self.stats_final and not msg.final:
                return  # the final stats win over periodic ones written after it
            self.stats = {c.name: c.value for c in msg.counters}
            self.stats_severity = {c.name: enum_label("Severity", c.severity)
                                   for c in msg.counters}
            self.stats_final = msg.final
        elif kind == "notice":
            self.notices.append(Notice(msg.timestamp_ns, enum_label("Severity", msg.severity),
                                       msg.source, msg.message))
        elif kind == "end_of_trace":
            self.end_of_trace = msg

    def _add_cubin_part(self, msg: Any) -> None:
        """Joins a cubin written in parts (CubinImage.offset / total_bytes, in order)."""
        total = msg.total_bytes or len(msg.image)
        if msg.crc in self.cubins:
            return
        if msg.offset == 0 and len(msg.image) == total:
            self.cubins[msg.crc] = bytes(msg.image)
            self._partial_cubins.pop(msg.crc, None)
            return
        if msg.offset == 0:
            self._partial_cubins[msg.crc] = (total, bytearray())
        part = self._partial_cubins.get(msg.crc)
        if part is None or part[0] != total or msg.offset != len(part[1]):
            self._partial_cubins[msg.crc] = (-1, bytearray())  # a part is missing
            return
        part[1].extend(msg.image)
        if len(part[1]) == total:
            self.cubins[msg.crc] = bytes(part[1])
            del self._partial_cubins[msg.crc]

    def finish(self) -> None:
        """Counts what only the end of the pass can tell."""
        incomplete = sum(1 for crc in self._partial_cubins if crc not in self.cubins)
        if incomplete:
            self.count("model.incomplete_cubins", incomplete)
        self._partial_cubins.clear()

    def _define(self, kind: str, ident: int, value: Any) -> None:
        """A later, different definition replaces the earlier one from this packet on."""
        name = _INTERNED_TABLES[kind]
        table = getattr(self, name)
        old = table.get(ident)
        if old is None:
            self.first_defined[name][ident] = self.packets
        elif old != value:
            self.count(_REDEFINITION_ISSUES[kind])
            self.versions[name].setdefault(
                ident, [(self.first_defined[name][ident], old)]).append((self.packets, value))
        table[ident] = value
