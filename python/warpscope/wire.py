"""The bytes of a `.wst` file: varints, packet parsing, and the repair of strings that are not
UTF-8, as the C++ reader does them (``analyzers/model/trace_reader.cc``)."""

from __future__ import annotations

import codecs
import warnings
from typing import Any, Tuple

from google.protobuf.descriptor import FieldDescriptor

from . import schema

_PACKET_TAG = 0x0A  # field 1 (Trace.packet), wire type 2 (length-delimited)
_MAX_VARINT_BYTES = 10
_UINT64_MASK = (1 << 64) - 1
_VARINT_TRUNCATED, _VARINT_MALFORMED = -1, -2  # _read_varint's failures (values are >= 0)
# A declared length above this is corruption, not a packet cut short: packets must fit in
# one writer chunk (1 MiB by default). The C++ reader's kMaxPacketBytes.
MAX_PACKET_BYTES = 256 << 20
_WIRE_TYPE_NAMES = ("varint", "64-bit", "length-delimited", "group start", "group end",
                    "32-bit", "invalid (6)", "invalid (7)")


def _backend_warns_on_corrupt_input() -> bool:
    try:
        from google.protobuf.internal import api_implementation
        return bool(api_implementation.Type() == "cpp")
    except Exception:  # an internal module; if it moves, pay for catch_warnings everywhere
        return True


_WARNS_ON_CORRUPT_INPUT = _backend_warns_on_corrupt_input()

# Each byte that is not part of valid UTF-8 becomes "?", as in the C++ reader: the string
# keeps its length in bytes, so the packet around it stays valid wire format.
_UTF8_ERRORS = "warpscope.question_mark_per_byte"
codecs.register_error(_UTF8_ERRORS, lambda e: ("?" * (e.end - e.start), e.end))


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
