# SPDX-License-Identifier: Apache-2.0
# An input-bound training loop on the GPU double: a real torch DataLoader with 2 worker
# processes (pt_data_worker) whose __getitem__ spends DECODE_S of CPU in decode(), and
# pin_memory=True, so that batches reach the training thread through the pin-memory thread.
# The training thread launches a short kernel per batch (libxs_gpu_double.so through ctypes)
# and waits for the next batch in DataLoader.__next__: the GPU idles on the host, and the host
# waits on a chain of threads (the pin-memory thread, the worker's queue feeder thread, the
# worker) that ends in decode(). xsprofd --wakers must follow that chain in the GPU report.
#
# A CPU-only torch (Debian's) turns pin_memory off, as it has no CUDA: it is told here that CUDA
# is there, and its pinning is the identity, so that DataLoader's own pin-memory thread runs as
# on a GPU machine. Usage: python3 dataloader_gpu.py LIBXS_GPU_DOUBLE SECONDS
import ctypes
import sys
import time

import torch
import torch.utils.data._utils.pin_memory as pin
from torch.utils.data import DataLoader, Dataset

DECODE_S = 0.008

gpu = ctypes.CDLL(sys.argv[1])
gpu.xs_double_kernel.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
gpu.xs_double_kernel.restype = ctypes.c_uint64

# CUDA as DataLoader asks for it, on a torch built without it.
torch.cuda.is_available = lambda: True
torch.cuda.current_device = lambda: 0
torch.cuda.set_device = lambda device: None
pin.pin_memory = lambda data, device=None: data


def decode(i):
    end = time.thread_time() + DECODE_S
    x = 0
    while time.thread_time() < end:  # DECODE
        x += i
    return x


class Images(Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        return torch.tensor([decode(i)], dtype=torch.float64)


def name_worker(_):
    # PR_SET_NAME, as PyTorch 2 names its workers.
    ctypes.CDLL(None).prctl(15, b"pt_data_worker", 0, 0, 0)


def train_step(batch):
    gpu.xs_double_kernel(b"dl_k_step", 1000000)
    return batch


def main(secs):
    loader = DataLoader(Images(), batch_size=2, num_workers=2, pin_memory=True,
                        worker_init_fn=name_worker)
    it = iter(loader)
    train_step(next(it))
    t0 = time.perf_counter()
    for batch in it:  # NEXT
        train_step(batch)
        if time.perf_counter() - t0 > secs:
            break
    gpu.xs_double_wait()
    sys.stdout.flush()
    return gpu.xs_double_send()


sys.exit(main(float(sys.argv[2])))
