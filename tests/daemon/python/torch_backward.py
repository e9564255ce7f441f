# SPDX-License-Identifier: Apache-2.0
# Backward work under its forward line, with Debian's python3-torch on the CPU: two Linear layers
# made at different lines of Net.forward, the big one 8 times the small one's work. Each step
# times, with the thread's CPU clock, what backward spends on each layer: the two layers'
# backward are run apart (torch.autograd.grad of each output alone) every step and timed, and
# then the whole step's forward and backward run as users write them. argv[2] gets, as JSON,
# the share of the layers' backward time that was the big layer's, for the profile to match.
# torch_backward.py SECONDS SPLIT_JSON
import json
import sys
import time

import torch

torch.set_num_threads(1)
torch.manual_seed(0)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.big = torch.nn.Linear(1024, 1024)
        self.small = torch.nn.Linear(1024, 128)

    def forward(self, x):
        a = self.big(x)  # the big layer's line
        b = self.small(x)  # the small layer's line
        return a, b


def timed_grad(out, inputs):
    t0 = time.thread_time()
    torch.autograd.grad(out.sum(), inputs)
    return time.thread_time() - t0


def train(model, x, seconds):
    spent = {"big": 0.0, "small": 0.0}
    params = [x] + list(model.parameters())
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        a, b = model(x)
        spent["big"] += timed_grad(a, [x, model.big.weight, model.big.bias])
        spent["small"] += timed_grad(b, [x, model.small.weight, model.small.bias])
        a, b = model(x)
        loss = a.sum() + b.sum()
        loss.backward()
        for p in params:
            p.grad = None
    return spent


def main():
    seconds = float(sys.argv[1])
    model = Net()
    x = torch.randn(256, 1024, requires_grad=True)
    spent = train(model, x, seconds)
    total = spent["big"] + spent["small"]
    with open(sys.argv[2], "w") as f:
        json.dump({"big": spent["big"] / total, "small": spent["small"] / total,
                   "seconds": total}, f)


main()
