"""Checks the traces of gpu_long_jobs.sh (run on the returned folder; needs protobuf):

  check_long_jobs.py functional DIR    windows on demand, per-window files, caps, dumps
  check_long_jobs.py flight DIR        the flight recorder's triggers alone
  check_long_jobs.py long DIR          the long job's dumps: one per designed slow step + exit

Prints PASS/FAIL lines and figures; exit status: failed checks.
"""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import warpscope  # noqa: E402
from warpscope import schema  # noqa: E402

failed = 0


def check(name, ok, detail=""):
    global failed
    print(("PASS " if ok else "FAIL ") + name + (f": {detail}" if detail else ""))
    failed += 0 if ok else 1


TRIGGERS = {getattr(schema, n): n[len("CAPTURE_TRIGGER_"):].lower()
            for n in dir(schema) if n.startswith("CAPTURE_TRIGGER_")}
REASONS = {getattr(schema, n): n[len("END_REASON_"):].lower()
           for n in dir(schema) if n.startswith("END_REASON_")}


def facts(path):
    """What a file holds: windows (id, begin trigger, end trigger, begin ns, end ns), kernels,
    train_step durations (ns, start ns), notices, stats, the end reason."""
    t = warpscope.open(path)
    f = {"windows": {}, "kernels": 0, "steps": [], "notices": [], "end": None,
         "base": t.header.time_base_ns}
    strings = {}
    for kind, m in t.scan():
        if kind == "interned_string":
            strings[m.id] = m.value
        elif kind == "kernel":
            f["kernels"] += 1
        elif kind == "nvtx_range":
            if strings.get(m.name_id) == "train_step":
                f["steps"].append((m.duration_ns, m.start_ns))
        elif kind == "capture_window":
            w = f["windows"].setdefault(m.window_id, {})
            w["begin" if m.begin else "end"] = (int(m.trigger), m.timestamp_ns)
        elif kind == "notice":
            f["notices"].append(m.message)
        elif kind == "end_of_trace":
            f["end"] = int(m.reason)
    f["stats"] = dict(t.stats)
    return f


def trig(n):
    return TRIGGERS.get(n, str(n))


def reason(n):
    return REASONS.get(n, str(n)) if n is not None else None


def functional(d):
    windows_on_demand(d)
    caps(d)
    flight(d)
    crash_and_memory_cap(d)


def windows_on_demand(d):
    for r in range(4):
        w1 = os.path.join(d, f"ctl_r{r}_w1.wst")
        check(f"rank {r} window 1 file", os.path.exists(w1))
        if not os.path.exists(w1):
            continue
        f = facts(w1)
        wins = f["windows"]
        ok = 1 in wins and trig(wins[1]["begin"][0]) == "control" and trig(wins[1]["end"][0]) == "control"
        check(f"rank {r} window 1 opened and closed by control", ok, str({k: {e: trig(v[0]) for e, v in w.items()} for k, w in wins.items()}))
        check(f"rank {r} window 1 has kernels", f["kernels"] > 0, f"{f['kernels']} kernels")
        w2 = os.path.join(d, f"ctl_r{r}_w2.wst")
        if r in (1, 3):
            check(f"rank {r} window 1 file ends for the next file", reason(f["end"]) == "next_file", reason(f["end"]))
            ok2 = os.path.exists(w2)
            check(f"rank {r} window 2 in its own file", ok2)
            if ok2:
                g = facts(w2)
                check(f"rank {r} window 2: control, kernels", 2 in g["windows"] and g["kernels"] > 0 and
                      trig(g["windows"][2]["begin"][0]) == "control", f"{g['kernels']} kernels")
        else:
            check(f"rank {r} has no window 2 file", not os.path.exists(w2))


def caps(d):
    f = facts(os.path.join(d, "maxsize.wst"))
    size = os.path.getsize(os.path.join(d, "maxsize.wst"))
    ends = [trig(w["end"][0]) for w in f["windows"].values() if "end" in w]
    check("--max-size closes the window with trigger limit", ends == ["limit"], str(ends))
    check("--max-size counted", f["stats"].get("capture.limited_windows") == 1)
    check("--max-size: the file stays near the cap", size < 3 << 20, f"{size} bytes for a 1 MiB cap")
    f = facts(os.path.join(d, "maxdur.wst"))
    w = f["windows"].get(1, {})
    took = (w["end"][1] - w["begin"][1]) / 1e9 if "end" in w and "begin" in w else -1
    check("--max-duration 2: limit after 2 s", "end" in w and trig(w["end"][0]) == "limit" and 1.9 < took < 2.6, f"{took:.3f} s")


def flight(d):
    want = ["signal", "control", "slow_step", "process"]
    for i, expected in enumerate(want, 1):
        p = os.path.join(d, f"fr_{i}.wst")
        if not os.path.exists(p):
            check(f"flight dump {i} ({expected})", False, "missing")
            continue
        f = facts(p)
        w = f["windows"].get(i, {})
        got = trig(w["end"][0]) if "end" in w else None
        span = (w["end"][1] - w["begin"][1]) / 1e9 if "end" in w and "begin" in w else -1
        check(f"flight dump {i}: trigger {expected}", got == expected and reason(f["end"]) == "dump", f"{got}, {reason(f['end'])}")
        check(f"flight dump {i}: holds at most the 5 s ring (+ one flush)", 0 < span < 6.5, f"{span:.2f} s, {f['kernels']} kernels")
        if expected == "slow_step":
            longest = max((s[0] for s in f["steps"]), default=0) / 1e9
            check("flight dump 3 holds the slow step", longest >= 1.0, f"longest train_step {longest:.3f} s")
            check("flight dump 3 says why", any("slow step" in n for n in f["notices"]))
    check("no fifth dump", not os.path.exists(os.path.join(d, "fr_5.wst")))


def crash_and_memory_cap(d):
    p = os.path.join(d, "crash_1.wst")
    if os.path.exists(p):
        f = facts(p)
        w = f["windows"].get(1, {})
        check("crash dump: trigger crash, kernels", "end" in w and trig(w["end"][0]) == "crash" and f["kernels"] > 0,
              f"{f['kernels']} kernels")
    caps = sorted(glob.glob(os.path.join(d, "cap_*.wst")))
    if caps:
        f = facts(caps[-1])
        held = f["stats"].get("writer.ring_held_high_water_bytes", 0)
        evicted = f["stats"].get("writer.ring_evicted_events", 0)
        check("8 MiB cap: held at most 8 MiB, oldest evicted", 0 < held <= 8 << 20 and evicted > 0,
              f"held high water {held} bytes, evicted {evicted} events")


def long(d):
    slow = []
    for line in open(os.path.join(d, "long.log")):
        if line.startswith('{"slow"'):
            slow.append(json.loads(line)["slow"])
    dumps = sorted(glob.glob(os.path.join(d, "long_*.wst")),
                   key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0]))
    got = []
    for p in dumps:
        f = facts(p)
        w = list(f["windows"].values())[0]
        got.append((p, f, trig(w["end"][0])))
    kinds = [g[2] for g in got]
    check("one dump per designed slow step, then the exit's",
          kinds == ["slow_step"] * len(slow) + ["process"], f"{kinds} for {len(slow)} slow steps")
    for (p, f, k), s in zip(got, slow):
        base = f["base"]
        longest = max(f["steps"], default=(0, 0))
        start_unix = (base + longest[1]) / 1e9
        check(f"{os.path.basename(p)} holds the {s['kind']} step", longest[0] / 1e9 >= 0.4 and
              abs(start_unix - s["begin_unix"]) < 0.05,
              f"longest train_step {longest[0] / 1e9:.3f} s at {start_unix:.3f}, designed at {s['begin_unix']:.3f}")
        others = [x for x in f["steps"] if x[0] >= 0.4e9 and x != longest]
        check(f"{os.path.basename(p)}: no other slow step in it", not others)
        print(f"  {os.path.basename(p)}: {f['kernels']} kernels, {len(f['steps'])} steps, "
              f"{os.path.getsize(p)} bytes, held high water {f['stats'].get('writer.ring_held_high_water_bytes')}")


if __name__ == "__main__":
    {"functional": functional, "flight": flight, "long": long}[sys.argv[1]](sys.argv[2])
    print(f"failed checks: {failed}")
    sys.exit(failed)
