"""Writes a job of N rank traces built from recorded ones, with one designed straggler: the input
of `warpscope job` at scale (bench/job/job_bench.py --from, docs/validation.md) and of the test
that it names the straggler among many ranks (tests/job/scaled_job_test.py).

    PYTHONPATH=python python3 bench/job/scale_job.py OUT_DIR --ranks 256 --late LATE.wst \
        --on-time ON_TIME.wst [ON_TIME.wst...] [--straggler K] [--jitter-us 500]
        [--ranks-per-host 8] [--clock-skew-ms 50] [--seed 1]

Rank K (by default N/2 + 1) is a copy of the late rank's trace (a recorded rank that arrived
last at the job's collectives); every other rank a copy of an on-time one, in turn. Each copy
gets its own RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, pid and host
(`node<r // ranks-per-host>`), every host its own clock offset of up to --clock-skew-ms either
way (the clocks of different hosts differ: `job` must not need them). Every rank but the
straggler arrives later at each collective by its own pseudo-random delay of up to --jitter-us:
its NCCL kernel starts that much later and ends when it did (the delay drawn below half the
kernel's duration), so that the on-time ranks do not tie and which of them comes last changes
from collective to collective, as in a real job. The straggler's lead over them stays what was
recorded, less the jitter. Without --late, every rank is an on-time copy: a job with no
straggler. Every packet is copied as it was recorded but these.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path
from typing import List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from warpscope import schema  # noqa: E402
from warpscope.errors import TraceError  # noqa: E402
from warpscope.reader import TraceFile  # noqa: E402

_NCCL_KERNEL_PREFIXES = ("ncclDevKernel_", "ncclKernel_")  # analyzers/measures/collectives.cc


def _frame(packet) -> bytes:
    """The packet as the file holds it: one Trace.packet field (tag, length, bytes)."""
    return schema.Trace(packet=[packet]).SerializeToString()


class SourceTrace:
    """One recorded rank: its packets framed once, with its header and NCCL kernels kept as
    messages, the only packets that differ between the copies."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.chunks: List[bytes] = []  # framed packets; b"" where a varying packet goes
        self.varying: List[tuple] = []  # (index into chunks, packet)
        self.header = None
        try:
            self._read()
        except TraceError as e:  # says "warpscope: PATH: ..." itself
            sys.exit(str(e))
        except OSError as e:
            sys.exit(f"warpscope: {path}: {e.strerror}")
        if self.header is None:
            sys.exit(f"warpscope: {path} has no header packet; it is not a warpscope trace")
        if not any(p.WhichOneof("data") == "kernel" for _, p in self.varying):
            sys.exit(f"warpscope: {path} has no NCCL kernels (ncclDevKernel_*): `job` needs "
                     "the collectives of a job recorded with NCCL")

    def _read(self) -> None:
        names = {}
        with TraceFile(self.path) as trace:
            for packet in trace:
                kind = packet.WhichOneof("data")
                if kind == "interned_string":
                    names[packet.interned_string.id] = packet.interned_string.value
                if kind == "header" or (kind == "kernel" and names.get(
                        packet.kernel.name_id, "").startswith(_NCCL_KERNEL_PREFIXES)):
                    self.varying.append((len(self.chunks), packet))
                    self.chunks.append(b"")
                    if kind == "header":
                        self.header = packet
                else:
                    self.chunks.append(_frame(packet))
            if trace.truncated:
                sys.exit(f"warpscope: {self.path} was cut short; give complete rank traces")


def _set_rank_env(header, values: dict) -> None:
    kept = [(kv.key, kv.value) for kv in header.rank_env if kv.key not in values]
    del header.rank_env[:]
    for key, value in list(values.items()) + kept:
        kv = header.rank_env.add()
        kv.key, kv.value = key, str(value)


def write_rank(source: SourceTrace, out: str, rank: int, args, job_id: str,
               host_shift_ns: int, jitter: Optional[random.Random]) -> None:
    """Writes one copy of `source` as rank `rank` of the job."""
    per_host = args.ranks_per_host
    chunks = list(source.chunks)
    for index, packet in source.varying:
        copy = type(packet)()
        copy.CopyFrom(packet)
        if copy.WhichOneof("data") == "header":
            h = copy.header
            _set_rank_env(h, {"RANK": rank, "WORLD_SIZE": args.ranks,
                              "LOCAL_RANK": rank % per_host, "LOCAL_WORLD_SIZE": per_host,
                              "GROUP_RANK": rank // per_host})
            h.pid = 100000 + rank
            h.hostname = f"node{rank // per_host}"
            h.job_id = job_id
            h.time_base_ns += host_shift_ns
            h.unix_time_base_ns += host_shift_ns
        elif jitter is not None:
            k = copy.kernel
            # Drawn below half the duration rather than cut there: ranks cut alike would tie.
            delay = jitter.randrange(min(args.jitter_us * 1000, k.duration_ns // 2) + 1)
            k.start_ns += delay
            k.duration_ns -= delay
        chunks[index] = _frame(copy)
    with open(os.path.join(out, f"rank{rank}.wst"), "wb") as f:
        f.writelines(chunks)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="the folder to write rank<r>.wst into (made if needed)")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--on-time", nargs="+", required=True, help="recorded on-time rank traces")
    ap.add_argument("--late", default="", help="the recorded late rank's trace")
    ap.add_argument("--straggler", type=int, default=-1, help="its rank (default N/2 + 1)")
    ap.add_argument("--jitter-us", type=int, default=500)
    ap.add_argument("--ranks-per-host", type=int, default=8)
    ap.add_argument("--clock-skew-ms", type=float, default=50.0)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    straggler = args.straggler if args.straggler >= 0 else args.ranks // 2 + 1
    if args.ranks < 2 or args.ranks_per_host < 1 or args.jitter_us < 0:
        sys.exit("warpscope: --ranks must be at least 2, --ranks-per-host at least 1 and "
                 "--jitter-us not negative")
    if args.late and not 0 <= straggler < args.ranks:
        sys.exit(f"warpscope: --straggler {straggler} is not a rank of {args.ranks}")
    on_time = [SourceTrace(p) for p in args.on_time]
    late = SourceTrace(args.late) if args.late else None
    os.makedirs(args.out, exist_ok=True)
    job_id = on_time[0].header.header.job_id or "scale_job"
    rng = random.Random(args.seed)
    skew_ns = int(args.clock_skew_ms * 1e6)
    shifts = [rng.randint(-skew_ns, skew_ns) for _ in range(0, args.ranks, args.ranks_per_host)]
    for rank in range(args.ranks):
        designed = late is not None and rank == straggler
        source = late if designed else on_time[rank % len(on_time)]
        jitter = None if designed else random.Random(args.seed * 1000003 + rank)
        write_rank(source, args.out, rank, args, job_id,
                   shifts[rank // args.ranks_per_host], jitter)
    print(f"{args.ranks} ranks in {args.out}"
          + (f"; straggler: rank {straggler} ({late.path})" if late else "; no straggler"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
