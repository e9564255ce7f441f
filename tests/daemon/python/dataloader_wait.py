# SPDX-License-Identifier: Apache-2.0
# A real torch DataLoader with 2 worker processes (named pt_data_worker) whose __getitem__
# spends 4 ms of CPU in decode(); the main thread only iterates (and spins 1 ms a batch), so
# most of its time is the wait for the workers' batches inside DataLoader.__next__. A thread
# of its own, ticker, waits on a timer in a loop (time.sleep), as a heartbeat does: no thread
# ends those waits. Prints "ready" once the first batch is in (torch imported, workers
# started), then runs argv[1] seconds.
import ctypes
import sys
import threading
import time

import torch
from torch.utils.data import DataLoader, Dataset


def decode(i):
    t = time.perf_counter()
    x = 0
    while time.perf_counter() - t < 0.004:
        x += i
    return x


class Slow(Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        return torch.tensor([decode(i)], dtype=torch.float64)


def train_step(batch):
    t = time.perf_counter()
    while time.perf_counter() - t < 0.001:
        pass
    return batch.sum()


def name_worker(_):
    # PR_SET_NAME: the workers' samples say they are workers ("pt_data_worker").
    ctypes.CDLL(None).prctl(15, b"pt_data_worker", 0, 0, 0)


def ticker():
    while True:
        time.sleep(0.002)


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    threading.Thread(target=ticker, daemon=True).start()
    loader = DataLoader(Slow(), batch_size=2, num_workers=2, worker_init_fn=name_worker)
    it = iter(loader)
    train_step(next(it))
    print("ready", flush=True)
    t0 = time.perf_counter()
    for batch in it:
        train_step(batch)
        if time.perf_counter() - t0 > secs:
            break


if __name__ == "__main__":
    main()
