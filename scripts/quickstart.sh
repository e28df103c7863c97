#!/usr/bin/env bash
# The main job, from a fresh checkout: install build dependencies, build, then
#  - on a machine with an NVIDIA GPU: record the example pipeline (tracing + PM sampling) and
#    analyze that trace;
#  - without a GPU: analyze the bundled trace recorded on an H200
#    (examples/traces/cuda13.0_sm90/pipeline_pm.wst).
# Prints the summary, occupancy and tail tables and writes the tail curve as SVG; then the warp
# stall breakdown of the bundled PC sampling trace (examples/traces/cuda13.0_sm90/
# stall_kernels.wst: PM and PC sampling cannot share a process, so it is a second recording);
# then `warpscope job` on the bundled recording of a data-parallel job of two ranks, one of them
# late (examples/traces/cuda13.0_sm90/ddp_late_rank), with its picture; then the README's
# Parquet recipe on that job: `warpscope export --format parquet` of its folder (the Python
# package and the extension that scripts/build.sh puts beside the CLI), and the DuckDB query of
# examples/duckdb_straggler.py over the files.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
ws=build/bin/warpscope
out=build/quickstart
mkdir -p "$out"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 &&
   [ -x build/bin/ws_example_pipeline ]; then
  trace=$out/pipeline_pm.wst
  echo "== recording build/bin/ws_example_pipeline on $(nvidia-smi -L | head -1)"
  # 20 us for kernels of 0.2-0.6 ms: faster than the decode thread keeps up with, so a 512 MiB
  # hardware buffer holds what it falls behind during the short run (docs/pm_sampling.md).
  "$ws" record -f -o "$trace" --pm-sampling --pm-interval 20us --pm-buffer 512M -- build/bin/ws_example_pipeline 300
else
  trace=examples/traces/cuda13.0_sm90/pipeline_pm.wst
  echo "== no GPU here: analyzing $trace (recorded on an NVIDIA H200)"
fi
echo
echo "== warpscope summary $trace --top 5"
"$ws" summary "$trace" --top 5
echo
echo "== warpscope occupancy $trace"
"$ws" occupancy "$trace"
echo
echo "== warpscope tail $trace --svg $out/tail.svg"
"$ws" tail "$trace" --svg "$out/tail.svg"
echo
stalls=examples/traces/cuda13.0_sm90/stall_kernels.wst
echo "== warpscope stalls $stalls --top 3"
"$ws" stalls "$stalls" --top 3
echo
echo "== warpscope stalls $stalls --by line --top 1 --source-dir tests/gpu"
"$ws" stalls "$stalls" --by line --top 1 --source-dir tests/gpu
echo
job=examples/traces/cuda13.0_sm90/ddp_late_rank
echo "== warpscope job $job --svg $out/job.svg   (a data-parallel job of 2 ranks, one late)"
"$ws" job "$job" --svg "$out/job.svg"
echo
echo "== warpscope export --format parquet -o $out/job $job; python3 examples/duckdb_straggler.py $out/job"
if python3 -c "import pyarrow, duckdb" 2>/dev/null; then
  "$ws" export --format parquet -o "$out/job" "$job" >/dev/null
  python3 examples/duckdb_straggler.py "$out/job"
else
  echo "skipped: python3 has no pyarrow or duckdb (scripts/install_deps.sh installs them for a" \
       "python3 other than Debian's, which packages neither)"
fi
