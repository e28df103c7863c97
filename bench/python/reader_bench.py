"""Speed of the Python trace readers: events/s and the time for wide PM metric sets, and
the readers behind ``to_dataframes`` compared on one large trace.

``--readers``: writes a trace of ``--rows`` events with the C++ fixture builder
(``build/bin/warpscope_bench_trace``, from bench/python/bench_trace.cc), then reads it into
DataFrames ``--repeat`` times (default 5) in a fresh process per run with each reader: pure
Python and the C++ extension's columnar decoder (what ``to_dataframes`` uses;
``warpscope_native``, found on PYTHONPATH or in build/python). It reports the median of the
runs: rows/s (CPU time of the process, one core), the peak RSS above the process's RSS
after its imports, the frames' own memory (``df.memory_usage(deep=True)``) and their ratio;
and the load average before and after, since other processes slow the runs down.

The other figures come from traces built with the package's own schema classes (the event
mix of bench/reader/reader_bench.cc: runtime API calls, kernels, copies, memsets, NVTX
ranges, syncs), written to a temporary folder, read on one core:

- ``iterate``: framing and parsing every packet (``for packet in trace``);
- ``to_dataframes``: one pass that also resolves ids and builds the DataFrames;
- PM sets of N metric names (default 100k) with a few samples, read into DataFrames.

Each figure is the least CPU time (``time.process_time``) of ``--repeat`` runs. Run from
the repository root:

    python3 bench/python/reader_bench.py [--events 300000] [--metrics 100000] [--repeat 3]
    python3 bench/python/reader_bench.py --readers [--rows 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable, List

SOURCE_DIR = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(SOURCE_DIR / "python"))

import warpscope  # noqa: E402
from warpscope import schema  # noqa: E402

KERNEL_NAMES = 500
API_NAMES = 40
LAUNCH_CONFIGS = 200
THREADS = 8


def frame(packet: Any) -> bytes:
    return schema.Trace(packet=[packet]).SerializeToString()


def event_trace(events: int) -> bytes:
    """A trace of `events` events plus its definitions, header and end."""
    s, p = schema, schema.TracePacket
    out: List[bytes] = [frame(p(header=s.Header(format_major=1, producer="bench:python",
                                                 clock_domain=s.CLOCK_DOMAIN_SYNTHETIC))),
                        frame(p(device=s.Device(id=0, name="NVIDIA H200", sm_count=132)))]
    out += [frame(p(thread=s.ThreadInfo(id=t, os_tid=1000 + t, name=f"t{t}")))
            for t in range(1, THREADS + 1)]
    api_base, kernel_base = 1, 1 + API_NAMES
    out += [frame(p(interned_string=s.InternedString(id=api_base + i,
                                                     value=f"cudaRuntimeApiNumber{i}")))
            for i in range(API_NAMES)]
    out += [frame(p(interned_string=s.InternedString(
        id=kernel_base + i, value=f"void at::native::elementwise_kernel<128, 4, {i}>(int)")))
        for i in range(KERNEL_NAMES)]
    out += [frame(p(launch_config=s.LaunchConfig(id=i, grid_x=64 * i, grid_y=1, grid_z=1,
                                                 block_x=128, block_y=1, block_z=1,
                                                 registers_per_thread=32,
                                                 static_shared_memory=4096)))
            for i in range(1, LAUNCH_CONFIGS + 1)]
    rng = random.Random(42)
    t, correlation = 1_000_000, 1
    for i in range(events):
        t += 200 + rng.randrange(800)
        kind = rng.randrange(100)
        if kind < 40:
            packet = p(api_call=s.ApiCallEvent(
                domain=s.API_DOMAIN_RUNTIME, name_id=api_base + rng.randrange(API_NAMES),
                start_ns=t, duration_ns=2000 + rng.randrange(3000),
                thread_id=1 + rng.randrange(THREADS), correlation_id=correlation,
                callback_id=211))
            correlation += 1
        elif kind < 75:
            name = rng.randrange(KERNEL_NAMES)
            packet = p(kernel=s.KernelEvent(
                name_id=kernel_base + name, launch_config_id=1 + name % LAUNCH_CONFIGS,
                start_ns=t, duration_ns=1000 + rng.randrange(100000), context_id=1,
                stream_id=7 + rng.randrange(4), correlation_id=correlation, grid_id=i))
        elif kind < 85:
            packet = p(memcpy=s.MemcpyEvent(
                copy_kind=s.COPY_KIND_HTOD, src_kind=s.MEMORY_KIND_PINNED,
                dst_kind=s.MEMORY_KIND_DEVICE, bytes=1 << (10 + rng.randrange(14)),
                start_ns=t, duration_ns=1000 + rng.randrange(50000), context_id=1,
                stream_id=7, correlation_id=correlation, is_async=True))
        elif kind < 90:
            packet = p(memset=s.MemsetEvent(bytes=1 << 20, start_ns=t, duration_ns=900,
                                            context_id=1, stream_id=7,
                                            correlation_id=correlation))
        elif kind < 95:
            packet = p(nvtx_range=s.NvtxRangeEvent(
                name_id=api_base + rng.randrange(API_NAMES), start_ns=t, duration_ns=100000,
                thread_id=1, end_thread_id=1, is_push_pop=True, depth=rng.randrange(3)))
        else:
            packet = p(synchronization=s.SyncEvent(
                kind=s.SYNC_KIND_STREAM, start_ns=t, duration_ns=50000, context_id=1,
                stream_id=7, correlation_id=correlation, thread_id=1))
        out.append(frame(packet))
    out.append(frame(p(end_of_trace=s.EndOfTrace(reason=s.END_REASON_EXIT))))
    return b"".join(out)


def pm_trace(metrics: int, samples: int) -> bytes:
    """One PM metric set of `metrics` names and `samples` samples of it."""
    s, p = schema, schema.TracePacket
    names = [f"smsp__metric_{i}.avg.per_cycle_active" for i in range(metrics)]
    out = [frame(p(header=s.Header(format_major=1, producer="bench:python"))),
           frame(p(pm_metric_set=s.PmMetricSet(id=1, metric_names=names, interval_ns=1000)))]
    out += [frame(p(pm_sample=s.PmSample(metric_set_id=1, start_ns=1000 * i, duration_ns=1000,
                                         values=[float(i)] * metrics)))
            for i in range(samples)]
    out.append(frame(p(end_of_trace=s.EndOfTrace(reason=s.END_REASON_EXIT))))
    return b"".join(out)


def best_of(repeat: int, run: Callable[[], Any]) -> float:
    """The least CPU time of `repeat` runs: the reader uses one core, and CPU time is what
    other processes on a shared machine disturb least."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


# Run in a fresh interpreter per reader: RSS after the imports, then to_dataframes' CPU time,
# peak RSS and the frames' memory, as JSON on stdout.
_MEASURE = """
import json, resource, sys, time, warnings
import numpy, pandas, warpscope, warpscope.native
def rss_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
before = rss_kib()
start = time.process_time()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    trace = warpscope.open(sys.argv[1])
    frames = trace.to_dataframes()
seconds = time.process_time() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"native": warpscope.native.available(), "seconds": seconds,
                  "rows": sum(len(f) for f in frames.values()),
                  "frames_bytes": int(sum(f.memory_usage(deep=True).sum()
                                          for f in frames.values())),
                  "rss_before_kib": before, "peak_rss_kib": peak}))
"""


def compare_readers(rows: int, repeat: int, trace: str, build_dir: Path) -> None:
    """Both readers on one trace: `trace`, else `rows` events written by the C++ fixture
    builder (build/bin/warpscope_bench_trace)."""
    native_dir = build_dir / "python"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(trace) if trace else Path(folder) / "bench.wst"
        if not trace:
            tool = SOURCE_DIR / "build" / "bin" / "warpscope_bench_trace"
            if not tool.exists():
                sys.exit(f"warpscope: {tool} is missing; build it: cmake --build build "
                         "--target warpscope_bench_trace")
            subprocess.run([str(tool), str(path), str(rows)], check=True)
        print(f"trace: {path}, {path.stat().st_size / 1e6:.1f} MB")
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for name, reader, extra_env in (
                ("pure Python", "python", {"WARPSCOPE_PURE_PYTHON": "1"}),
                ("C++ columns", "columns", {})):
            env = dict(os.environ, **extra_env)
            env["PYTHONPATH"] = os.pathsep.join(
                [str(SOURCE_DIR / "python"), str(native_dir), env.get("PYTHONPATH", "")])
            runs = []
            for _ in range(repeat):
                out = subprocess.run([sys.executable, "-c", _MEASURE, str(path), reader],
                                     env=env, check=True, capture_output=True, text=True).stdout
                runs.append(json.loads(out))
            if reader != "python" and not runs[0]["native"]:
                print(f"  {name}: not built (cmake -DWARPSCOPE_PYTHON=ON)")
                continue
            seconds = statistics.median(r["seconds"] for r in runs)
            grown = statistics.median((r["peak_rss_kib"] - r["rss_before_kib"]) * 1024
                                      for r in runs)
            frames = statistics.median(r["frames_bytes"] for r in runs)
            rows = runs[0]["rows"]
            cpu_seconds = " ".join(f"{r['seconds']:.3f}" for r in runs)
            print(f"  {name:13} {rows} rows {seconds:7.3f} s CPU "
                  f"{rows / seconds / 1e6:6.2f} M rows/s  peak RSS +{grown / 1e6:7.1f} MB  "
                  f"frames {frames / 1e6:7.1f} MB  ratio {grown / max(frames, 1):4.2f}  "
                  f"(median of {len(runs)}; CPU s of the runs: {cpu_seconds})")
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--metrics", type=int, default=100_000)
    parser.add_argument("--pm-samples", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=0,
                        help="runs per figure (default 3; with --readers 5)")
    parser.add_argument("--readers", action="store_true",
                        help="compare the pure-Python reader and the C++ extension")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--trace", default="", help="with --readers: read this trace instead")
    parser.add_argument("--build-dir", default=str(SOURCE_DIR / "build"),
                        help="with --readers: the CMake build holding python/warpscope_native")
    args = parser.parse_args()
    if args.readers:
        compare_readers(args.rows, args.repeat or 5, args.trace, Path(args.build_dir))
        return 0
    from google.protobuf.internal import api_implementation
    import pandas
    print(f"python {sys.version.split()[0]}, protobuf {api_implementation.Type()} backend "
          f"{sys.modules['google.protobuf'].__version__}, pandas {pandas.__version__}")
    with tempfile.TemporaryDirectory() as folder:
        events_path = Path(folder) / "events.wst"
        events_path.write_bytes(event_trace(args.events))
        print(f"events trace: {args.events} events, {events_path.stat().st_size} bytes")

        def iterate() -> None:
            with warpscope.open(events_path) as trace:
                for _ in trace:
                    pass

        def frames() -> None:
            with warpscope.open(events_path) as trace:
                trace.to_dataframes()

        for name, run in (("iterate", iterate), ("to_dataframes", frames)):
            seconds = best_of(args.repeat or 3, run)
            print(f"  {name:14} {seconds:8.3f} s CPU  "
                  f"{args.events / seconds / 1e6:6.3f} M events/s")

        pm_path = Path(folder) / "pm.wst"
        pm_path.write_bytes(pm_trace(args.metrics, args.pm_samples))

        def pm_frames() -> None:
            with warpscope.open(pm_path) as trace, warnings.catch_warnings():
                warnings.simplefilter("error")
                frame = trace.to_dataframes()["pm_samples"]
                assert frame.shape == (args.pm_samples, args.metrics + 5), frame.shape

        seconds = best_of(args.repeat or 3, pm_frames)
        print(f"pm trace: {args.metrics} metric names x {args.pm_samples} samples, "
              f"{pm_path.stat().st_size} bytes")
        print(f"  to_dataframes  {seconds:8.3f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
