"""A PyTorch program that runs out of device memory, for the flight recorder's
out-of-memory dump (gpu_memory.sh runs it under --flight-recorder): it keeps 1 GiB blocks
(`hold.append`) until the caching allocator's cudaMalloc fails, catches the
torch.OutOfMemoryError, and writes the reference: the blocks it held, the request that failed
(from the error's text) and the device's size.

  python3 torch_oom.py REFERENCE.json [WAIT_S]

WAIT_S (default 3): a pause after the first block, so that a short ring (--flight-recorder 1)
lets that block's record go and the dump must write it back from the live-block table."""
import json
import re
import sys
import time

import torch

BLOCK = 1 << 30


def main():
    out = sys.argv[1]
    wait_s = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
    dev = torch.device("cuda:0")
    hold = []
    failed = None
    try:
        while True:
            hold.append(torch.empty(BLOCK, dtype=torch.uint8, device=dev))
            if len(hold) == 1:
                torch.cuda.synchronize()
                time.sleep(wait_s)
    except torch.OutOfMemoryError as e:
        failed = str(e)
    m = re.search(r"Tried to allocate ([0-9.]+) (GiB|MiB|KiB|B)", failed or "")
    units = {"GiB": 1 << 30, "MiB": 1 << 20, "KiB": 1 << 10, "B": 1}
    asked = int(float(m.group(1)) * units[m.group(2)]) if m else None
    free, total = torch.cuda.mem_get_info()
    ref = {"held_blocks": len(hold), "block_bytes": BLOCK, "asked_bytes": asked,
           "allocated": torch.cuda.memory_allocated(), "reserved": torch.cuda.memory_reserved(),
           "device_free": free, "device_total": total, "error": (failed or "")[:400],
           "torch": torch.__version__}
    with open(out, "w") as f:
        json.dump(ref, f, indent=1)
    print(json.dumps({"held_blocks": len(hold), "asked_bytes": asked}))
    time.sleep(2)  # the dump is written by warpscope's own thread: not raced by the exit dump
    sys.exit(0 if failed else 1)


if __name__ == "__main__":
    main()
