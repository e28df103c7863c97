"""Held-out program for the precision advice (issue 42; tests/gpu/precision/check_precision.sh):
a convolutional network trained in FP32, written for this check and not tuned on the rule.

A ResNet-50 written out here (no torchvision): a 7x7 stem, bottleneck stages of 3, 4, 6 and 3
blocks (widths 64 to 512, expansion 4) with batch norm, global average pooling and a linear
classifier; cross-entropy against random labels; SGD with momentum. Sizes by default: batch
64, 224x224 images, 1000 classes; `--channels-last` puts the model and the images in NHWC.
cuDNN picks its algorithms by its heuristics; `--cudnn-benchmark` times them in the first step
instead (seconds of start-up, and a choice that can differ from run to run). Images and labels
are made on the GPU once, before the loop.

NVTX: each step is a range cnn_iter_<i> holding cnn_forward, cnn_backward and cnn_sgd; the
convolutions and the classifier's matmul are in cnn_forward and cnn_backward. Prints one JSON
line (precision_loop.py):
  {"program": "cnn", "precision": "fp32", "step_ms_median": ..., "gemm_phases": [...], ...}

    python3 precision_cnn.py [--precision fp32|tf32|bf16] [--steps 20] [--warmup 5]
"""
import torch
import torch.nn.functional as F
from torch import nn

import precision_loop

DEFAULTS = {"batch": 64, "image": 224, "classes": 1000, "channels_last": False,
            "cudnn_benchmark": False}


def conv_bn(cin, cout, kernel, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, kernel, stride, kernel // 2, bias=False),
                         nn.BatchNorm2d(cout))


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = 4 * width
        self.body = nn.Sequential(conv_bn(cin, width, 1), nn.ReLU(inplace=True),
                                  conv_bn(width, width, 3, stride), nn.ReLU(inplace=True),
                                  conv_bn(width, cout, 1))
        self.skip = conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        return F.relu(self.body(x) + self.skip(x))


def resnet50(classes):
    layers = [conv_bn(3, 64, 7, 2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
            cin = 4 * width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def main():
    args = precision_loop.parse_args(__doc__.split("\n\n")[0], DEFAULTS)
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    model = resnet50(args.classes).cuda().to(memory_format=memory_format)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    images = torch.randn(args.batch, 3, args.image, args.image, device="cuda")
    images = images.contiguous(memory_format=memory_format)
    labels = torch.randint(0, args.classes, (args.batch,), device="cuda")

    def forward_loss():
        return F.cross_entropy(model(images).float(), labels)

    params = sum(p.numel() for p in model.parameters())
    precision_loop.train(args, "cnn", "cnn_iter_{}", ("cnn_forward", "cnn_backward", "cnn_sgd"),
                         ("cnn_forward", "cnn_backward"), forward_loss, optimizer,
                         {"parameters": params, "sizes": {k: getattr(args, k) for k in DEFAULTS}})


if __name__ == "__main__":
    main()
