"""ws_hostile for PyTorch: the orders and endings of real training scripts, run under
warpscope by tests/gpu/gpu_hostile.sh. Prints "ws_hostile: done" just before it ends and ends
with --status unless the ending is a signal.

  python3 hostile.py [--nvtx-first] [--steps N] [--fork] [--loader-workers K]
                     [--end return|exit|_exit|sigterm|sigkill|abort_thread] [--status S]
"""
import argparse
import os
import signal
import sys

p = argparse.ArgumentParser()
p.add_argument("--nvtx-first", action="store_true")
p.add_argument("--steps", type=int, default=5)
p.add_argument("--fork", action="store_true")
p.add_argument("--loader-workers", type=int, default=0)
p.add_argument("--end", default="return")
p.add_argument("--status", type=int, default=0)
a = p.parse_args()

import torch  # noqa: E402

if a.nvtx_first:
    torch.cuda.nvtx.range_push("hostile_setup")  # before the first CUDA call
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
if a.loader_workers:
    data = torch.utils.data.TensorDataset(torch.randn(512, 256), torch.randint(0, 10, (512,)))
    batches = torch.utils.data.DataLoader(data, batch_size=64, num_workers=a.loader_workers)
else:
    batches = [(torch.randn(64, 256), torch.randint(0, 10, (64,)))] * a.steps
for step, (x, y) in enumerate(batches):
    if step >= a.steps:
        break
    torch.cuda.nvtx.range_push("hostile_step")
    loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
if a.nvtx_first:
    torch.cuda.nvtx.range_pop()
if a.fork:
    pid = os.fork()
    if pid == 0:
        print("ws_hostile: child done", flush=True)
        os._exit(0)
    _, st = os.waitpid(pid, 0)
    if st != 0:
        print(f"ws_hostile: child ended with status {st}", file=sys.stderr)
        a.status = 4
print(f"ws_hostile: done steps={a.steps} loss={loss.item():.3f}", flush=True)
if a.end == "exit":
    sys.exit(a.status)
if a.end == "_exit":
    os._exit(a.status)
if a.end == "sigterm":
    os.kill(os.getpid(), signal.SIGTERM)
    signal.pause()
if a.end == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
    signal.pause()
if a.end == "abort_thread":
    # As NCCL's watchdog ends a process: abort() on a thread of its own while the main thread
    # still runs steps.
    import threading
    import time
    threading.Thread(target=lambda: (time.sleep(0.05), os.abort()), daemon=True).start()
    while True:
        loss = (torch.randn(256, 256, device="cuda") @ torch.randn(256, 256, device="cuda")).sum()
        loss.item()
sys.exit(a.status)
