# SPDX-License-Identifier: Apache-2.0
# A DataLoader with worker processes feeding the GPU, for the GPU suite (tests/gpu/run.sh): each
# sample is made on the host by decode_sample (numpy work, ~1 ms), two workers, batches of 32,
# and the training step (torch_step.py's MLP) is far quicker than a batch: the job is
# host-bound, and what holds it is decode_sample in the workers. Writes the truth to OUT_JSON:
# the workers' pids, the steps, the time the main process waited for batches.
#
# Usage: loader.py SECONDS OUT_JSON
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_step  # noqa: E402


def decode_sample(i):
    rng = np.random.default_rng(i)
    img = rng.standard_normal((64, 64))
    for _ in range(6):
        img = np.tanh(img @ img.T / 64.0)
    return np.resize(img, 1024).astype(np.float32)


class Samples(torch.utils.data.Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        return torch.from_numpy(decode_sample(i)), i % 10


def main():
    secs, out = float(sys.argv[1]), sys.argv[2]
    dev = torch.device("cuda")
    model = torch_step.mlp().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(Samples(), batch_size=32, num_workers=2,
                                         persistent_workers=True)
    it = iter(loader)
    steps, waited = 0, 0.0
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        t0 = time.perf_counter()
        x, y = next(it)
        waited += time.perf_counter() - t0
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        torch_step.train_step(model, opt, x, y)
        steps += 1
    torch.cuda.synchronize()
    workers = [w.pid for w in getattr(it, "_workers", [])]
    with open(out, "w") as f:
        json.dump({"steps": steps, "waited_s": waited, "seconds": secs, "workers": workers,
                   "main_pid": os.getpid()}, f)


if __name__ == "__main__":
    main()
