# SPDX-License-Identifier: Apache-2.0
# CUDA launches from Python through ctypes on the real libcudart: without a GPU each call fails,
# but the entry uprobe fires, and its stack must carry launch_step() at the calling line, under
# step_a or step_b: they alternate in runs of three with the same native stack below, so a
# reused launch stack must tell them apart by their Python frames alone.
import ctypes
import sys
import time

cudart = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "libcudart.so.13")


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


def launch_step(one):
    cudart.cudaLaunchKernel(ctypes.c_void_p(0x1234), one, one, None, ctypes.c_size_t(0), None)  # LAUNCH


def step_a(one):
    launch_step(one)


def step_b(one):
    launch_step(one)


def train(n):
    one = Dim3(1, 1, 1)
    # One of each, then a pause: a code object first met just before the process exits may go
    # unnamed (the short case), which is not what this checks. Half a second: on a busy
    # 2-core machine the daemon may not run for tens of ms (0.05 s failed about 1 run in 20).
    step_a(one)
    step_b(one)
    time.sleep(0.5)
    for i in range(n - 2):
        (step_b if (i // 3) % 2 else step_a)(one)


if __name__ == "__main__":
    train(int(sys.argv[2]) if len(sys.argv) > 2 else 50)
