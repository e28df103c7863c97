"""tests/gpu/recorder/check_attribution.py and check_windows.py, which check the traces of
tests/gpu/recorder/gpu_recorder.sh (issue 35), on made-up traces with known answers: a kernel
without its launch record, a launch on another thread, a wrong count, a window that recorded
nothing for its first 2.2 s; and on bundled traces recorded with driver-API records."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import tracebuilder as tb
from warpscope import schema as s

ROOT = Path(__file__).resolve().parents[2]
RECORDER = ROOT / "tests" / "gpu" / "recorder"
MS = 1_000_000


def run(script: str, *args: str):
    r = subprocess.run([sys.executable, str(RECORDER / script), *map(str, args)],
                       capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def definitions(names):
    packets = [tb.header(), tb.packet(thread=s.ThreadInfo(id=1, os_tid=100, name="main")),
               tb.packet(thread=s.ThreadInfo(id=2, os_tid=101, name="worker"))]
    return packets + [tb.string(i, n) for i, n in enumerate(names, 1)]


NAMES = ["path:eager", "path:graph", "path:worker_thread", "cudaLaunchKernel",
         "cudaGraphLaunch", "cuLaunchKernel", "k", "step", "path:compiled"]
ID = {n: i for i, n in enumerate(NAMES, 1)}


def nvtx(name, start, end, thread):
    return tb.packet(nvtx_range=s.NvtxRangeEvent(name_id=ID[name], start_ns=start,
                                                 duration_ns=end - start, thread_id=thread,
                                                 end_thread_id=thread, is_push_pop=True))


def call(corr, name, start, thread, domain=s.API_DOMAIN_RUNTIME):
    return tb.packet(api_call=s.ApiCallEvent(domain=domain, name_id=ID[name], start_ns=start,
                                             duration_ns=5_000, thread_id=thread,
                                             correlation_id=corr))


def kernel(corr, start, graph_id=0):
    return tb.packet(kernel=s.KernelEvent(name_id=ID["k"], start_ns=start, duration_ns=2_000,
                                          correlation_id=corr, graph_id=graph_id))


def stack(corr):
    return tb.packet(api_stack=s.ApiStackEvent(correlation_id=corr, stack_id=1))


def launch_paths_trace(missing_call=False, wrong_thread=False):
    """path:eager (3 kernels, main thread), path:graph (one cudaGraphLaunch of 2 kernels),
    path:worker_thread (2 kernels on the worker), path:compiled (1 kernel, cuLaunchKernel)."""
    p = definitions(NAMES)
    p += [nvtx("path:eager", 1 * MS, 2 * MS, 1), nvtx("path:graph", 3 * MS, 4 * MS, 1),
          nvtx("path:worker_thread", 5 * MS, 6 * MS, 2), nvtx("path:compiled", 7 * MS, 8 * MS, 1)]
    for i in range(3):
        t0 = 1 * MS + 100_000 * (i + 1)
        p += [call(10 + i, "cudaLaunchKernel", t0, 1), kernel(10 + i, t0 + 20_000), stack(10 + i)]
    p += [call(20, "cudaGraphLaunch", 3 * MS + 100_000, 1), stack(20),
          kernel(20, 3 * MS + 200_000, graph_id=5), kernel(20, 3 * MS + 300_000, graph_id=5)]
    for i in range(2):
        t0 = 5 * MS + 100_000 * (i + 1)
        thread = 1 if wrong_thread and i == 1 else 2
        p += [call(30 + i, "cudaLaunchKernel", t0, thread), kernel(30 + i, t0 + 20_000),
              stack(30 + i)]
    if not missing_call:
        p += [call(40, "cuLaunchKernel", 7 * MS + 100_000, 1, s.API_DOMAIN_DRIVER), stack(40)]
    p += [kernel(40, 7 * MS + 150_000), tb.end(9 * MS)]
    return p


def expected_log(tmp_path, **counts):
    log = tmp_path / "paths.log"
    exact = {"path:eager": 3, "path:graph": 2, "path:worker_thread": 2}
    exact.update(counts)
    log.write_text("warm-up\n" + json.dumps({"expected_kernels": exact,
                                             "min_kernels": {"path:compiled": 1}}) + "\n")
    return log


def test_attribution_passes_when_every_kernel_has_its_call_in_its_range(tmp_path):
    trace = tb.write(tmp_path / "ok.wst", launch_paths_trace())
    code, out = run("check_attribution.py", trace, "--expected", expected_log(tmp_path),
                    "--stacks", "all", "--no-summary")
    assert code == 0, out
    assert "PASS path:graph: 2 kernels as the program launched" in out
    assert "PASS path:compiled: at least 1 kernels" in out
    assert "cuLaunchKernel 1" in out and "cudaGraphLaunch 2" in out
    assert "worker/101" in out


def test_attribution_fails_a_driver_launch_without_its_record(tmp_path):
    trace = tb.write(tmp_path / "nocall.wst", launch_paths_trace(missing_call=True))
    code, out = run("check_attribution.py", trace, "--expected", expected_log(tmp_path),
                    "--no-summary")
    assert code == 1
    assert "FAIL every kernel has an API record of its correlation id: 7 of 8" in out
    assert "FAIL path:compiled: every kernel launched on its thread, inside the range" in out


def test_attribution_fails_a_call_on_another_thread_and_a_wrong_count(tmp_path):
    trace = tb.write(tmp_path / "thread.wst", launch_paths_trace(wrong_thread=True))
    code, out = run("check_attribution.py", trace, "--expected",
                    expected_log(tmp_path, **{"path:eager": 4}), "--no-summary")
    assert code == 1
    assert "FAIL path:worker_thread: every kernel launched on its thread" in out
    assert "1 called on its thread inside it" in out
    assert "FAIL path:eager: 4 kernels as the program launched: 3 in the trace" in out


def test_attribution_fails_a_path_the_program_could_not_run(tmp_path):
    trace = tb.write(tmp_path / "ok.wst", launch_paths_trace())
    log = tmp_path / "paths.log"
    log.write_text(json.dumps({"expected_kernels": {"path:eager": 3},
                               "errors": {"path:nccl": "RuntimeError: no NCCL"}}) + "\n")
    code, out = run("check_attribution.py", trace, "--expected", log, "--no-summary")
    assert code == 1 and "FAIL path:nccl: the program ran it: RuntimeError: no NCCL" in out


def test_attribution_stack_expectations(tmp_path):
    trace = tb.write(tmp_path / "ok.wst", launch_paths_trace())
    code, out = run("check_attribution.py", trace, "--stacks", "none", "--no-summary")
    assert code == 1 and "FAIL no launch stacks (--stacks none): 7 ApiStackEvents" in out


def test_attribution_reads_the_summary_note(tmp_path):
    trace = tb.write(tmp_path / "ok.wst", launch_paths_trace())
    cli = tmp_path / "warpscope"
    note = "note: 900 of 2936 kernels and copies have no API record with their correlation id"
    cli.write_text(f"#!/bin/sh\necho '-- NVTX ranges --'\necho '{note}'\n")
    cli.chmod(0o755)
    code, out = run("check_attribution.py", trace, "--cli", cli)
    assert code == 1 and "FAIL warpscope summary -r nvtx counts every kernel: " + note in out
    note = ("note: 1 of 11 kernels and copies has no API record with their correlation id, "
            "so no NVTX range, thread or call site counts it")
    cli.write_text(f"#!/bin/sh\necho '{note}'\n")
    code, out = run("check_attribution.py", trace, "--cli", cli)
    assert code == 1 and note in out
    cli.write_text("#!/bin/sh\necho '-- NVTX ranges --'\n")
    code, out = run("check_attribution.py", trace, "--cli", cli)
    assert code == 0, out
    code, out = run("check_attribution.py", trace, "--cli", tmp_path / "none")
    assert code == 1 and "warpscope CLI not found" in out


def test_attribution_passes_the_bundled_job_recorded_with_driver_records():
    # Re-recorded with today's defaults (2026-11-29): its cutlass GEMMs and NCCL kernels,
    # launched through the driver API, each have their launch record.
    trace = ROOT / "examples" / "traces" / "cuda13.0_sm90" / "ddp_late_rank" / "rank0.wst"
    code, out = run("check_attribution.py", trace, "--no-summary")
    assert re.search(r"PASS every kernel has an API record of its correlation id: "
                     r"(\d+) of \1\b", out), out


def test_attribution_passes_the_bundled_trace_recorded_with_the_launch_log():
    trace = ROOT / "examples" / "traces" / "cuda13.0_sm90" / "sync_sites.wst"
    code, out = run("check_attribution.py", trace, "--no-summary")
    assert "PASS every kernel has an API record of its correlation id: 2496 of 2496" in out


def steady_trace(first_launch_ns, edges=((1000 * MS, 4000 * MS),), notice=None):
    """Kernels launched every 10 ms from first_launch_ns to 5 s, a step range each; windows
    with control edges."""
    p = definitions(NAMES)
    for i, (b, e) in enumerate(edges, 1):
        p.append(tb.packet(capture_window=s.CaptureWindowEdge(
            window_id=i, begin=True, timestamp_ns=b, trigger=s.CAPTURE_TRIGGER_CONTROL)))
        if notice:
            p.append(tb.packet(notice=s.Notice(timestamp_ns=b, source="session", message=notice)))
    corr = 1
    for t in range(first_launch_ns, 5000 * MS, 10 * MS):
        p += [call(corr, "cudaLaunchKernel", t, 1), kernel(corr, t + 30_000)]
        corr += 1
    for i, (b, e) in enumerate(edges, 1):
        if e is not None:
            p.append(tb.packet(capture_window=s.CaptureWindowEdge(
                window_id=i, begin=False, timestamp_ns=e, trigger=s.CAPTURE_TRIGGER_CONTROL)))
    return p + [tb.end(5000 * MS)]


def test_windows_pass_when_the_window_records_from_its_edge(tmp_path):
    trace = tb.write(tmp_path / "w.wst", steady_trace(505 * MS, notice="attach took 3 ms"))
    requests = tmp_path / "w.requests"
    base = 1_700_000_000_000_000_000  # tracebuilder's unix_time_base_ns
    requests.write_text(json.dumps({"request": "open", "how": "warpscope start",
                                    "unix_ns": base + 997 * MS, "done_unix_ns": base + 999 * MS})
                        + "\n" + json.dumps({"request": "close", "how": "warpscope stop",
                                             "unix_ns": base + 3999 * MS}) + "\n")
    code, out = run("check_windows.py", trace, "--steady", "--windows", 1, "--begin", "control",
                    "--end", "control", "--requests", requests)
    assert code == 0, out
    assert "window 1 kernels per tenth: 30 30 30 30 30 30 30 30 30 30" in out
    assert "warpscope start" in out and "3.0" in out  # asked -> begin, ms
    assert "notice +0.000 ms from a begin edge [session]: attach took 3 ms" in out


def test_windows_fail_a_window_that_recorded_nothing_at_first(tmp_path):
    # The old PyTorch behaviour: the edge at 1 s, the first kernel recorded 2.2 s later.
    trace = tb.write(tmp_path / "late.wst", steady_trace(3205 * MS))
    code, out = run("check_windows.py", trace, "--steady")
    assert code == 1
    assert "window 1 kernels per tenth: 0 0 0 0 0 0 0 20 30 30" in out
    assert "FAIL window 1: kernels in every tenth: fewest 0; first launch 2205.0 ms" in out


def test_windows_fail_a_missing_edge_a_wrong_trigger_and_count(tmp_path):
    trace = tb.write(tmp_path / "open.wst", steady_trace(500 * MS, edges=((1000 * MS, None),)))
    code, out = run("check_windows.py", trace, "--windows", 2, "--begin", "signal")
    assert code == 1
    assert "FAIL 2 window(s): 1" in out and "FAIL window 1 has both edges: has ['begin']" in out


def test_windows_from_a_manifest_with_a_program_that_started_late(tmp_path):
    tb.write(tmp_path / "d.wst", steady_trace(500 * MS))
    base = 1_700_000_000_000_000_000
    (tmp_path / "d.log").write_text(json.dumps({"ready": 7, "unix_ns": base + 1500 * MS,
                                                "first_step_unix_ns": base + 1200 * MS}) + "\n")
    (tmp_path / "manifest.jsonl").write_text(json.dumps(
        {"trace": "d.wst", "log": "d.log", "windows": 1, "begin": "control", "end": "control",
         "steady": True}) + "\n" + json.dumps({"trace": "gone.wst", "log": "gone.log"}) + "\n")
    code, out = run("check_windows.py", tmp_path)
    assert code == 1
    assert "FAIL window 1: the program was stepping when it opened: its first step came 200.0" \
        in out
    assert "FAIL gone.wst: missing" in out


def test_attribution_from_a_manifest(tmp_path):
    tb.write(tmp_path / "torch_paths.wst", launch_paths_trace())
    expected_log(tmp_path).rename(tmp_path / "torch_paths.log")
    (tmp_path / "manifest.jsonl").write_text(json.dumps(
        {"trace": "torch_paths.wst", "log": "torch_paths.log", "stacks": "all"}) + "\n")
    code, out = run("check_attribution.py", tmp_path, "--no-summary")
    assert code == 0, out
    assert "PASS every kernel of the path ranges has its launch stack: 8 of 8" in out
