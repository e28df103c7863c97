#!/usr/bin/env python3
"""ResNet-50 training steps for the speed-of-light check on a real model (gpu_sol_model.sh):
batch 64, bf16 autocast, channels-last, SGD, inputs made on the GPU, cuDNN's autotuner off so
that a second run (under Nsight Compute) launches the same kernels.

    resnet_sol.py [--warmup 5] [--steps 20] [--profile-step]

--profile-step: the first step after the warm-up runs between cudaProfilerStart and
cudaProfilerStop (Nsight Compute's --profile-from-start off profiles that step's kernels only,
the autograd thread's included), and the program stops after it. Prints one JSON line: steps and ms per step.
"""
import argparse
import json
import time

import torch
import torchvision

ap = argparse.ArgumentParser()
ap.add_argument("--warmup", type=int, default=5)
ap.add_argument("--steps", type=int, default=20)
ap.add_argument("--batch", type=int, default=64)
ap.add_argument("--profile-step", action="store_true")
a = ap.parse_args()

torch.backends.cudnn.benchmark = False
torch.manual_seed(0)
model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(a.batch, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
y = torch.randint(0, 1000, (a.batch,), device="cuda")


def step():
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


for _ in range(a.warmup):
    step()
torch.cuda.synchronize()
if a.profile_step:
    torch.cuda.cudart().cudaProfilerStart()
    step()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    print(json.dumps({"profiled_steps": 1}), flush=True)
else:
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3 / a.steps
    print(json.dumps({"steps": a.steps, "ms_per_step": ms}), flush=True)
