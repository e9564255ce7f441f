#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that backward's CPU samples are under the forward line that made their node.

check_backward.py FOLDED SPLIT.json [--within 3] [--min-joined 0.95] [--min-samples 300]
check_backward.py FOLDED --none
check_backward.py FOLDED --engine WORKLOAD.py --launches N --log LOG [--ranges GPU.json]
                  [--trace TRACE.json]

Backward's samples are those under torch::autograd::Engine::execute. Of them, >= min-joined
carry a '[backward of] ' frame, which comes before Net.forward's frame, and that before the
engine's evaluate_function frame (the forward line sits between backward() and the node's
work). The samples under each of Net.forward's two lines (torch_backward.py, found by their
comments) split as the workload measured (SPLIT.json), within --within points. --none: a run
with --no-autograd has no '[backward of] ' frame at all. --engine: kernels launched by the
engine's own thread (tests/workloads/torch_engine.py on the GPU double): every '[gpu] bwd_big'
and '[gpu] bwd_small' stack carries the mark, its own node's forward line and the backward()
line, and xsprofd's log says all N launches were put under their forward line. --ranges: the
GPU report's NVTX range "backward", opened on the Python thread around backward(), holds
>= 99% of those kernels' GPU time, though the engine's thread launched them, and "forward"
none of it. --trace: in the Chrome trace, every bwd_big and bwd_small slice is the end of a
"backward of" flow that starts on the Python thread's "autograd nodes" track, at a time inside
one of its NVTX "forward" ranges (the node was made in forward()).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = "[backward of] "


def lines_of_layers():
    big = small = None
    with open(os.path.join(HERE, "torch_backward.py")) as f:
        for i, line in enumerate(f, 1):
            if "# the big layer's line" in line:
                big = i
            elif "# the small layer's line" in line:
                small = i
    return big, small


def marked_lines(path, marks):
    found = {}
    with open(path) as f:
        for i, line in enumerate(f, 1):
            for m in marks:
                if "# " + m in line:
                    found[m] = i
    return found


def engine(a, stacks):
    lines = marked_lines(a.engine, ["FORWARD BIG", "FORWARD SMALL", "BACKWARD"])
    stem = "torch_engine"
    bwd = f"{stem}.step ({stem}.py:{lines['BACKWARD']})"
    want = {"[gpu] bwd_big": f"{stem}.forward ({stem}.py:{lines['FORWARD BIG']})",
            "[gpu] bwd_small": f"{stem}.forward ({stem}.py:{lines['FORWARD SMALL']})"}
    total = {k: 0 for k in want}
    ok = {k: 0 for k in want}
    for fr, n in stacks:
        leaf = fr[-1]
        if leaf not in want:
            continue
        total[leaf] += n
        at = [i for i, x in enumerate(fr) if x.startswith(MARK)]
        if bwd in fr and at and want[leaf] in fr and fr.index(bwd) < at[0] <= fr.index(want[leaf]):
            ok[leaf] += n
    fails = []
    for k in want:
        print(f"check_backward: {k}: {ok[k]} of {total[k]} under the backward() line, the mark "
              f"and {want[k]}")
        if total[k] == 0 or ok[k] != total[k]:
            fails.append(f"{k}: {total[k] - ok[k]} of {total[k]} not under their forward line")
    if total["[gpu] bwd_small"]:
        ratio = total["[gpu] bwd_big"] / total["[gpu] bwd_small"]
        print(f"check_backward: the big node's GPU time {ratio:.2f} times the small one's (8)")
        if not 6.5 <= ratio <= 9.5:
            fails.append(f"GPU time ratio {ratio:.2f}, want about 8")
    if a.log and a.launches:
        joined = 0
        with open(a.log) as f:
            for line in f:
                if "python autograd:" in line:
                    for part in line.split(","):
                        if part.strip().endswith("launches under their forward line"):
                            joined = int(part.strip().split()[0])
        print(f"check_backward: {joined} launches under their forward line (want {a.launches})")
        if joined < a.launches:
            fails.append(f"{joined} launches joined, want {a.launches}")
    if a.ranges:
        fails += ranges(a.ranges)
    if a.trace:
        fails += trace(a.trace)
    for f in fails:
        print("FAIL " + f)
    return 1 if fails else 0


def ranges(path):
    with open(path) as f:
        r = json.load(f)
    gpu = sum(k["total_ns"] for k in r["kernels"] if k["name"] in ("bwd_big", "bwd_small"))
    got = {x["name"]: x["gpu_ns"] for x in r.get("ranges", [])}
    bwd, fwd = got.get("backward", 0), got.get("forward", 0)
    print(f"check_backward: NVTX range backward holds {bwd / 1e6:.1f} ms of GPU time, forward "
          f"{fwd / 1e6:.1f} ms; the engine thread's kernels ran {gpu / 1e6:.1f} ms")
    fails = []
    if not gpu or bwd < 0.99 * gpu or bwd > 1.01 * gpu:
        fails.append(f"range backward holds {bwd} ns of the {gpu} ns its kernels ran")
    if fwd:
        fails.append(f"range forward holds {fwd} ns of GPU time, want 0")
    return fails


def trace(path):
    doc = json.load(open(path))
    ev = doc["traceEvents"] if isinstance(doc, dict) else doc
    kernels = {(e["pid"], e["tid"], e["ts"]) for e in ev
               if e.get("ph") == "X" and e.get("cat") == "gpu"
               and e.get("name") in ("bwd_big", "bwd_small")}
    starts = {e["id"]: e for e in ev if e.get("ph") == "s" and e.get("name") == "backward of"}
    ends = [e for e in ev if e.get("ph") == "f" and e.get("name") == "backward of"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    # NVTX ranges (async begin/end pairs by id) named forward, by thread
    opened, fwd = {}, []
    for e in ev:
        if e.get("cat") == "nvtx" and e.get("name") == "forward":
            if e["ph"] == "b":
                opened[e["id"]] = e
            elif e["ph"] == "e" and e["id"] in opened:
                b = opened.pop(e["id"])
                fwd.append((b["pid"], b["tid"], b["ts"], e["ts"]))
    ok = 0
    fails = []
    for f in ends:
        s = starts.get(f["id"])
        if (f["pid"], f["tid"], f["ts"]) not in kernels or not s:
            continue
        track = names.get((s["pid"], s["tid"]), "")
        py_tid = s["tid"] - (1 << 32)
        if not track.startswith("autograd nodes") or not any(
                p == s["pid"] and t == py_tid and lo <= s["ts"] <= hi for p, t, lo, hi in fwd):
            continue
        ok += 1
    print(f"check_backward: {ok} of {len(kernels)} backward kernels in the Chrome trace are "
          f"the end of a flow from an autograd node made inside forward()")
    if not kernels or ok != len(kernels):
        fails.append(f"{len(kernels) - ok} of {len(kernels)} backward kernels without their "
                     "forward op's flow")
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folded")
    ap.add_argument("split", nargs="?")
    ap.add_argument("--within", type=float, default=3.0)
    ap.add_argument("--min-joined", type=float, default=0.95)
    ap.add_argument("--min-samples", type=int, default=300)
    ap.add_argument("--none", action="store_true")
    ap.add_argument("--engine")
    ap.add_argument("--launches", type=int)
    ap.add_argument("--log")
    ap.add_argument("--ranges")
    ap.add_argument("--trace")
    a = ap.parse_args()
    stacks = []
    with open(a.folded) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            st, n = line.rstrip("\n").rsplit(" ", 1)
            stacks.append((st.split(";"), int(n)))
    marked = sum(n for fr, n in stacks if any(x.startswith(MARK) for x in fr))
    if a.none:
        print(f"check_backward: {marked} samples with a '{MARK.strip()}' frame (want 0)")
        return 0 if marked == 0 else 1
    if a.engine:
        return engine(a, stacks)
    big_line, small_line = lines_of_layers()
    big_frame = f"torch_backward.Net.forward (torch_backward.py:{big_line})"
    small_frame = f"torch_backward.Net.forward (torch_backward.py:{small_line})"
    backward = joined = ordered = big = small = 0
    for fr, n in stacks:
        if not any(x.startswith("torch::autograd::Engine::execute(") for x in fr):
            continue
        backward += n
        at = [i for i, x in enumerate(fr) if x.startswith(MARK)]
        if not at:
            continue
        joined += n
        fwd = [i for i, x in enumerate(fr) if x in (big_frame, small_frame)]
        ev = [i for i, x in enumerate(fr) if "Engine::evaluate_function(" in x]
        if fwd and ev and at[0] <= fwd[0] < ev[0]:
            ordered += n
        if big_frame in fr:
            big += n
        elif small_frame in fr:
            small += n
    with open(a.split) as f:
        truth = json.load(f)
    fails = []
    if backward == 0:
        print("check_backward: no samples under Engine::execute")
        return 1
    share = joined / backward
    print(f"check_backward: {backward} samples in backward, {joined} ({share:.2%}) under a "
          f"forward line, {ordered} with the mark, the forward line and the node's work in order")
    if share < a.min_joined:
        fails.append(f"{share:.2%} of backward's samples joined, want >= {a.min_joined:.0%}")
    if ordered < 0.99 * joined:
        fails.append(f"{joined - ordered} joined samples out of order")
    if big + small < a.min_samples:
        fails.append(f"{big + small} samples under the two layers' lines, want >= {a.min_samples}")
    else:
        got = 100.0 * big / (big + small)
        want = 100.0 * truth["big"]
        print(f"check_backward: big layer (line {big_line}) {got:.1f}% of the layers' backward "
              f"samples ({big} of {big + small}); the workload measured {want:.1f}%")
        if abs(got - want) > a.within:
            fails.append(f"big layer {got:.1f}% against {want:.1f}% measured: over {a.within} "
                         "points")
    for f in fails:
        print("FAIL " + f)
    return 1 if fails else 0


sys.exit(main())
