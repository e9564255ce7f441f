# SPDX-License-Identifier: Apache-2.0
# Three threads, each in its own function, and the main thread waiting: every sample's Python
# frames must be its own thread's.
import sys
import threading
import time


def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x


def work_red(deadline):
    while time.monotonic() < deadline:
        spin(5000)


def work_green(deadline):
    while time.monotonic() < deadline:
        spin(5000)


def work_blue(deadline):
    while time.monotonic() < deadline:
        spin(5000)


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    deadline = time.monotonic() + secs
    ts = [threading.Thread(target=f, args=(deadline,), name=f.__name__)
          for f in (work_red, work_green, work_blue)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


if __name__ == "__main__":
    main()
