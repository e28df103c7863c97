"""PyTorch program with torch.cuda.nvtx phases, for the GPU checks: its ranges must reach
the warpscope trace (NVTX through the same libcupti PyTorch loads). Prints the counts it
expects."""
import sys

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(256, 512, device="cuda")
y = torch.randint(0, 10, (256,), device="cuda")
for step in range(steps):
    torch.cuda.nvtx.range_push("train_step")
    torch.cuda.nvtx.range_push("forward")
    loss = torch.nn.functional.cross_entropy(model(x), y)
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("backward")
    opt.zero_grad()
    loss.backward()
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("optimizer")
    opt.step()
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
print(f"steps {steps} loss {loss.item():.4f}")
# Which libcupti copies this process mapped (the NVTX fix relies on there being one).
with open("/proc/self/maps") as maps:
    cupti = sorted({line.split()[-1] for line in maps if "libcupti" in line})
print("libcupti mapped:", cupti)
