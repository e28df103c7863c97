"""PyTorch's kernel launch paths, each inside an NVTX range `path:<name>`, for
tests/gpu/recorder/gpu_recorder.sh: every kernel must have its launch call (runtime or driver
API), on the thread and inside the range that launched it, and its Python stack.

  eager           elementwise ops (cudaLaunchKernel)
  matmul_fp32     cuBLAS / cuBLASLt GEMMs (cutlass and nvjet kernels, cuLaunchKernel[Ex])
  matmul_bf16
  conv2d          cuDNN
  compiled        a tiny torch.compile'd function (Triton kernels, driver API), warmed up first
  graph           torch.cuda.CUDAGraph captured outside the range, replayed inside it
                  (cudaGraphLaunch)
  nccl            all_reduce (AVG) on a one-rank NCCL process group (one rank reduces with a
                  kernel of its own for AVG; SUM would launch nothing)
  worker_thread   eager ops from a threading.Thread, in the worker's own range

The GPU is idle when each range opens and when it closes (torch.cuda.synchronize() on both
sides), so a kernel that runs inside a range's span was launched inside it. Inputs are made on
the GPU. Prints one JSON line: the exact kernel count of the paths where it is known
(expected_kernels) and a lower bound where a library chooses (min_kernels).

usage: launch_paths.py [--repeat N]
"""
import argparse
import json
import os
import sys
import tempfile
import threading

# Before torch is imported: no pool of compile worker processes (faster, and no process that
# might initialise CUDA and write a trace of its own).
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

nvtx = torch.cuda.nvtx
expected = {}  # path -> exact kernel count
minimum = {}   # path -> at least this many kernels
errors = {}    # path -> why it could not run (the checker fails on these)
store_file = tempfile.NamedTemporaryFile(prefix="ws_launch_paths_store_", delete=False).name


def path(name, fn, exact=None, at_least=None):
    """Runs fn inside `path:<name>`, the GPU idle on both sides."""
    torch.cuda.synchronize()
    nvtx.range_push("path:" + name)
    try:
        fn()
        torch.cuda.synchronize()
    finally:
        nvtx.range_pop()
    if exact is not None:
        expected["path:" + name] = exact
    if at_least is not None:
        minimum["path:" + name] = at_least


def eager_ops(x, n):
    for _ in range(n):
        x.mul_(1.0001)  # one kernel each
        x.add_(0.5)


def prepare_paths(n, dev):
    """(name, prepare) per path; prepare warms the path up outside every range (handles,
    workspaces, compilation, capture) and returns (run, exact, at_least)."""
    x = torch.randn(1 << 16, device=dev)
    f32 = [torch.randn(1024, 1024, device=dev) for _ in range(2)]
    b16 = [t.to(torch.bfloat16) for t in f32]
    image = torch.randn(8, 64, 56, 56, device=dev)
    weight = torch.randn(64, 64, 3, 3, device=dev)
    conv = lambda: torch.nn.functional.conv2d(image, weight, padding=1)  # noqa: E731

    def warm(fn, times=2):
        for _ in range(times):
            fn()
        return fn

    def compiled():
        tiny = torch.compile(lambda u, v: torch.relu(u * v + 1.0))
        warm(lambda: tiny(x, x))
        return lambda: [tiny(x, x) for _ in range(n)], None, n

    def graph():
        g, kernels = capture_graph(x)
        return lambda: [g.replay() for _ in range(n)], kernels * n, None

    def nccl():
        dist.init_process_group("nccl", store=dist.FileStore(store_file, 1), rank=0,
                                world_size=1, device_id=dev)
        reduced = torch.randn(1 << 20, device=dev)
        one = lambda: dist.all_reduce(reduced, op=dist.ReduceOp.AVG)  # noqa: E731
        warm(one)
        return lambda: [one() for _ in range(n)], None, n

    return [
        ("eager", lambda: (warm(lambda: eager_ops(x, n)), 2 * n, None)),
        ("matmul_fp32", lambda: (warm(lambda: [f32[0] @ f32[1] for _ in range(n)]), None, n)),
        ("matmul_bf16", lambda: (warm(lambda: [b16[0] @ b16[1] for _ in range(n)]), None, n)),
        ("conv2d", lambda: (warm(lambda: [conv() for _ in range(n)]), None, n)),
        ("compiled", compiled),
        ("graph", graph),
        ("nccl", nccl),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=10)
    a = ap.parse_args()
    n = a.repeat
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    ready = []
    for name, prepare in prepare_paths(n, dev):
        try:
            ready.append((name,) + prepare())
        except Exception as e:  # one path that cannot run must not hide the others
            errors["path:" + name] = f"{type(e).__name__}: {e}"[:300]
            print(f"launch_paths: {name}: {errors['path:' + name]}", file=sys.stderr)
    torch.cuda.synchronize()
    for name, run, exact, at_least in ready:
        try:
            path(name, run, exact, at_least)
        except Exception as e:
            errors["path:" + name] = f"{type(e).__name__}: {e}"[:300]
    try:
        worker_path(n)
    except Exception as e:
        errors["path:worker_thread"] = f"{type(e).__name__}: {e}"[:300]
    if dist.is_initialized():
        dist.destroy_process_group()
    if os.path.exists(store_file):
        os.unlink(store_file)
    nccl = torch.cuda.nccl.version()
    print(json.dumps({"expected_kernels": expected, "min_kernels": minimum, "errors": errors,
                      "pid": os.getpid(), "torch": torch.__version__,
                      "nccl": ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl)}),
          flush=True)
    return 1 if errors else 0


def capture_graph(x):
    """A CUDA graph of three elementwise kernels (captured after a side-stream warm-up, as
    PyTorch asks); returns it and its kernel count."""
    static_in = x.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            y = static_in * 2
            y.add_(1)
            torch.relu_(y)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = static_in * 2
        y.add_(1)
        torch.relu_(y)
    torch.cuda.synchronize()
    return graph, 3


def worker_path(n):
    """Eager ops from a worker thread inside its own `path:worker_thread`; the main thread
    launches nothing until it is done."""
    failure = []

    def work():
        try:
            x = torch.randn(1 << 16, device="cuda")
            torch.cuda.synchronize()
            nvtx.range_push("path:worker_thread")
            eager_ops(x, n)
            torch.cuda.synchronize()
            nvtx.range_pop()
        except Exception as e:  # reported by the main thread
            failure.append(e)

    torch.cuda.synchronize()
    t = threading.Thread(target=work, name="ws_worker")
    t.start()
    t.join()
    if failure:
        raise failure[0]
    expected["path:worker_thread"] = 2 * n


if __name__ == "__main__":
    sys.exit(main())
