"""ResNet-18 training loop on synthetic data with NVTX phases, for the overhead benchmark.

usage: train_resnet.py [--steps N] [--warmup N] [--batch N]
                       [--mode plain|torch_profiler|torch_profiler_stack] [--item]
                       [--trace-out PATH] [--profiler-api] [--numbered]
Times the measured steps only (after warm-up, synchronized); prints one JSON line.
--mode torch_profiler wraps the measured steps in torch.profiler (CPU+CUDA activities) and
exports its Chrome JSON to --trace-out after the timing; torch_profiler_stack adds
with_stack=True (Python stacks of every op). --item reads the loss on the host every step
(`loss.item()`, a sync), as training loops that log it do. --profiler-api brackets the measured
steps with cudaProfilerStart/Stop (so `warpscope record -c cudaProfilerApi` captures exactly
them, for the trace size comparison).
"""
import argparse
import contextlib
import json
import os
import time

import torch
import torchvision

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=60)
p.add_argument("--warmup", type=int, default=15)
p.add_argument("--batch", type=int, default=64)
p.add_argument("--mode", default="plain",
               choices=["plain", "torch_profiler", "torch_profiler_stack"])
p.add_argument("--item", action="store_true")
p.add_argument("--trace-out", default="")
p.add_argument("--profiler-api", action="store_true")
p.add_argument("--numbered", action="store_true",
               help="name each step's range step_<N> (N from 1, warm-up steps included)")
a = p.parse_args()

torch.backends.cudnn.benchmark = True
model = torchvision.models.resnet18(num_classes=1000).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(a.batch, 3, 224, 224, device="cuda")
y = torch.randint(0, 1000, (a.batch,), device="cuda")
nvtx = torch.cuda.nvtx


steps_done = 0


def step():
    global steps_done
    steps_done += 1
    nvtx.range_push(f"step_{steps_done}" if a.numbered else "step")
    nvtx.range_push("forward")
    loss = torch.nn.functional.cross_entropy(model(x), y)
    nvtx.range_pop()
    nvtx.range_push("backward")
    opt.zero_grad(set_to_none=True)
    loss.backward()
    nvtx.range_pop()
    nvtx.range_push("optimizer")
    opt.step()
    nvtx.range_pop()
    nvtx.range_pop()
    return loss


for _ in range(a.warmup):
    step()
torch.cuda.synchronize()

if a.mode.startswith("torch_profiler"):
    ctx = torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
        with_stack=a.mode == "torch_profiler_stack")
else:
    ctx = contextlib.nullcontext()
with ctx as prof:
    if a.profiler_api:
        torch.cuda.profiler.start()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
        if a.item:
            loss.item()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    if a.profiler_api:
        torch.cuda.profiler.stop()
trace_bytes = 0
if a.mode.startswith("torch_profiler") and a.trace_out:
    prof.export_chrome_trace(a.trace_out)
    trace_bytes = os.path.getsize(a.trace_out)
print(json.dumps({"mode": a.mode, "steps": a.steps, "seconds": seconds,
                  "ms_per_step": seconds * 1e3 / a.steps, "trace_bytes": trace_bytes}), flush=True)
