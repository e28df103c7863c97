"""A PyTorch loop with a designed leak, for the `alloc` trace kind (gpu_memory.sh): each step
makes temporaries that are freed and keeps one 16 MiB tensor in a list that is never emptied
(`leaked.append`, the line a leak report must name). Each step is an NVTX range `step`. After
each step it writes torch.cuda.memory_allocated, memory_reserved, max_memory_reserved and
cudaMemGetInfo (torch.cuda.mem_get_info) into the JSON reference file.

  python3 torch_leak.py REFERENCE.json [STEPS]

Run it with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True once (VMM: cuMemCreate + cuMemMap)
and without it once (cudaMalloc segments)."""
import json
import os
import sys
import time

import torch

LEAK_BYTES = 16 << 20


def main():
    out = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    dev = torch.device("cuda:0")
    x = torch.randn(1024, 1024, device=dev)
    leaked = []
    rows = []
    for step in range(steps):
        torch.cuda.nvtx.range_push("step")
        tmp = [x @ x for _ in range(4)]           # 4 MiB each, freed at the end of the step
        big = torch.empty(64 << 20, dtype=torch.uint8, device=dev)  # 64 MiB, freed too
        big.fill_(1)
        leaked.append(torch.empty(LEAK_BYTES, dtype=torch.uint8, device=dev))  # the leak
        del tmp, big
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        free, total = torch.cuda.mem_get_info()
        rows.append({"step": step, "unix_ns": time.time_ns(),
                     "allocated": torch.cuda.memory_allocated(),
                     "reserved": torch.cuda.memory_reserved(),
                     "max_reserved": torch.cuda.max_memory_reserved(),
                     "max_allocated": torch.cuda.max_memory_allocated(),
                     "device_free": free, "device_total": total})
    ref = {"steps": rows, "leak_bytes_per_step": LEAK_BYTES, "leak_line": "leaked.append",
           "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
           "torch": torch.__version__}
    with open(out, "w") as f:
        json.dump(ref, f, indent=1)
    print(json.dumps({"steps": steps, "leaked": len(leaked)}))


if __name__ == "__main__":
    main()
