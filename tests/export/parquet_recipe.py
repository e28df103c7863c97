"""The README's Parquet recipe, run as written after the README's set-up (scripts/build.sh
puts the Python extension beside the CLI): its code block is run by bash in a folder where
`build` is this build and `examples` the checkout's, so `warpscope export --format parquet` of
the bundled 2-rank job folder then examples/duckdb_straggler.py must name the rank that
`warpscope job` names, rank 1 (its host stalls 10 ms a step in data_load), and print what
the README shows it prints.

    parquet_recipe.py SOURCE_DIR BUILD_DIR
"""

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Tuple

JOB = "examples/traces/cuda13.0_sm90/ddp_late_rank"


def recipe(readme: str) -> Tuple[str, List[str]]:
    """The README's code block that exports to Parquet and runs the DuckDB example, and the
    lines of the next block: what the README says it prints."""
    blocks = re.findall(r"^```\n(.*?)^```", readme, re.S | re.M)
    found = [i for i, b in enumerate(blocks)
             if "--format parquet" in b and "duckdb_straggler.py" in b]
    assert len(found) == 1, f"README.md: {len(found)} Parquet recipes, expected 1"
    return blocks[found[0]], blocks[found[0] + 1].splitlines()


def main(source: Path, build: Path) -> int:
    block, shown = recipe((source / "README.md").read_text())
    assert JOB in block, f"the README's recipe does not export the bundled job: {block}"
    job = subprocess.run([str(build / "bin" / "warpscope"), "job", str(source / JOB)],
                         capture_output=True, text=True, check=True)
    named = re.search(r"^Straggler: rank (\d+)", job.stdout, re.M)
    assert named and named.group(1) == "1", job.stdout
    with tempfile.TemporaryDirectory() as folder:
        os.symlink(build, Path(folder) / "build")
        os.symlink(source / "examples", Path(folder) / "examples")
        run = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=folder,
                             capture_output=True, text=True)
        print(f"$ {block}{run.stdout}{run.stderr}", end="")
        assert run.returncode == 0, f"exit status {run.returncode}"
        assert run.stderr == "", "the recipe printed on stderr"
        written = sorted(p.name for p in (Path(folder) / "job").glob("*.parquet"))
        assert "collectives.parquet" in written and "kernels.parquet" in written, written
        printed = run.stdout.splitlines()
        assert printed[-1].startswith(f"straggler: rank {named.group(1)}; "), printed[-1]
        assert printed[-len(shown):] == shown, f"the README shows {shown}"
    print(f"the recipe names rank {named.group(1)}, as warpscope job does")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()))
