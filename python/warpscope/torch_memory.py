"""PyTorch's own memory history read beside a trace: which tensors held the device at its peak.

warpscope records device memory at the CUDA level: the caching allocator's segments, NCCL's
buffers, cuBLAS's workspace. What a segment holds (the tensors, each with the Python line that
made it) only PyTorch knows. When a program also ran
``torch.cuda.memory._record_memory_history()`` and dumped a snapshot
(``torch.cuda.memory._dump_snapshot("snap.pickle")``), :func:`torch_memory` replays that
history up to each moment ``warpscope memory`` singles out (each device's peak, each refused
request) and lists the tensors live then, with their lines. The snapshot is never required:
``warpscope memory`` stands without it.

The snapshot is a pickle. It is read with an unpickler that makes no object but plain
containers, numbers and strings, so a file from elsewhere cannot run code when read.
"""
import pickle
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pandas as pd

from .errors import Error

# Frames of these files are PyTorch's or Python's own: the site is the innermost frame that
# is none of them (the program's line that made the tensor).
_LIBRARY_MARKS = ("/torch/", "/site-packages/", "/dist-packages/", "<frozen", "/lib/python3")


class _PlainUnpickler(pickle.Unpickler):
    """Plain dicts, lists, numbers and strings only: a class or function named is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"it names {module}.{name}, which a snapshot does not")


def load_snapshot(path: str) -> Dict[str, Any]:
    """Reads a snapshot of ``torch.cuda.memory._dump_snapshot``; raises :class:`Error` when
    the file is missing, not a pickle of plain data, or holds no allocation history."""
    try:
        with open(path, "rb") as f:
            snapshot = _PlainUnpickler(f).load()
    except OSError as e:
        raise Error(f"{path}: cannot read the snapshot: {e.strerror or e}") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError) as e:
        raise Error(f"{path}: not a PyTorch memory snapshot ({e})") from None
    traces = snapshot.get("device_traces") if isinstance(snapshot, dict) else None
    if not isinstance(traces, list):
        raise Error(f"{path}: not a PyTorch memory snapshot (no device_traces)")
    if not any(traces):
        raise Error(f"{path}: the snapshot holds no allocation history: call "
                    "torch.cuda.memory._record_memory_history() before the part to see, "
                    "and _dump_snapshot() after it")
    return snapshot


# Native frames of PyTorch's own capture and of the allocator: passed over for a site.
_PLUMBING = ("torch::unwind", "torch::CapturedTraceback", "torch::cuda::", "c10::")


def site_of(frames: Sequence[Dict[str, Any]]) -> str:
    """The innermost frame of the program's own Python code, as ``file:line (function)``.
    Without one (a tensor made on the autograd thread, whose stack has no Python frame): the
    innermost autograd node (``...Backward0::apply``), else the innermost frame past the
    allocator, by name; the innermost Python frame when every Python frame is a library's;
    "no stack" without frames."""
    def text(f: Dict[str, Any]) -> str:
        return f"{f.get('filename', '?')}:{f.get('line', 0)} ({f.get('name', '?')})"
    python = [f for f in frames if str(f.get("filename", "")).endswith(".py")]
    for f in python:
        if not any(mark in str(f.get("filename", "")) for mark in _LIBRARY_MARKS):
            return text(f)
    if python:
        return text(python[0])
    names = [str(f.get("name", "")) for f in frames]
    for name in names:
        if "Backward" in name and "::apply(" in name:
            return name.split("(", 1)[0]
    for name in names:
        if name and not name.startswith(_PLUMBING):
            return name.split("(", 1)[0]
    return names[0].split("(", 1)[0] if names else "no stack"


_SEGMENT_ACTIONS = ("segment_alloc", "segment_free", "segment_map", "segment_unmap")


def _held_on_plateau(entries: Sequence[Dict[str, Any]], at_us: int,
                     address: Optional[int]) -> Tuple[Dict[int, Dict[str, Any]], int]:
    """The tensors live on the plateau that begins at ``at_us`` (µs since the epoch), at the
    moment in it when they weigh the most; and the plateau's begin as PyTorch's clock has it.

    A moment of the trace is a device-level event (a segment made, a request refused). Device
    memory stays as it is until the allocator's next segment event, while tensors come and go
    inside the segments; PyTorch's own entry for them follows the device-level event by a few
    µs, and the two clocks may differ by more. So: when the history has the segment of the
    moment (same address, within 10 ms; without the address, the first segment made in the
    millisecond after), the plateau begins at its entry; it ends at the next segment event. A block is freed when its free completed (the stream that used it was
    done); in a history without completions, when it was asked to be."""
    made = [e for e in entries if e.get("action") in ("segment_alloc", "segment_map")]
    if address:
        near = [e for e in made if e.get("addr") == address and abs(e["time_us"] - at_us) <= 10_000]
    else:  # the first segment made within 1 ms after: most likely the moment's own
        near = [e for e in made if at_us <= e["time_us"] <= at_us + 1000][:1]
    if near:
        at_us = min(near, key=lambda e: abs(e["time_us"] - at_us))["time_us"]
    completions = any(e.get("action") == "free_completed" for e in entries)
    free = "free_completed" if completions else "free_requested"

    def replay(upto: int, on_state: Any = None) -> Dict[int, Dict[str, Any]]:
        """The live tensors after entries[:upto]; `on_state(applied, bytes)` after each."""
        live: Dict[int, Dict[str, Any]] = {}
        held = 0
        for i, e in enumerate(entries[:upto]):
            action, addr = e.get("action"), e.get("addr", 0)
            if action == "alloc":
                held += e.get("size", 0) - live.get(addr, {}).get("size", 0)
                live[addr] = e
            elif action == free and addr in live:
                held -= live.pop(addr).get("size", 0)
            if on_state:
                on_state(i + 1, held)
        return live

    # The plateau: from the last entry at or before the moment to the next segment event.
    begin = sum(1 for e in entries if e["time_us"] <= at_us)
    end = next((i for i in range(begin, len(entries))
                if entries[i].get("action") in _SEGMENT_ACTIONS), len(entries))
    best = [begin, -1]  # entries applied at the heaviest state on it, and its bytes

    def weigh(applied: int, held: int) -> None:
        if applied >= begin and held > best[1]:
            best[:] = [applied, held]

    replay(end, weigh)
    return replay(best[0]), at_us


def _moments(memory: Dict[str, pd.DataFrame]) -> List[Tuple[int, str, int, Optional[int]]]:
    """(device, what, trace ns, the address of the block allocated then, if listed): each
    device's peak and each refused request."""
    blocks = memory.get("largest_blocks")
    out = []
    for r in memory["devices"].itertuples():
        address = None
        if blocks is not None and len(blocks):
            at = blocks[(blocks["device"] == r.device) & (blocks["allocated_ns"] == r.peak_ns)]
            address = int(str(at["address"].iloc[0]), 0) if len(at) else None
        out.append((int(r.device), "peak", int(r.peak_ns), address))
    failures = memory.get("failures")
    if failures is not None:
        for i, r in enumerate(failures.itertuples(), 1):
            out.append((int(r.device), f"failed request {i}", int(r.timestamp_ns), None))
    return out


def join_history(snapshot: Dict[str, Any], memory: Dict[str, pd.DataFrame],
                 unix_time_base_ns: int, top: int = 10) -> Dict[str, pd.DataFrame]:
    """The core of :func:`torch_memory`, on tables already read: ``memory`` as
    ``warpscope.memory`` gives them, ``unix_time_base_ns`` the trace's time 0 since the epoch
    (its Header). Snapshot times (``time_us``) are µs since the epoch."""
    traces = snapshot["device_traces"]
    # Integers until the difference: µs since the epoch times 1000 is past a double's 53 bits.
    to_trace_ms = lambda us: (int(us) * 1000 - unix_time_base_ns) / 1e6  # noqa: E731
    blocks, sites, coverage = [], [], []
    for device, what, ns, address in _moments(memory):
        entries = traces[device] if device < len(traces) else []
        timed = [e for e in entries if "time_us" in e]
        at_us = (unix_time_base_ns + ns) // 1000
        covered = bool(timed) and timed[0]["time_us"] <= at_us <= timed[-1]["time_us"] + 1_000_000
        live, begin_us = _held_on_plateau(timed, at_us, address) if covered else ({}, at_us)
        coverage.append({"device": device, "moment": what, "at_ms": ns / 1e6,
                         "history_entries": len(entries),
                         "history_from_ms": to_trace_ms(timed[0]["time_us"]) if timed else None,
                         "history_to_ms": to_trace_ms(timed[-1]["time_us"]) if timed else None,
                         "covered": covered, "clock_offset_us": begin_us - at_us})
        if not covered:
            continue
        ranked = sorted(live.values(), key=lambda e: -e.get("size", 0))
        total = sum(e.get("size", 0) for e in ranked)
        by_site: Dict[str, List[int]] = {}
        for e in ranked:
            acc = by_site.setdefault(site_of(e.get("frames", [])), [0, 0])
            acc[0] += e.get("size", 0)
            acc[1] += 1
        for e in ranked[:top]:
            blocks.append({"device": device, "moment": what, "bytes": e.get("size", 0),
                           "site": site_of(e.get("frames", [])),
                           "allocated_ms": to_trace_ms(e["time_us"]),
                           "stream": e.get("stream", 0), "address": e.get("addr", 0)})
        for site, (size, count) in sorted(by_site.items(), key=lambda kv: -kv[1][0])[:top]:
            sites.append({"device": device, "moment": what, "site": site, "bytes": size,
                          "tensors": count, "percent": 100.0 * size / total if total else 0.0})
    return {"coverage": pd.DataFrame(coverage, columns=[
                "device", "moment", "at_ms", "history_entries", "history_from_ms",
                "history_to_ms", "covered", "clock_offset_us"]),
            "live_tensors": pd.DataFrame(blocks, columns=[
                "device", "moment", "bytes", "site", "allocated_ms", "stream", "address"]),
            "sites": pd.DataFrame(sites, columns=[
                "device", "moment", "site", "bytes", "tensors", "percent"])}


def torch_memory(trace: str, snapshot: str, top: int = 10,
                 memory: Optional[Dict[str, pd.DataFrame]] = None) -> Dict[str, pd.DataFrame]:
    """The tensors PyTorch's history says were live at each moment ``warpscope memory``
    singles out in ``trace`` (each device's peak, each refused request), from the snapshot
    ``snapshot`` dumped by the same process. Returns DataFrames:

    - ``coverage``: each moment, and whether the history covers it (the history is a ring of
      ``max_entries``: a moment before its first entry cannot be joined); ``clock_offset_us``,
      PyTorch's time of the moment's segment less the trace's, where the history has it;
    - ``live_tensors``: the ``top`` largest tensors live at each covered moment (when they
      weigh the most before the allocator's next segment event), with the line that made
      each (``site``) and when (ms since the trace's time 0);
    - ``sites``: the live bytes at each covered moment by line, largest first.

    ``memory``: ``warpscope.memory(trace)``'s tables when already read."""
    from . import memory as memory_row, open as open_trace
    if top < 1:
        raise Error(f"top must be 1 or more, not {top}")
    history = load_snapshot(snapshot)
    tables = memory if memory is not None else memory_row(trace)
    with open_trace(trace) as t:
        base = t.header.unix_time_base_ns
    return join_history(history, tables, base, top)
