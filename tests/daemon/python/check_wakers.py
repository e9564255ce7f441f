#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks a --wakers off-CPU profile of tests/daemon/python/dataloader_wait.py (a real torch
DataLoader, 2 worker processes named pt_data_worker).

check_wakers.py FOLDED [--min-reach 0.6] [--hops 2] [--min-deep 0.5]

The main thread's off-CPU time inside DataLoader.__next__, less the stretches it was preempted
(runnable, waiting for a CPU: no thread woke it), must be charged, for >= min-reach of it, to
chains of wakers that reach a pt_data_worker thread; and >= min-deep of it to chains of --hops
hops or more (the worker's feeder thread that wrote the pipe, then the worker's main thread
that handed it the batch: without pin_memory, which a CPU-only torch leaves off, two hops).
No false chain: the ticker thread's waits in time.sleep (the clock_nanosleep call: a timer
ends them) must be charged to no thread (<= 0.5% of them, for a wait that began or ended at
an edge of the run).
"""
import argparse
import sys

MARK = "[woken by "
PREEMPTED = ("exit_to_user_mode_loop_[k]", "preempt_schedule_irq_[k]", "irqentry_exit_[k]",
             "preempt_schedule_[k]")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folded")
    ap.add_argument("--min-reach", type=float, default=0.6)
    ap.add_argument("--hops", type=int, default=2)
    ap.add_argument("--min-deep", type=float, default=0.5)
    a = ap.parse_args()
    total = voluntary = reach = deep = sleep = sleep_blamed = 0
    for line in open(a.folded):
        if line.startswith("#") or not line.strip():
            continue
        st, n = line.rstrip("\n").rsplit(" ", 1)
        fr, n = st.split(";"), int(n)
        first = next((i for i, f in enumerate(fr) if f.startswith(MARK)), len(fr))
        own = fr[:first]  # the waiting thread's own frames (the hops' follow)
        if any(f.startswith("dataloader_wait.ticker ") for f in own) and \
                any("clock_nanosleep" in f for f in own):
            sleep += n
            sleep_blamed += n if first < len(fr) else 0
            continue
        if not any(f.startswith("dataloader_wait.main ") for f in own) or \
                not any("DataLoader" in f and "__next__" in f for f in own) or \
                any("_feed" in f or "_worker_loop" in f for f in own):
            continue
        total += n
        if any(k in fr[:first] for k in PREEMPTED):
            continue
        voluntary += n
        hops = [f for f in fr[first:] if f.startswith(MARK)]
        if any(h.startswith(MARK + "pt_data_worker ") for h in hops):
            reach += n
            deep += n if len(hops) >= a.hops else 0
    if not voluntary:
        print("check_wakers: FAIL no waits of the main thread in DataLoader.__next__")
        return 1
    r, d = reach / voluntary, deep / voluntary
    print(f"check_wakers: main thread in __next__: {total} us off the CPU, {voluntary} us "
          f"waiting (not preempted); {r:.1%} charged to chains reaching a pt_data_worker, "
          f"{d:.1%} to chains of {a.hops} hops or more")
    print(f"check_wakers: ticker in time.sleep: {sleep} us, {sleep_blamed} us charged to a "
          "thread (want none)")
    ok = True
    if sleep < 100000 or sleep_blamed > 0.005 * sleep:
        print("FAIL the ticker's timer waits were charged to a thread (or it never slept)")
        ok = False
    if r < a.min_reach:
        print(f"FAIL {r:.1%} reaches a worker, want >= {a.min_reach:.0%}")
        ok = False
    if d < a.min_deep:
        print(f"FAIL {d:.1%} in chains of {a.hops} hops or more, want >= {a.min_deep:.0%}")
        ok = False
    return 0 if ok else 1


sys.exit(main())
