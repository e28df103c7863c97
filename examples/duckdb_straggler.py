"""Finds the straggler rank of a multi-rank job with DuckDB, over the Parquet files that
``warpscope export --format parquet`` writes (docs/export.md), here of the bundled 2-rank
job, whose rank 1 is late (the README's recipe):

    build/bin/warpscope export --format parquet -o job examples/traces/cuda13.0_sm90/ddp_late_rank
    python3 examples/duckdb_straggler.py job

The rank that arrives last at a collective spends the least time in it: the others wait
inside theirs until it comes. Each collective instance (matched across the ranks by
communicator and order) names its last arrival; the straggler is the rank that arrives last
at most of the instances whose durations differ across the ranks, and the time the others
lose waiting is what it costs. Prints one line per rank, then the straggler or that there is
none. With `--kernels`, the same from kernels.parquet alone (one NCCL stream per rank).
"""

import os
import sys

import duckdb

# An instance is uneven when its durations differ by at least MIN_SPREAD_NS and by a tenth of
# the 90th percentile of all instances' spreads (as `warpscope job`: beside a rank 15 ms late at
# every step, the sub-millisecond spreads of the collectives queued behind its first one do
# not count).
MIN_SPREAD_NS = 100_000
# The straggler is last at 3 or more uneven instances, and at more of them than chance would
# give: a share of 1/2 + 1/(2n) for n ranks.
MIN_LAST = 3

# Per rank: the uneven instances it arrived last at, and the time it lost waiting in
# collectives (collectives.parquet: every rank's collectives, `arrived_last` = 1 on the
# shortest duration of each instance; `lost_ns` counts a run of back-to-back collectives once).
QUERY = """
WITH c AS (SELECT * FROM read_parquet('{folder}/collectives.parquet')),
spreads AS (
  SELECT comm, seq, max(duration_ns) - min(duration_ns) AS spread_ns, count(*) AS ranks
  FROM c GROUP BY comm, seq),
threshold AS (
  SELECT greatest({min_spread}, max(spread_ns) FILTER (WHERE i = n * 9 // 10) // 10) AS ns
  FROM (SELECT spread_ns, row_number() OVER (ORDER BY spread_ns) - 1 AS i,
               count(*) OVER () AS n FROM spreads)),
uneven AS (
  SELECT comm, seq FROM spreads, threshold WHERE ranks > 1 AND spread_ns >= threshold.ns)
SELECT c.rank,
       count(u.seq) FILTER (WHERE c.arrived_last = 1) AS last_arrivals,
       (SELECT count(*) FROM uneven) AS uneven,
       sum(c.lost_ns) AS lost_ns
FROM c LEFT JOIN uneven u USING (comm, seq)
GROUP BY c.rank ORDER BY last_arrivals DESC, c.rank
"""

# The same from kernels.parquet alone: each rank's NCCL kernels numbered in start order match
# across the ranks when every rank runs one NCCL stream (one communicator, as plain data
# parallelism has); the shortest of each instance arrived last. Without a wait per collective
# in the file, the cost is not given here.
KERNELS_QUERY = """
WITH k AS (
  SELECT rank, duration_ns, ROW_NUMBER() OVER (PARTITION BY rank ORDER BY start_ns) AS seq
  FROM read_parquet('{folder}/kernels.parquet')
  WHERE regexp_matches(name, 'nccl(Dev)?Kernel_')),
spreads AS (
  SELECT seq, max(duration_ns) - min(duration_ns) AS spread_ns, count(*) AS ranks,
         min(duration_ns) AS shortest_ns
  FROM k GROUP BY seq),
threshold AS (
  SELECT greatest({min_spread}, max(spread_ns) FILTER (WHERE i = n * 9 // 10) // 10) AS ns
  FROM (SELECT spread_ns, row_number() OVER (ORDER BY spread_ns) - 1 AS i,
               count(*) OVER () AS n FROM spreads)),
uneven AS (
  SELECT seq, shortest_ns FROM spreads, threshold
  WHERE ranks > 1 AND spread_ns >= threshold.ns)
SELECT k.rank,
       count(u.seq) FILTER (WHERE k.duration_ns = u.shortest_ns) AS last_arrivals,
       (SELECT count(*) FROM uneven) AS uneven
FROM k LEFT JOIN uneven u USING (seq)
GROUP BY k.rank ORDER BY last_arrivals DESC, k.rank
"""


def _sql(query: str, folder: str):
    return duckdb.sql(query.format(folder=folder.replace("'", "''"),
                                   min_spread=MIN_SPREAD_NS)).fetchall()


def ranks_by_last_arrivals(folder: str):
    """(rank, last_arrivals, uneven, lost_ns) per rank, most often last first, from
    collectives.parquet."""
    return _sql(QUERY, folder)


def ranks_by_last_arrivals_from_kernels(folder: str):
    """(rank, last_arrivals, uneven) per rank, most often last first, from kernels.parquet."""
    return _sql(KERNELS_QUERY, folder)


def straggler(rows):
    """The rank that arrives last at most uneven instances, or None: no instance is uneven,
    or no rank is last more often than chance would make it."""
    if not rows:
        return None
    rank, last, uneven = rows[0][:3]
    share = 0.5 + 0.5 / max(len(rows), 2)
    return rank if last >= MIN_LAST and last >= share * uneven else None


def main() -> int:
    args = sys.argv[1:]
    kernels_only = "--kernels" in args
    args = [a for a in args if a != "--kernels"]
    if len(args) != 1:
        print("usage: python examples/duckdb_straggler.py [--kernels] PARQUET_DIR",
              file=sys.stderr)
        return 2
    needed = os.path.join(args[0], "kernels.parquet" if kernels_only else "collectives.parquet")
    if not os.path.isfile(needed):
        why = ("" if kernels_only else
               " (it is written for jobs whose traces have NCCL kernels, by a warpscope package"
               " with its native extension; --kernels works from kernels.parquet alone)")
        print(f"duckdb_straggler: no {needed}{why}; write the folder with `warpscope export"
              " --format parquet -o DIR TRACE...` (docs/export.md)", file=sys.stderr)
        return 2
    if kernels_only:
        rows = ranks_by_last_arrivals_from_kernels(args[0])
        for rank, last, uneven in rows:
            print(f"rank {rank}: last at {last} of {uneven} uneven collectives")
    else:
        rows = ranks_by_last_arrivals(args[0])
        for rank, last, uneven, lost_ns in rows:
            print(f"rank {rank}: last at {last} of {uneven} uneven collectives; "
                  f"lost {lost_ns / 1e6:.3f} ms waiting")
    found = straggler(rows)
    if found is None:
        print("straggler: none (no rank arrives last at most uneven collectives)")
        return 0
    if kernels_only:
        print(f"straggler: rank {found}")
    else:
        cost = sum(r[3] for r in rows if r[0] != found)
        print(f"straggler: rank {found}; the other ranks lose {cost / 1e6:.3f} ms waiting")
    return 0


if __name__ == "__main__":
    sys.exit(main())
