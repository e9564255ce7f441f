# SPDX-License-Identifier: Apache-2.0
# Nested functions with a known CPU split: outer() spends ~1/4 of its time in leaf_a (via
# middle_a) and ~3/4 in leaf_b (via middle_b), by iteration counts measured here.
import sys
import time


def spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def leaf_a():
    return spin(20000)


def leaf_b():
    return spin(60000)


def middle_a():
    return leaf_a()


def middle_b():
    return leaf_b()


def outer(deadline):
    while time.monotonic() < deadline:
        middle_a()
        middle_b()


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    outer(time.monotonic() + secs)


if __name__ == "__main__":
    main()
