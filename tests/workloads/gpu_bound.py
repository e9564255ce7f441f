# SPDX-License-Identifier: Apache-2.0
# The GPU report's input-bound loop in Python: train_step() launches 4 kernels of 2 ms on the
# GPU double (libxs_gpu_double.so through ctypes), then make_batch() computes the next batch in
# pure Python for 25 ms of CPU while the GPU idles. The report must blame the idle time on
# make_batch at its line (xsprofd names Python frames "module.function (file.py:line)").
# Usage: python3 gpu_bound.py LIBXS_GPU_DOUBLE N
import ctypes
import sys
import time

gpu = ctypes.CDLL(sys.argv[1])
gpu.xs_double_kernel.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
gpu.xs_double_kernel.restype = ctypes.c_uint64


def make_batch():
    end = time.thread_time() + 0.025
    x = 0
    while time.thread_time() < end:  # BATCH
        x += 1
    return x


def train_step():
    for _ in range(4):
        gpu.xs_double_kernel(b"py_k_forward", 2000000)


def main(n):
    for _ in range(n):
        train_step()
        make_batch()
    gpu.xs_double_wait()
    gpu.xs_double_truth()
    sys.stdout.flush()
    return gpu.xs_double_send()


sys.exit(main(int(sys.argv[2])))
