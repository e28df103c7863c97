"""Reads `.wst` files: frames packets, checks the header, tracks truncation and metadata.

A file is a run of ``Trace.packet`` fields (tag byte 0x0a, varint length, TracePacket
bytes). The reader walks that framing itself instead of parsing one big ``Trace`` so that
it streams (memory stays flat on multi-GB traces) and so that a file cut short still yields
every whole packet, with the byte offset where the cut happened.

Problems that do not stop reading (an interned id never defined, a packet kind newer than
this reader) are *counted* in ``TraceFile.issues``, not thrown; problems that make the rest
of the file meaningless raise ``TraceError``.
"""

from __future__ import annotations

import builtins
import functools
import mmap
import os
import warnings
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from . import schema

PathLike = Union[str, "os.PathLike[str]"]

_PACKET_TAG = 0x0A  # field 1 (Trace.packet), wire type 2 (length-delimited)
_MAX_VARINT_BYTES = 10


def _backend_warns_on_corrupt_input() -> bool:
    try:
        from google.protobuf.internal import api_implementation
        return bool(api_implementation.Type() == "cpp")
    except Exception:  # an internal module; if it moves, pay for catch_warnings everywhere
        return True


_WARNS_ON_CORRUPT_INPUT = _backend_warns_on_corrupt_input()
# Packet kinds that TraceFile keeps (the rest are events, for to_dataframes).
_METADATA_KINDS = frozenset([
    "interned_string", "launch_config", "thread", "device", "context", "pm_metric_set",
    "pc_stall_reasons", "stats", "notice", "end_of_trace"])


class TraceError(Exception):
    """The one exception the reader raises: the file is missing, not a trace, or corrupt.

    ``path`` and ``offset`` (byte offset into the file, when it applies) let scripts that
    read many files report which one failed and where.
    """

    def __init__(self, message: str, path: Optional[str] = None,
                 offset: Optional[int] = None) -> None:
        super().__init__(message)
        self.path = path
        self.offset = offset


class TraceWarning(UserWarning):
    """Warned when analysis runs on a trace that was cut short or had counted problems."""


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


class TraceFile:
    """An open `.wst` file. Iterating yields ``TracePacket`` messages, streaming.

    The header is read and checked when the file is opened, so a wrong or too new file
    fails at ``open``. Everything else that needs the whole file (``strings``, ``devices``,
    ``stats``, ``truncated``, ...) is gathered by one pass on first use.
    """

    def __init__(self, path: PathLike) -> None:
        self.path = os.fspath(path)
        self._data: Union[bytes, mmap.mmap] = b""
        try:
            with builtins.open(self.path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size > 0:
                    self._data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as e:
            raise TraceError(f"warpscope: {self.path}: cannot open the trace: "
                             f"{e.strerror or e}", path=self.path) from e
        self._closed = False
        self._truncated = False
        self._truncation_offset: Optional[int] = None
        self.issues: Dict[str, int] = {}
        try:
            self.header: Any = self._read_header()
        except TraceError:
            self.close()
            raise
        self._reset_index()

    def _reset_index(self) -> None:
        self._indexed = False
        self._strings: Dict[int, str] = {}
        self._launch_configs: Dict[int, Any] = {}
        self._threads: Dict[int, Any] = {}
        self._devices: Dict[int, Any] = {}
        self._contexts: Dict[int, Any] = {}
        self._pm_metric_sets: Dict[int, Any] = {}
        self._pc_stall_reasons: Dict[int, Dict[int, str]] = {}
        self._stats: Dict[str, int] = {}
        self._stats_severity: Dict[str, str] = {}
        self._stats_final = False
        self._notices: List[Notice] = []
        self._end_of_trace: Any = None

    # -- lifetime -------------------------------------------------------------------------

    def close(self) -> None:
        """Unmaps the file. Metadata already gathered stays available."""
        if isinstance(self._data, mmap.mmap):
            self._data.close()
        self._data = b""
        self._closed = True

    def __enter__(self) -> "TraceFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<warpscope.TraceFile {self.path!r} format {self.header.format_major}." \
               f"{self.header.format_minor}>"

    # -- framing --------------------------------------------------------------------------

    def _fail(self, what: str, offset: int) -> TraceError:
        return TraceError(f"warpscope: {self.path}: {what} at byte {offset}; the file is "
                          f"corrupt (packets before it can still be read by iterating)",
                          path=self.path, offset=offset)

    def _frames(self) -> Iterator[Tuple[int, int, int]]:
        """Yields (packet offset, payload start, payload end) for each whole packet.

        Stops at the first incomplete packet and records it as truncation; raises on a
        byte that cannot start a packet.
        """
        data, size, pos = self._data, len(self._data), 0
        while pos < size:
            if data[pos] != _PACKET_TAG:
                raise self._fail(f"expected a packet (tag byte 0x0a), found 0x{data[pos]:02x}",
                                 pos)
            length, shift, cursor = 0, 0, pos + 1
            while True:
                if cursor >= size:
                    self._mark_truncated(pos)
                    return
                byte = data[cursor]
                length |= (byte & 0x7F) << shift
                cursor += 1
                if not byte & 0x80:
                    break
                shift += 7
                if cursor - pos - 1 >= _MAX_VARINT_BYTES:
                    raise self._fail("packet length is not a valid varint", pos)
            if cursor + length > size:
                self._mark_truncated(pos)
                return
            yield pos, cursor, cursor + length
            pos = cursor + length

    def _mark_truncated(self, offset: int) -> None:
        self._truncated = True
        self._truncation_offset = offset

    def _parse(self, offset: int, start: int, end: int) -> Any:
        """Parses one packet; every way the bytes can be wrong becomes a TraceError.

        MergeFromString rather than FromString because it returns how much it consumed:
        protobuf 3.x's C++ backend stops at a stray end-group tag with only a RuntimeWarning,
        which here is turned into an error so that no backend accepts half a packet.
        """
        packet = schema.TracePacket()
        try:
            if _WARNS_ON_CORRUPT_INPUT:
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    consumed = packet.MergeFromString(bytes(self._data[start:end]))
            else:
                consumed = packet.MergeFromString(bytes(self._data[start:end]))
        except Exception as e:  # DecodeError, or what a backend's warning turned into
            raise self._fail(f"packet of {end - start} bytes does not parse ({e})", offset) from e
        if consumed is not None and consumed != end - start:
            raise self._fail(f"packet of {end - start} bytes does not parse (parsing stopped "
                             f"after {consumed} bytes)", offset)
        return packet

    def packets_with_offsets(self) -> Iterator[Tuple[int, Any]]:
        """Yields (byte offset, TracePacket) for every whole packet, the header included."""
        if self._closed:
            raise TraceError(f"warpscope: {self.path}: file is closed", path=self.path)
        for offset, start, end in self._frames():
            yield offset, self._parse(offset, start, end)

    def __iter__(self) -> Iterator[Any]:
        for _, packet in self.packets_with_offsets():
            yield packet

    def _read_header(self) -> Any:
        """Reads and checks the first packet; every way it can be wrong gets its own message."""
        size = len(self._data)
        if size == 0:
            raise TraceError(f"warpscope: {self.path}: file is empty; the profiled process "
                             "probably ended before warpscope wrote anything",
                             path=self.path, offset=0)
        not_trace = f"warpscope: {self.path}: not a warpscope trace"
        try:
            first = next(iter(self._frames()), None)
        except TraceError as e:
            why = (f"first byte is 0x{self._data[0]:02x}, a trace starts with 0x0a"
                   if self._data[0] != _PACKET_TAG else "its first packet has no valid length")
            raise TraceError(f"{not_trace} ({why})", path=self.path, offset=0) from e
        if first is None:
            raise TraceError(f"{not_trace}, or it was cut short inside its header: it ends at "
                             f"byte {size} before the first packet is whole",
                             path=self.path, offset=0)
        try:
            packet = self._parse(*first)
        except TraceError as e:
            raise TraceError(f"{not_trace} (its first packet does not parse)",
                             path=self.path, offset=0) from e
        kind = packet.WhichOneof("data")
        if kind != "header":
            raise TraceError(f"{not_trace} (first packet is {kind or 'of an unknown kind'}, "
                             "expected a Header)", path=self.path, offset=0)
        header = packet.header
        if header.format_major == 0:
            raise TraceError(f"{not_trace} (its header has no format version)",
                             path=self.path, offset=0)
        if header.format_major > schema.FORMAT_MAJOR:
            raise TraceError(
                f"warpscope: {self.path}: trace format {header.format_major}."
                f"{header.format_minor} is newer than this reader (format "
                f"{schema.FORMAT_MAJOR}.x, package warpscope); upgrade the warpscope Python "
                "package to read it", path=self.path, offset=0)
        return header

    # -- metadata -------------------------------------------------------------------------

    def count_issue(self, name: str, n: int = 1) -> None:
        """Counts a problem that does not stop reading (see ``issues``)."""
        self.issues[name] = self.issues.get(name, 0) + n

    def _ensure_indexed(self) -> None:
        if not self._indexed:
            for _ in self.scan():
                pass

    def scan(self) -> Iterator[Tuple[str, Any]]:
        """Yields (kind, message) for every packet after the header, recording metadata.

        One pass both indexes the file and feeds ``to_dataframes``, so a multi-GB trace is
        parsed once. Kinds are the names of the ``TracePacket.data`` oneof members.
        """
        index = not self._indexed
        if index:
            self._reset_index()  # a pass abandoned half way must not leave half a table
            self.issues.clear()
        headers_seen = 0
        for packet in self:
            kind = packet.WhichOneof("data")
            if kind is None:
                if index:
                    self.count_issue("unknown_packet_kinds")  # written by a newer minor
                continue
            msg = getattr(packet, kind)
            if index:
                if self._end_of_trace is not None:
                    self.count_issue("packets_after_end_of_trace")
                if kind == "header":
                    headers_seen += 1
                    if headers_seen > 1:
                        self.count_issue("extra_headers")
                    continue
                if kind in _METADATA_KINDS:
                    self._record(kind, msg)
            if kind != "header":
                yield kind, msg
        self._indexed = True

    def _record(self, kind: str, msg: Any) -> None:
        """Keeps metadata packets; the first definition of an id wins, conflicts are counted."""
        tables = {
            "interned_string": (self._strings, "id", "value"),
            "launch_config": (self._launch_configs, "id", None),
            "thread": (self._threads, "id", None),
            "device": (self._devices, "id", None),
            "context": (self._contexts, "id", None),
            "pm_metric_set": (self._pm_metric_sets, "id", None),
        }
        if kind in tables:
            table, key, field = tables[kind]
            value = getattr(msg, field) if field else msg
            ident = getattr(msg, key)
            if ident in table:
                if table[ident] != value:
                    self.count_issue(f"conflicting_{kind}_definitions")
            else:
                table[ident] = value
        elif kind == "pc_stall_reasons":
            if len(msg.index) != len(msg.name):
                self.count_issue("pc_stall_reasons_length_mismatch")
            self._pc_stall_reasons.setdefault(msg.device_id, {}).update(zip(msg.index, msg.name))
        elif kind == "stats":
            if self._stats_final and not msg.final:
                return  # the final stats win over periodic ones written after it
            self._stats = {c.name: c.value for c in msg.counters}
            self._stats_severity = {c.name: enum_label("Severity", c.severity)
                                    for c in msg.counters}
            self._stats_final = msg.final
        elif kind == "notice":
            self._notices.append(Notice(msg.timestamp_ns, enum_label("Severity", msg.severity),
                                        msg.source, msg.message))
        elif kind == "end_of_trace":
            self._end_of_trace = msg

    @property
    def truncated(self) -> bool:
        """True when the file ends inside a packet (the writer was killed mid-write)."""
        self._ensure_indexed()
        return self._truncated

    @property
    def truncation_offset(self) -> Optional[int]:
        """Byte offset of the incomplete last packet when ``truncated``, else None."""
        self._ensure_indexed()
        return self._truncation_offset

    @property
    def strings(self) -> Dict[int, str]:
        """Interned strings, id -> value."""
        self._ensure_indexed()
        return self._strings

    @property
    def devices(self) -> Dict[int, Any]:
        """``Device`` messages by CUDA device ordinal."""
        self._ensure_indexed()
        return self._devices

    @property
    def contexts(self) -> Dict[int, Any]:
        """``ContextInfo`` messages by context id."""
        self._ensure_indexed()
        return self._contexts

    @property
    def launch_configs(self) -> Dict[int, Any]:
        """``LaunchConfig`` messages by id."""
        self._ensure_indexed()
        return self._launch_configs

    @property
    def threads(self) -> Dict[int, Any]:
        """``ThreadInfo`` messages by the small id events use."""
        self._ensure_indexed()
        return self._threads

    @property
    def pm_metric_sets(self) -> Dict[int, Any]:
        """``PmMetricSet`` messages by id."""
        self._ensure_indexed()
        return self._pm_metric_sets

    @property
    def pc_stall_reasons(self) -> Dict[int, Dict[int, str]]:
        """Stall reason names by device id, then CUPTI stall reason index."""
        self._ensure_indexed()
        return self._pc_stall_reasons

    @property
    def stats(self) -> Dict[str, int]:
        """Counters of the final ``Stats`` packet, else of the last periodic one."""
        self._ensure_indexed()
        return self._stats

    @property
    def stats_severity(self) -> Dict[str, str]:
        """Severity of each counter in ``stats``: "info", "data_loss" or "error"."""
        self._ensure_indexed()
        return self._stats_severity

    @property
    def stats_final(self) -> bool:
        """True when ``stats`` come from the final Stats packet (not a periodic one)."""
        self._ensure_indexed()
        return self._stats_final

    @property
    def notices(self) -> List[Notice]:
        """Messages the collectors left for the user, in file order."""
        self._ensure_indexed()
        return self._notices

    @property
    def end_of_trace(self) -> Any:
        """The ``EndOfTrace`` message, or None when the file was cut short."""
        self._ensure_indexed()
        return self._end_of_trace

    @property
    def complete(self) -> bool:
        """True when the writer finished the file (an ``EndOfTrace`` packet is present)."""
        return self.end_of_trace is not None

    @property
    def rank(self) -> Optional[int]:
        """The RANK environment variable of the profiled process, when it had one."""
        for kv in self.header.rank_env:
            if kv.key == "RANK":
                try:
                    return int(kv.value)
                except ValueError:
                    return None
        return None

    def problems(self) -> List[str]:
        """One line per reason the figures may be incomplete; empty for a sound file."""
        self._ensure_indexed()
        lines = []
        if self.truncated:
            lines.append(f"the file was cut short: the packet at byte {self.truncation_offset} "
                         "is incomplete (the profiled process was probably killed)")
        elif not self.complete:
            lines.append("the file has no EndOfTrace packet: the writer did not finish it")
        for name, value in sorted(self.stats.items()):
            severity = self.stats_severity.get(name)
            if value and severity in ("data_loss", "error"):
                lines.append(f"{name} = {value} ({severity.replace('_', ' ')})")
        for name, value in sorted(self.issues.items()):
            lines.append(f"reader: {name} = {value}")
        return lines

    def to_dataframes(self) -> Dict[str, Any]:
        """All events as pandas DataFrames keyed by kind; see ``warpscope.frames``."""
        from .frames import trace_to_dataframes  # pandas is imported only when needed
        return trace_to_dataframes(self)
