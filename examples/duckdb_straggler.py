"""Finds the straggler rank of a multi-rank job with DuckDB, over the Parquet files that
``python -m warpscope export --format parquet`` writes (docs/export.md):

    python -m warpscope export --format parquet -o job_parquet run_rank*.wst
    python examples/duckdb_straggler.py job_parquet

The straggler is the rank whose GPU spent the most time in kernels: the others wait for it
at every collective. Prints one line per rank, slowest first.
"""

import sys

import duckdb

QUERY = """
SELECT rank, host, count(*) AS kernels, sum(duration_ns) AS kernel_ns
FROM read_parquet('{folder}/kernels.parquet')
GROUP BY rank, host ORDER BY kernel_ns DESC
"""


def ranks_slowest_first(folder: str):
    """(rank, host, kernels, kernel_ns) per rank, the straggler first."""
    return duckdb.sql(QUERY.format(folder=folder.replace("'", "''"))).fetchall()


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: python examples/duckdb_straggler.py PARQUET_DIR", file=sys.stderr)
        return 2
    rows = ranks_slowest_first(sys.argv[1])
    for rank, host, kernels, kernel_ns in rows:
        print(f"rank {rank} on {host}: {kernels} kernels, {kernel_ns / 1e6:.3f} ms")
    if rows:
        print(f"straggler: rank {rows[0][0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
