"""Reads `.wst` files: frames packets, checks the header, tracks truncation and metadata.

A file is a run of ``Trace.packet`` fields (tag byte 0x0a, varint length, TracePacket
bytes). The reader walks that framing itself instead of parsing one big ``Trace`` so that
it streams (memory stays flat on multi-GB traces) and so that a file cut short still yields
every whole packet, with the byte offset where the cut happened. Framing, string repair and
interned definitions follow the C++ reader (``analyzers/model/trace_reader*.cc``), so that both
give the same verdict on the same bytes. The bytes are read in ``wire``, definitions and
counted issues kept in ``metadata``, the exceptions defined in ``errors``.

Problems that do not stop reading (an interned id never defined, a packet kind newer than
this reader) are *counted* in ``TraceFile.issues``, not thrown; problems that make the rest
of the file meaningless raise ``TraceError``.
"""

from __future__ import annotations

import mmap
import os
import stat
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from . import schema
from .errors import TraceError, _CorruptData
from .metadata import _NOT_EVENT_KINDS, IssueCounts, Notice, _Index, problem_lines
from .wire import (_PACKET_TAG, _REPAIR_BEFORE_PARSING, _VARINT_MALFORMED, _VARINT_TRUNCATED,
                   _WIRE_TYPE_NAMES, MAX_PACKET_BYTES, _merge, _read_varint, _repair_strings)
# Still importable from here, where they were defined before the byte-level code (wire), the
# pass's metadata (metadata) and the exceptions (errors) got modules of their own.
from .errors import TraceWarning  # noqa: F401
from .metadata import enum_label  # noqa: F401
from .wire import _repair_utf8  # noqa: F401

PathLike = Union[str, "os.PathLike[str]"]

# Larger files are refused unless ``open(path, max_bytes=...)`` allows them.
DEFAULT_MAX_TRACE_BYTES = 64 << 30
_GZIP_MAGIC = b"\x1f\x8b"


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
        self.issues = IssueCounts()
        self._native_state: Any = None  # what the C++ reader found (warpscope.native)
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
                index.count("reader.invalid_utf8_strings", repaired)
            if index.end_of_trace is not None:
                index.count("reader.packets_after_end_of_trace")
            kind = packet.WhichOneof("data")
            if kind in _NOT_EVENT_KINDS:
                if kind is None:
                    index.count("reader.unknown_packets")  # written by a newer minor
                    continue
                if kind == "header":
                    if offset != 0:
                        index.count("reader.extra_headers")
                    continue
                index.record(kind, getattr(packet, kind))
            yield kind, getattr(packet, kind), index
        index.finish()
        if self._index is None:
            self._index = index
            if self._native_state is None:  # else issues hold what the C++ reader counted
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
        (issue ``model.incomplete_cubins``)."""
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
        if self._native_state is not None:  # to_dataframes ran on the C++ reader
            return self._native_state.problems()
        self._ensure_indexed()
        return problem_lines(self.truncation_offset if self.truncated else None,
                             self.complete, self.stats, self.stats_severity, self.issues)

    def to_dataframes(self) -> Dict[str, Any]:
        """All events as pandas DataFrames keyed by kind; see ``warpscope.frames``.

        Read by the C++ reader when the ``warpscope_native`` extension is installed, else by
        this package's own reader: the frames are the same (``warpscope.native``)."""
        from . import native
        if native.available():
            return native.to_dataframes(self)
        from .frames import trace_to_dataframes  # pandas is imported only when needed
        return trace_to_dataframes(self)
