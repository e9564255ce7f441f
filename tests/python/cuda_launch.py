# SPDX-License-Identifier: Apache-2.0
# CUDA launches from Python through ctypes on the real libcudart: without a GPU each call fails,
# but the entry uprobe fires, and its stack must carry launch_step() at the calling line.
import ctypes
import sys

cudart = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "libcudart.so.13")


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


def launch_step(n):
    one = Dim3(1, 1, 1)
    for _ in range(n):
        cudart.cudaLaunchKernel(ctypes.c_void_p(0x1234), one, one, None, ctypes.c_size_t(0), None)  # LAUNCH


def train(n):
    launch_step(n)


if __name__ == "__main__":
    train(int(sys.argv[2]) if len(sys.argv) > 2 else 50)
