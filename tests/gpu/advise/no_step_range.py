"""A training loop with no NVTX range of its own, for the step rule (issue 36, point 5): each
step filters its batch with a boolean mask (torch.nonzero: CUB's DeviceReduce and DeviceSelect),
ranks it (torch.sort, torch.topk) and sums a running prefix (torch.cumsum: CUB's DeviceScan),
then trains a small MLP. PyTorch's CUB calls push NVTX ranges of their own; none of them is the
program's step, and `advise` must not take one for it.

usage: no_step_range.py [--steps N]
"""
import argparse

import torch

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=40)
a = p.parse_args()

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.randn(4096, 256, device="cuda")
labels = torch.randint(0, 10, (4096,), device="cuda")
for step in range(a.steps):
    keep = data[:, 0] > -0.5                      # boolean mask: nonzero through CUB
    x, y = data[keep], labels[keep]
    order = torch.sort(x[:, 1]).indices           # radix sort through CUB
    x, y = x[order][:2048], y[order][:2048]
    weights = torch.cumsum(torch.ones(2048, device="cuda"), 0)  # scan through CUB
    loss = (torch.nn.functional.cross_entropy(model(x), y, reduction="none") / weights).sum()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print({"steps": a.steps, "loss": float(loss)})
