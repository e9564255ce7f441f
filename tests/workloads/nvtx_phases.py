# SPDX-License-Identifier: Apache-2.0
"""NVTX phases from Python through ctypes (libnvtx3interop, the CUDA toolkit's NVTX library):
each iteration: load 0.1 s | train { forward 0.2 s | backward 0.3 s }. Prints each phase's CPU
time ("phase NAME NS", process_time, innermost) and the process's ("total NS").
Usage: python3 nvtx_phases.py [ITERATIONS] [LIBNVTX3INTEROP]"""
import ctypes
import os
import sys
import time

lib = ctypes.CDLL(sys.argv[2] if len(sys.argv) > 2 else "libnvtx3interop.so.1")
lib.nvtxRangePushA.argtypes = [ctypes.c_char_p]
spent = {"load": 0, "train": 0, "forward": 0, "backward": 0}


def xs_py_spin(seconds):
    end = time.process_time() + seconds
    x = 0
    while time.process_time() < end:
        for i in range(2000):
            x = (x * 31 + i) % 1000003
    return x


def phase(name, seconds, inner=()):
    lib.nvtxRangePushA(name.encode())
    t0 = time.process_time()
    for sub in inner:
        sub()
    own = time.process_time()
    xs_py_spin(seconds)
    spent[name] += time.process_time() - own
    lib.nvtxRangePop()
    return time.process_time() - t0


def main():
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for _ in range(iterations):
        phase("load", 0.1)
        phase("train", 0.0, (lambda: phase("forward", 0.2), lambda: phase("backward", 0.3)))
    for name, s in spent.items():
        print("phase %s %d" % (name, int(s * 1e9)))
    t = os.times()
    print("total %d" % int((t.user + t.system) * 1e9))


if __name__ == "__main__":
    main()
