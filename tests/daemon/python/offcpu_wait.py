# SPDX-License-Identifier: Apache-2.0
# A main thread that spends most of its time off the CPU, in two Python functions of known wall
# time: wait_batch() blocks reading a pipe a producer thread fills (8 ms of CPU, then a byte,
# then 12 ms asleep), nap() sleeps 5 ms; each round also spins 2 ms. The workload measures the
# time in each on the main thread's own clock and writes it to argv[2] as JSON, with the main
# thread's wall time, for run.sh's offcpu case.
import json
import os
import sys
import threading
import time

r, w = os.pipe()
stop = False


def spin(secs):
    t = time.perf_counter()
    while time.perf_counter() - t < secs:
        pass


def producer():
    while not stop:
        spin(0.008)
        os.write(w, b"x")
        time.sleep(0.012)


def wait_batch():
    return os.read(r, 1)


def nap():
    time.sleep(0.005)


def main():
    global stop
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    th = threading.Thread(target=producer, daemon=True)
    th.start()
    spent = {"wait_batch": 0.0, "nap": 0.0, "spin": 0.0}
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < secs:
        a = time.perf_counter()
        wait_batch()
        b = time.perf_counter()
        nap()
        c = time.perf_counter()
        spin(0.002)
        d = time.perf_counter()
        spent["wait_batch"] += b - a
        spent["nap"] += c - b
        spent["spin"] += d - c
    spent["main_wall"] = time.perf_counter() - t0
    stop = True
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            json.dump(spent, f)


if __name__ == "__main__":
    main()
