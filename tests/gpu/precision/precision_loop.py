"""The training loop the held-out precision programs share (precision_transformer.py,
precision_cnn.py; tests/gpu/precision/check_precision.sh): the math precision, NVTX ranges for
the steps and their phases, step times from CUDA events, and the one JSON line each run prints.

Precisions (`--precision`):
  fp32  FP32 math everywhere: cuBLAS and cuDNN told not to use TF32 (PyTorch's cuDNN default
        allows it, so it is turned off explicitly)
  tf32  FP32 tensors, matrix work on TF32 tensor cores (matmul and cuDNN)
  bf16  torch.autocast to bf16 (the TF32 flags as in fp32)
Where PyTorch has the fp32_precision settings (2.9 on; the allow_tf32 flags are deprecated
there and may not be mixed with them) those are set, else allow_tf32.
"""
import argparse
import contextlib
import json
import statistics

import torch

PRECISIONS = ("fp32", "tf32", "bf16")


def parse_args(description, defaults):
    """--precision, --steps, --warmup and the program's own size flags (defaults: name -> value)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32")
    parser.add_argument("--steps", type=int, default=20, help="steps in all, warm-up included")
    parser.add_argument("--warmup", type=int, default=5, help="leading steps not timed")
    for name, value in defaults.items():
        kind = type(value)
        if kind is bool:
            parser.add_argument("--" + name.replace("_", "-"), action="store_true")
        else:
            parser.add_argument("--" + name.replace("_", "-"), type=kind, default=value)
    args = parser.parse_args()
    if args.steps <= args.warmup:
        parser.error(f"--steps {args.steps} leaves no timed step after --warmup {args.warmup}")
    return args


def set_precision(precision):
    """Sets cuBLAS's and cuDNN's FP32 math; returns the settings as PyTorch reads them back."""
    tf32 = precision == "tf32"
    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):
        mode = "tf32" if tf32 else "ieee"
        matmul.fp32_precision = mode
        torch.backends.cudnn.conv.fp32_precision = mode
        torch.backends.cudnn.rnn.fp32_precision = mode
        return {"api": "fp32_precision", "matmul": matmul.fp32_precision,
                "cudnn_conv": torch.backends.cudnn.conv.fp32_precision}
    matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    return {"api": "allow_tf32", "matmul": matmul.allow_tf32,
            "cudnn_conv": torch.backends.cudnn.allow_tf32}


@contextlib.contextmanager
def nvtx_range(name):
    torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        torch.cuda.nvtx.range_pop()


def train(args, program, step_name, phases, gemm_phases, forward_loss, optimizer, extra):
    """Runs args.steps steps, each an NVTX range step_name.format(i) holding the ranges
    phases = (forward, backward, optimizer); prints the JSON line.

    forward_loss() computes the loss (under autocast for bf16). Step i's time is between
    CUDA events recorded on the current stream at its start and at the next step's start;
    the host runs ahead (no synchronisation inside the loop), so they time the GPU's work."""
    settings = set_precision(args.precision)
    forward, backward, update = phases
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.precision == "bf16")
    events = [torch.cuda.Event(enable_timing=True) for _ in range(args.steps + 1)]
    for i in range(args.steps):
        events[i].record()
        with nvtx_range(step_name.format(i)):
            with nvtx_range(forward), autocast:
                loss = forward_loss()
            with nvtx_range(backward):
                loss.backward()
            with nvtx_range(update):
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
    events[args.steps].record()
    torch.cuda.synchronize()
    step_ms = [events[i].elapsed_time(events[i + 1]) for i in range(args.steps)]
    timed = step_ms[args.warmup:]
    print(json.dumps({
        "program": program, "precision": args.precision, "steps": args.steps,
        "warmup": args.warmup, "timed_steps": len(timed),
        "step_ms_median": statistics.median(timed), "step_ms": [round(t, 4) for t in step_ms],
        "step_range": step_name.format("<N>"), "phases": list(phases),
        "gemm_phases": list(gemm_phases), "loss": float(loss.detach()), "settings": settings,
        "torch": torch.__version__, "device": torch.cuda.get_device_name(), **extra,
    }), flush=True)
