#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The structural check of a Chrome trace xsprof wrote: python3 check_trace.py TRACE [--merged].
# Slices of a track nest, B/E balance, every used process and thread is named, each flow has
# one start and one end (steps between) inside slices, GPU work on the GPU processes; prints
# the counts. --merged: a job across hosts, whose pids carry their host's index.
import json, sys, collections
merged = '--merged' in sys.argv[2:]
raw = open(sys.argv[1], 'rb').read()
doc = json.loads(raw.decode('utf-8'))
ev = doc['traceEvents']
assert doc['displayTimeUnit'] == 'ns'
spans = collections.defaultdict(list)
stacks = collections.defaultdict(list)
names_p, names_t = set(), set()
used_p, used_t = set(), set()
flows = collections.defaultdict(list)
asyncs = collections.Counter()
count = collections.Counter()
for e in ev:
    ph, pid, tid = e['ph'], e['pid'], e['tid']
    assert isinstance(pid, int) and isinstance(tid, int), e
    count[ph + ':' + e.get('cat', '')] += 1
    if ph == 'M':
        if e['name'] == 'process_name': names_p.add(pid)
        if e['name'] == 'thread_name': names_t.add((pid, tid))
        continue
    used_p.add(pid)
    if ph in 'XBEstf': used_t.add((pid, tid))
    if ph == 'X':
        assert e['dur'] >= 0, e
        spans[(pid, tid)].append((e['ts'], e['ts'] + e['dur'], e['name']))
    elif ph == 'B':
        stacks[(pid, tid)].append(e)
    elif ph == 'E':
        b = stacks[(pid, tid)].pop()
        assert e['ts'] >= b['ts'], (b, e)
        assert e.get('name', b['name']) == b['name'], ('E closes another slice', b, e)
        spans[(pid, tid)].append((b['ts'], e['ts'], b['name']))
    elif ph in 'stf':
        flows[e['id']].append(e)
    elif ph in 'be':
        asyncs[(e['cat'], e['id'])] += 1 if ph == 'b' else -1
for k, s in stacks.items(): assert not s, ('unclosed B', k, s)
for k, v in asyncs.items(): assert v == 0, ('unbalanced async', k)
for p in used_p: assert p in names_p, ('unnamed process', p)
for t in used_t: assert t in names_t, ('unnamed thread', t)
eps = 1e-6
def inside(pid, tid, ts):
    return any(a - eps <= ts <= b + eps for a, b, n in spans[(pid, tid)])
for fid, fl in flows.items():
    phs = sorted(f['ph'] for f in fl)
    assert phs[:2] == ['f', 's'] and set(phs[2:]) <= {'t'}, ('flow id used other than once', fid, fl)
    for f in fl:
        assert inside(f['pid'], f['tid'], f['ts']), ('flow outside a slice', f)
        if f['ph'] == 'f': assert f.get('bp') == 'e', f
# slices of one track nest or follow each other, never half overlap
for k, ss in spans.items():
    ss.sort(key=lambda s: (s[0], -s[1]))
    open_ = []
    for a, b, n in ss:
        while open_ and open_[-1] <= a + eps: open_.pop()
        assert not open_ or b <= open_[-1] + eps, ('overlap on', k, n, a, b, open_)
        open_.append(b)
gpu = {p for p in used_p if p >= 0x7F000000}
real = {p for p in used_p if p < 0x7F000000}
# A job across hosts (--merged): each host's pids under its index (output/job/job_merge.h).
assert all(p < (0x7F000000 if merged else 4194304) for p in real), real
for e in ev:
    if e['ph'] == 'X' and e.get('cat') == 'gpu': assert e['pid'] in gpu, e
print('flows=%d gpu=%d api=%d launch=%d samples=%d nvtx=%d gpus=%d' % (len(flows),
      count['X:gpu'], count['X:cuda_runtime'] + count['X:cuda_driver'],
      count['X:cuda_launch'], count['B:sample'], count['b:nvtx'], len(gpu)))
