"""Hostile inputs read by the Python reader and by the C++ CLI (``warpscope info --format
json``): both must give the same verdict (ok / truncated / corrupt / refused), the same
byte offset, the same event counts and the same import counters.

The CLI is found through WARPSCOPE_CLI (ctest sets it) or in build/bin/ of the source tree;
without a built CLI only the Python side's expected verdicts are checked.
"""

from __future__ import annotations

import collections
import functools
import json
import os
import re
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

import tracebuilder as tb
import warpscope
from warpscope import schema

SOURCE_DIR = Path(__file__).resolve().parents[2]
# C++ import counters that both readers count (the Python reader's issues bear their names).
COUNTERS = {
    "reader.undefined_string_refs", "reader.undefined_launch_config_refs",
    "reader.undefined_thread_refs", "reader.redefined_ids", "reader.invalid_utf8_strings",
    "reader.extra_headers", "reader.packets_after_end_of_trace", "reader.unknown_packets",
    "model.pm_samples_without_metric_set", "model.pm_sample_value_count_mismatch",
    "model.pc_stall_reasons_length_mismatch"}
# The kinds `warpscope info` counts (its events table).
EVENT_KINDS = ("kernel", "memcpy", "memset", "memory", "synchronization", "api_call",
               "nvtx_range", "nvtx_mark", "graph_launch", "pm_sample", "pc_samples",
               "capture_window", "overhead", "notice")


@dataclass(frozen=True)
class Reading:
    """What a reader made of a file. Offset: of the partial packet, or of the corruption."""

    verdict: str  # "ok", "truncated", "corrupt" or "refused"
    offset: Optional[int] = None
    complete: Optional[bool] = None
    counts: Optional[Tuple[Tuple[str, int], ...]] = None
    counters: Optional[Tuple[Tuple[str, int], ...]] = None


def event_counts(trace: warpscope.TraceFile) -> collections.Counter:
    """Packets per kind, counted as `warpscope info` counts events: a PC sample batch split
    over several packets is one batch, and a capture window end that closes no open
    window is not an edge (the CLI counts it as an import problem instead)."""
    counts: collections.Counter = collections.Counter()
    last_batch = None
    open_windows = set()
    for kind, message in trace.scan():
        if kind == "pc_samples":
            if message.continuation and last_batch == (message.device_id, message.context_id):
                continue
            last_batch = (message.device_id, message.context_id)
        elif kind == "capture_window":
            if message.begin:
                open_windows.add(message.window_id)
            elif message.window_id in open_windows:
                open_windows.remove(message.window_id)
            else:
                continue
        counts[kind] += 1
    return counts


def python_reading(path: Path) -> Reading:
    try:
        trace = warpscope.open(path)
    except warpscope.TraceError:
        return Reading("refused")
    try:
        counts = event_counts(trace)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", warpscope.TraceWarning)
            trace.to_dataframes()  # counts the references to undefined ids
    except warpscope.TraceError as e:
        return Reading("corrupt", e.offset)
    finally:
        trace.close()
    return Reading("truncated" if trace.truncated else "ok", trace.truncation_offset,
                   trace.complete, tuple((k, counts.get(k, 0)) for k in EVENT_KINDS),
                   tuple(sorted((k, v) for k, v in trace.issues.items()
                                if k in COUNTERS)))


def cli_path() -> Optional[Path]:
    configured = os.environ.get("WARPSCOPE_CLI")
    if configured:
        assert Path(configured).is_file(), f"WARPSCOPE_CLI={configured} does not exist"
        return Path(configured)
    built = SOURCE_DIR / "build" / "bin" / "warpscope"
    return built if built.is_file() else None


def cli_reading(cli: Path, path: Path) -> Reading:
    result = subprocess.run([str(cli), "info", "--format", "json", str(path)],
                            capture_output=True, timeout=60)
    stderr = result.stderr.decode("utf-8", "replace")
    if result.returncode == 1:
        corrupt = re.search(r"corrupt data at byte offset (\d+)", stderr)
        return Reading("corrupt", int(corrupt[1])) if corrupt else Reading("refused")
    assert result.returncode == 0, f"{path}: exit {result.returncode}: {stderr}"
    info = json.loads(result.stdout)
    scalars = info["scalars"]
    partial = scalars["partial_packet"]
    counters = {c["name"]: c["value"] for c in info["counters"]
                if c["source"] == "import" and c["name"] in COUNTERS}
    events = {e["kind"]: e["count"] for e in info["events"]}
    return Reading("truncated" if partial else "ok",
                   scalars["partial_packet_offset"] if partial else None,
                   scalars["end_reason"] != "",
                   tuple((k, events[k]) for k in EVENT_KINDS),
                   tuple(sorted(counters.items())))


# -- the hostile inputs -------------------------------------------------------------------

def base_packets() -> List[object]:
    """every_kind() with a packet longer than 127 bytes, so that one length takes two bytes."""
    packets = tb.every_kind()
    packets.insert(3, tb.string(100, "x" * 300))
    return packets


def truncations() -> List[Tuple[str, bytes, Optional[str]]]:
    """Cut at every packet boundary, after each tag, after each length, one byte short."""
    framed = tb.frame(base_packets())
    data = b"".join(framed)
    starts = [sum(len(f) for f in framed[:i]) for i in range(len(framed) + 1)]
    cases = []
    for i, start in enumerate(starts[:-1]):
        length_bytes = 1 if framed[i][1] < 0x80 else 2
        # cut -> the verdict: inside the header the file is refused.
        for what, cut in (("boundary", start), ("after_tag", start + 1),
                          ("inside_length", start + 1 + length_bytes - 1),
                          ("after_length", start + 1 + length_bytes),
                          ("one_short", starts[i + 1] - 1)):
            if cut == 0 or (what == "inside_length" and length_bytes == 1):
                continue
            verdict = "refused" if i == 0 else "ok" if what == "boundary" else "truncated"
            cases.append((f"cut_{what}_{i}", data[:cut], verdict))
    cases.append(("whole", data, "ok"))
    return cases


def flipped_lengths() -> List[Tuple[str, bytes, Optional[str]]]:
    """Each bit of each length byte flipped, one at a time (the verdict varies)."""
    framed = tb.frame(base_packets())
    cases = []
    for i in range(len(framed)):
        length_bytes = 1 if framed[i][1] < 0x80 else 2
        for at in range(1, 1 + length_bytes):
            for bit in range(8):
                packets = list(framed)
                bad = bytearray(packets[i])
                bad[at] ^= 1 << bit
                packets[i] = bytes(bad)
                cases.append((f"flip_{i}_{at}_{bit}", b"".join(packets), None))
    return cases


def bad_utf8() -> List[Tuple[str, bytes, Optional[str]]]:
    def spoil(packet: object, good: bytes, bad: bytes) -> bytes:
        framed = tb.encode([packet])
        assert len(good) == len(bad) and framed.count(good) == 1
        return framed.replace(good, bad)

    s = schema
    header = tb.encode([tb.header()])
    end = tb.encode([tb.end()])
    kernel = tb.encode([tb.packet(kernel=s.KernelEvent(name_id=1, duration_ns=1))])
    return [
        ("utf8_header", spoil(tb.header(hostname="nodeXYZ", command_line=["a", "bcd"]),
                              b"nodeXYZ", b"no\xffd\xe2\x82\xc0") + end, "ok"),
        ("utf8_interned_string", header + spoil(tb.string(1, "kernelQQ"), b"kernelQQ",
                                                b"k\xedrnel\xf0\x9f") + kernel + end, "ok"),
        ("utf8_thread_and_notice", header + spoil(
            tb.packet(thread=s.ThreadInfo(id=1, name="thrAA")), b"thrAA", b"thr\x80\xbf")
         + spoil(tb.packet(notice=s.Notice(source="src", message="msgBB")), b"msgBB",
                 b"msg\xf5\xf8") + end, "ok"),
        ("utf8_metric_names", header + spoil(
            tb.packet(pm_metric_set=s.PmMetricSet(id=1, metric_names=["okay", "metWW"])),
            b"metWW", b"met\xc3\x28") + tb.encode([tb.packet(
                pm_sample=s.PmSample(metric_set_id=1, values=[1.0, 2.0]))]) + end, "ok"),
        ("utf8_and_truncated", header + spoil(tb.string(1, "abcd"), b"abcd",
                                              b"a\xffcd") + end[:-1], "truncated"),
    ]


def duplicates() -> List[Tuple[str, bytes, Optional[str]]]:
    s = schema

    def kernel(name_id: int, config: int = 0) -> object:
        return tb.packet(kernel=s.KernelEvent(name_id=name_id, launch_config_id=config))

    def api(name_id: int, thread_id: int) -> object:
        return tb.packet(api_call=s.ApiCallEvent(name_id=name_id, thread_id=thread_id))

    thread = functools.partial(s.ThreadInfo)
    cases = {
        "dup_string_other_value": [tb.string(1, "a"), kernel(1), tb.string(1, "b"), kernel(1)],
        "dup_string_same_value": [tb.string(1, "a"), tb.string(1, "a"), kernel(1)],
        "dup_string_id_0": [tb.string(0, "zero"), kernel(0)],
        "dup_thread": [tb.string(1, "f"), tb.packet(thread=thread(id=1, os_tid=1)), api(1, 1),
                       tb.packet(thread=thread(id=1, os_tid=2)), api(1, 1),
                       tb.packet(thread=thread(id=1, os_tid=2)), api(1, 2)],
        "dup_launch_config": [tb.string(1, "k"),
                              tb.packet(launch_config=s.LaunchConfig(id=1, grid_x=1)),
                              kernel(1, 1),
                              tb.packet(launch_config=s.LaunchConfig(id=1, grid_x=2)),
                              kernel(1, 1), kernel(1, 3)],
        "use_before_definition": [kernel(1, 1), api(1, 1), tb.string(1, "k"),
                                  tb.packet(thread=thread(id=1)), kernel(1), api(1, 1),
                                  tb.packet(nvtx_range=s.NvtxRangeEvent(
                                      name_id=9, thread_id=5, end_thread_id=5)),
                                  tb.packet(nvtx_range=s.NvtxRangeEvent(
                                      name_id=9, thread_id=5, end_thread_id=6))],
        "pm_without_set_and_mismatch": [
            tb.packet(pm_sample=s.PmSample(metric_set_id=1, values=[1.0])),
            tb.packet(pm_metric_set=s.PmMetricSet(id=1, metric_names=["a", "b"])),
            tb.packet(pm_sample=s.PmSample(metric_set_id=1, values=[1.0])),
            tb.packet(pm_sample=s.PmSample(metric_set_id=1, values=[1.0, 2.0]))],
        "extra_header_after_end": [tb.string(1, "a"), tb.end(), tb.header(), tb.string(1, "b")],
    }
    return [(name, tb.encode([tb.header()] + packets + [tb.end()]), "ok")
            for name, packets in cases.items()]


def odd_files() -> List[Tuple[str, bytes, Optional[str]]]:
    header = tb.encode([tb.header()])
    end = tb.encode([tb.end()])
    unknown_kind = b"\x0a\x03\x98\x06\x01"  # TracePacket field 99, which the schema lacks
    kernel = tb.encode([tb.packet(kernel=schema.KernelEvent(name_id=0))])
    kernel_with_unknown_field = b"\x0a" + bytes([kernel[1] + 3]) + kernel[2:] + b"\x98\x06\x01"
    return [
        ("empty", b"", "refused"),
        ("zeros", bytes(4096), "refused"),
        ("header_then_zeros", header + bytes(64), "corrupt"),
        ("text", b"this is not a trace\n", "refused"),
        ("newer_major", tb.encode([tb.header(format_major=schema.FORMAT_MAJOR + 1),
                                   tb.end()]), "refused"),
        ("newer_minor", tb.encode([tb.header(format_minor=schema.FORMAT_MINOR + 1)])
         + unknown_kind + kernel_with_unknown_field + end, "ok"),
        ("empty_packet", header + b"\x0a\x00" + end, "ok"),
        ("no_format_version", tb.encode([tb.packet(header=schema.Header(pid=1))]), "refused"),
        ("event_first", kernel + header + end, "refused"),
        ("length_over_256MiB", header + b"\x0a\x81\x80\x80\x80\x01" + end, "corrupt"),
        ("length_over_256MiB_at_end", header + b"\x0a\x81\x80\x80\x80\x01", "corrupt"),
        ("length_exactly_256MiB_at_end", header + b"\x0a\x80\x80\x80\x80\x01", "truncated"),
        ("length_varint_11_bytes", header + b"\x0a" + b"\x80" * 10 + b"\x01", "corrupt"),
        ("tag_as_long_varint", header + b"\x8a\x00" + end[1:], "ok"),
        ("tag_cut_inside_varint", header + b"\x8a", "truncated"),
        ("wrong_tag", header + b"\x12\x00" + end, "corrupt"),
        ("payload_not_protobuf", header + b"\x0a\x05hello" + end, "corrupt"),
    ]


@functools.lru_cache(maxsize=None)
def hostile_inputs() -> Tuple[Tuple[str, bytes, Optional[str]], ...]:
    cases = truncations() + flipped_lengths() + bad_utf8() + duplicates() + odd_files()
    names = [name for name, _, _ in cases]
    assert len(names) == len(set(names))
    return tuple(cases)


def write_all(folder: Path) -> Dict[str, Tuple[Path, Optional[str]]]:
    files = {}
    for name, data, expected in hostile_inputs():
        path = folder / f"{name}.wst"
        path.write_bytes(data)
        files[name] = (path, expected)
    return files


def test_python_verdicts(tmp_path):
    wrong = [f"{name}: expected {expected}, read {python_reading(path)}"
             for name, (path, expected) in write_all(tmp_path).items()
             if expected is not None and python_reading(path).verdict != expected]
    assert not wrong, "\n".join(wrong)
    # Flipping length bits gives each verdict at least once: the inputs are not all alike.
    verdicts = {python_reading(tmp_path / f"{name}.wst").verdict
                for name, _, _ in flipped_lengths()}
    assert verdicts == {"ok", "truncated", "corrupt", "refused"}


def test_same_reading_as_the_cli(tmp_path):
    cli = cli_path()
    if cli is None:
        pytest.skip("the C++ CLI is not built (build/bin/warpscope); ctest runs this with it")
    files = write_all(tmp_path)
    differences = []
    for name, (path, _) in files.items():
        py, cpp = python_reading(path), cli_reading(cli, path)
        if py != cpp:
            differences.append(f"{name}:\n  python {py}\n  cli    {cpp}")
    assert not differences, f"{len(differences)} of {len(files)} differ:\n" + "\n".join(
        differences)
