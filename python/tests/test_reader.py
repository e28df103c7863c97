"""Framing, header checks, metadata, truncation at every byte, and corrupt input."""

from __future__ import annotations

import random

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
        assert trace.strings[1] == "gemm_kernel(float*)" and len(trace.strings) == 8
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


def test_directory(tmp_path):
    with pytest.raises(warpscope.TraceError, match="cannot open the trace: Is a directory"):
        warpscope.open(tmp_path)


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
    assert trace.issues == {"unknown_packet_kinds": 1}


def test_corrupt_tag_in_the_middle(trace_path):
    data = bytearray(trace_path.read_bytes())
    offset = len(tb.encode(tb.every_kind()[:5]))
    data[offset] = 0x00
    trace_path.write_bytes(bytes(data))
    trace = warpscope.open(trace_path)
    with pytest.raises(warpscope.TraceError, match=f"found 0x00 at byte {offset}") as error:
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
    assert trace.strings == {1: "a"}
    assert trace.issues == {"packets_after_end_of_trace": 2, "extra_headers": 1,
                            "conflicting_interned_string_definitions": 1}


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
