#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One run, four renderings of its counters (issue 51): a real xsprofd on private paths with
# --stats FILE and -v, xs_split sampled for a few seconds; then, in this order, the status
# document (xsprofctl --json status), GET /metrics, `xsprofctl status`'s text and the status
# again; then SIGTERM, and the end-of-run report: the --stats file and the -v lines in the log.
# Every row of the table of counters (printed by xs_counters_rows) must be in each rendering
# with its value: a counter no less than in the rendering before and no more than in the one
# after (the daemon keeps counting between them), a gauge that held still between the two
# status documents equal in the renderings between; the --stats file and the log's lines
# equal, row for row. Prints "ok"/"FAIL"; any FAIL fails. Needs root and BTF.
#
# Usage: tests/daemon/service/counters_agree.sh BUILD_DIR   (ctest runs it as service_counters_agree)
set -uo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
name=service_counters_agree
. "$(dirname "$0")/private_daemon.sh"
rows=$build/tests/xs_counters_rows
split=$build/tests/xs_split
need "$rows" "$split"
command -v curl >/dev/null || { echo "FAIL needs curl"; exit 1; }

step "a service with --stats and -v, sampling xs_split"
start_daemon --freq 499 -v --stats "$dir/end.json"
"$split" 300 300 10 1 >/dev/null
sleep 2
ctl --json status >"$dir/j1.json" || fail "xsprofctl --json status"
curl -s -m 10 --unix-socket "$sock" http://x/metrics >"$dir/metrics.txt" || fail "GET /metrics"
ctl status >"$dir/text.txt" || fail "xsprofctl status"
ctl --json status >"$dir/j2.json" || fail "xsprofctl --json status (again)"
kill -TERM "$daemon"
wait "$daemon"
rc=$?
daemon=
((rc == 0)) && pass "xsprofd stopped on SIGTERM (exit 0)" || fail "xsprofd exited $rc on SIGTERM"
[[ -s $dir/end.json ]] && pass "--stats wrote the end-of-run counters as the service stopped" ||
	fail "no --stats file: $(tail -3 "$dir/xsprofd.log")"
"$rows" >"$dir/rows.json" || fail "xs_counters_rows"

step "every row, in each rendering"
$py - "$dir" <<'PY' || failures=$((failures + 1))
import json, math, re, sys

d = sys.argv[1]
rows = json.load(open(d + "/rows.json"))
j1, j2 = json.load(open(d + "/j1.json")), json.load(open(d + "/j2.json"))
end = json.load(open(d + "/end.json"))
text = open(d + "/text.txt").read().splitlines()
log = [l[len("xsprofd: "):] for l in open(d + "/xsprofd.log").read().splitlines()
       if l.startswith("xsprofd: ")]
metrics = {}
for l in open(d + "/metrics.txt"):
    if l.startswith("#") or not l.strip():
        continue
    k, v = l.rsplit(" ", 1)
    metrics[k] = float(v)

def at(doc, path):
    for k in path.split("."):
        if not isinstance(doc, dict) or k not in doc:
            return None
        doc = doc[k]
    return doc

def in_lines(lines, row):
    """The row's value on its line, as the table prints it ("LINE w1, w2")."""
    words = re.escape(row["words"]).replace(re.escape("%llu"), r"(-?\d+)")
    for l in lines:
        if l.startswith(row["line"] + " "):
            m = re.search(r"(?:^%s |, )%s(?:,|$)" % (re.escape(row["line"]), words), l)
            if m:
                return int(m.group(1))
    return None

bad, checked, still, moved = [], 0, 0, 0
def want(ok, what):
    if not ok:
        bad.append(what)

for r in rows:
    p = r["path"]
    a, b, e = at(j1, p), at(j2, p), at(end, p)
    if a is None:
        want(b is None and e is None, "%s: absent from the first status, present later" % p)
        continue
    checked += 1
    want(b is not None and e is not None, "%s: in the first status, not in the second or the end" % p)
    if b is None or e is None:
        continue
    if r["counter"]:
        lo, hi = a, b
        want(a <= b <= e, "%s: counter went back: %s, %s, end %s" % (p, a, b, e))
    elif a == b:
        lo = hi = a
        still += 1
    else:
        lo, hi = None, None
        moved += 1
    if r.get("metric"):
        key = r["metric"] + ("{%s}" % r["labels"] if r.get("labels") else "")
        m = metrics.get(key)
        want(m is not None, "%s: no %s in /metrics" % (p, key))
        if m is not None and lo is not None:
            v = m / r["scale"]
            tol = 1e-6 * max(abs(v), 1) + 0.5
            want(lo - tol <= v <= hi + tol, "%s: /metrics %s = %s (%g), status %s..%s" % (p, key, m, v, lo, hi))
    if r.get("line"):
        t = in_lines(text, r)
        want(t is not None, "%s: not on xsprofctl status's '%s' line" % (p, r["line"]))
        if t is not None and lo is not None:
            want(lo <= t <= hi, "%s: xsprofctl status says %s, status %s..%s" % (p, t, lo, hi))
        g = in_lines(log, r)
        want(g is not None, "%s: not on the end-of-run '%s' line in the log" % (p, r["line"]))
        want(g is None or g == e, "%s: the log's end-of-run line says %s, --stats %s" % (p, g, e))

print("note: %d rows of %d in this run; %d counters and gauges held still bracketed, %d gauges moved"
      % (checked, len(rows), checked - moved, moved))
for x in bad[:20]:
    print("FAIL " + x)
if checked < 40:
    print("FAIL only %d rows in the status" % checked)
    sys.exit(1)
if bad:
    sys.exit(1)
print("ok   status, /metrics, xsprofctl status and the end-of-run report (--stats, -v) agree on %d rows" % checked)
PY
