#!/usr/bin/env python3
"""What recording device memory costs a PyTorch program, warpscope beside PyTorch's own history.

Two loops, each run in processes of four modes, shuffled, REPS processes a mode:
  plain      no recording
  warpscope  `warpscope record` with its defaults (`alloc` on: every cudaMalloc/cudaFree and
             VMM map with its stack)
  history    torch.cuda.memory._record_memory_history() on (every tensor allocation and free
             of the caching allocator with its Python and C++ stack, PyTorch's default)
  both       the two together

Loops (inputs made on the GPU):
  step     an MLP training step (8 Linear layers of 1024, batch 256, SGD): thousands of tensor
           allocations a second served from the allocator's cache, few cudaMalloc calls
  segments the same step with torch.cuda.empty_cache() after each: every step gives its
           segments back and takes them again, so each step makes cudaMalloc/cudaFree calls

Each process prints one JSON line: ms a step, tensor allocations a step (memory_stats'
allocation.all.allocated) and segment allocations a step (segment.all.allocated). The summary
gives, per loop, the median ms a step per mode, and the added µs per event: warpscope's over
plain per segment event (allocations and frees), history's per tensor event.

  bench/memory/torch_alloc_cost.py --build .gpu [--reps 5] [--steps 200] [--out DIR]
Results: DIR/torch_alloc_cost.jsonl and the table on stdout.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

MODES = ("plain", "warpscope", "history", "both")
LOOPS = ("step", "segments")


def child(loop, steps, history):
    import torch
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(256, 1024, device="cuda")
    if history:
        torch.cuda.memory._record_memory_history(max_entries=1_000_000)

    def step():
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if loop == "segments":
            torch.cuda.empty_cache()

    for _ in range(20):
        step()
    torch.cuda.synchronize()
    before = torch.cuda.memory_stats()
    t0 = time.perf_counter_ns()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    ns = time.perf_counter_ns() - t0
    after = torch.cuda.memory_stats()

    def per_step(key):
        return (after.get(key, 0) - before.get(key, 0)) / steps

    print(json.dumps({"loop": loop, "ms_per_step": ns / steps / 1e6,
                      "tensor_allocs_per_step": per_step("allocation.all.allocated"),
                      "segment_allocs_per_step": per_step("segment.all.allocated")}), flush=True)
    if history:
        torch.cuda.memory._record_memory_history(enabled=None)


def run(args, mode, loop, work):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", loop, "--steps", str(args.steps)]
    if mode in ("history", "both"):
        cmd.append("--history")
    if mode in ("warpscope", "both"):
        cmd = [os.path.join(args.build, "bin", "warpscope"), "record", "-f", "-o",
               os.path.join(work, f"{loop}_{mode}.wst"), "--"] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    line = next((l for l in out.stdout.splitlines() if l.startswith("{")), None)
    if line is None:
        print(f"torch_alloc_cost: {loop}/{mode}: no result (exit {out.returncode}): "
              f"{out.stderr.strip()[-300:]}", file=sys.stderr)
        return None
    row = json.loads(line)
    row["mode"] = mode
    return row


def summarize(rows):
    for loop in LOOPS:
        by = {m: [r for r in rows if r["loop"] == loop and r["mode"] == m] for m in MODES}
        if not all(by.values()):
            print(f"{loop}: not every mode has a result")
            continue
        med = {m: statistics.median(r["ms_per_step"] for r in v) for m, v in by.items()}
        tensors = statistics.median(r["tensor_allocs_per_step"] for r in by["plain"])
        segments = statistics.median(r["segment_allocs_per_step"] for r in by["plain"])
        print(f"{loop}: {tensors:.0f} tensor and {segments:.1f} segment allocations a step, "
              f"{len(by['plain'])} processes a mode")
        for m in MODES:
            spread = [round(r["ms_per_step"], 3) for r in sorted(by[m], key=lambda r: r["ms_per_step"])]
            print(f"  {m:10s} {med[m]:8.3f} ms/step  x{med[m] / med['plain']:.3f}  {spread}")
        if segments > 0:
            # An allocation and its free: two events each for warpscope.
            print(f"  warpscope: {(med['warpscope'] - med['plain']) * 1e3 / (2 * segments):+.1f} "
                  "us per segment event (allocation or free)")
        if tensors > 0:
            print(f"  history:   {(med['history'] - med['plain']) * 1e3 / (2 * tensors):+.2f} "
                  "us per tensor event (allocation or free)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=".gpu")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--out", default=os.environ.get("OUT", "torch_alloc_cost_out"))
    p.add_argument("--child", choices=LOOPS)
    p.add_argument("--history", action="store_true")
    args = p.parse_args()
    if args.child:
        child(args.child, args.steps, args.history)
        return 0
    os.makedirs(args.out, exist_ok=True)
    runs = [(m, loop) for loop in LOOPS for m in MODES for _ in range(args.reps)]
    random.shuffle(runs)
    rows = []
    with tempfile.TemporaryDirectory() as work, \
            open(os.path.join(args.out, "torch_alloc_cost.jsonl"), "w") as log:
        for mode, loop in runs:
            row = run(args, mode, loop, work)
            if row:
                rows.append(row)
                log.write(json.dumps(row) + "\n")
    summarize(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
