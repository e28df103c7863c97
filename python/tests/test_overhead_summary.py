"""bench/overhead/overhead_summary.py, which tests/gpu/advise/gpu_advise.sh runs on the GPU: the recording's own
time per kind, and the program's calls a long flush overlapped, on a made-up trace."""

from __future__ import annotations

from pathlib import Path

import pytest

import tracebuilder as tb
from script_module import load_script
from warpscope import schema

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "overhead" / "overhead_summary.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="not in a warpscope source tree")


def trace(tmp_path: Path) -> Path:
    """Thread 1 (tid 100) is the program: a cudaMemcpy from 1.0 to 7.0 ms, a launch at 8 ms.
    Thread 2 (tid 200) is warpscope's: a 4.9 ms flush from 2.0 ms with a 0.2 ms buffer inside,
    and a 0.1 ms flush at 250 ms."""
    ms = 1_000_000
    packets = [
        tb.header(),
        tb.packet(thread=schema.ThreadInfo(id=1, cupti_thread_id=100, os_tid=100, name="main")),
        tb.packet(thread=schema.ThreadInfo(id=2, cupti_thread_id=200, os_tid=200)),
        tb.string(1, "cudaMemcpy"), tb.string(2, "cudaLaunchKernel"),
        tb.string(3, "WARPSCOPE_FLUSH"), tb.string(4, "WARPSCOPE_BUFFER"),
        tb.packet(api_call=schema.ApiCallEvent(name_id=1, start_ns=1 * ms, duration_ns=6 * ms,
                                               thread_id=1, correlation_id=1)),
        tb.packet(api_call=schema.ApiCallEvent(name_id=2, start_ns=8 * ms, duration_ns=5_000,
                                               thread_id=1, correlation_id=2)),
        tb.packet(overhead=schema.OverheadEvent(kind_id=3, start_ns=2 * ms,
                                                duration_ns=4_900_000, thread_id=2)),
        tb.packet(overhead=schema.OverheadEvent(kind_id=4, start_ns=2 * ms + 100_000,
                                                duration_ns=200_000, thread_id=2)),
        tb.packet(overhead=schema.OverheadEvent(kind_id=3, start_ns=250 * ms,
                                                duration_ns=100_000, thread_id=2)),
        tb.end(300 * ms),
    ]
    return tb.write(tmp_path / "t.wst", packets)


def test_kinds_and_the_calls_a_long_flush_held(tmp_path):
    lines = load_script(SCRIPT).summarize(str(trace(tmp_path)), 500_000)
    text = "\n".join(lines)
    assert "3 overhead records, 2 API calls" in lines[0]
    assert "WARPSCOPE_FLUSH: 2, median 2500.0 us, max 4900.0 us, total 5.00 ms" in text
    assert "WARPSCOPE_BUFFER: 1, median 200.0 us" in text
    # Only the 4.9 ms flush is long; the copy call ran on 100 us past its end.
    assert sum("flush at" in line for line in lines) == 1
    assert "4900.0 us: 1 program calls overlapped it, 1 still running at its end: cudaMemcpy " \
           "ended 100.0 us after" in text


def test_unreadable_trace_is_one_line_and_status_1(tmp_path, capsys):
    bad = tmp_path / "bad.wst"
    bad.write_bytes(b"not a trace")
    assert load_script(SCRIPT).main([str(bad)]) == 1
    assert capsys.readouterr().out.startswith(f"== {bad}: ")
