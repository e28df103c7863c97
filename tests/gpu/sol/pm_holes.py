#!/usr/bin/env python3
"""The holes in a recording's PM samples, in one line per device, from `warpscope info -f json`
(tests/gpu/sol/gpu_sol.sh, l2_candidates.sh; docs/pm_sampling.md "Coverage").

    pm_holes.py INFO.json [LABEL]

Prints the time without samples the recorder counted between two samples (gap_ns), the holes
between samples the analyses find (with their kernel time), the samples the recorder refused
(invalid, too long), hardware buffer overflows, drains cut short by their time budget, the
decode thread's busy time, and the share of kernel time inside samples. Exit status 0: it
reports, the checks are sol_compare.py's.
"""

import json
import sys


def main() -> int:
    with open(sys.argv[1]) as f:
        info = json.load(f)
    label = sys.argv[2] if len(sys.argv) > 2 else "recording"
    sets = info.get("pm_metric_sets", [])
    if not sets:
        print(f"PM holes ({label}): no PM metric set in the trace")
        return 0
    counters = {c["name"]: c["value"] for c in info.get("counters", [])}

    def counter(name):
        return counters.get("pm_sampling." + name, 0)

    samples = sum(s["samples"] for s in sets)
    coverage = next((c for c in info.get("sampling_coverage", []) if c["sampling"] == "pm"), {})
    holes = [h for h in info.get("sampling_holes", [])
             if h.get("sampling") == "pm" and h.get("place") == "between samples"]
    between_ns = sum(h.get("gap_ns") or 0 for h in holes)
    gap_ns = counter("gap_ns")
    print(f"PM holes ({label}): {samples} samples; without samples {gap_ns / 1e6:.1f} ms "
          f"in {counter('gaps')} gap(s) (recorder), {between_ns / 1e6:.1f} ms in {len(holes)} hole(s) "
          f"between samples holding kernels (analyses, {coverage.get('holes_not_listed', 0)} more "
          f"not listed); invalid {counter('samples_invalid')}, too long "
          f"{counter('samples_discarded_too_long')}, overflows {counter('overflows')}, drains cut "
          f"short {counter('decodes_cut_short')}, dropped {counter('samples_dropped')}; decode "
          f"thread busy {counter('decode_busy_us') / 1e6:.2f} s (decode "
          f"{counter('decode_data_us') / 1e6:.2f}, evaluate {counter('evaluate_us') / 1e6:.2f}, "
          f"reset {counter('image_reset_us') / 1e6:.2f}); kernel time covered "
          f"{coverage.get('covered_pct', 0):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
