# SPDX-License-Identifier: Apache-2.0
# A fixed amount of Python work for bench/python.sh: nested calls (about 12 Python frames deep
# under the interpreter's own) spinning N iterations, or until killed with N = 0. Prints the
# seconds the work took (start-up left out): wall clock, then the process's CPU time (which the
# sampling interrupts are charged to, and other load on a shared machine is not).
import sys
import time


def spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def level(d, n):
    if d == 0:
        return spin(n)
    return level(d - 1, n)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    t0, c0 = time.perf_counter(), time.process_time()
    done = 0
    while n == 0 or done < n:
        level(8, 10000)
        done += 10000
    print(f"{time.perf_counter() - t0:.4f} {time.process_time() - c0:.4f}")


if __name__ == "__main__":
    main()
