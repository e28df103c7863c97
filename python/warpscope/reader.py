"""Reads `.wst` files: frames packets, checks the header, tracks truncation and metadata.

A file is a run of ``Trace.packet`` fields (tag byte 0x0a, varint length, TracePacket
bytes). The reader walks that framing itself instead of parsing one big ``Trace`` so that
it streams (memory stays flat on multi-GB traces) and so that a file cut short still yields
every whole packet, with the byte offset where the cut happened. Framing, string repair and
interned definitions follow the C++ reader (``analyzers/model/trace_reader.cc``), so that both
give the same verdict on the same bytes.

Problems that do not stop reading (an interned id never defined, a packet kind newer than
this reader) are *counted* in ``TraceFile.issues``, not thrown; problems that make the rest
of the file meaningless raise ``TraceError``.
"""

from __future__ import annotations

import codecs
import functools
import mmap
import os
import stat
import warnings
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from google.protobuf.descriptor import FieldDescriptor

from . import schema

PathLike = Union[str, "os.PathLike[str]"]

_PACKET_TAG = 0x0A  # field 1 (Trace.packet), wire type 2 (length-delimited)
_MAX_VARINT_BYTES = 10
_UINT64_MASK = (1 << 64) - 1
_VARINT_TRUNCATED, _VARINT_MALFORMED = -1, -2  # _read_varint's failures (values are >= 0)
# A declared length above this is corruption, not a packet cut short: packets must fit in
# one writer chunk (1 MiB by default). The C++ reader's kMaxPacketBytes.
MAX_PACKET_BYTES = 256 << 20
# Larger files are refused unless ``open(path, max_bytes=...)`` allows them.
DEFAULT_MAX_TRACE_BYTES = 64 << 30
_GZIP_MAGIC = b"\x1f\x8b"
_WIRE_TYPE_NAMES = ("varint", "64-bit", "length-delimited", "group start", "group end",
                    "32-bit", "invalid (6)", "invalid (7)")


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
    "pc_stall_reasons", "cubin", "stats", "notice", "end_of_trace"])
_NOT_EVENT_KINDS = _METADATA_KINDS | {None, "header"}  # None: a kind newer than the schema
# Interned definitions (packet kind -> table): a later, different definition replaces the
# earlier one from that packet on, and is counted. Strings, launch configs and threads count
# as the C++ reader's reader.redefined_ids.
_INTERNED_TABLES = {"interned_string": "strings", "launch_config": "launch_configs",
                    "thread": "threads", "pm_metric_set": "pm_metric_sets"}
_REDEFINITION_ISSUES = {"interned_string": "redefined_ids", "launch_config": "redefined_ids",
                        "thread": "redefined_ids", "pm_metric_set": "redefined_pm_metric_sets"}
# Described once; a different description of the same id is counted and ignored.
_FIRST_DEFINITION_KEPT = {"device": "redefined_devices", "context": "redefined_contexts"}

# Each byte that is not part of valid UTF-8 becomes "?", as in the C++ reader: the string
# keeps its length in bytes, so the packet around it stays valid wire format.
_UTF8_ERRORS = "warpscope.question_mark_per_byte"
codecs.register_error(_UTF8_ERRORS, lambda e: ("?" * (e.end - e.start), e.end))


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


class _CorruptData(TraceError):
    """Bytes that cannot be a packet; ``what`` says why without the path and offset."""

    def __init__(self, path: str, offset: int, what: str) -> None:
        super().__init__(f"warpscope: {path}: corrupt data at byte offset {offset}: {what} "
                         "(packets before it can still be read by iterating)",
                         path=path, offset=offset)
        self.what = what


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


# -- bytes --------------------------------------------------------------------------------

def _read_varint(data: Any, pos: int, end: int) -> Tuple[int, int]:
    """(value, position after it) of the varint at data[pos]; the value is
    _VARINT_TRUNCATED when data ends inside it and _VARINT_MALFORMED past 10 bytes.
    Bits beyond 64 are dropped, as a C++ uint64_t drops them."""
    result = 0
    for i in range(_MAX_VARINT_BYTES):
        if pos >= end:
            return _VARINT_TRUNCATED, pos
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << (7 * i)
        if byte < 0x80:
            return result & _UINT64_MASK, pos
    return _VARINT_MALFORMED, pos


def _repair_utf8(buffer: bytearray, start: int, end: int) -> bool:
    """Replaces each byte of buffer[start:end] that is not valid UTF-8 with "?"."""
    raw = bytes(buffer[start:end])
    try:
        raw.decode("utf-8")
        return False
    except UnicodeDecodeError:
        buffer[start:end] = raw.decode("utf-8", _UTF8_ERRORS).encode("utf-8")
        return True


def _repair_strings(message_type: Any, buffer: bytearray, start: int, end: int,
                    depth: int = 0) -> int:
    """Repairs the string fields of the `message_type` message in buffer[start:end], nested
    messages included. Returns how many strings changed, or -1 when the bytes are not wire
    format at all (then the packet is corrupt for other reasons too)."""
    if depth > 32:
        return -1
    pos, changed = start, 0
    while pos < end:
        tag, pos = _read_varint(buffer, pos, end)
        if tag < 0:
            return -1
        wire_type = tag & 7
        if wire_type == 0:
            value, pos = _read_varint(buffer, pos, end)
            if value < 0:
                return -1
        elif wire_type == 1:
            pos += 8
        elif wire_type == 5:
            pos += 4
        elif wire_type == 2:
            length, pos = _read_varint(buffer, pos, end)
            if length < 0 or length > end - pos:
                return -1
            field = message_type.fields_by_number.get(tag >> 3)
            if field is not None and field.type == FieldDescriptor.TYPE_STRING:
                changed += _repair_utf8(buffer, pos, pos + length)
            elif field is not None and field.type == FieldDescriptor.TYPE_MESSAGE:
                inner = _repair_strings(field.message_type, buffer, pos, pos + length, depth + 1)
                if inner < 0:
                    return -1
                changed += inner
            pos += length
        else:
            return -1
        if pos > end:
            return -1
    return changed


def _merge_checked(payload: bytes) -> Any:
    """The packet, or None when the bytes do not parse.

    MergeFromString rather than FromString because it returns how much it consumed:
    protobuf 3.x's C++ backend stops at a stray end-group tag with only a RuntimeWarning,
    which here is turned into an error so that no backend accepts half a packet.
    """
    packet = schema.TracePacket()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            consumed = packet.MergeFromString(payload)
    except Exception:  # DecodeError, UnicodeDecodeError, or the backend's warning
        return None
    if consumed is not None and consumed != len(payload):
        return None
    return packet


def _merge_fast(payload: bytes) -> Any:
    """_merge_checked for backends that raise on every corrupt input."""
    packet = schema.TracePacket()
    try:
        consumed = packet.MergeFromString(payload)
    except Exception:  # DecodeError, UnicodeDecodeError
        return None
    if consumed is not None and consumed != len(payload):
        return None
    return packet


_merge = _merge_checked if _WARNS_ON_CORRUPT_INPUT else _merge_fast


def _holds_strings(message_type: Any, depth: int = 0) -> bool:
    return depth < 8 and any(
        f.type == FieldDescriptor.TYPE_STRING
        or (f.type == FieldDescriptor.TYPE_MESSAGE and _holds_strings(f.message_type, depth + 1))
        for f in message_type.fields)


def _first_tag_byte(number: int) -> int:
    """The first byte of the tag of length-delimited field `number`."""
    tag = number << 3 | 2
    return tag & 0x7F | 0x80 if tag >= 0x80 else tag


# protobuf's C++ backend (Debian's python3-protobuf) logs a line on stderr for every string
# that is not UTF-8 before it refuses the packet. With that backend, packets of kinds that
# hold strings (metadata: no event does) are repaired before they are parsed, not after;
# they are told apart by the first byte of the packet (that byte differs for every kind).
_REPAIR_BEFORE_PARSING = frozenset(
    _first_tag_byte(f.number) for f in schema.TracePacket.DESCRIPTOR.fields
    if f.type == FieldDescriptor.TYPE_MESSAGE and _holds_strings(f.message_type)
) if _WARNS_ON_CORRUPT_INPUT else frozenset()


def _file_kind(mode: int) -> Optional[str]:
    """What a path that is not a regular file is, for the error message."""
    if stat.S_ISREG(mode):
        return None
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def _map_trace_file(path: str, max_bytes: int) -> Union[bytes, mmap.mmap]:
    """The bytes of a regular file, mapped; anything else is refused before reading it.

    O_NONBLOCK: opening a FIFO must not wait for a writer, only to be refused.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise TraceError(f"warpscope: {path}: cannot open the trace: {e.strerror or e}",
                         path=path) from e
    try:
        info = os.fstat(fd)
        kind = _file_kind(info.st_mode)
        if kind is not None:
            raise TraceError(f"warpscope: {path} is {kind}, not a trace file", path=path)
        if info.st_size > max_bytes:
            raise TraceError(
                f"warpscope: {path} is {info.st_size} bytes, more than the {max_bytes} bytes "
                f"({max_bytes / 2**30:g} GiB) this reader accepts; if it is a trace, open it "
                "with warpscope.open(path, max_bytes=...)", path=path)
        if info.st_size == 0:
            return b""
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise TraceError(f"warpscope: {path}: cannot read the trace: {e.strerror or e}",
                         path=path) from e
    finally:
        os.close(fd)


# -- what one pass learns -----------------------------------------------------------------

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
        self.issues: Dict[str, int] = {}

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
                self.count("pc_stall_reasons_length_mismatch")
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
            self.count("incomplete_cubins", incomplete)
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


class TraceFile:
    """An open `.wst` file. Iterating yields ``TracePacket`` messages, streaming.

    The header is read and checked when the file is opened, so a wrong or too new file
    fails at ``open``. Everything else that needs the whole file (``strings``, ``devices``,
    ``stats``, ``truncated``, ...) is gathered by one pass on first use.
    """

    def __init__(self, path: PathLike, max_bytes: int = DEFAULT_MAX_TRACE_BYTES) -> None:
        self.path = os.fspath(path)
        self._data: Union[bytes, mmap.mmap] = _map_trace_file(self.path, max_bytes)
        self._closed = False
        self._index: Optional[_Index] = None
        self.issues: Dict[str, int] = {}
        try:
            self.header: Any = self._read_header()
        except TraceError:
            self.close()
            raise

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

    def _frames(self, index: _Index) -> Iterator[Tuple[int, int, int]]:
        """Yields (packet offset, payload start, payload end) for each whole packet.

        The C++ reader's rules: the data ending inside the tag, the length or the payload
        is truncation (recorded in `index` with the packet's offset); a tag other than
        field 1 / length-delimited, a varint longer than 10 bytes or a length above
        MAX_PACKET_BYTES is corruption, raised with the packet's offset.
        """
        data, size, pos = self._data, len(self._data), 0
        packet_tag, truncated = _PACKET_TAG, _VARINT_TRUNCATED
        while pos < size:
            cursor = pos + 1
            if data[pos] != packet_tag:  # rare: only a non-minimal varint is still a tag
                tag, cursor = _read_varint(data, pos, size)
                if tag == truncated:
                    break
                if tag != packet_tag:
                    raise self._corrupt_tag(pos, cursor, tag)
            if cursor < size and data[cursor] < 0x80:  # a packet under 128 bytes
                length = data[cursor]
                cursor += 1
            else:
                length, cursor = _read_varint(data, cursor, size)
                if length == truncated:
                    break
                if length == _VARINT_MALFORMED:
                    raise _CorruptData(self.path, pos, "the packet length is not a valid varint")
                if length > MAX_PACKET_BYTES:
                    raise _CorruptData(self.path, pos, f"the packet there claims {length} "
                                       f"bytes, more than the {MAX_PACKET_BYTES >> 20} MiB a "
                                       "packet can hold")
            end = cursor + length
            if end > size:
                break
            yield pos, cursor, end
            pos = end
        if pos < size:
            index.truncated = True
            index.truncation_offset = pos

    def _corrupt_tag(self, start: int, end: int, tag: int) -> _CorruptData:
        if tag == _VARINT_MALFORMED:
            found = "a malformed varint"
        else:
            found = " ".join(f"0x{b:02x}" for b in self._data[start:end])
            found += f" (field {tag >> 3}, wire type {_WIRE_TYPE_NAMES[tag & 7]})"
        return _CorruptData(self.path, start, "expected a packet (field 1, length-delimited: "
                            f"byte 0x0a), found {found}")

    def _parse(self, offset: int, start: int, end: int) -> Tuple[Any, int]:
        """Parses one packet: (TracePacket, number of strings repaired). Every way the bytes
        can be wrong becomes a TraceError.

        Strings that are not UTF-8 (proto3 refuses them; programs hand CUDA, NVTX and argv
        arbitrary bytes) are repaired as the C++ reader does: each bad byte becomes "?".
        """
        payload = self._data[start:end]
        if _REPAIR_BEFORE_PARSING and payload and payload[0] in _REPAIR_BEFORE_PARSING:
            repaired = bytearray(payload)
            changed = _repair_strings(schema.TracePacket.DESCRIPTOR, repaired, 0, len(repaired))
            if changed > 0:
                payload = bytes(repaired)
        else:
            changed = 0
        packet = _merge(payload)
        if packet is not None:
            return packet, max(changed, 0)
        repaired = bytearray(payload)
        changed = _repair_strings(schema.TracePacket.DESCRIPTOR, repaired, 0, len(repaired))
        packet = _merge(bytes(repaired)) if changed > 0 else None
        if packet is None:
            raise _CorruptData(self.path, offset, f"the {end - start}-byte packet there does "
                               "not parse as a warpscope packet")
        return packet, changed

    def _check_open(self) -> None:
        if self._closed:
            raise TraceError(f"warpscope: {self.path}: file is closed", path=self.path)

    def packets_with_offsets(self) -> Iterator[Tuple[int, Any]]:
        """Yields (byte offset, TracePacket) for every whole packet, the header included."""
        self._check_open()
        for offset, start, end in self._frames(_Index()):
            yield offset, self._parse(offset, start, end)[0]

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
        if self._data[:2] == _GZIP_MAGIC:
            raise TraceError(f"warpscope: {self.path} looks gzip-compressed; decompress it "
                             "first (gunzip)", path=self.path, offset=0)
        not_trace = f"warpscope: {self.path}: not a warpscope trace"
        try:
            first = next(self._frames(_Index()), None)
        except _CorruptData as e:
            raise TraceError(f"{not_trace} ({e.what})", path=self.path, offset=0) from e
        if first is None:
            raise TraceError(f"{not_trace}, or it was cut short inside its header: it ends at "
                             f"byte {size} before the first packet is whole",
                             path=self.path, offset=0)
        try:
            packet, _ = self._parse(*first)
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

    def _ensure_indexed(self) -> _Index:
        if self._index is None:
            for _ in self._pass():
                pass
        assert self._index is not None
        return self._index

    def _pass(self) -> Iterator[Tuple[str, Any, _Index]]:
        """Yields (kind, message, what the pass knows so far) for every packet after the
        header; definitions are recorded before their packet is yielded, so the index
        holds the definitions in force for each event. The first pass that completes
        becomes the trace's metadata (``strings``, ``issues``, ...)."""
        self._check_open()
        index, parse = _Index(), self._parse
        for offset, start, end in self._frames(index):
            packet, repaired = parse(offset, start, end)
            index.packets += 1
            if repaired:
                index.count("invalid_utf8_strings", repaired)
            if index.end_of_trace is not None:
                index.count("packets_after_end_of_trace")
            kind = packet.WhichOneof("data")
            if kind in _NOT_EVENT_KINDS:
                if kind is None:
                    index.count("unknown_packet_kinds")  # written by a newer minor
                    continue
                if kind == "header":
                    if offset != 0:
                        index.count("extra_headers")
                    continue
                index.record(kind, getattr(packet, kind))
            yield kind, getattr(packet, kind), index
        index.finish()
        if self._index is None:
            self._index = index
            self.issues.clear()
            self.issues.update(index.issues)

    def scan(self) -> Iterator[Tuple[str, Any]]:
        """Yields (kind, message) for every packet after the header, recording metadata.

        One pass both indexes the file and feeds ``to_dataframes``, so a multi-GB trace is
        parsed once. Kinds are the names of the ``TracePacket.data`` oneof members.
        """
        for kind, msg, _ in self._pass():
            yield kind, msg

    @property
    def truncated(self) -> bool:
        """True when the file ends inside a packet (the writer was killed mid-write)."""
        return self._ensure_indexed().truncated

    @property
    def truncation_offset(self) -> Optional[int]:
        """Byte offset of the incomplete last packet when ``truncated``, else None."""
        return self._ensure_indexed().truncation_offset

    @property
    def strings(self) -> Dict[int, str]:
        """Interned strings, id -> value (the last definition of each id)."""
        return self._ensure_indexed().strings

    @property
    def devices(self) -> Dict[int, Any]:
        """``Device`` messages by CUDA device ordinal."""
        return self._ensure_indexed().devices

    @property
    def contexts(self) -> Dict[int, Any]:
        """``ContextInfo`` messages by context id."""
        return self._ensure_indexed().contexts

    @property
    def launch_configs(self) -> Dict[int, Any]:
        """``LaunchConfig`` messages by id (the last definition of each id)."""
        return self._ensure_indexed().launch_configs

    @property
    def threads(self) -> Dict[int, Any]:
        """``ThreadInfo`` messages by the small id events use (the last definition)."""
        return self._ensure_indexed().threads

    @property
    def pm_metric_sets(self) -> Dict[int, Any]:
        """``PmMetricSet`` messages by id (the last definition of each id)."""
        return self._ensure_indexed().pm_metric_sets

    @property
    def pc_stall_reasons(self) -> Dict[int, Dict[int, str]]:
        """Stall reason names by device id, then CUPTI stall reason index."""
        return self._ensure_indexed().pc_stall_reasons

    @property
    def cubins(self) -> Dict[int, bytes]:
        """Module binaries of a PC sampling run by ``cuptiGetCubinCrc`` (the ``cubin_crc`` of
        the ``pc_samples`` rows), whole; a cubin the writer could not store whole is left out
        (issue ``incomplete_cubins``)."""
        return self._ensure_indexed().cubins

    @property
    def stats(self) -> Dict[str, int]:
        """Counters of the final ``Stats`` packet, else of the last periodic one."""
        return self._ensure_indexed().stats

    @property
    def stats_severity(self) -> Dict[str, str]:
        """Severity of each counter in ``stats``: "info", "data_loss" or "error"."""
        return self._ensure_indexed().stats_severity

    @property
    def stats_final(self) -> bool:
        """True when ``stats`` come from the final Stats packet (not a periodic one)."""
        return self._ensure_indexed().stats_final

    @property
    def notices(self) -> List[Notice]:
        """Messages the collectors left for the user, in file order."""
        return self._ensure_indexed().notices

    @property
    def end_of_trace(self) -> Any:
        """The ``EndOfTrace`` message, or None when the file was cut short."""
        return self._ensure_indexed().end_of_trace

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
