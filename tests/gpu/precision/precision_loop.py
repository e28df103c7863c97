"""The training loop the held-out precision programs share (precision_transformer.py,
precision_cnn.py; tests/gpu/precision/check_precision.sh): the math precision, NVTX ranges for
the steps and their phases, step times from CUDA events, and the one JSON line each run prints.

Precisions (`--precision`):
  fp32  FP32 math everywhere: cuBLAS and cuDNN told not to use TF32 (PyTorch's cuDNN default
        allows it, so it is turned off explicitly)
  tf32  FP32 tensors, matrix work on TF32 tensor cores (matmul and cuDNN)
  bf16  torch.autocast to bf16 (the TF32 flags as in fp32)
The flags are torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32 (PyTorch
2.11 maps them onto its fp32_precision settings; setting those directly as well makes
torch.get_float32_matmul_precision() fail on a mix of the two APIs). `--probe` measures,
before the loop, the error of an FP32 matmul and convolution against float64 on the CPU: about
1e-7 in FP32, 1e-4 on TF32 tensor cores, so the run shows which math its flags gave. It is
left out of recorded runs, whose traces then hold the training loop alone.
"""
import argparse
import contextlib
import json
import statistics

import torch
import torch.nn.functional as F

PRECISIONS = ("fp32", "tf32", "bf16")


def parse_args(description, defaults):
    """--precision, --steps, --warmup and the program's own size flags (defaults: name -> value)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32")
    parser.add_argument("--steps", type=int, default=20, help="steps in all, warm-up included")
    parser.add_argument("--warmup", type=int, default=5, help="leading steps not timed")
    parser.add_argument("--probe", action="store_true",
                        help="measure the FP32 math's error before the loop")
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
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    settings = {"matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
                "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
                "float32_matmul_precision": torch.get_float32_matmul_precision()}
    if hasattr(torch.backends.cuda.matmul, "fp32_precision"):
        settings["matmul_fp32_precision"] = torch.backends.cuda.matmul.fp32_precision
        settings["cudnn_conv_fp32_precision"] = torch.backends.cudnn.conv.fp32_precision
    return settings


def relative_error(result, reference):
    return float((result.double().cpu() - reference).abs().mean() / reference.abs().mean())


def math_probe():
    """Mean relative error of an FP32 matmul (512^3) and a 3x3 convolution (64 channels) on the
    GPU under the current flags, against float64 on the CPU (no FP64 kernel in the trace)."""
    gen = torch.Generator().manual_seed(1)
    a, b = torch.randn(512, 512, generator=gen), torch.randn(512, 512, generator=gen)
    x, w = torch.randn(8, 64, 32, 32, generator=gen), torch.randn(64, 64, 3, 3, generator=gen)
    matmul = relative_error(a.cuda() @ b.cuda(), a.double() @ b.double())
    conv = relative_error(F.conv2d(x.cuda(), w.cuda(), padding=1),
                          F.conv2d(x.double(), w.double(), padding=1))
    return {"matmul_error": matmul, "conv_error": conv}


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
    probe = math_probe() if args.probe else None
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
        "probe": probe,
        "torch": torch.__version__, "device": torch.cuda.get_device_name(), **extra,
    }), flush=True)
