# SPDX-License-Identifier: Apache-2.0
# Training steps for the GPU suite's cost stages (tests/gpu/run.sh): in one process, each of
#   mlp   torch_step.py's MLP (1024-2048-2048-10, batch 256): launch-bound, ~1.5 ms a step
#   conv  torch_step.py's convolution net (batch 64x3x64x64)
#   big   12 linear layers 8192 wide, batch 8192, bf16 autocast: ~50 ms a step on an H100 or
#         H200, GPU-bound (not launch-bound)
# eager, SGD, NVTX ranges step/forward/backward/optimizer. Each runs for SECONDS after its
# warm-up; the step time is the median of windows (each ended by torch.cuda.synchronize) of
# enough steps to last ~20 ms.
#
# Usage: steps.py SECONDS OUT_JSON [MODELS] [--slow-step N]
#   MODELS  comma-separated (default mlp,conv,big)
#   --slow-step N  mlp only, for the flight recorder: step N of the timed loop sleeps 0.3 s on
#           the host inside its step range (a slow step, 200 times the median), then the loop
#           runs on for SECONDS
import json
import os
import statistics
import sys
import time

import torch
import torch.cuda.nvtx as nvtx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_step  # noqa: E402


def big():
    layers = []
    for _ in range(12):
        layers += [torch.nn.Linear(8192, 8192), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)


def batch(name, dev):
    if name == "big":
        return torch.randn(8192, 8192, device=dev), torch.randint(0, 8192, (8192,), device=dev)
    return torch_step.batch(name, dev)


def step(model, opt, x, y, amp):
    nvtx.range_push("step")
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
        torch_step.train_step(model, opt, x, y)
    nvtx.range_pop()


def run(name, secs, dev, slow_at=None):
    torch.manual_seed(0)
    model = {"mlp": torch_step.mlp, "conv": torch_step.conv, "big": big}[name]().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = batch(name, dev)
    amp = name == "big"
    t0 = time.perf_counter()
    warm = 3 if name == "big" else 20
    for _ in range(warm):
        step(model, opt, x, y, amp)
    torch.cuda.synchronize()
    per = max((time.perf_counter() - t0) / warm, 1e-5)
    k = max(1, min(50, int(0.02 / per)))
    windows, steps, slow = [], 0, None
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        t0 = time.perf_counter()
        for _ in range(k):
            if slow_at is not None and steps == slow_at:
                nvtx.range_push("step")
                time.sleep(0.3)
                torch_step.train_step(model, opt, x, y)
                nvtx.range_pop()
                slow = time.time()
                deadline = time.monotonic() + secs
            else:
                step(model, opt, x, y, amp)
            steps += 1
        torch.cuda.synchronize()
        windows.append((time.perf_counter() - t0) / k)
    q = statistics.quantiles(windows, n=4) if len(windows) > 1 else windows * 3
    r = {"steps": steps, "window_steps": k, "windows": len(windows),
         "step_s": statistics.median(windows), "q1_s": q[0], "q3_s": q[2]}
    if slow is not None:
        r["slow_step_wall"] = slow
    return r


def main():
    args = sys.argv[1:]
    slow_at = None
    if "--slow-step" in args:
        i = args.index("--slow-step")
        slow_at = int(args[i + 1])
        del args[i:i + 2]
    secs, out = float(args[0]), args[1]
    models = (args[2] if len(args) > 2 else "mlp,conv,big").split(",")
    dev = torch.device("cuda")
    t0 = time.perf_counter()
    res = {"models": {}, "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "pid": os.getpid()}
    for m in models:
        res["models"][m] = run(m, secs, dev, slow_at if m == "mlp" else None)
    res["wall_s"] = time.perf_counter() - t0
    with open(out, "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    main()
