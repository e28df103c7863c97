"""``python -m warpscope info FILE...``: a short summary of traces, for a first look;
``python -m warpscope export --format parquet -o DIR FILE...``: the traces' events as Parquet
files, one per event kind (docs/export.md; the C++ CLI's ``export --format parquet``
runs this).

The C++ ``warpscope`` CLI does the analyses; ``info`` exists so that a Python-only install
can check what a file holds and whether it is whole.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
from typing import List, Optional, TextIO

from .errors import TraceError
from .metadata import enum_label
from .reader import TraceFile
from .stats import find_stat


def print_info(trace: TraceFile, out: TextIO) -> None:
    """Writes the header, devices, packet counts, completeness and problems of a trace."""
    counts = collections.Counter(kind for kind, _ in trace.scan())
    h = trace.header
    print(f"{trace.path}: {os.path.getsize(trace.path)} bytes, format "
          f"{h.format_major}.{h.format_minor}, producer {h.producer or '?'} "
          f"{h.tool_version}".rstrip(), file=out)
    print(f"  process {h.pid} on {h.hostname or '?'}: {' '.join(h.command_line) or '?'}",
          file=out)
    rank = "" if trace.rank is None else f", rank {trace.rank}"
    print(f"  clock {enum_label('ClockDomain', h.clock_domain)}, time base "
          f"{h.time_base_ns} ns{rank}", file=out)
    for device in sorted(trace.devices.values(), key=lambda d: d.id):
        print(f"  device {device.id}: {device.name} (sm_{device.compute_capability_major}"
              f"{device.compute_capability_minor}, {device.sm_count} SMs)", file=out)
    print("  packets: " + (", ".join(f"{k} {n}" for k, n in sorted(counts.items())) or "none"),
          file=out)
    if trace.complete:
        print(f"  complete (end: {enum_label('EndReason', trace.end_of_trace.reason)})",
              file=out)
    print_stats(trace, out)
    for line in trace.problems():
        print(f"  warning: {line}", file=out)
    for notice in trace.notices:
        print(f"  notice [{notice.severity}] {notice.source}: {notice.message}", file=out)


def print_stats(trace: TraceFile, out: TextIO) -> None:
    """One line per stats counter: value, severity and meaning from the stats table (the
    file's severity and no meaning for a counter the table lacks)."""
    if not trace.stats:
        return
    print(f"  stats ({'final' if trace.stats_final else 'periodic'}):", file=out)
    for name, value in sorted(trace.stats.items()):
        stat = find_stat(name)
        severity = stat.severity if stat else trace.stats_severity.get(name, "?")
        meaning = f": {stat.meaning}" if stat else ""
        print(f"    {name} = {value} [{severity.replace('_', ' ')}]{meaning}", file=out)


def export(args: argparse.Namespace) -> int:
    """``export --format parquet -o DIR TRACE...``: one Parquet file per event kind."""
    from .export import OutputError, export_parquet
    notes: List[str] = []
    try:
        written = export_parquet(args.files, args.output, notes)
    except TraceError as e:
        print(e, file=sys.stderr)
        return 1
    except OutputError as e:  # as the CLI's usage errors
        print(e, file=sys.stderr)
        return 2
    except ImportError as e:
        print(f"warpscope: export --format parquet needs pyarrow ({e}); install it with "
              "`pip install pyarrow`", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    for note in notes:
        print(note, file=sys.stderr)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m warpscope",
                                     description="Summarize and export warpscope .wst traces.")
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="header, devices, packet counts, completeness")
    info.add_argument("files", nargs="+")
    exporter = sub.add_parser("export", help="write the traces' events as Parquet files, one "
                              "per event kind, with rank, host, pid and file columns")
    exporter.add_argument("--format", choices=["parquet"], default="parquet")
    exporter.add_argument("-o", "--output", required=True, help="folder to write into (made "
                          "when missing, in a folder that exists)")
    exporter.add_argument("files", nargs="+", help="traces, or folders of traces (their .wst "
                          "files)")
    args = parser.parse_args(argv)
    try:
        return export(args) if args.command == "export" else info_command(args)
    except BrokenPipeError:
        # The reader of stdout went away (`| head`): stop quietly, as command-line tools do.
        # stdout is pointed at /dev/null so that the flush at exit does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141  # 128 + SIGPIPE, what a shell reports for a program killed by it


def info_command(args: argparse.Namespace) -> int:
    status = 0
    for path in args.files:
        try:
            with TraceFile(path) as trace:
                print_info(trace, sys.stdout)
                sys.stdout.flush()  # a closed pipe shows here, inside main's handler
        except TraceError as e:
            print(e, file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
