"""Hostile cases for stacks. gpu_stacks.sh runs each mode plain and under warpscope: the
exit status must be the same, and warpscope must not crash the program.

  fork    fork after CUDA work; the child runs Python and exits 3 without CUDA, the parent
          syncs on and exits 0 when the child's status was 3
  atexit  an atexit handler syncs (`.item()`) while the interpreter is finalizing; exits 5
  del     an object whose __del__ syncs is collected at interpreter teardown; exits 6
  daemon  a daemon thread keeps syncing while the main thread exits 7 (PyTorch itself may
          abort here; the status must be the plain run's)

usage: hostile_stacks.py MODE
"""
import atexit
import os
import sys
import threading

import torch

mode = sys.argv[1]
x = torch.randn(1024, 1024, device="cuda")
for _ in range(5):
    (x @ x).sum().item()

if mode == "fork":
    pid = os.fork()
    if pid == 0:
        total = sum(i * i for i in range(10000))  # Python, no CUDA
        os._exit(3 if total else 4)
    _, status = os.waitpid(pid, 0)
    for _ in range(5):
        (x @ x).sum().item()
    print("child exit", os.waitstatus_to_exitcode(status))
    sys.exit(0 if os.waitstatus_to_exitcode(status) == 3 else 1)

if mode == "atexit":
    atexit.register(lambda: print("at exit", (x @ x).sum().item() != 0.5))
    sys.exit(5)


class SyncsWhenCollected:
    def __del__(self):
        print("collected", (x @ x).sum().item() != 0.5)


if mode == "del":
    keeper = SyncsWhenCollected()  # a module global: collected at teardown
    sys.exit(6)

if mode == "daemon":
    def reader():
        while True:
            (x @ x).sum().item()

    threading.Thread(target=reader, daemon=True).start()
    sys.exit(7)
