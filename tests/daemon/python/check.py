#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks a folded profile of a tests/python workload against what the workload is known to do.

check.py FOLDED STEM --paths P [P ...] [--min-match 0.99] [--min-full 0.8]
         [--between A,B,NATIVE] [--native-before NAME] [--split TRUTH.json --within 2]
         [--named 0.99] [--native-below N [--min-native-below 0.95]]
         [--root NAME [--min-root 0.95]] [--max-unknown 0.005]

The Python frames of STEM.py in each stack (format 'STEM.qualname (STEM.py:line)'), root first,
must be a prefix of one of the paths (comma-separated qualnames) in >= min-match of the samples
that have any, and the whole path in >= min-full of them. --between: in those stacks where A and
B appear, a native frame containing NATIVE lies between them. --native-before: NAME is a native
frame above the first Python frame (the frames were put in place, not at the root). --split:
each key's share of the samples (among the keys) is within --within points of the truth's.
Whole stacks, in those samples: --native-below, at least N native frames below the innermost
Python frame; --root, the outermost frame is NAME; --max-unknown, the share with an [unknown].
--whole-under Q1,Q2,...: those three judged only in the samples whose Python path starts so
(a run's imports load libraries whose tables come a little after their first samples; that
wait is held to a budget and counted by xsprofd, and measured apart by the attached run).
"""
import argparse
import json
import re
import sys

PYFRAME = re.compile(r"^(?P<mod>[^ ]*?)\.(?P<qual>[^ ]+) \((?P<file>[^:()]+)(?::(?P<line>\d+))?\)$")


def parse(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count = line.rpartition(" ")
            out.append((without_forward(stack.split(";")), int(count)))
    return out


def without_forward(frames):
    """The stack as walked: a backward sample's forward frames, which xsprofd puts in after
    the '[backward of] ' mark (tests/daemon/python/check_backward.py checks those), set aside."""
    for i, fr in enumerate(frames):
        if fr.startswith("[backward of] "):
            j = i + 1
            while j < len(frames) and (PYFRAME.match(frames[j]) or frames[j] == "[python] ?"):
                j += 1
            return frames[:i] + frames[j:]
    return frames


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folded")
    ap.add_argument("stem")
    ap.add_argument("--paths", nargs="+", required=True)
    ap.add_argument("--min-match", type=float, default=0.99)
    ap.add_argument("--min-full", type=float, default=0.8)
    ap.add_argument("--between")
    ap.add_argument("--between-min", type=float, default=0.99)
    ap.add_argument("--native-before")
    ap.add_argument("--split")
    ap.add_argument("--within", type=float, default=2.0)
    ap.add_argument("--named", type=float, default=0.99)
    # Whole native stacks, in the samples with frames of the workload: at least N native
    # frames below the innermost Python frame, rooted at ROOT, and few [unknown] frames.
    ap.add_argument("--native-below", type=int)
    ap.add_argument("--min-native-below", type=float, default=0.95)
    ap.add_argument("--root")
    ap.add_argument("--min-root", type=float, default=0.95)
    ap.add_argument("--max-unknown", type=float)
    ap.add_argument("--whole-under")
    a = ap.parse_args()

    paths = [p.split(",") for p in a.paths]
    stacks = parse(a.folded)
    total = match = full = named = unnamed = 0
    between_ok = between_n = before_ok = 0
    below_ok = rooted = unknown = wtotal = 0
    under = a.whole_under.split(",") if a.whole_under else []
    bad = {}
    shallow = {}
    for frames, n in stacks:
        mine = []
        first_py = None
        for i, fr in enumerate(frames):
            m = PYFRAME.match(fr)
            if m and m.group("file") == a.stem + ".py" and m.group("mod") == a.stem:
                mine.append((i, m.group("qual")))
                if first_py is None:
                    first_py = i
        if not mine:
            continue
        # Names in the workload's stacks (start-up imports run code objects that are freed
        # before the reader gets to them: those may stay "[python] ?").
        py_any = [fr for fr in frames if PYFRAME.match(fr) or fr == "[python] ?"]
        named += sum(n for fr in py_any if fr != "[python] ?")
        unnamed += sum(n for fr in py_any if fr == "[python] ?")
        total += n
        seq = [q for _, q in mine]
        if any(p[: len(seq)] == seq for p in paths):
            match += n
            if any(p == seq for p in paths):
                full += n
        else:
            key = ";".join(seq)
            bad[key] = bad.get(key, 0) + n
        if a.between:
            x, y, native = a.between.split(",")
            ix = [i for i, q in mine if q == x]
            iy = [i for i, q in mine if q == y]
            if ix and iy:
                between_n += n
                if any(native in fr for fr in frames[ix[0] + 1 : iy[0]]):
                    between_ok += n
        if a.native_before and a.native_before in frames[:first_py]:
            before_ok += n
        if seq[: len(under)] != under:
            continue
        wtotal += n
        user = [fr for fr in frames[1:] if not fr.endswith("_[k]")]
        py_at = [i for i, fr in enumerate(user) if PYFRAME.match(fr) or fr == "[python] ?"]
        if a.native_below is not None and py_at:
            if len(user) - 1 - py_at[-1] >= a.native_below:
                below_ok += n
            else:
                key = ";".join(user[py_at[-1]:])[-160:]
                shallow[key] = shallow.get(key, 0) + n
        if a.root and user and user[0] == a.root:
            rooted += n
        if "[unknown]" in frames:
            unknown += n
    ok = True

    def need(cond, what):
        nonlocal ok
        print(("ok   " if cond else "FAIL ") + what)
        ok = ok and cond

    need(total > 0, f"{total} samples with {a.stem}.py frames")
    if not total:
        return 1
    need(match >= a.min_match * total,
         f"{match}/{total} = {100.0 * match / total:.2f}% match a known path (need {100 * a.min_match:.0f}%)")
    need(full >= a.min_full * total,
         f"{full}/{total} = {100.0 * full / total:.2f}% are a whole path (need {100 * a.min_full:.0f}%)")
    for k, v in sorted(bad.items(), key=lambda kv: -kv[1])[:5]:
        print(f"       unexpected: {k} ({v})")
    need(named >= a.named * (named + unnamed),
         f"{named}/{named + unnamed} Python frames named (need {100 * a.named:.0f}%)")
    if a.between:
        need(between_n > 0 and between_ok >= a.between_min * between_n,
             f"{between_ok}/{between_n} stacks have a native '{a.between.split(',')[2]}' frame between them")
    if a.native_before:
        need(before_ok >= 0.99 * total,
             f"{before_ok}/{total} stacks have native '{a.native_before}' above the Python frames")
    if under:
        need(wtotal > 0, f"{wtotal} of them under {','.join(under)}: whole stacks judged there")
        total = max(wtotal, 1)
    if a.native_below is not None:
        need(below_ok >= a.min_native_below * total,
             f"{below_ok}/{total} = {100.0 * below_ok / total:.2f}% have {a.native_below} or more native frames below the innermost Python frame (need {100 * a.min_native_below:.0f}%)")
        for k, v in sorted(shallow.items(), key=lambda kv: -kv[1])[:3]:
            print(f"       shallow: ...{k} ({v})")
    if a.root:
        need(rooted >= a.min_root * total,
             f"{rooted}/{total} = {100.0 * rooted / total:.2f}% reach the root '{a.root}' (need {100 * a.min_root:.0f}%)")
    if a.max_unknown is not None:
        need(unknown <= a.max_unknown * total,
             f"{unknown}/{total} = {100.0 * unknown / total:.2f}% carry an [unknown] frame (at most {100 * a.max_unknown:.1f}%)")
    if a.split:
        truth = json.load(open(a.split))
        counts = {k: 0 for k in truth}
        for frames, n in stacks:
            for k in truth:
                mod, qual = k.split(".", 1)
                if any((m := PYFRAME.match(fr)) and m.group("mod") == mod and m.group("qual") == qual
                       for fr in frames):
                    counts[k] += n
                    break
        ts, ps = sum(truth.values()), sum(counts.values())
        for k in truth:
            t, p = 100.0 * truth[k] / ts, 100.0 * counts[k] / max(ps, 1)
            need(abs(t - p) <= a.within, f"{k}: {p:.1f}% of samples, measured {t:.1f}% (within {a.within} pp)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
