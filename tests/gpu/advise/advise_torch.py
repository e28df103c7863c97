"""A PyTorch training loop that reads its loss with `.item()` every step, for
`warpscope advise` on the GPU (tests/gpu/advise/gpu_advise.sh, case torch_item).

Each step (NVTX range "step") trains a 4-layer MLP (4096 wide, batch 4096, bf16) on data made
on the GPU, reads the loss with `.item()`, then spends 1 ms of host time on bookkeeping (a
busy loop, as logging and metrics do). `--fixed` keeps the losses on the GPU and reads them
once after the loop, the rest the same: the host's bookkeeping then runs while the GPU works.
Prints one JSON line like ws_advise_problems:
  {"problem": "torch_item", "fixed": false, "steps": 103, "timed_steps": 100, "loop_ns": ...}

    python3 advise_torch.py [--fixed] [--steps 100] [--warmup 3]
"""
import argparse
import json
import time

import torch


def host_work(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fixed", action="store_true")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(0)
    width = 4096
    model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(4)])
    model = model.to(device="cuda", dtype=torch.bfloat16)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    data = torch.randn(width, width, device="cuda", dtype=torch.bfloat16)
    losses = torch.zeros((), device="cuda", dtype=torch.float32)

    def step():
        nonlocal losses
        torch.cuda.nvtx.range_push("step")
        optimizer.zero_grad(set_to_none=True)
        loss = model(data).float().pow(2).mean()
        loss.backward()
        optimizer.step()
        if args.fixed:
            losses = losses + loss.detach()
        else:
            losses += loss.item()
        torch.cuda.nvtx.range_pop()
        host_work(0.001)

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter_ns()
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize()
    loop_ns = time.perf_counter_ns() - start
    float(losses)
    print(json.dumps({"problem": "torch_item", "fixed": args.fixed,
                      "steps": args.warmup + args.steps, "timed_steps": args.steps,
                      "loop_ns": loop_ns}), flush=True)


if __name__ == "__main__":
    main()
