# SPDX-License-Identifier: Apache-2.0
# Two loops held back in known ways on a real GPU, for the GPU report's checks (tests/gpu/):
#   input  each step launches about 2 ms of matrix products, then make_batch() computes the
#          next batch in pure Python for 10 ms of CPU while the GPU idles: host-bound, and
#          the idle time belongs to make_batch.
#   sync   each step launches about 1 ms of matrix products, then log_loss() reads the loss
#          with .item() (a copy and a stream synchronize) and formats it for 0.5 ms before
#          the next step: sync-bound, and the idle time belongs to log_loss's .item().
# Prints the GPU time it launched per step and the host time between steps, measured here
# with CUDA events and the thread's clock, as JSON to OUT_JSON.
#
# Usage: bound.py input|sync STEPS OUT_JSON
import json
import sys
import time

import torch


def gpu_work(x, w, n):
    for _ in range(n):
        x = torch.tanh(x @ w)  # SITE gpu_work
    return x


def make_batch():
    end = time.thread_time() + 0.010
    v = 0
    while time.thread_time() < end:  # SITE make_batch
        v += 1
    return v


def log_loss(x):
    loss = x.float().mean().item()  # SITE log_loss
    end = time.perf_counter() + 0.0005
    text = ""
    while time.perf_counter() < end:
        text = f"loss {loss:.4f}"
    return text


def calibrate(x, w):
    """How many products make about the wanted GPU time per step."""
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    gpu_work(x, w, 20)
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) / 20  # ms per product


def main():
    kind, steps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    dev = torch.device("cuda")
    torch.manual_seed(0)
    x = torch.randn(2048, 2048, device=dev)
    w = torch.randn(2048, 2048, device=dev) / 2048 ** 0.5
    per = calibrate(x, w)
    want_ms = 2.0 if kind == "input" else 1.0
    n = max(1, round(want_ms / per))
    t0 = time.perf_counter()
    for _ in range(steps):
        y = gpu_work(x, w, n)
        if kind == "input":
            make_batch()
        else:
            log_loss(y)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    with open(out, "w") as f:
        json.dump({"kind": kind, "steps": steps, "products_per_step": n,
                   "gpu_ms_per_product": per, "wall_s": wall}, f)


if __name__ == "__main__":
    main()
