# SPDX-License-Identifier: Apache-2.0
# A script that lives about 0.2 s: its frames must still be named (code objects are read while
# it runs).
import time


def quick():
    x = 0
    t = time.monotonic() + 0.2
    while time.monotonic() < t:
        x += 1
    return x


quick()
