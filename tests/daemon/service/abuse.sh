#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Attacks on a real xsprofd (service mode, private socket paths, not the installed service): a
# connection flood and header trickle by a group member, NaN and unbounded requests, recording
# slots taken by one user, a client that hangs up while waiting, a second daemon on the same
# paths, a token file others can read, and the rolling window left alone. After each, root must
# get an answer within a second. Every check prints "ok" or "FAIL"; any FAIL makes the exit
# status 1. Needs root, a kernel with BTF, python3 and a built tree.
#
# Usage: tests/daemon/service/abuse.sh BUILD_DIR      (ctest runs it as the test service_abuse)
set -euo pipefail

[[ $# -eq 1 ]] || {
	echo "usage: $0 BUILD_DIR" >&2
	exit 2
}
build=$(cd "$1" && pwd)
xsprofd=$build/daemon/xsprofd
ctl=$build/daemon/ctl/xsprofctl
py=/usr/bin/python3
member=65534 # nobody, in group nogroup, which the daemon is told is its group
group=nogroup
failures=0

pass() { printf 'ok   %s\n' "$*"; }
fail() {
	printf 'FAIL %s\n' "$*"
	failures=$((failures + 1))
}
step() { printf '\n== %s\n' "$*"; }

[[ $(id -u) == 0 ]] || { echo "FAIL needs root"; exit 1; }
[[ -x $xsprofd && -x $ctl && -x $py ]] || { echo "FAIL missing $xsprofd, $ctl or $py"; exit 1; }
getent group "$group" >/dev/null || { echo "FAIL no group $group"; exit 1; }

dir=$(mktemp -d /tmp/xsprof-abuse-XXXXXX)
chmod 0755 "$dir"
sock=$dir/api.sock
cupti=$dir/cupti.sock
pids=()
cleanup() {
	local rc=$? p
	set +e
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	pkill -u $member -x sleep 2>/dev/null
	if ((failures)); then
		echo "--- daemon log (last 30 lines)"
		tail -n 30 "$dir/xsprofd.log"
	fi
	rm -rf "$dir"
	if ((rc == 0 && failures == 0)); then echo; echo "service_abuse: all checks passed"; else
		echo; echo "service_abuse: $failures check(s) failed"; exit 1; fi
}
trap cleanup EXIT

as_member() { setpriv --reuid=$member --regid="$(getent group $group | cut -d: -f3)" --clear-groups -- "$@"; }
# api [curl args...] PATH: HTTP on the socket, prints "CODE BODY".
api() {
	local path=${*: -1}
	curl -s -m 10 --unix-socket "$sock" -o "$dir/body" -w '%{http_code}' "${@:1:$#-1}" \
		"http://x$path" 2>/dev/null || true
}
member_api() {
	local path=${*: -1}
	as_member curl -s -m 10 --unix-socket "$sock" -o /dev/null -w '%{http_code}' "${@:1:$#-1}" \
		"http://x$path" 2>/dev/null || true
}
# root_answers DESC: root's status comes back within a second (on a loaded machine, 3 tries).
root_answers() {
	local i t0 t1
	for i in 1 2 3; do
		t0=$(date +%s%N)
		if timeout 5 "$ctl" --timeout 1 -s "$sock" status >/dev/null 2>&1; then
			t1=$(date +%s%N)
			if (((t1 - t0) / 1000000 < 1000)); then
				pass "root answered within 1 s $1 ($(((t1 - t0) / 1000000)) ms)"
				return
			fi
		fi
		sleep 0.2
	done
	fail "root got no answer within 1 s $1"
}
status_field() { # status_field PYEXPR: evaluated on the status JSON as j
	"$ctl" --timeout 5 -s "$sock" --json status | $py -c "import json,sys; j=json.load(sys.stdin); print($1)"
}

step "start xsprofd on private paths"
"$xsprofd" --socket "$sock" --cupti-socket "$cupti" --socket-group "$group" --max-record 60 \
	>"$dir/xsprofd.log" 2>&1 &
daemon=$!
pids+=("$daemon")
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.1; done
[[ -S $sock ]] || { fail "xsprofd did not create $sock"; exit 1; }
t_start=$(date +%s)
root_answers "at start"

step "a second daemon on the same paths"
if "$xsprofd" --socket "$sock" --cupti-socket "$cupti" --socket-group "$group" \
	>"$dir/second.log" 2>&1; then
	fail "a second xsprofd started on the same socket"
else
	grep -q "another xsprofd (pid $daemon)" "$dir/second.log" &&
		pass "the second one failed, naming the first" ||
		fail "the second one failed without a clear message: $(cat "$dir/second.log")"
fi
[[ -S $sock && -S $cupti ]] && pass "both sockets of the first are still there" ||
	fail "the second daemon removed the first one's socket"
root_answers "after a second daemon tried"

step "a member floods the connection table and trickles headers"
cat >"$dir/flood.py" <<'PY'
import socket, sys, time
path, n, hold = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
socks = []
for i in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path); socks.append(s)
    except OSError:
        break
hdr = b"GET /v1/status HTTP/1.1\r\nHost: x\r\n"
t, i = time.time(), 0
while time.time() - t < hold:
    for s in socks:
        try: s.send(hdr[i % len(hdr):i % len(hdr) + 1])
        except OSError: pass
    i += 1
    time.sleep(1)
for s in socks: s.close()
PY
as_member $py "$dir/flood.py" "$sock" 70 14 &
flood=$!
sleep 3
root_answers "while a member holds 70 connections"
code=$(member_api /v1/status)
[[ $code == 503 || $code == 000 ]] && pass "the member's next connection is refused at once ($code: 503, or closed before curl read it)" ||
	fail "the member's connection over its share got '$code', not 503"
wait $flood
v=$(status_field "j['api']['header_timeouts']")
((v >= 1)) && pass "trickled requests were cut at the header deadline ($v)" ||
	fail "no trickled connection was cut by the header deadline"
v=$(status_field "j['api']['refused_over_share']")
((v >= 50)) && pass "connections over the member's share were refused ($v)" ||
	fail "only $v connections refused over the share"
root_answers "after the flood"
code=$(member_api /v1/status)
[[ $code == 200 ]] && pass "the member is served again after closing its connections" ||
	fail "the member got '$code' after the flood ended"

step "NaN, negative and huge numbers"
# setpriv itself, not a subshell: $! is then the member's own process.
setpriv --reuid=$member --regid="$(getent group $group | cut -d: -f3)" --clear-groups -- sleep 300 &
mine=$!
pids+=("$mine")
for body in '{"duration_s": NaN, "pids": ['$mine']}' '{"duration_s": Infinity, "pids": ['$mine']}' \
	'{"duration_s": -1, "pids": ['$mine']}' '{"duration_s": 1e300, "pids": ['$mine']}'; do
	code=$(member_api -X POST -d "$body" /v1/recordings)
	[[ $code == 400 ]] && pass "recording $body: 400" || fail "recording $body: '$code', not 400"
done
for q in -1 nan 1e9 99999999999999999999 0 ''; do
	code=$(api "/v1/profile?since_s=$q")
	[[ $code == 400 ]] && pass "since_s=$q: 400" || fail "since_s=$q: '$code', not 400"
done
grep -q 'since_s must be' "$dir/body" && pass "with a message saying why" || fail "no message: $(cat "$dir/body")"
if as_member "$ctl" -s "$sock" record --pid $mine --duration nan -o - >/dev/null 2>"$dir/err"; then
	fail "xsprofctl record --duration nan was sent"
else
	grep -q "duration 'nan'" "$dir/err" && pass "xsprofctl refuses --duration nan itself" ||
		fail "xsprofctl --duration nan: $(cat "$dir/err")"
fi
root_answers "after bad numbers"

step "one user holds recording slots"
codes=()
for i in 1 2 3 4; do
	codes+=("$(member_api -X POST -d '{"duration_s": 20, "pids": ['$mine']}' /v1/recordings)")
done
[[ ${codes[0]} == 201 && ${codes[1]} == 201 && ${codes[2]} == 429 && ${codes[3]} == 429 ]] &&
	pass "a member gets 2 recordings, then 429 (${codes[*]})" ||
	fail "member recordings answered ${codes[*]}, expected 201 201 429 429"
code=$(api -X POST -d '{"duration_s": 1}' /v1/recordings)
[[ $code == 201 ]] && pass "root can still record" || fail "root's recording got '$code'"
v=$(status_field "j['api']['recordings_refused_user_cap']")
((v >= 2)) && pass "refusals counted in status ($v)" || fail "refusals not counted ($v)"
root_answers "with recordings running"

step "a client waiting for a recording hangs up"
id=$(as_member curl -s -m 10 --unix-socket "$sock" -X POST -d '{"duration_s": 15, "pids": ['$mine']}' \
	http://x/v1/recordings 2>/dev/null | $py -c 'import json,sys; print(json.load(sys.stdin).get("id", 0))' || echo 0)
if [[ $id == 0 ]]; then
	# Both member slots may still be busy: root's recording of the member's process instead.
	id=$(curl -s -m 10 --unix-socket "$sock" -X POST -d '{"duration_s": 15, "pids": ['$mine']}' \
		http://x/v1/recordings | $py -c 'import json,sys; print(json.load(sys.stdin)["id"])')
fi
curl -s -m 60 --unix-socket "$sock" "http://x/v1/recordings/$id" -o /dev/null &
waiter=$!
sleep 2
kill $waiter 2>/dev/null
wait $waiter 2>/dev/null || true
ok=0
for _ in $(seq 30); do
	v=$(status_field "j['api']['waiters_hung_up']")
	((v >= 1)) && { ok=1; break; }
	sleep 0.2
done
((ok)) && pass "the hung-up waiter was released" || fail "the hung-up waiter still holds its slot"
root_answers "after a waiter hung up"

step "the rolling window is cut by its own timer"
# No valid profile query was made: slices can only come from the slice timer (every 10 s).
left=$((t_start + 32 - $(date +%s)))
((left > 0)) && sleep $left
v=$(status_field "j['store']['slices']")
((v >= 2)) && pass "the window holds $v slices after 30 s without queries" ||
	fail "the window holds $v slices after 30 s: the slice timer fired once at most"

step "a member's recorded process runs a setuid-root program"
# The same CPU work twice: the member's own copy, and a setuid-root one (its real uid is the
# member's, its effective uid root's: root's to see, not the member's).
findmnt -no OPTIONS --target "$dir" | grep -qw nosuid && fail "$dir is mounted nosuid: no setuid test"
cp "$build/tests/xs_fixedwork" "$dir/xs_mywork"
cp "$build/tests/xs_fixedwork" "$dir/xs_rootwork"
chown root:root "$dir/xs_rootwork"
chmod 4755 "$dir/xs_rootwork"
# The steps before may still hold the member's two recording slots.
for _ in $(seq 60); do
	v=$(status_field "sum(1 for r in j['recordings'] if r['owner_uid'] == $member and r['state'] == 'running')")
	((v < 2)) && break
	sleep 0.5
done
setpriv --reuid=$member --regid="$(getent group $group | cut -d: -f3)" --clear-groups -- \
	sh -c "sleep 1; for i in 1 2; do $dir/xs_mywork 250000 1; $dir/xs_rootwork 250000 1; done" \
	>/dev/null 2>&1 &
work=$!
pids+=("$work")
mkdir -p "$dir/member"
chown $member "$dir/member"
if as_member "$ctl" -s "$sock" record --pid $work --duration 8 -o "$dir/member/suid.folded" \
	2>"$dir/suid.err"; then
	mine_n=$(grep -c '^xs_mywork' "$dir/member/suid.folded" || true)
	root_n=$(grep -c '^xs_rootwork' "$dir/member/suid.folded" || true)
	((mine_n > 0)) && pass "the member's own program is in its recording ($mine_n stacks)" ||
		fail "the member's own program is missing: $(head -c 300 "$dir/member/suid.folded")"
	((root_n == 0)) && pass "the setuid-root program is not" ||
		fail "$root_n stacks of the setuid-root program in the member's recording"
	v=$(status_field "sum(r.get('left_out_other_users', {}).get('samples', 0) for r in j['recordings'] if r['owner_uid'] == $member)")
	((v > 0)) && pass "its samples are counted as left out in status ($v)" ||
		fail "no samples counted as left out ($v)"
else
	fail "the member's recording failed: $(cat "$dir/suid.err")"
fi
wait "$work" 2>/dev/null || true
root_answers "after the setuid recording"

step "the member's recorded process itself execs a setuid-root program: its recording ends"
# Ownership is checked again every second: the named process is root's once it runs the setuid
# copy, so the member's recording of it ends early, saying why (what came before is kept).
for _ in $(seq 60); do
	v=$(status_field "sum(1 for r in j['recordings'] if r['owner_uid'] == $member and r['state'] == 'running')")
	((v < 2)) && break
	sleep 0.5
done
before=$(status_field "j['api']['recordings_ended_owner_changed']")
setpriv --reuid=$member --regid="$(getent group $group | cut -d: -f3)" --clear-groups -- \
	sh -c "$dir/xs_mywork 250000 1; exec $dir/xs_rootwork 4000000 1" >/dev/null 2>&1 &
work=$!
pids+=("$work")
t0=$(date +%s)
if as_member "$ctl" -s "$sock" record --pid $work --duration 20 -o "$dir/member/owner.folded" \
	2>"$dir/owner.err"; then
	took=$(($(date +%s) - t0))
	((took < 18)) && pass "the recording ended early (after $took s of 20)" ||
		fail "the recording ran its 20 s although its process became root's"
	v=$(status_field "j['api']['recordings_ended_owner_changed']")
	((v > before)) && pass "counted in status (recordings_ended_owner_changed $v)" ||
		fail "recordings_ended_owner_changed stayed $v"
	grep -q "process $work is no longer uid $member's" "$dir/xsprofd.log" &&
		pass "the daemon says why: $(grep -o "process $work is no longer[^:]*" "$dir/xsprofd.log" | head -1)" ||
		fail "no log line about process $work's owner: $(tail -3 "$dir/xsprofd.log")"
	grep -q '^xs_mywork' "$dir/member/owner.folded" &&
		pass "what was recorded before is the member's profile" ||
		fail "the member's own program is missing: $(head -c 300 "$dir/member/owner.folded")"
else
	fail "the member's recording failed: $(cat "$dir/owner.err")"
fi
kill "$work" 2>/dev/null || true
pkill -x xs_rootwork 2>/dev/null || true
wait "$work" 2>/dev/null || true
root_answers "after the owner change"

step "a member attaches and detaches in a loop"
# Each attach loads a sampler on the daemon's event loop: a member gets a few at once, then one
# per 10 s (the earlier steps may have used some of them).
codes=()
for i in $(seq 10); do
	codes+=("$(member_api -X POST -d '{"pid": '$mine'}' /v1/attach)")
	member_api -X POST -d '{"pid": '$mine'}' /v1/detach >/dev/null
done
ok_n=0 refused_n=0
for c in "${codes[@]}"; do
	[[ $c == 200 ]] && ok_n=$((ok_n + 1))
	[[ $c == 429 ]] && refused_n=$((refused_n + 1))
done
((ok_n >= 1 && ok_n <= 8 && ok_n + refused_n == 10)) &&
	pass "$ok_n attaches taken, $refused_n refused with 429 (${codes[*]})" ||
	fail "attach loop answered ${codes[*]}"
# One more: refused (or, if the budget refilled meanwhile on a slow machine, taken: then again).
for _ in 1 2 3 4 5; do
	as_member curl -s -m 10 --unix-socket "$sock" -X POST -d '{"pid": '$mine'}' http://x/v1/attach \
		>"$dir/rate.json" 2>/dev/null || true
	grep -q '"attached"' "$dir/rate.json" || break
	member_api -X POST -d '{"pid": '$mine'}' /v1/detach >/dev/null
done
grep -q 'next in' "$dir/rate.json" && pass "the refusal says when the next may start" ||
	fail "the refusal does not say when: $(cat "$dir/rate.json")"
v=$(status_field "j['api']['starts_refused_user_rate']")
((v >= refused_n)) && pass "refusals counted in status ($v)" || fail "refusals not counted ($v)"
code=$(api -X POST -d '{"pid": '$mine'}' /v1/attach)
[[ $code == 200 ]] && pass "root may still attach" || fail "root's attach got '$code'"
api -X POST -d '{"pid": '$mine'}' /v1/detach >/dev/null
root_answers "after the attach loop"

step "an outsider fills the process table: a root victim keeps whole, named stacks"
# 8400 idle processes of one user (more than the unwind process table holds) started as fast as
# bash can, then a root program built without frame pointers, recorded through the service. The
# user's exec records past its budget are not sent, holds give way when the ring buffer is half
# full, and the symbolizer drops the idle snapshots first: the victim's stacks stay whole and named.
as_member bash -c 'for i in $(seq 8400); do setsid sleep 300 </dev/null >/dev/null 2>&1 & done'
flood_n=$(pgrep -c -u $member -x sleep || true)
((flood_n >= 8000)) && pass "$flood_n idle processes of the member" || fail "only $flood_n idle processes started"
timeout 60 "$build/tests/xs_nofp" >/dev/null 2>&1 &
victim=$!
pids+=("$victim")
sleep 1
if "$ctl" -s "$sock" record --pid $victim --duration 4 -o "$dir/victim.folded" 2>"$dir/victim.err"; then
	read -r total named whole < <($py - "$dir/victim.folded" <<'PY'
import sys
total = named = whole = 0
roots = ("_start", "__GI___clone3", "__clone3", "clone3", "__clone", "clone")
for line in open(sys.argv[1]):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    total += int(n)
    if "[unknown]" not in frames:
        named += int(n)
        if len(frames) > 2 and frames[1] in roots:
            whole += int(n)
print(total, named, whole)
PY
)
	((total >= 50)) && pass "$total samples of the victim" || fail "only $total samples of the victim"
	((named * 10 >= total * 9)) && pass "$named of $total named" ||
		fail "$named of $total named: $(head -c 300 "$dir/victim.folded")"
	((whole * 10 >= total * 8)) && pass "$whole of $total whole (from _start or the thread's clone)" ||
		fail "$whole of $total whole: $(head -c 300 "$dir/victim.folded")"
else
	fail "the victim's recording failed: $(cat "$dir/victim.err")"
fi
v=$(status_field "j['processes']['records_over_user_budget']")
((v > 0)) && pass "the member's exec records past its budget were not sent ($v)" ||
	fail "no exec records counted over the member's budget"
v=$(status_field "j['memory']['rss_bytes'] >> 20")
# (ldd's whole output is read first: under pipefail, grep -q quitting at the first match could
# kill ldd with SIGPIPE and fail the test.)
if grep -q 'libasan' <<<"$(ldd "$xsprofd")"; then
	# ASan's shadow memory and quarantine are most of a sanitized daemon's RSS: the budget is
	# checked by the plain build (the README suite), not here.
	pass "xsprofd's RSS $v MiB: a sanitizer build, the 64 MiB budget is the plain build's"
else
	((v <= 64)) && pass "xsprofd's RSS $v MiB (budget 64)" || fail "xsprofd's RSS $v MiB, over 64"
fi
root_answers "during the process flood"
kill "$victim" 2>/dev/null || true
pkill -u $member -x sleep || true

step "the daemon is stopped during a recording"
# What did not fit in the ring buffer while xsprofd did not run is lost: the recording says so.
timeout 60 "$build/tests/xs_fixedwork" 100000000 1 >/dev/null 2>&1 &
busy=$!
pids+=("$busy")
id=$(curl -s -m 10 --unix-socket "$sock" -X POST -d '{"duration_s": 4, "freq_hz": 999, "pids": ['$busy']}' \
	http://x/v1/recordings | $py -c 'import json,sys; print(json.load(sys.stdin)["id"])' || echo 0)
sleep 1
kill -STOP "$daemon"
sleep 6
kill -CONT "$daemon"
for _ in $(seq 50); do
	st=$(status_field "[r for r in j['recordings'] if r['id'] == $id][0]['state']" 2>/dev/null || echo "")
	[[ $st == done ]] && break
	sleep 0.2
done
v=$(status_field "[r for r in j['recordings'] if r['id'] == $id][0].get('daemon_stalled_s', 0)")
$py -c "import sys; sys.exit(0 if $v >= 4 else 1)" && pass "the recording says xsprofd did not run for $v s" ||
	fail "the recording's stall is not reported ($v s)"
note=$(status_field "[r for r in j['recordings'] if r['id'] == $id][0].get('note', '')")
[[ $note == *"did not run"* ]] && pass "its note says so: $note" || fail "its note: '$note'"
kill "$busy" 2>/dev/null || true
root_answers "after the daemon was stopped"

step "a token file others can read"
tok=$dir/token
echo "0123456789abcdef0123456789abcdef" >"$tok"
chmod 0644 "$tok"
if timeout 20 "$xsprofd" --socket "$dir/t.sock" --cupti-socket "$dir/t-cupti.sock" \
	--listen 127.0.0.1:0 --token-file "$tok" >"$dir/tok.log" 2>&1; then
	fail "xsprofd started with a world-readable token file"
else
	grep -q "chmod 600" "$dir/tok.log" && pass "refused, saying chmod 600" ||
		fail "refused without a clear message: $(tail -n 3 "$dir/tok.log")"
fi
root_answers "at the end"

step "SIGTERM: the first daemon removes only its own socket"
kill -TERM "$daemon"
wait "$daemon" 2>/dev/null || true
[[ ! -e $sock ]] && pass "its socket is gone" || fail "its socket was left behind"
