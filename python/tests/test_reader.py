"""Framing, header checks, metadata, truncation at every byte, and corrupt input."""

from __future__ import annotations

import gzip
import os
import random
import re
import signal

import pytest

import tracebuilder as tb
import warpscope
from warpscope import schema


@pytest.fixture
def trace_path(tmp_path):
    return tb.write(tmp_path / "t.wst", tb.every_kind())


def test_metadata(trace_path):
    with warpscope.open(trace_path) as trace:
        assert trace.header.pid == 4242 and trace.header.format_major == schema.FORMAT_MAJOR
        assert trace.rank == 3
        assert trace.complete and not trace.truncated and trace.truncation_offset is None
        assert trace.strings[1] == "gemm_kernel(float*)" and len(trace.strings) == 10
        assert trace.devices[0].name == "NVIDIA H200"
        assert trace.threads[2].os_tid == 5556
        assert trace.launch_configs[1].block_x == 256
        assert trace.stats == {"writer.events_written": 20,
                               "writer.events_dropped.buffer_full": 0}
        assert trace.stats_final
        assert trace.stats_severity["writer.events_dropped.buffer_full"] == "data_loss"
        assert trace.notices == [warpscope.Notice(5, "error", "pm_sampling",
                                                  "insufficient privileges")]
        assert trace.end_of_trace.timestamp_ns == 400
        assert trace.issues == {} and trace.problems() == []


def test_iteration_yields_every_packet_in_order(trace_path):
    packets = tb.every_kind()
    trace = warpscope.open(trace_path)
    assert list(trace) == packets
    offsets = [offset for offset, _ in trace.packets_with_offsets()]
    sizes = [len(b) for b in tb.frame(packets)]
    assert offsets == [sum(sizes[:i]) for i in range(len(sizes))]


def test_file_parses_as_one_trace_message(trace_path):
    """The contract: the whole file is a serialized Trace."""
    assert list(schema.Trace.FromString(trace_path.read_bytes()).packet) == tb.every_kind()


def test_last_periodic_stats_win_without_final(tmp_path):
    stats = [tb.packet(stats=schema.Stats(counters=[schema.StatCounter(name="a", value=v)]))
             for v in (1, 2)]
    trace = warpscope.open(tb.write(tmp_path / "t.wst", [tb.header()] + stats))
    assert trace.stats == {"a": 2} and not trace.stats_final
    assert not trace.complete and not trace.truncated
    assert trace.problems() == ["the file has no EndOfTrace packet: the writer did not "
                                "finish it"]


def test_every_cut_point(tmp_path):
    """A file cut at any byte yields every whole packet before the cut, and says where."""
    packets = tb.every_kind()
    framed = tb.frame(packets)
    data = b"".join(framed)
    starts = [sum(len(b) for b in framed[:i]) for i in range(len(framed) + 1)]
    path = tmp_path / "cut.wst"
    for cut in range(1, len(data) + 1):
        path.write_bytes(data[:cut])
        if cut < starts[1]:
            with pytest.raises(warpscope.TraceError, match="cut short inside its header"):
                warpscope.open(path)
            continue
        whole = max(i for i, s in enumerate(starts) if s <= cut)
        trace = warpscope.open(path)
        assert list(trace) == packets[:whole], cut
        at_boundary = cut == starts[whole]
        assert trace.truncated == (not at_boundary), cut
        assert trace.truncation_offset == (None if at_boundary else starts[whole]), cut
        assert trace.complete == (cut == len(data)), cut
        trace.close()


def test_truncation_is_known_after_metadata_pass(tmp_path):
    data = tb.encode(tb.every_kind())
    path = tmp_path / "cut.wst"
    path.write_bytes(data[:-1])
    trace = warpscope.open(path)
    assert trace.truncated and trace.truncation_offset == len(data) - len(tb.encode([tb.end(400)]))
    assert not trace.complete and trace.strings[8] == "_Z4axpyPf"
    assert "cut short" in trace.problems()[0]


def test_missing_file(tmp_path):
    with pytest.raises(warpscope.TraceError, match=r"nope\.wst: cannot open the trace: No such file"):
        warpscope.open(tmp_path / "nope.wst")




def test_empty_file(tmp_path):
    (tmp_path / "e.wst").write_bytes(b"")
    with pytest.raises(warpscope.TraceError, match="file is empty"):
        warpscope.open(tmp_path / "e.wst")


def _garbage():
    rng = random.Random(1234)
    cases = {
        "text": b"hello, this is not a trace\n" * 4,
        "elf": b"\x7fELF\x02\x01\x01" + bytes(100),
        "zeros": bytes(64),
        "newline_then_text": b"\n\x05hello world",  # a frame whose payload is not protobuf
        "newline_short": b"\n" + b"x" * 3,  # declared length runs past the end
        "bad_varint": b"\x0a" + b"\xff" * 12,
        "event_first": tb.encode([tb.packet(kernel=schema.KernelEvent(start_ns=1))]),
        "unknown_first": b"\x0a\x03\x98\x06\x01",  # only a field this schema lacks
        "no_version": tb.encode([tb.packet(header=schema.Header(pid=1))]),
    }
    for i in range(20):
        cases[f"random{i}"] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
    return cases


@pytest.mark.parametrize("name,data", sorted(_garbage().items()))
def test_garbage_is_refused_clearly(tmp_path, name, data):
    path = tmp_path / f"{name}.wst"
    path.write_bytes(data)
    with pytest.raises(warpscope.TraceError) as error:
        warpscope.open(path)
    message = str(error.value)
    assert message.startswith(f"warpscope: {path}: ")
    assert "not a warpscope trace" in message
    assert error.value.path == str(path) and error.value.offset == 0


def test_newer_major_is_refused(tmp_path):
    path = tb.write(tmp_path / "t.wst", [tb.header(format_major=schema.FORMAT_MAJOR + 1,
                                                   format_minor=3), tb.end()])
    with pytest.raises(warpscope.TraceError,
                       match=r"format 2\.3 is newer than this reader.*upgrade"):
        warpscope.open(path)


def test_newer_minor_with_unknown_packets_is_read(tmp_path):
    unknown = b"\x0a\x03\x98\x06\x01"  # a packet kind (field 99) this reader does not know
    data = (tb.encode([tb.header(format_minor=schema.FORMAT_MINOR + 5), tb.string(1, "k")])
            + unknown + tb.encode([tb.end()]))
    (tmp_path / "t.wst").write_bytes(data)
    trace = warpscope.open(tmp_path / "t.wst")
    assert trace.complete and trace.strings == {1: "k"}
    assert trace.issues == {"reader.unknown_packets": 1}


def test_corrupt_tag_in_the_middle(trace_path):
    data = bytearray(trace_path.read_bytes())
    offset = len(tb.encode(tb.every_kind()[:5]))
    data[offset] = 0x00
    trace_path.write_bytes(bytes(data))
    trace = warpscope.open(trace_path)
    with pytest.raises(warpscope.TraceError, match=f"corrupt data at byte offset {offset}: "
                       r"expected a packet .*, found 0x00 \(field 0") as error:
        trace.to_dataframes()
    assert error.value.offset == offset
    seen = []
    with pytest.raises(warpscope.TraceError):
        for packet in trace:
            seen.append(packet)
    assert seen == tb.every_kind()[:5]


@pytest.mark.parametrize("bad", [
    b"\x0a\x03\x22\x7f\x00",  # interned_string (tag 0x22) longer than its packet
    b"\x0a\x05hello",  # 'l' is an end-group tag: protobuf 3.x's C++ backend only warns
    b"\x0a\x02\x08\x80",  # a varint cut inside the packet
])
def test_corrupt_payload_in_the_middle(tmp_path, bad):
    data = tb.encode([tb.header()]) + bad + tb.encode([tb.end()])
    (tmp_path / "t.wst").write_bytes(data)
    trace = warpscope.open(tmp_path / "t.wst")
    with pytest.raises(warpscope.TraceError, match="does not parse") as error:
        trace.strings
    assert error.value.offset == len(tb.encode([tb.header()]))


def test_extra_headers_and_packets_after_end_are_counted(tmp_path):
    trace = warpscope.open(tb.write(tmp_path / "t.wst", [
        tb.header(), tb.string(1, "a"), tb.end(), tb.header(), tb.string(1, "b")]))
    assert trace.strings == {1: "b"}  # the later definition replaces it, as in C++
    assert trace.issues == {"reader.packets_after_end_of_trace": 2, "reader.extra_headers": 1,
                            "reader.redefined_ids": 1}


def test_closed_file(trace_path):
    trace = warpscope.open(trace_path)
    trace.close()
    with pytest.raises(warpscope.TraceError, match="closed"):
        list(trace)


def test_lost_events_are_problems(tmp_path):
    trace = warpscope.open(tb.write(tmp_path / "t.wst", [tb.header(), tb.packet(
        stats=schema.Stats(final=True, counters=[
            schema.StatCounter(name="cupti.dropped_records", value=7,
                               severity=schema.SEVERITY_DATA_LOSS),
            schema.StatCounter(name="collector_errors.pm_sampling", value=1,
                               severity=schema.SEVERITY_ERROR),
            schema.StatCounter(name="writer.events_written", value=9)])), tb.end()]))
    assert trace.problems() == ["collector_errors.pm_sampling = 1 (error)",
                                "cupti.dropped_records = 7 (data loss)"]
    with pytest.warns(warpscope.TraceWarning, match="dropped_records = 7"):
        trace.to_dataframes()


# -- framing: the C++ reader's rules for truncated versus corrupt ---------------------------

def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


HEADER = tb.encode([tb.header()])


@pytest.mark.parametrize("tail,what", [
    (b"\x0a" + _varint((256 << 20) + 1), "claims 268435457 bytes, more than the 256 MiB"),
    (b"\x0a" + _varint((256 << 20) + 1) + b"\x08\x01", "claims 268435457 bytes"),
    (b"\x0a" + b"\xff" * 10 + b"\x01", "the packet length is not a valid varint"),
    (b"\x12\x00", r"found 0x12 \(field 2, wire type length-delimited\)"),
    (b"\x8a\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00", "found a malformed varint"),
])
def test_corrupt_framing_after_the_header(tmp_path, tail, what):
    """A length over 256 MiB is corruption even where the file ends before it would."""
    path = tmp_path / "t.wst"
    path.write_bytes(HEADER + tail + tb.encode([tb.end()]))
    trace = warpscope.open(path)
    with pytest.raises(warpscope.TraceError,
                       match=f"corrupt data at byte offset {len(HEADER)}: .*{what}") as error:
        trace.truncated
    assert error.value.offset == len(HEADER)
    # Without the end after it, the verdict is the same.
    path.write_bytes(HEADER + tail)
    with pytest.raises(warpscope.TraceError, match="corrupt data"):
        warpscope.open(path).truncated


@pytest.mark.parametrize("tail", [
    b"\x8a",  # the data ends inside the tag's varint
    b"\x0a",  # ... before the length
    b"\x0a\x80\x80",  # ... inside the length
    b"\x0a" + _varint(256 << 20),  # ... inside a payload of exactly the largest length
    b"\x0a\x05\x08",  # ... inside the payload
])
def test_truncated_framing_after_the_header(tmp_path, tail):
    path = tmp_path / "t.wst"
    path.write_bytes(HEADER + tail)
    trace = warpscope.open(path)
    assert trace.truncated and trace.truncation_offset == len(HEADER)
    assert list(trace) == [tb.header()]


def test_tag_written_as_a_longer_varint_is_a_packet(tmp_path):
    """0x8a 0x00 decodes to the packet tag, as the C++ reader (a varint decoder) sees it."""
    end = tb.encode([tb.end()])
    path = tmp_path / "t.wst"
    path.write_bytes(HEADER + b"\x8a\x00" + end[1:])
    trace = warpscope.open(path)
    assert trace.complete and not trace.truncated and trace.issues == {}


# -- strings that are not UTF-8 -------------------------------------------------------------

def _cpp_utf8_sequence_length(s: bytes, i: int) -> int:
    """analyzers/model/trace_reader.cc's Utf8SequenceLength, as the oracle."""
    def cont(k: int, lo: int = 0x80, hi: int = 0xBF) -> bool:
        return i + k < len(s) and lo <= s[i + k] <= hi
    b0 = s[i]
    if b0 < 0x80:
        return 1
    if 0xC2 <= b0 <= 0xDF:
        return 2 if cont(1) else 0
    if 0xE0 <= b0 <= 0xEF:
        ok1 = cont(1, 0xA0) if b0 == 0xE0 else cont(1, 0x80, 0x9F) if b0 == 0xED else cont(1)
        return 3 if ok1 and cont(2) else 0
    if 0xF0 <= b0 <= 0xF4:
        ok1 = cont(1, 0x90) if b0 == 0xF0 else cont(1, 0x80, 0x8F) if b0 == 0xF4 else cont(1)
        return 4 if ok1 and cont(2) and cont(3) else 0
    return 0


def _cpp_repair(s: bytes) -> bytes:
    out, i = bytearray(s), 0
    while i < len(out):
        n = _cpp_utf8_sequence_length(bytes(out), i)
        if n == 0:
            out[i] = ord("?")
        i += n or 1
    return bytes(out)


def test_utf8_repair_matches_the_cpp_reader_byte_for_byte():
    from warpscope.reader import _repair_utf8
    rng = random.Random(7)
    interesting = [0x41, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0,
                   0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF]
    for _ in range(20000):
        raw = bytes(rng.choice(interesting) for _ in range(rng.randrange(1, 9)))
        repaired = bytearray(raw)
        changed = _repair_utf8(repaired, 0, len(repaired))
        assert bytes(repaired) == _cpp_repair(raw), raw
        assert changed == (bytes(repaired) != raw)


def _with_bad_bytes(packet, good: bytes, bad: bytes) -> bytes:
    assert len(good) == len(bad)
    framed = tb.encode([packet])
    assert framed.count(good) == 1
    return framed.replace(good, bad)


def test_invalid_utf8_in_the_header_and_events_is_repaired_and_counted(tmp_path):
    header = _with_bad_bytes(tb.header(hostname="hostXY", command_line=["run", "argZ"]),
                             b"hostXY", b"ho\xffst\xe2")
    header = header.replace(b"argZ", b"a\xc0gZ")  # same length: the framing stays valid
    string = _with_bad_bytes(tb.string(1, "kernelQQ"), b"kernelQQ", b"ker\xedel\xf0\x9f")
    path = tmp_path / "t.wst"
    path.write_bytes(header + string + tb.encode([
        tb.packet(kernel=schema.KernelEvent(name_id=1, duration_ns=1)), tb.end()]))
    trace = warpscope.open(path)
    assert trace.header.hostname == "ho?st?"
    assert list(trace.header.command_line) == ["run", "a?gZ"]
    assert trace.strings == {1: "ker?el??"}
    assert trace.issues == {"reader.invalid_utf8_strings": 3}
    assert trace.complete and not trace.truncated
    with pytest.warns(warpscope.TraceWarning, match="invalid_utf8_strings = 3"):
        assert list(trace.to_dataframes()["kernels"]["name"]) == ["ker?el??"]


def test_bytes_that_are_not_wire_format_stay_corrupt(tmp_path):
    """Repair is for strings only: a packet that is broken in other ways is still corrupt."""
    path = tmp_path / "t.wst"
    # An InternedString (field 4) that claims 127 bytes of a 5-byte packet, then bad bytes.
    path.write_bytes(HEADER + b"\x0a\x05\x22\x7f\xff\xff\xff" + tb.encode([tb.end()]))
    with pytest.raises(warpscope.TraceError, match="does not parse"):
        warpscope.open(path).truncated


# -- what can be opened ----------------------------------------------------------------------

def test_directory_is_refused(tmp_path):
    with pytest.raises(warpscope.TraceError,
                       match=f"^warpscope: {tmp_path} is a directory, not a trace file$"):
        warpscope.open(tmp_path)


def test_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "pipe.wst"
    os.mkfifo(fifo)
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("open() blocked on a FIFO"))
    signal.alarm(10)
    try:
        with pytest.raises(warpscope.TraceError,
                           match=f"^warpscope: {fifo} is a FIFO, not a trace file$"):
            warpscope.open(fifo)
    finally:
        signal.alarm(0)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_character_device_is_refused_before_reading_it():
    with pytest.raises(warpscope.TraceError,
                       match="^warpscope: /dev/zero is a character device, not a trace file$"):
        warpscope.open("/dev/zero")


def test_gzip_compressed_trace_says_to_decompress_it(tmp_path):
    path = tmp_path / "t.wst.gz"
    path.write_bytes(gzip.compress(tb.encode(tb.every_kind())))
    with pytest.raises(warpscope.TraceError, match=re.escape(
            f"warpscope: {path} looks gzip-compressed; decompress it first (gunzip)")):
        warpscope.open(path)


def test_size_cap(tmp_path):
    path = tb.write(tmp_path / "t.wst", tb.every_kind())
    size = path.stat().st_size
    with pytest.raises(warpscope.TraceError, match=f"is {size} bytes, more than the "
                       f"{size - 1} bytes"):
        warpscope.open(path, max_bytes=size - 1)
    assert warpscope.open(path, max_bytes=size).complete
    assert warpscope.DEFAULT_MAX_TRACE_BYTES == 64 << 30


def test_default_size_cap_refuses_a_larger_file(tmp_path):
    path = tmp_path / "huge.wst"
    try:
        with open(path, "wb") as f:
            f.write(HEADER)
            f.truncate(warpscope.DEFAULT_MAX_TRACE_BYTES + 1)  # sparse: no disk used
    except OSError as e:
        pytest.skip(f"this file system cannot hold a sparse 64 GiB file: {e}")
    with pytest.raises(warpscope.TraceError, match=r"more than the 68719476736 bytes \(64 GiB\)"):
        warpscope.open(path)


def test_cubins_are_joined_from_their_parts(tmp_path):
    parts = [
        tb.packet(cubin=schema.CubinImage(crc=1, image=b"whole", total_bytes=5)),
        tb.packet(cubin=schema.CubinImage(crc=2, image=b"\x7fEL", offset=0, total_bytes=7)),
        tb.packet(cubin=schema.CubinImage(crc=2, image=b"F\x00\x01\x02", offset=3, total_bytes=7)),
        tb.packet(cubin=schema.CubinImage(crc=3, image=b"abc", offset=0, total_bytes=9)),
        tb.packet(cubin=schema.CubinImage(crc=3, image=b"ghi", offset=6, total_bytes=9)),
        tb.packet(cubin=schema.CubinImage(crc=4, image=b"older writer")),
    ]
    path = tb.write(tmp_path / "c.wst", [tb.header()] + parts)
    with warpscope.open(path) as trace:
        assert trace.cubins == {1: b"whole", 2: b"\x7fELF\x00\x01\x02", 4: b"older writer"}
        assert trace.issues.get("model.incomplete_cubins") == 1


def test_old_issue_names_still_look_up_with_a_warning(tmp_path):
    """The issues bear the C++ reader's counter names; the names of the previous release
    still find them for one release, with a DeprecationWarning."""
    path = tb.write(tmp_path / "t.wst", [tb.header(), tb.packet(
        kernel=schema.KernelEvent(name_id=5)), tb.end()])
    trace = warpscope.open(path)
    with pytest.warns(warpscope.TraceWarning):
        trace.to_dataframes()
    assert dict(trace.issues) == {"reader.undefined_string_refs": 1}
    with pytest.warns(DeprecationWarning, match="now named 'reader.undefined_string_refs'"):
        assert trace.issues["undefined_string_refs"] == 1
    with pytest.warns(DeprecationWarning):
        assert "undefined_string_refs" in trace.issues
    with pytest.warns(DeprecationWarning):
        assert trace.issues.get("undefined_thread_refs", 0) == 0
