"""A PyTorch program that also records PyTorch's own memory history, for
warpscope.torch_memory (check_torch_history.py reads its trace and snapshot): a few training
steps of an MLP, then one large block made at a known line (the device's peak), let go, and
the snapshot dumped. Prints one JSON line: the large block's line and size, and the wall
clock (ns since the epoch) just before and after it was made.

  python3 torch_history.py SNAPSHOT.pickle
"""
import json
import sys
import time

import torch

BIG = 1 << 30


def make_big():
    return torch.empty(BIG, dtype=torch.uint8, device="cuda")  # the peak's block


def main():
    torch.cuda.memory._record_memory_history(max_entries=200_000)
    model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(4)]).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(512, 1024, device="cuda")
    for _ in range(5):
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    before = time.time_ns()
    big = make_big()
    torch.cuda.synchronize()
    after = time.time_ns()
    big.fill_(1)
    torch.cuda.synchronize()
    del big
    torch.cuda.synchronize()
    torch.cuda.memory._dump_snapshot(sys.argv[1])
    torch.cuda.memory._record_memory_history(enabled=None)
    line = next(n for n, text in enumerate(open(__file__), 1) if "# the peak's block" in text
                and "torch.empty" in text)
    print(json.dumps({"big_bytes": BIG, "big_line": line, "before_ns": before,
                      "after_ns": after}), flush=True)


if __name__ == "__main__":
    main()
