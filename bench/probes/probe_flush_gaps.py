"""GPU idle gaps over 1 ms and warpscope's overhead records of each trace (probe_flush_stall.sh)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import warpscope  # noqa: E402

for path in sys.argv[1:]:
    f = warpscope.open(path).to_dataframes()
    work = []
    for k in ("kernels", "memcpy", "memset"):
        d = f.get(k)
        if d is not None and len(d):
            work += list(zip(d["start_ns"], d["end_ns"]))
    work.sort()
    gaps, end = [], None
    for a, b in work:
        if end is not None and a - end > 1_000_000:
            gaps.append((end // 1000, (a - end) // 1000))
        end = b if end is None else max(end, b)
    o = f["overhead"]
    over = [(r.kind, r.start_ns // 1000, r.duration_ns // 1000) for r in o.itertuples()]
    nv = f["nvtx_ranges"]
    long = nv[(nv["name"] == "data_loader") & (nv["duration_ns"] > 1_700_000)] if len(nv) else nv
    print(f"{Path(path).name}: gaps>1ms (start us, len us) {gaps}")
    print(f"   overhead {over}")
    if len(long):
        print(f"   long data_loader ranges {[(r.start_ns // 1000, r.duration_ns // 1000) for r in long.itertuples()]}")
