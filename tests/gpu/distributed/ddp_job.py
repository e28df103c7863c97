"""A data-parallel training job for the multi-GPU checks of `warpscope job`
(tests/gpu/distributed/gpu_distributed.sh): one process per GPU under torchrun, NCCL, inputs made on the
GPU, NVTX ranges per step (`step_N` holding `data_load`, `forward`, `backward`,
`optimizer`), with one problem that can be planted on one rank:

  --late-rank R --late-ms T     rank R stalls T ms on the host every step, inside its
                                `data_load` range after that range launched GPU work
                                (--late-where data_load, the default) or between steps,
                                outside any range (--late-where outside)
  --slow-rank R --slow-ms T     rank R's GPU runs T ms more each step in its forward pass (a
                                sleeping kernel on its compute stream, timed once at start)
  --kill-rank R --kill-step S   rank R kills itself with SIGKILL at step S: as the step begins
                                (--kill-where step), or in its backward pass once the first
                                gradient buckets' all-reduces are under way (--kill-where
                                backward: a hook on the first layer's gradient, computed last)
  --stall-rank R --stall-step S --stall-s T
                                rank R sleeps T s on the host as step S begins (with a short
                                --nccl-timeout-s, the others' collectives time out)
  --nccl-timeout-s N            the process group's timeout (torch's default: 10 minutes)
  --mode ddp|fsdp|gather        ddp: DistributedDataParallel (AllReduce of gradient buckets);
                                fsdp: FullyShardedDataParallel (AllGather + ReduceScatter);
                                gather: explicit all_gather_into_tensor + reduce_scatter_tensor

--pairs N --phase-steps K     (for bench/overhead/ddp_overhead.py) after the warm-up, N pairs of
                                phases of K steps, recording switched off in one and on in the
                                other (cudaProfilerStop/Start; the order within a pair drawn from
                                --pair-seed, the same on every rank), in place of the timed steps

Each step reads its loss (`.item()`, as training loops do to log it; --no-sync leaves it out).
Every rank prints one JSON line at the end: its rank, steps, the planted delay and the wall
time of the timed steps, and the median host time of each phase of a timed step
(`phase_host_ms`: data_load, forward, backward, optimizer, item), for the checker to compare
with what warpscope reports.

    torchrun --nproc_per_node 4 ddp_job.py --steps 40 --late-rank 2 --late-ms 15
"""
import argparse
import json
import os
import signal
import statistics
import time

import torch
import torch.distributed as dist


def host_stall(seconds):
    """A host stall that holds the CPU, as data preparation in Python does."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def calibrate_sleep():
    """GPU clock cycles per ms of torch.cuda._sleep, timed with CUDA events."""
    torch.cuda._sleep(1_000_000)  # warm up
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(50_000_000)
    end.record()
    torch.cuda.synchronize()
    return 50_000_000 / start.elapsed_time(end)


def build_model(args, device):
    if args.model == "resnet18":
        import torchvision
        model = torchvision.models.resnet18(num_classes=100)
        inputs = lambda: torch.randn(args.batch, 3, 112, 112, device=device)
    else:
        width = 2048
        model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU())
                                      for _ in range(8)], torch.nn.Linear(width, 100))
        inputs = lambda: torch.randn(args.batch * 8, width, device=device)
    return model.to(device), inputs


def wrap(model, args, device):
    if args.mode == "ddp":
        return torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index])
    if args.mode == "fsdp":
        from torch.distributed.fsdp import FullyShardedDataParallel
        return FullyShardedDataParallel(model, device_id=device.index, use_orig_params=True)
    return model


def explicit_collectives(model, world):
    """--mode gather: the parameters are sharded by hand; every step all-gathers them before
    the forward pass and reduce-scatters the gradients after the backward pass."""
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    pad = (-flat.numel()) % world
    flat = torch.nn.functional.pad(flat, (0, pad))
    shard = flat.reshape(world, -1)[dist.get_rank()].clone()
    gathered = torch.empty_like(flat)
    grad_shard = torch.empty_like(shard)

    def before_forward():
        dist.all_gather_into_tensor(gathered, shard)

    def after_backward():
        grads = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        grads = torch.nn.functional.pad(grads, (0, pad))
        dist.reduce_scatter_tensor(grad_shard, grads)
    return before_forward, after_backward


def paired_phases(args, step, rank, world):
    """--pairs: phases of --phase-steps steps, recording off in one of each pair and on in the
    other; prints the rank's median step time off and on, and the median of the pairs'
    differences. A phase's first step, which the switch itself may slow, is not counted."""
    import random
    order = random.Random(args.pair_seed)
    n = args.warmup
    medians = {"off": [], "on": []}
    for _ in range(args.pairs):
        pair = ["off", "on"]
        order.shuffle(pair)
        for state in pair:
            (torch.cuda.profiler.start if state == "on" else torch.cuda.profiler.stop)()
            times = []
            for k in range(args.phase_steps):
                t0 = time.perf_counter_ns()
                step(n)
                n += 1
                if k > 0:
                    times.append(time.perf_counter_ns() - t0)
            medians[state].append(statistics.median(times) / 1e6)
    torch.cuda.profiler.stop()
    torch.cuda.synchronize()
    added = [on - off for on, off in zip(medians["on"], medians["off"])]
    line = json.dumps({"rank": rank, "world": world, "pairs": args.pairs,
                       "phase_steps": args.phase_steps, "off_ms": medians["off"],
                       "on_ms": medians["on"], "added_median_ms": statistics.median(added)})
    os.write(1, (line + "\n").encode())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="resnet18", choices=["resnet18", "mlp"])
    parser.add_argument("--mode", default="ddp", choices=["ddp", "fsdp", "gather"])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--late-rank", type=int, default=-1)
    parser.add_argument("--late-ms", type=float, default=15.0)
    parser.add_argument("--late-where", default="data_load", choices=["data_load", "outside"])
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--slow-ms", type=float, default=40.0)
    parser.add_argument("--kill-rank", type=int, default=-1)
    parser.add_argument("--kill-step", type=int, default=10)
    parser.add_argument("--kill-where", default="step", choices=["step", "backward"])
    parser.add_argument("--stall-rank", type=int, default=-1)
    parser.add_argument("--stall-step", type=int, default=20)
    parser.add_argument("--stall-s", type=float, default=60.0)
    parser.add_argument("--nccl-timeout-s", type=float, default=0)
    parser.add_argument("--pairs", type=int, default=0)
    parser.add_argument("--phase-steps", type=int, default=8)
    parser.add_argument("--pair-seed", type=int, default=0)
    parser.add_argument("--no-sync", action="store_true",
                        help="do not read the loss each step (the host may then run ahead of "
                             "the GPU and absorb a host stall)")
    args = parser.parse_args()

    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local_rank)
    torch.cuda.set_device(device)
    timeout = {}
    if args.nccl_timeout_s > 0:
        import datetime
        timeout["timeout"] = datetime.timedelta(seconds=args.nccl_timeout_s)
    dist.init_process_group("nccl", device_id=device, **timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    model, make_inputs = build_model(args, device)
    model = wrap(model, args, device)
    hooks = explicit_collectives(model, world) if args.mode == "gather" else None
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    cycles_per_ms = calibrate_sleep() if rank == args.slow_rank else 0.0
    losses = []
    late = rank == args.late_rank
    slow = rank == args.slow_rank
    nvtx = torch.cuda.nvtx
    phase_ns = {}  # host time per phase of each timed step, for the balance of the ranks
    clock = [0]

    def mark(phase, n):
        """Host time since the last mark, charged to `phase` of step n (timed steps only)."""
        now = time.perf_counter_ns()
        if n >= args.warmup:
            phase_ns.setdefault(phase, []).append(now - clock[0])
        clock[0] = now

    def step(n):
        clock[0] = time.perf_counter_ns()
        nvtx.range_push(f"step_{n}")
        nvtx.range_push("data_load")
        x = make_inputs()
        y = torch.randint(0, 100, (x.shape[0],), device=device)
        if late and args.late_where == "data_load":
            host_stall(args.late_ms / 1e3)
        nvtx.range_pop()
        mark("data_load", n)
        nvtx.range_push("forward")
        if hooks:
            hooks[0]()
        out = model(x)
        if slow:
            torch.cuda._sleep(int(args.slow_ms * cycles_per_ms))
        loss = torch.nn.functional.cross_entropy(out, y)
        nvtx.range_pop()
        mark("forward", n)
        nvtx.range_push("backward")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if hooks:
            hooks[1]()
        nvtx.range_pop()
        mark("backward", n)
        nvtx.range_push("optimizer")
        optimizer.step()
        nvtx.range_pop()
        mark("optimizer", n)
        if not args.no_sync:
            losses.append(loss.item())  # the loss read every step, as training loops log it
            mark("item", n)
        nvtx.range_pop()
        if late and args.late_where == "outside":
            host_stall(args.late_ms / 1e3)

    for n in range(args.warmup):
        step(n)
    torch.cuda.synchronize()
    dist.barrier()
    if args.pairs:
        paired_phases(args, step, rank, world)
        dist.destroy_process_group()
        return
    start = time.perf_counter_ns()
    first_param = next(model.parameters())
    for n in range(args.warmup, args.warmup + args.steps):
        if rank == args.kill_rank and n == args.kill_step:
            if args.kill_where == "step":
                os.kill(os.getpid(), signal.SIGKILL)
            first_param.register_hook(lambda grad: os.kill(os.getpid(), signal.SIGKILL))
        if rank == args.stall_rank and n == args.stall_step:
            time.sleep(args.stall_s)
        step(n)
    torch.cuda.synchronize()
    loop_ns = time.perf_counter_ns() - start
    line = json.dumps({"rank": rank, "world": world, "mode": args.mode, "steps": args.warmup + args.steps,
                      "timed_steps": args.steps, "late_ms": args.late_ms if late else 0.0,
                      "late_where": args.late_where if late else "",
                      "slow_ms": args.slow_ms if slow else 0.0,
                      "loop_ns": loop_ns,
                      "phase_host_ms": {k: round(statistics.median(v) / 1e6, 3)
                                        for k, v in phase_ns.items()}})
    # One write: torchrun runs ranks with `python -u`, where print() writes the object and its
    # newline apart, so the ranks' lines could interleave on the shared stdout.
    os.write(1, (line + "\n").encode())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
