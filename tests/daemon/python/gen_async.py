# SPDX-License-Identifier: Apache-2.0
# Generators and coroutines: produce() is a generator driven by consume(); awork() is awaited
# by amain() under asyncio. Half of the time in each.
import asyncio
import sys
import time


def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x


def produce(deadline):
    while time.monotonic() < deadline:
        yield spin(20000)


def consume(deadline):
    total = 0
    for v in produce(deadline):
        total += v
    return total


async def awork(deadline):
    while time.monotonic() < deadline:
        spin(20000)
        await asyncio.sleep(0)


async def amain(deadline):
    await awork(deadline)


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    consume(time.monotonic() + secs / 2)
    asyncio.run(amain(time.monotonic() + secs / 2))


if __name__ == "__main__":
    main()
