"""A steady PyTorch loop for the capture-window checks (tests/gpu/recorder/gpu_recorder.sh):
each step launches --ops small elementwise kernels and --matmuls small GEMMs inside NVTX range
`step`, synchronises, and waits for the next period (--period-ms), so that kernels are launched
at an even rate and every part of a window should hold some.

It can open and close windows itself, at times counted from its `ready` line (after the
warm-up steps): --profiler A:B calls torch.cuda.profiler.start() at A s and stop() at B s
(cudaProfilerStart/Stop), --nvtx-window A:B pushes NVTX range `window` at A s and pops it at
B s (between steps, so `window` is the outermost range). Several windows: A:B,C:D.

Prints JSON lines: {"ready": pid, "unix_ns", "first_step_unix_ns"} when warmed up; one
{"request": "open"|"close", "how": ..., "unix_ns", "done_unix_ns"} per window edge it asked for
(the call's entry and return on CLOCK_REALTIME); {"steps", "seconds", ...} at the end.

With --model cnn, a step is instead a training step of a small CNN with cuDNN's autotuner on
(torch.backends.cudnn.benchmark): the warm-up then loads many kernel modules, as a real model
does, which is where attaching CUPTI late was seen to take seconds.

usage: steady_loop.py [--seconds S] [--until FILE] [--ops N] [--matmuls M] [--period-ms P]
                      [--warmup-steps N] [--profiler A:B[,C:D]] [--nvtx-window A:B[,C:D]]
                      [--model elementwise|cnn]
"""
import argparse
import json
import os
import time

import torch

nvtx = torch.cuda.nvtx


def windows(text):
    """'5:8,10:12' -> [(5.0, 8.0), (10.0, 12.0)]"""
    out = []
    for item in filter(None, text.split(",")):
        a, b = item.split(":")
        out.append((float(a), float(b)))
    return out


def say(**fields):
    print(json.dumps(fields), flush=True)


def edge_actions(a):
    """(seconds after ready, request, how, function, pair) for every edge the loop asks for;
    an open and its close share `pair`."""
    actions = []
    for begin, end in windows(a.profiler):
        pair = len(actions)
        actions.append((begin, "open", "cudaProfilerStart", torch.cuda.profiler.start, pair))
        actions.append((end, "close", "cudaProfilerStop", torch.cuda.profiler.stop, pair))
    for begin, end in windows(a.nvtx_window):
        pair = len(actions)
        actions.append((begin, "open", "nvtx push window", lambda: nvtx.range_push("window"),
                        pair))
        actions.append((end, "close", "nvtx pop window", nvtx.range_pop, pair))
    return sorted(actions, key=lambda x: x[0])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=120, help="steps after the ready line")
    p.add_argument("--until", default="", help="stop once this file exists")
    p.add_argument("--ops", type=int, default=200, help="elementwise kernels per step")
    p.add_argument("--matmuls", type=int, default=2, help="GEMMs per step (cuBLAS)")
    p.add_argument("--period-ms", type=float, default=10.0)
    p.add_argument("--warmup-steps", type=int, default=50)
    p.add_argument("--profiler", default="", help="A:B[,C:D] seconds after ready")
    p.add_argument("--nvtx-window", default="", help="A:B[,C:D] seconds after ready")
    p.add_argument("--model", default="elementwise", choices=["elementwise", "cnn"])
    a = p.parse_args()

    x = torch.randn(4096, device="cuda")
    m = torch.randn(256, 256, device="cuda")

    if a.model == "cnn":
        torch.backends.cudnn.benchmark = True
        net = torch.nn.Sequential(
            torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
            torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.BatchNorm2d(64), torch.nn.ReLU(),
            torch.nn.Conv2d(64, 64, 5, padding=2), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(), torch.nn.Linear(64 * 16, 10)).cuda()
        opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
        images = torch.randn(32, 3, 32, 32, device="cuda")
        labels = torch.randint(0, 10, (32,), device="cuda")

    def step():
        nvtx.range_push("step")
        if a.model == "cnn":
            loss = torch.nn.functional.cross_entropy(net(images), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        else:
            for _ in range(a.ops // 2):
                x.mul_(0.999)
                x.add_(0.001)
            for _ in range(a.matmuls):
                m @ m
        torch.cuda.synchronize()
        nvtx.range_pop()

    actions = edge_actions(a)
    period = a.period_ms / 1e3
    opened = set()  # pairs whose open edge was asked for
    first_step_unix_ns = time.time_ns()
    next_at = time.monotonic()
    ready_at = None
    steps = 0
    while True:
        now = time.monotonic()
        if ready_at is None and steps >= a.warmup_steps:
            ready_at = now
            say(ready=os.getpid(), unix_ns=time.time_ns(), first_step_unix_ns=first_step_unix_ns)
        if ready_at is not None:
            if now - ready_at >= a.seconds or (a.until and os.path.exists(a.until)):
                break
            while actions and now - ready_at >= actions[0][0]:
                _, request, how, fn, pair = actions.pop(0)
                t0 = time.time_ns()
                fn()
                say(request=request, how=how, unix_ns=t0, done_unix_ns=time.time_ns())
                opened.add(pair)
        step()
        steps += 1
        next_at += period
        delay = next_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        elif delay < -10 * period:
            next_at = time.monotonic()  # far behind (a stall): do not burst to catch up
    for _, request, how, fn, pair in actions:  # ended early: close what was opened
        if request == "close" and pair in opened:
            t0 = time.time_ns()
            fn()
            say(request=request, how=how, unix_ns=t0, done_unix_ns=time.time_ns(), late=True)
    torch.cuda.synchronize()
    seconds = time.monotonic() - (ready_at or next_at)
    say(steps=steps, seconds_after_ready=seconds, model=a.model,
        kernels_per_step=None if a.model == "cnn" else a.ops // 2 * 2 + a.matmuls,
        period_ms=a.period_ms)


if __name__ == "__main__":
    main()
