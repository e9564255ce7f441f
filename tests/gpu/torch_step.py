# SPDX-License-Identifier: Apache-2.0
# A PyTorch training step on a real GPU, for the GPU suite (tests/gpu/run.sh): an MLP or a small
# convolution net, eager or with CUDA graphs (torch.cuda.make_graphed_callables: forward and
# backward replayed as graphs), each phase in an NVTX range. The lines that launch GPU work
# carry a "# SITE name" comment: check.py looks for those lines in the launch stacks.
#
# Usage: torch_step.py MODEL MODE SECONDS OUT_JSON
#   MODEL mlp | conv, MODE eager | graph. Writes to OUT_JSON: steps, the step time (median of
#   windows of 10 steps, each ended by torch.cuda.synchronize), torch.cuda.memory_stats()'s
#   reserved and allocated bytes, the device and versions.
import json
import statistics
import sys
import time

import torch
import torch.cuda.nvtx as nvtx


def mlp():
    return torch.nn.Sequential(
        torch.nn.Linear(1024, 2048), torch.nn.ReLU(),
        torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
        torch.nn.Linear(2048, 10))


def conv():
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.BatchNorm2d(64), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.BatchNorm2d(64), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10))


def batch(model_name, dev):
    if model_name == "mlp":
        return torch.randn(256, 1024, device=dev), torch.randint(0, 10, (256,), device=dev)
    return torch.randn(64, 3, 64, 64, device=dev), torch.randint(0, 10, (64,), device=dev)


def forward(model, x, y):
    return torch.nn.functional.cross_entropy(model(x), y)  # SITE forward


def backward(loss):
    loss.backward()  # SITE backward


def optimizer_step(opt):
    opt.step()  # SITE optimizer
    opt.zero_grad(set_to_none=False)  # SITE zero_grad


def train_step(model, opt, x, y):
    nvtx.range_push("forward")
    loss = forward(model, x, y)
    nvtx.range_pop()
    nvtx.range_push("backward")
    backward(loss)
    nvtx.range_pop()
    nvtx.range_push("optimizer")
    optimizer_step(opt)
    nvtx.range_pop()


def main():
    model_name, mode, secs, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = (mlp if model_name == "mlp" else conv)().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = batch(model_name, dev)
    if mode == "graph":
        # Warm-up on a side stream, as make_graphed_callables requires.
        model = torch.cuda.make_graphed_callables(model, (x,))
    for _ in range(20):
        train_step(model, opt, x, y)
    torch.cuda.synchronize()
    windows, steps = [], 0
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        t0 = time.perf_counter()
        for _ in range(10):
            nvtx.range_push("step")
            train_step(model, opt, x, y)
            nvtx.range_pop()
        torch.cuda.synchronize()
        windows.append((time.perf_counter() - t0) / 10)
        steps += 10
    m = torch.cuda.memory_stats()
    with open(out, "w") as f:
        json.dump({
            "model": model_name, "mode": mode, "steps": steps,
            "step_s": statistics.median(windows), "step_s_windows": windows,
            "reserved_peak": m["reserved_bytes.all.peak"],
            "reserved_current": m["reserved_bytes.all.current"],
            "allocated_peak": m["allocated_bytes.all.peak"],
            "segments": m["segment.all.allocated"],
            "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "cuda": torch.version.cuda, "python": sys.version.split()[0],
        }, f)


if __name__ == "__main__":
    main()
