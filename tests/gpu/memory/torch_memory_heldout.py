"""Programs the leak rule was not written on (gpu_memory.sh, `heldout` part), each with a
reference of what PyTorch itself holds after every step:

  history   an MLP trained eagerly, steps as numbered NVTX ranges ("iteration 7"); from step
            10 on, the loss is kept with its autograd graph (`history.append(loss)`), which
            holds every activation of that step: a leak that starts mid-run and whose size
            nobody wrote down.
  clean     the same MLP under torch.compile, no NVTX at all, nothing kept: no leak.
  cache     torch.compile, no NVTX; each step's output is kept in a dict
            (`cache[step] = out.detach().clone()`): a leak without steps to count it by.

  python3 torch_memory_heldout.py MODE REFERENCE.json [STEPS]

The reference: per step, torch.cuda.memory_allocated / memory_reserved and the wall time, the
line that leaks ("" for clean), and the step at which the leak begins."""
import json
import sys
import time

import torch

LEAK_LINES = {"history": "out = step_fn(x)", "cache": "cache[step] = out.detach().clone()",
              "clean": ""}
LEAK_FROM = {"history": 10, "cache": 0, "clean": None}


def model(dev):
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(2048, 2048), torch.nn.GELU()]
    return torch.nn.Sequential(*layers).to(dev)


def main():
    mode, ref_path = sys.argv[1], sys.argv[2]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    if mode not in LEAK_LINES:
        raise SystemExit(f"torch_memory_heldout: no mode {mode!r}")
    torch.manual_seed(0)
    dev = torch.device("cuda:0")
    net = model(dev)
    opt = torch.optim.SGD(net.parameters(), lr=1e-4)
    step_fn = net if mode == "history" else torch.compile(net)
    x = torch.randn(512, 2048, device=dev)
    history, cache, rows = [], {}, []
    for step in range(steps):
        if mode == "history":
            torch.cuda.nvtx.range_push(f"iteration {step}")
        out = step_fn(x)
        loss = out.square().mean()
        loss.backward(retain_graph=mode == "history" and step >= LEAK_FROM["history"])
        opt.step()
        opt.zero_grad(set_to_none=True)
        if mode == "history" and step >= LEAK_FROM["history"]:
            history.append(loss)
        if mode == "cache":
            cache[step] = out.detach().clone()
        del out, loss
        torch.cuda.synchronize()
        if mode == "history":
            torch.cuda.nvtx.range_pop()
        rows.append({"step": step, "unix_ns": time.time_ns(),
                     "allocated": torch.cuda.memory_allocated(),
                     "reserved": torch.cuda.memory_reserved()})
    ref = {"mode": mode, "steps": rows, "leak_line": LEAK_LINES[mode],
           "leak_from_step": LEAK_FROM[mode], "torch": torch.__version__}
    with open(ref_path, "w") as f:
        json.dump(ref, f, indent=1)
    print(json.dumps({"mode": mode, "steps": steps, "kept": len(history) + len(cache)}))


if __name__ == "__main__":
    main()
