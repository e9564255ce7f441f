# SPDX-License-Identifier: Apache-2.0
# A real PyTorch training loop (Debian's python3-torch, CPU): train -> step -> forward /
# backward / optimizer, matmuls and convolutions in libtorch. One intra-op thread, so the work
# runs on the thread that the Python frames are read from; each phase's share is measured here
# with that thread's CPU clock and written to argv[2] as JSON for check.py.
# torch_train.py SECONDS [SPLIT_JSON]
import json
import sys
import time

import torch

torch.set_num_threads(1)
torch.manual_seed(0)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.fc1 = torch.nn.Linear(16 * 16 * 16, 256)
        self.fc2 = torch.nn.Linear(256, 10)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        x = torch.nn.functional.max_pool2d(x, 2)
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def forward(model, x, y):
    return torch.nn.functional.cross_entropy(model(x), y)


def backward(loss):
    loss.backward()


def optimizer_step(opt):
    opt.step()
    opt.zero_grad()


def step(model, opt, x, y, spent):
    clock = time.thread_time
    t0 = clock()
    loss = forward(model, x, y)
    t1 = clock()
    backward(loss)
    t2 = clock()
    optimizer_step(opt)
    t3 = clock()
    spent[0] += t1 - t0
    spent[1] += t2 - t1
    spent[2] += t3 - t2


def train(secs, spent):
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(32, 3, 32, 32)
    y = torch.randint(0, 10, (32,))
    deadline = time.monotonic() + secs
    steps = 0
    while time.monotonic() < deadline:
        step(model, opt, x, y, spent)
        steps += 1
    return steps


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    spent = [0.0, 0.0, 0.0]
    steps = train(secs, spent)
    print(f"{steps} steps", file=sys.stderr)
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            json.dump({"torch_train.forward": spent[0], "torch_train.backward": spent[1],
                       "torch_train.optimizer_step": spent[2]}, f)


if __name__ == "__main__":
    main()
