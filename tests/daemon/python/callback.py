# SPDX-License-Identifier: Apache-2.0
# A C function calling back into Python: libc's qsort, through ctypes, calls compare() for
# every comparison; compare() spins. Native frames (qsort, libffi) sit between the frames
# of sort_many() and compare().
import ctypes
import sys
import time

libc = ctypes.CDLL("libc.so.6")
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))


def burn(n):
    x = 0
    for i in range(n):
        x += i
    return x


def compare(a, b):
    burn(300)
    return a[0] - b[0]


def sort_many(deadline):
    cmp = CMP(compare)
    arr = (ctypes.c_int * 64)(*range(64, 0, -1))
    while time.monotonic() < deadline:
        libc.qsort(arr, len(arr), ctypes.sizeof(ctypes.c_int), cmp)
        arr = (ctypes.c_int * 64)(*range(64, 0, -1))


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    sort_many(time.monotonic() + secs)


if __name__ == "__main__":
    main()
