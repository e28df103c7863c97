"""PyTorch workload for the PC sampling checks (tests/gpu/gpu_pc.sh): matmuls and elementwise
kernels of a few ms each, in the capture window a mode asks for.

    python3 pc_torch.py plain|idle|profiler|nvtx
"""
import sys
import time

import torch


def work(a, b):
    for _ in range(4):
        c = a @ b                      # cuBLAS GEMM, several ms at 8192^2
        c = torch.nn.functional.gelu(c)
        b = (c * 0.5 + b).contiguous()
    torch.cuda.synchronize()
    return b


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "plain"
    a = torch.randn(8192, 8192, device="cuda")
    b = torch.randn(8192, 8192, device="cuda")
    torch.cuda.synchronize()
    if mode == "idle":
        time.sleep(1.0)
    if mode == "profiler":
        torch.cuda.profiler.start()
    if mode == "nvtx":
        torch.cuda.nvtx.range_push("pc_window")
    work(a, b)
    if mode == "nvtx":
        torch.cuda.nvtx.range_pop()
    if mode == "profiler":
        torch.cuda.profiler.stop()
    print("pc_torch", mode, "done")


if __name__ == "__main__":
    main()
