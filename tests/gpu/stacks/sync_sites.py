"""A PyTorch program whose host syncs are known: each blocking call is on a line marked
`# site: NAME` and runs inside an NVTX range `site:NAME`, after enough GPU work that the host
waits. check_stacks.py reads the trace and asks that every blocking call carries a stack and
that the wait of each call is put on its marked line; the NVTX range is the independent
reference for which line it was.

Sites: `.item()`, `.cpu()`, `print(t)`, `torch.nonzero`, boolean-mask indexing,
`torch.cuda.synchronize()`, a copy of a DataLoader batch (two worker processes), and
`.item()` in a second Python thread.

usage: sync_sites.py [--rounds N]
"""
import argparse
import io
import threading

import torch

nvtx = torch.cuda.nvtx
p = argparse.ArgumentParser()
p.add_argument("--rounds", type=int, default=20)
args = p.parse_args()

torch.manual_seed(0)
w = torch.randn(2048, 2048, device="cuda") / 45


def gpu_work(x, n=6):
    """About a millisecond of matrix work queued ahead of the sync."""
    for _ in range(n):
        x = torch.tanh(x @ w)
    return x


class Batches(torch.utils.data.Dataset):
    def __len__(self):
        return 10 ** 6

    def __getitem__(self, i):
        return torch.full((256, 256), float(i % 7))


def round_of_syncs(x, out):
    y = gpu_work(x)
    nvtx.range_push("site:item")
    out.append(y.sum().item())  # site: item
    nvtx.range_pop()
    y = gpu_work(y)
    nvtx.range_push("site:cpu")
    out.append(y[:4].cpu())  # site: cpu
    nvtx.range_pop()
    y = gpu_work(y)
    nvtx.range_push("site:print")
    print(y[:2, :2], file=io.StringIO())  # site: print
    nvtx.range_pop()
    y = gpu_work(y)
    mask = y > 0.5
    nvtx.range_push("site:nonzero")
    out.append(torch.nonzero(mask))  # site: nonzero
    nvtx.range_pop()
    y = gpu_work(y)
    nvtx.range_push("site:mask")
    out.append(y[y > 0.5])  # site: mask
    nvtx.range_pop()
    gpu_work(y)
    nvtx.range_push("site:synchronize")
    torch.cuda.synchronize()  # site: synchronize
    nvtx.range_pop()
    return y


def second_thread(rounds, out):
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        z = torch.randn(2048, 2048, device="cuda") / 45
        for _ in range(rounds):
            z = gpu_work(z, 3)
            nvtx.range_push("site:thread_item")
            out.append(z.mean().item())  # site: thread_item
            nvtx.range_pop()


def main():
    out = []
    loader = torch.utils.data.DataLoader(Batches(), batch_size=4, num_workers=2)
    batches = iter(loader)
    worker = threading.Thread(target=second_thread, args=(args.rounds, []))
    worker.start()
    x = torch.randn(2048, 2048, device="cuda") / 45
    for _ in range(args.rounds):
        x = round_of_syncs(x, out)
        batch = next(batches)
        gpu_work(x)
        nvtx.range_push("site:loader_copy")
        out.append(batch.to("cuda"))  # site: loader_copy
        nvtx.range_pop()
        del out[:]
    worker.join()
    torch.cuda.synchronize()
    print("rounds", args.rounds)


if __name__ == "__main__":
    main()
