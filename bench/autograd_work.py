# SPDX-License-Identifier: Apache-2.0
# A training step for the autograd probes' cost: 16 Linear layers of WIDTH (default 64) on a
# batch of 16, CPU, one thread, each step making and running ~50 autograd nodes. At 64 wide
# the ops are tiny (the worst case: a step well under a millisecond); at 256 each takes tens of
# microseconds, as a model's host-side ops do. Runs STEPS steps (after 50 to warm up) and
# prints "step_us MEDIAN nodes_per_step N" from the thread's own clock.
# Usage: python3 autograd_work.py STEPS [WIDTH]
import statistics
import sys
import time

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
width = int(sys.argv[2]) if len(sys.argv) > 2 else 64
layers = [torch.nn.Linear(width, width) for _ in range(16)]
x = torch.randn(16, width)


def step():
    h = x
    for layer in layers:
        h = torch.relu(layer(h))
    h.sum().backward()
    for layer in layers:
        layer.weight.grad = None
        layer.bias.grad = None


def main(steps):
    for _ in range(50):
        step()
    times = []
    for _ in range(steps):
        t0 = time.thread_time_ns()
        step()
        times.append(time.thread_time_ns() - t0)
    h = x
    for layer in layers:  # count the nodes one step makes: each op's node, and the loss's
        h = torch.relu(layer(h))
    nodes, todo, seen, kept = 0, [h.sum().grad_fn], set(), []
    while todo:
        f = todo.pop()
        if f is None or id(f) in seen:
            continue
        kept.append(f)  # held, so that no id is reused
        seen.add(id(f))
        nodes += type(f).__name__ != "AccumulateGrad"
        todo.extend(g for g, _ in f.next_functions)
    print(f"step_us {statistics.median(times) / 1000:.1f} nodes_per_step {nodes}", flush=True)


main(int(sys.argv[1]))
