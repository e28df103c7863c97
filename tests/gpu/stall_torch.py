"""ResNet-18 training steps for the stall report (tests/gpu/gpu_stalls.sh --part torch).

Batch 64 of 224x224 images and labels made on the GPU (no data loading), SGD with momentum,
a few warm-up steps, then the measured steps inside one NVTX range "train_step", the window
for `warpscope record --pc-sampling -p train_step` and for `ncu --nvtx --nvtx-include
train_step/`.

    python3 stall_torch.py [--warmup 3] [--steps 5] [--batch 64]
"""
import argparse

import torch
import torchvision


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=1000).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    images = torch.randn(args.batch, 3, 224, 224, device="cuda")
    labels = torch.randint(0, 1000, (args.batch,), device="cuda")

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("train_step")
    for _ in range(args.steps):
        loss = step()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    print(f"stall_torch: {args.warmup} warm-up and {args.steps} measured steps, "
          f"loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
