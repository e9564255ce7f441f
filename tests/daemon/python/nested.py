# SPDX-License-Identifier: Apache-2.0
# Nested functions with a known CPU split: outer() calls leaf_a (via middle_a) and leaf_b (via
# middle_b), about 1:3 by work; the split is measured here with the thread's CPU clock and
# written to argv[2] as JSON for check.py to compare with the profile.
import json
import random
import sys
import time


def spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


# Random lengths (same means) so the loop does not run in step with the sampling clock.
def leaf_a():
    return spin(random.randint(5000, 35000))


def leaf_b():
    return spin(random.randint(15000, 105000))


def middle_a():
    return leaf_a()


def middle_b():
    return leaf_b()


def outer(deadline, spent):
    clock = time.thread_time
    while time.monotonic() < deadline:
        t0 = clock()
        middle_a()
        t1 = clock()
        middle_b()
        spent[0] += t1 - t0
        spent[1] += clock() - t1


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    spent = [0.0, 0.0]
    outer(time.monotonic() + secs, spent)
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            json.dump({"nested.leaf_a": spent[0], "nested.leaf_b": spent[1]}, f)


if __name__ == "__main__":
    main()
