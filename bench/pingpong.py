# SPDX-License-Identifier: Apache-2.0
# bench/offcpu.sh's Python load: two Python threads handing a byte back and forth through two
# pipes, argv[1] rounds (two context switches each), each blocked inside a Python function a
# few frames deep, as a DataLoader's consumer and feeder are. Prints "switches_per_s N".
import os
import sys
import threading
import time


def ping(rx, tx, n):
    for _ in range(n):
        os.write(tx, b"x")
        os.read(rx, 1)


def pong(rx, tx, n):
    for _ in range(n):
        os.read(rx, 1)
        os.write(tx, b"x")


def nested(fn, depth, *args):
    return nested(fn, depth - 1, *args) if depth else fn(*args)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    a, b = os.pipe()
    c, d = os.pipe()
    t = threading.Thread(target=nested, args=(pong, 8, a, d, n))
    t0 = time.perf_counter()
    t.start()
    nested(ping, 8, c, b, n)
    t.join()
    print("switches_per_s %.0f" % (2 * n / (time.perf_counter() - t0)))


main()
