"""A training loop for the long-job checks: a small CNN on inputs made on the GPU, one NVTX
range `train_step` per step and `loss.item()` at its end (as a loop that logs its loss), so a
step's host time is its GPU time. Designed slow steps come at given times:

  sleep  the host stalls for --slow-seconds inside the step (the GPU idles)
  copy   the step copies a large tensor to the host (a synchronising D2H copy)

It prints one JSON line per slow step ({"slow": ...}, with the step's number and its end on
CLOCK_REALTIME) and one at the end ({"steps": ..., "ms_per_step": ...}).

usage: step_loop.py [--seconds S | --steps N] [--slow 100:sleep,240:copy] [--slow-seconds 1]
                    [--until FILE] [--crash-after S] [--device N]
"""
import argparse
import ctypes
import json
import os
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--seconds", type=float, default=0)
p.add_argument("--steps", type=int, default=0)
p.add_argument("--slow", default="", help="TIME:KIND,... seconds after the start")
p.add_argument("--slow-seconds", type=float, default=1.0)
p.add_argument("--copy-gib", type=float, default=4.0)
p.add_argument("--until", default="", help="run until this file exists")
p.add_argument("--crash-after", type=float, default=0, help="segfault after this many seconds")
p.add_argument("--device", type=int, default=0)
p.add_argument("--batch", type=int, default=64)
a = p.parse_args()

torch.cuda.set_device(a.device)
torch.backends.cudnn.benchmark = True
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
    torch.nn.Conv2d(64, 128, 3, padding=1), torch.nn.ReLU(),
    torch.nn.AdaptiveAvgPool2d(8), torch.nn.Flatten(), torch.nn.Linear(128 * 64, 100)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(a.batch, 3, 128, 128, device="cuda")
y = torch.randint(0, 100, (a.batch,), device="cuda")
big = None
slow = []
for item in filter(None, a.slow.split(",")):
    at, kind = item.split(":")
    slow.append((float(at), kind))
    if kind == "copy" and big is None:
        big = torch.empty(int(a.copy_gib * (1 << 30)) // 4, device="cuda")
nvtx = torch.cuda.nvtx


def step(kind):
    nvtx.range_push("train_step")
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if kind == "sleep":
        time.sleep(a.slow_seconds)
    elif kind == "copy":
        big.cpu()  # a synchronising copy of the whole tensor to pageable host memory
    value = loss.item()
    nvtx.range_pop()
    return value


for _ in range(10):
    step(None)
torch.cuda.synchronize()
print(json.dumps({"ready": os.getpid()}), flush=True)  # warm-up done: the timed loop starts
t0 = time.monotonic()
n = 0
while True:
    now = time.monotonic() - t0
    if a.seconds and now >= a.seconds:
        break
    if a.steps and n >= a.steps:
        break
    if a.until and os.path.exists(a.until):
        break
    if a.crash_after and now >= a.crash_after:
        print(json.dumps({"crash": n, "t_unix": time.time()}), flush=True)
        ctypes.string_at(0)  # a real SIGSEGV
    kind = None
    if slow and now >= slow[0][0]:
        kind = slow.pop(0)[1]
    begin = time.time()
    step(kind)
    n += 1
    if kind:
        print(json.dumps({"slow": {"step": n, "kind": kind, "begin_unix": begin,
                                   "end_unix": time.time()}}), flush=True)
seconds = time.monotonic() - t0
print(json.dumps({"steps": n, "seconds": seconds, "ms_per_step": seconds * 1e3 / max(n, 1)}),
      flush=True)
