# SPDX-License-Identifier: Apache-2.0
# A subinterpreter (CPython 3.11's _xxsubinterpreters) run from the main one: the thread has a
# thread state in each, and a sample inside the subinterpreter shows its frames (spin_sub, from
# "<string>") above the main interpreter's (call_sub), with the C frames between them.
import _xxsubinterpreters as interpreters
import sys
import time

SUB = """
def spin_sub(n):
    x = 0
    for i in range(n):
        x += i
    return x
spin_sub(200000)
"""


def spin_main(n):
    x = 0
    for i in range(n):
        x += i
    return x


def call_sub(interp, deadline):
    while time.monotonic() < deadline:
        interpreters.run_string(interp, SUB)
        spin_main(200000)


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    call_sub(interpreters.create(), time.monotonic() + secs)


if __name__ == "__main__":
    main()
