#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads an OTLP ExportProfilesServiceRequest (v1development, output/proto/) from the wire,
with no protobuf library, checks the dictionary rules (entry 0 of each table its zero value,
every index in range) and prints one line per sample:

    TYPE/UNIT key=value,key=value root;...;leaf VALUE

resource attributes first as "resource key=value" lines. Exits 1 on any violation."""
import sys


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    """(field, wire type, value) of one message; LEN values as bytes."""
    i, out = 0, []
    while i < len(b):
        k, i = varint(b, i)
        f, wt = k >> 3, k & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = int.from_bytes(b[i:i + 8], "little"), i + 8
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 5:
            v, i = int.from_bytes(b[i:i + 4], "little"), i + 4
        else:
            raise ValueError("wire type %d" % wt)
        out.append((f, wt, v))
    return out


def get(msg, f):
    return [v for (g, _, v) in fields(msg) if g == f]


def one(msg, f, default=0):
    v = get(msg, f)
    return v[-1] if v else default


def packed(msg, f):
    out = []
    for (g, wt, v) in fields(msg):
        if g != f:
            continue
        if wt == 2:
            i = 0
            while i < len(v):
                x, i = varint(v, i)
                out.append(x)
        else:
            out.append(v)
    return out


def fail(msg):
    print("otlp_read: " + msg, file=sys.stderr)
    sys.exit(1)


def anyvalue(v):
    for (f, _, x) in fields(v):
        if f == 1:
            return x.decode()
        if f == 3:
            return str(x - (1 << 64) if x >= 1 << 63 else x)
    return ""


def main():
    data = open(sys.argv[1], "rb").read()
    req = data
    dicts = get(req, 2)
    if len(dicts) != 1:
        fail("one dictionary expected, got %d" % len(dicts))
    d = dicts[0]
    strings = [s.decode() for s in get(d, 5)]
    tables = {n: get(d, f) for (n, f) in
              (("mapping", 1), ("location", 2), ("function", 3), ("link", 4),
               ("attribute", 6), ("stack", 7))}
    if not strings or strings[0] != "":
        fail("string_table[0] is not \"\"")
    for name, t in tables.items():
        if not t:
            fail("%s_table[0] missing" % name)
        zero = t[0]
        if name == "link":
            if any(any(v) for v in get(zero, 1) + get(zero, 2)):
                fail("link_table[0] is not zero")
        elif zero != b"":
            fail("%s_table[0] is not the zero value" % name)

    def s(i):
        if i >= len(strings):
            fail("string index %d out of range" % i)
        return strings[i]

    def frame(li):
        if li <= 0 or li >= len(tables["location"]):
            fail("location index %d out of range" % li)
        lines = get(tables["location"][li], 3)
        fi = one(lines[0], 1) if lines else 0
        if fi <= 0 or fi >= len(tables["function"]):
            fail("function index %d out of range" % fi)
        return s(one(tables["function"][fi], 1))

    def attr(ai):
        if ai <= 0 or ai >= len(tables["attribute"]):
            fail("attribute index %d out of range" % ai)
        a = tables["attribute"][ai]
        return s(one(a, 1)), anyvalue(one(a, 2, b""))

    for rp in get(req, 1):
        for res in get(rp, 1):
            for kv in get(res, 1):
                print("resource %s=%s" % (one(kv, 1, b"").decode(),
                                          anyvalue(one(kv, 2, b""))))
        for sp in get(rp, 2):
            for p in get(sp, 2):
                st = one(p, 1, b"")
                ty = "%s/%s" % (s(one(st, 1)), s(one(st, 2)))
                for smp in get(p, 2):
                    si = one(smp, 1)
                    if si <= 0 or si >= len(tables["stack"]):
                        fail("stack index %d out of range" % si)
                    locs = packed(tables["stack"][si], 1)
                    stack = ";".join(frame(li) for li in reversed(locs))
                    keys, labels = set(), []
                    for ai in packed(smp, 2):
                        k, v = attr(ai)
                        if k in keys:
                            fail("attribute key %s twice in a sample" % k)
                        keys.add(k)
                        labels.append("%s=%s" % (k, v))
                    vals = packed(smp, 4)
                    if len(vals) != 1:
                        fail("one value per sample expected")
                    print("%s %s %s %d" % (ty, ",".join(labels), stack, vals[0]))


if __name__ == "__main__":
    main()
