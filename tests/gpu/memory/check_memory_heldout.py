"""Judges `warpscope memory` on programs its leak rule was not written on
(torch_memory_heldout.py, recorded by gpu_memory.sh's `heldout` part), against what PyTorch
itself reported after every step (torch.cuda.memory_reserved: the segments the caching
allocator holds, which is what the device sees):

  history  numbered NVTX ranges, a leak from step 10: a leak is reported over steps, starting
           within a step of 10, at the reference's bytes per step (Theil-Sen over the reserved
           bytes of the leaking steps) within 30%, most at the line that allocated what leaks
  clean    torch.compile, no NVTX, nothing kept: no leak is reported
  cache    torch.compile, no NVTX, one output kept a step: a leak is reported over the work
           done (kernels), at the reference's bytes per step within 30% (the kernels of a step
           taken as the trace's kernels over the steps), most at the line that keeps it

  python3 check_memory_heldout.py DIR WARPSCOPE_CLI
Prints PASS/FAIL lines; exit status: the number of failures (max 100)."""
import json
import os
import subprocess
import sys
from statistics import median

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "torch_memory_heldout.py")


class Checker:
    def __init__(self):
        self.failures = 0

    def expect(self, what, ok, detail=""):
        print(f"{'PASS' if ok else 'FAIL'} {what}{': ' + detail if detail else ''}")
        self.failures += 0 if ok else 1
        return ok


def theil_sen(values):
    slopes = [(values[j] - values[i]) / (j - i)
              for i in range(len(values)) for j in range(i + 1, len(values))]
    return median(slopes) if slopes else 0.0


def line_of(text):
    for n, line in enumerate(open(PROGRAM), 1):
        if text in line and not line.lstrip().startswith(("#", '"')) and "LEAK_LINES" not in line:
            return n
    raise ValueError(f"{text!r} not in {PROGRAM}")


def analyse(cli, trace):
    run = subprocess.run([cli, "memory", trace, "--format", "json"], capture_output=True,
                         text=True)
    if run.returncode != 0:
        raise ValueError(f"warpscope memory {trace}: exit {run.returncode}: {run.stderr[-300:]}")
    return json.loads(run.stdout)


def kernels_in(cli, trace):
    run = subprocess.run([cli, "info", trace, "--format", "json"], capture_output=True, text=True)
    return next(int(r["count"]) for r in json.loads(run.stdout)["events"] if r["kind"] == "kernel")


def top_site(report):
    sites = report.get("growing_sites", [])
    return sites[0]["call_site"] if sites else ""


def check(c, folder, cli, mode):
    trace = os.path.join(folder, f"heldout_{mode}.wst")
    ref = json.load(open(os.path.join(folder, f"heldout_{mode}.json")))
    report = analyse(cli, trace)
    s = report["scalars"][0] if isinstance(report["scalars"], list) else report["scalars"]
    reserved = [r["reserved"] for r in ref["steps"]]
    print(f"  {mode}: reserved per step (MiB) {[round(r / 2**20) for r in reserved]}")
    print(f"  {mode}: scalars {json.dumps(s)}; top growing site {top_site(report)!r}")
    if mode == "clean":
        c.expect("clean: no leak reported", not s.get("leak"), json.dumps(s))
        return
    if not c.expect(f"{mode}: a leak reported", bool(s.get("leak")), json.dumps(s)):
        return
    start = ref["leak_from_step"]
    want = theil_sen(reserved[start + 1:])
    where = f"torch_memory_heldout.py:{line_of(ref['leak_line'])}"
    c.expect(f"{mode}: most at {where}", where in top_site(report), top_site(report))
    if mode == "history":
        c.expect("history: judged over steps", s.get("growth_basis") == "steps",
                 str(s.get("growth_basis")))
        got = s.get("growth_per_step_bytes", 0)
        began = s.get("growth_from_step", -1)
        c.expect("history: growth begins at step 10 (+-1)", abs(began - start) <= 1,
                 f"reported {began}")
    else:
        c.expect("cache: judged over the work done", s.get("growth_basis") == "kernels",
                 str(s.get("growth_basis")))
        per_step_kernels = kernels_in(cli, trace) / len(ref["steps"])
        got = s.get("growth_per_kernel_bytes", 0) * per_step_kernels
    c.expect(f"{mode}: bytes a step within 30% of the reference's", abs(got - want) <= 0.3 * want,
             f"{got / 2**20:.2f} MiB vs reference {want / 2**20:.2f} MiB a step")


def main():
    folder, cli = sys.argv[1], sys.argv[2]
    c = Checker()
    for mode in ("history", "clean", "cache"):
        try:
            check(c, folder, cli, mode)
        except (OSError, ValueError, KeyError, IndexError) as e:
            c.expect(f"{mode} analysed", False, f"{type(e).__name__}: {e}")
    print(f"{c.failures} failures")
    sys.exit(min(c.failures, 100))


if __name__ == "__main__":
    main()
