"""Held-out PyTorch programs for `warpscope advise` (tests/gpu/advise/gpu_advise.sh --heldout): each has
one performance problem and a `--fixed` variant without it, and was written after the rules
it checks, to try them on programs they were not tuned on. The steps are marked three ways
(`--ranges`): `numbered` (step_0, step_1, ... with phases inside, as many loops and
torch.profiler's ProfilerStep#N do), `constant` (every step "train_step") or `none` (no NVTX).

  pageable  each step copies a 64 MiB batch from a pageable CPU tensor. Fixed: pinned, and
            copied with non_blocking=True.
  loader    each step builds its batch on the CPU (numpy, about 3 ms) before the GPU work.
            Fixed: the batches were built before the loop.
  tiny      the optimizer updates 300 small parameters one by one (a kernel each). Fixed:
            torch._foreach_add_ (a few kernels for all of them).
  item      each step reads the loss with .item() after 1 ms of host bookkeeping. Fixed: the
            losses stay on the GPU, read once at the end.
  serial    each step copies its 64 MiB batch (pinned) and then computes, on one stream. Fixed:
            the next batch is copied on a side stream while this one computes.
  sync      each step ends with torch.cuda.synchronize() and 1 ms of host logging. Fixed: no
            synchronize.
  graph     a small MLP step (24 layers of 256, batch 64) is launch-bound. Fixed: the step is
            captured once in a CUDA graph and replayed.
  compiled  a torch.compile'd MLP whose accuracy is read with .cpu() each step. Fixed: the
            accuracy is summed on the GPU and read at the end.

Inputs are made on the GPU (or once before the loop). Prints one JSON line, as
ws_advise_problems does:
  {"problem": "pageable", "fixed": false, "steps": 33, "timed_steps": 30, "loop_ns": ...}

    python3 heldout.py --problem NAME [--fixed] [--ranges numbered|constant|none]
                       [--steps 30] [--warmup 3]
"""
import argparse
import contextlib
import json
import time

import numpy as np
import torch

PROBLEMS = ("pageable", "loader", "tiny", "item", "serial", "sync", "graph", "compiled")


def host_work(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class Ranges:
    """NVTX ranges for the steps and their phases, in the chosen style."""

    def __init__(self, style):
        self.style = style

    @contextlib.contextmanager
    def step(self, i):
        if self.style == "none":
            yield
            return
        torch.cuda.nvtx.range_push(f"step_{i}" if self.style == "numbered" else "train_step")
        try:
            yield
        finally:
            torch.cuda.nvtx.range_pop()

    @contextlib.contextmanager
    def phase(self, name):
        if self.style == "none":
            yield
            return
        torch.cuda.nvtx.range_push(name)
        try:
            yield
        finally:
            torch.cuda.nvtx.range_pop()


def mlp(width, depth, dtype=torch.bfloat16):
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).to(device="cuda", dtype=dtype)


def train(model, optimizer, x, ranges):
    with ranges.phase("forward"):
        loss = model(x).float().pow(2).mean()
    with ranges.phase("backward"):
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
    with ranges.phase("optimizer"):
        optimizer.step()
    return loss


def copies(problem, fixed, ranges):
    """pageable and serial: a 64 MiB batch copied each step."""
    model = mlp(4096, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    rows = 64 * 1024 * 1024 // (4096 * 2)  # 64 MiB of bf16
    host = torch.randn(rows, 4096).to(torch.bfloat16)
    if problem == "pageable":
        src = host.pin_memory() if fixed else host

        def step(i):
            with ranges.phase("data"):
                x = src.to("cuda", non_blocking=fixed)
            train(model, optimizer, x[:4096], ranges)
        return step
    pinned = host.pin_memory()
    copy_stream = torch.cuda.Stream()
    state = {"next": None}

    def load():
        return pinned.to("cuda", non_blocking=True)

    def step(i):
        with ranges.phase("data"):
            if not fixed:
                x = load()
            else:
                if state["next"] is None:
                    with torch.cuda.stream(copy_stream):
                        state["next"] = load()
                torch.cuda.current_stream().wait_stream(copy_stream)
                x = state["next"]
                x.record_stream(torch.cuda.current_stream())
                with torch.cuda.stream(copy_stream):
                    state["next"] = load()  # the next step's batch, beside this compute
        train(model, optimizer, x[:4096], ranges)
    return step


def loader(fixed, ranges):
    model = mlp(4096, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    rng = np.random.default_rng(0)

    def build():
        a = rng.standard_normal((512, 512))
        for _ in range(6):  # CPU work a data loader does: about 3 ms
            a = np.tanh(a @ a.T / 512.0)
        return torch.from_numpy(a.astype(np.float32)).pin_memory()

    prepared = [build() for _ in range(8)] if fixed else None

    def step(i):
        with ranges.phase("data_load"):
            batch = prepared[i % len(prepared)] if fixed else build()
            x = batch.to("cuda", non_blocking=True).to(torch.bfloat16).repeat(8, 8)
        train(model, optimizer, x, ranges)
    return step


def tiny(fixed, ranges):
    params = [torch.zeros(64, device="cuda", requires_grad=False) for _ in range(300)]
    grads = [torch.full((64,), 1e-3, device="cuda") for _ in range(300)]
    model = mlp(1024, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)

    def step(i):
        train(model, optimizer, x, ranges)
        with ranges.phase("update"):
            if fixed:
                torch._foreach_add_(params, grads, alpha=-0.1)
            else:
                for p, g in zip(params, grads):
                    p.add_(g, alpha=-0.1)
    return step


def waits(problem, fixed, ranges):
    """item and sync: the host waits for the GPU each step, then logs for 1 ms."""
    model = mlp(4096, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    state = {"sum": 0.0, "total": torch.zeros((), device="cuda")}

    def step(i):
        loss = train(model, optimizer, x, ranges)
        with ranges.phase("log"):
            host_work(0.001)  # bookkeeping, metrics, logging
            if problem == "item":
                if fixed:
                    state["total"] = state["total"] + loss.detach()
                else:
                    state["sum"] += loss.item()
            elif not fixed:
                torch.cuda.synchronize()
    return step


def graph(fixed, ranges):
    model = mlp(256, 24, dtype=torch.float32)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(64, 256, device="cuda")
    if not fixed:
        return lambda i: train(model, optimizer, x, ranges)
    # Warm up on a side stream, then capture the whole step once (PyTorch's recipe).
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            train(model, optimizer, x, Ranges("none"))
    torch.cuda.current_stream().wait_stream(side)
    captured = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(captured):
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()

    def step(i):
        with ranges.phase("forward"):
            captured.replay()
    return step


def compiled(fixed, ranges):
    model = torch.compile(mlp(2048, 6))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    y = torch.randint(0, 2048, (2048,), device="cuda")
    state = {"acc": [], "correct": torch.zeros((), device="cuda")}

    def step(i):
        with ranges.phase("forward"):
            out = model(x)
            loss = torch.nn.functional.cross_entropy(out.float(), y)
        with ranges.phase("backward"):
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
        with ranges.phase("optimizer"):
            optimizer.step()
        with ranges.phase("metrics"):
            hits = (out.argmax(1) == y).float().mean()
            if fixed:
                state["correct"] = state["correct"] + hits
            else:
                state["acc"].append(hits.cpu())
    return step


def make_program(problem, fixed, ranges):
    """Setup, then a function that runs step i."""
    torch.manual_seed(0)
    if problem in ("pageable", "serial"):
        return copies(problem, fixed, ranges)
    if problem in ("item", "sync"):
        return waits(problem, fixed, ranges)
    builders = {"loader": loader, "tiny": tiny, "graph": graph, "compiled": compiled}
    if problem in builders:
        return builders[problem](fixed, ranges)
    raise SystemExit(f"heldout.py: unknown problem {problem!r}; one of {', '.join(PROBLEMS)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problem", required=True, choices=PROBLEMS)
    parser.add_argument("--fixed", action="store_true")
    parser.add_argument("--ranges", default="numbered", choices=("numbered", "constant", "none"))
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()

    ranges = Ranges(args.ranges)
    step = make_program(args.problem, args.fixed, ranges)

    def run(i):
        with ranges.step(i):
            step(i)

    for i in range(args.warmup):
        run(i)
    torch.cuda.synchronize()
    start = time.perf_counter_ns()
    for i in range(args.steps):
        run(args.warmup + i)
    torch.cuda.synchronize()
    loop_ns = time.perf_counter_ns() - start
    print(json.dumps({"problem": f"{args.problem}@{args.ranges}", "fixed": args.fixed,
                      "steps": args.warmup + args.steps, "timed_steps": args.steps,
                      "loop_ns": loop_ns}), flush=True)


if __name__ == "__main__":
    main()
