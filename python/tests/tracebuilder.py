"""Builds `.wst` bytes in tests with the schema's own classes.

For traces whose packets a test names field by field, and for inputs the writer never produces
(hostile bytes); realistic traces come from the C++ fixture builder through the
warpscope-fixture tool (tests/fixtures/synthetic_trace.h says which to use when).

Framing goes through ``Trace.SerializeToString`` (the runtime's encoder), not through
anything the reader shares, so a framing bug in the reader cannot hide itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, List

from warpscope import schema


def packet(**kwargs: Any) -> Any:
    """A TracePacket with one member set, e.g. ``packet(kernel=schema.KernelEvent(...))``."""
    return schema.TracePacket(**kwargs)


def header(**kwargs: Any) -> Any:
    fields = dict(format_major=schema.FORMAT_MAJOR, format_minor=schema.FORMAT_MINOR,
                  tool_version="0.1.0", pid=4242, hostname="node7", producer="fixture:test",
                  clock_domain=schema.CLOCK_DOMAIN_SYNTHETIC, time_base_ns=1_000_000,
                  unix_time_base_ns=1_700_000_000_000_000_000)
    fields.update(kwargs)
    return packet(header=schema.Header(**fields))


def frame(packets: Iterable[Any]) -> List[bytes]:
    """Each packet as its own ``Trace.packet`` field (tag, length, bytes)."""
    return [schema.Trace(packet=[p]).SerializeToString() for p in packets]


def encode(packets: Iterable[Any]) -> bytes:
    return b"".join(frame(packets))


def write(path: Path, packets: Iterable[Any]) -> Path:
    path.write_bytes(encode(packets))
    return path


def string(ident: int, value: str) -> Any:
    return packet(interned_string=schema.InternedString(id=ident, value=value))


def end(ts: int = 0) -> Any:
    return packet(end_of_trace=schema.EndOfTrace(timestamp_ns=ts,
                                                 reason=schema.END_REASON_EXIT))


CRC = 0xF00D_CAFE_DEAD_BEEF  # above 2**63: checks that cubin_crc keeps all 64 bits
LONG_SCOREBOARD = "smsp__pcsamp_warps_issue_stalled_long_scoreboard"
SELECTED = "smsp__pcsamp_warps_issue_stalled_selected"
WARPS_ACTIVE = "sm__warps_active.avg.per_cycle_active"
CYCLES = "gr__cycles_elapsed.max"


def _definitions() -> List[Any]:
    """every_kind's header, device, context, strings, launch config and threads."""
    s = schema
    return [
        header(rank_env=[s.KeyValue(key="RANK", value="3"), s.KeyValue(key="WORLD_SIZE",
                                                                      value="8")],
               command_line=["python", "train.py"]),
        packet(device=s.Device(id=0, name="NVIDIA H200", compute_capability_major=9,
                               compute_capability_minor=0, sm_count=132, max_warps_per_sm=64,
                               max_shared_memory_per_sm=233472)),
        packet(context=s.ContextInfo(id=1, device_id=0)),
        string(1, "gemm_kernel(float*)"),
        string(2, "_Z11gemm_kernelPf"),
        string(3, "cudaLaunchKernel"),
        string(4, "forward"),
        string(5, "my_domain"),
        string(6, "step_begin"),
        string(7, "CUPTI_BUFFER_FLUSH"),
        string(8, "_Z4axpyPf"),
        packet(launch_config=s.LaunchConfig(id=1, grid_x=128, grid_y=2, grid_z=1, block_x=256,
                                            block_y=1, block_z=1, registers_per_thread=32,
                                            static_shared_memory=1024,
                                            dynamic_shared_memory=2048)),
        packet(thread=s.ThreadInfo(id=1, cupti_thread_id=0xDEAD, os_tid=5555, name="main")),
        packet(thread=s.ThreadInfo(id=2, cupti_thread_id=0xBEEF, os_tid=5556, name="worker")),
    ]


def every_kind() -> List[Any]:
    """A small trace with at least one packet of every kind, ids defined before use."""
    s = schema
    return _definitions() + [
        packet(capture_window=s.CaptureWindowEdge(window_id=1, begin=True, timestamp_ns=10,
                                                  trigger=s.CAPTURE_TRIGGER_PROCESS)),
        string(9, "train.py"),
        string(10, "train_step"),
        packet(stack_frame=s.StackFrame(id=1, kind=s.FRAME_KIND_PYTHON, file_id=9,
                                        function_id=10, line=57, first_line=50)),
        packet(call_stack=s.CallStack(id=1, frame_ids=[1])),
        packet(api_stack=s.ApiStackEvent(correlation_id=11, stack_id=1, timestamp_ns=90,
                                         domain=s.API_DOMAIN_RUNTIME, callback_id=211,
                                         name_id=3)),
        packet(api_call=s.ApiCallEvent(domain=s.API_DOMAIN_RUNTIME, name_id=3, start_ns=90,
                                       duration_ns=8, thread_id=1, correlation_id=11,
                                       callback_id=211)),
        packet(kernel=s.KernelEvent(name_id=1, mangled_name_id=2, launch_config_id=1,
                                    start_ns=100, duration_ns=50, device_id=0, context_id=1,
                                    stream_id=7, correlation_id=11, grid_id=99)),
        packet(nvtx_range=s.NvtxRangeEvent(name_id=4, domain_id=5, category=2,
                                           color=0xFF00FF00, start_ns=80, duration_ns=200,
                                           thread_id=1, end_thread_id=2)),
        packet(nvtx_range=s.NvtxRangeEvent(name_id=4, start_ns=85, duration_ns=20, thread_id=1,
                                           end_thread_id=1, is_push_pop=True, depth=1)),
        packet(nvtx_mark=s.NvtxMarkEvent(name_id=6, timestamp_ns=85, thread_id=2)),
        packet(memcpy=s.MemcpyEvent(copy_kind=s.COPY_KIND_HTOD,
                                    src_kind=s.MEMORY_KIND_PAGEABLE,
                                    dst_kind=s.MEMORY_KIND_DEVICE, bytes=4096, start_ns=60,
                                    duration_ns=10, device_id=0, context_id=1, stream_id=7,
                                    correlation_id=9, is_async=True)),
        packet(memcpy=s.MemcpyEvent(copy_kind=s.COPY_KIND_PTOP, src_kind=s.MEMORY_KIND_DEVICE,
                                    dst_kind=s.MEMORY_KIND_DEVICE, bytes=1 << 20, start_ns=160,
                                    duration_ns=30, src_device_id=0, dst_device_id=1)),
        packet(memset=s.MemsetEvent(value=0, bytes=512, memory_kind=s.MEMORY_KIND_PINNED,
                                    start_ns=70, duration_ns=3, stream_id=7,
                                    correlation_id=10)),
        packet(synchronization=s.SyncEvent(kind=s.SYNC_KIND_STREAM_WAIT_EVENT, start_ns=150,
                                           duration_ns=40, context_id=1, stream_id=7,
                                           cuda_event_id=3, correlation_id=12, thread_id=1)),
        packet(graph_launch=s.GraphLaunchEvent(graph_id=5, start_ns=200, duration_ns=30,
                                               device_id=0, context_id=1, stream_id=7,
                                               correlation_id=13)),
        packet(overhead=s.OverheadEvent(kind_id=7, start_ns=250, duration_ns=5, thread_id=2)),
        packet(pm_metric_set=s.PmMetricSet(id=1, device_id=0,
                                           metric_names=[WARPS_ACTIVE, CYCLES],
                                           interval_ns=1000)),
        packet(pm_sample=s.PmSample(metric_set_id=1, start_ns=100, duration_ns=1000,
                                    values=[12.5, 1980.0])),
        packet(pm_sample=s.PmSample(metric_set_id=1, start_ns=1100, duration_ns=1000,
                                    values=[3.0, 1990.0])),
        packet(pc_stall_reasons=s.PcStallReasons(device_id=0, index=[1, 7],
                                                 name=[LONG_SCOREBOARD, SELECTED])),
        packet(pc_samples=s.PcSampleBatch(
            device_id=0, context_id=1, timestamp_ns=300, total_samples=10,
            records=[s.PcSampleRecord(cubin_crc=CRC, function_name_id=8, pc_offset=0x40,
                                      stall_reason_index=[1, 7], samples=[6, 4])])),
        packet(notice=s.Notice(timestamp_ns=5, severity=s.SEVERITY_ERROR, source="pm_sampling",
                               message="insufficient privileges")),
        packet(stats=s.Stats(timestamp_ns=200, counters=[
            s.StatCounter(name="writer.events_written", value=5)])),
        packet(capture_window=s.CaptureWindowEdge(window_id=1, begin=False, timestamp_ns=400,
                                                  trigger=s.CAPTURE_TRIGGER_PROCESS)),
        packet(stats=s.Stats(timestamp_ns=400, final=True, counters=[
            s.StatCounter(name="writer.events_written", value=20),
            s.StatCounter(name="writer.events_dropped.buffer_full", value=0,
                          severity=s.SEVERITY_DATA_LOSS)])),
        end(400),
    ]
