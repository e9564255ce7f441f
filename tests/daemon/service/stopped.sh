#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# No process is left stopped when xsprofd dies (issue 39, G2): the daemon is stopped, then
# killed -9, while `xsprofctl record -- LOOP` runs a script that execs /bin/true again and again
# (each exec stops the process for its probes until the daemon continues it). 5 s later no
# process may be stopped; xsprofctl must return saying the daemon went, and the loop must run to
# its end; a new daemon on the same paths finds nothing stopped either; a recording asked of a
# daemon that is stopped and stays so ends in --timeout, saying so. Every check prints "ok"
# or "FAIL". Needs root and BPF.
#
# Usage: tests/daemon/service/stopped.sh BUILD_DIR     (ctest runs it as the test service_stopped)
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
name=service_stopped
. "$(dirname "$0")/private_daemon.sh"
need

# stopped_under PID: the processes in state T among PID's descendants (and PID).
stopped_under() { $py "$(dirname "$0")/stopped_under.py" "$1"; }

step "xsprofctl record -- a loop of execs; the daemon is stopped, then killed -9"
start_daemon
# Execs for 8 s (whatever the machine's speed), then says it is done.
cat >"$dir/loop.sh" <<SH
#!/bin/sh
end=\$((\$(date +%s) + 8))
while [ \$(date +%s) -lt \$end ]; do /bin/true; done
echo done >"$dir/loop.done"
SH
chmod +x "$dir/loop.sh"
"$ctl" -s "$sock" --timeout 5 record -o "$dir/out.folded" -- "$dir/loop.sh" \
	>"$dir/ctl.out" 2>"$dir/ctl.err" &
cpid=$!
pids+=($cpid)
sleep 2
kill -STOP "$daemon"
sleep 0.5
kill -KILL "$daemon"
wait "$daemon" 2>/dev/null || true
daemon=
sleep 5
grep -q "xsprofd went away" "$dir/ctl.err" &&
	pass "within 5 s of the kill xsprofctl said so (it then waits for its command, as its parent)" ||
	fail "5 s after the kill xsprofctl has said nothing: $(cat "$dir/ctl.err")"
left=$(stopped_under "$cpid")
[[ -z $left ]] && pass "5 s after the kill no process is stopped" ||
	fail "stopped 5 s after the kill: $left ($(for p in $left; do cat /proc/$p/comm; done | tr '\n' ' '))"
st=0
for _ in $(seq 120); do kill -0 "$cpid" 2>/dev/null || break; sleep 0.5; done
if kill -0 "$cpid" 2>/dev/null; then
	fail "xsprofctl is still waiting 60 s after the daemon died"
	kill "$cpid"
else
	wait "$cpid" || st=$?
	((st != 0)) && grep -q "xsprofd went away" "$dir/ctl.err" &&
		pass "xsprofctl returned (exit $st): $(grep -m1 'went away' "$dir/ctl.err")" ||
		fail "xsprofctl exit $st: $(cat "$dir/ctl.err")"
fi
[[ -f $dir/loop.done ]] && pass "the command ran to its end" || fail "the loop did not finish"
grep -q "xsprofd watchdog: the daemon went; continued" "$dir/xsprofd.log" &&
	pass "$(grep -m1 'xsprofd watchdog' "$dir/xsprofd.log")" ||
	echo "ok   (no process was stopped at the kill: nothing for the watchdog)"

step "a new daemon on the same paths: still nothing stopped"
rm -f "$dir/loop.done"
start_daemon
"$dir/loop.sh" &
lpid=$!
pids+=($lpid)
sleep 5
left=$(stopped_under "$lpid")
[[ -z $left ]] && pass "nothing stopped 5 s after the new daemon started" || fail "stopped: $left"
wait "$lpid" || true
[[ -f $dir/loop.done ]] && pass "a loop not profiled runs to its end" || fail "the loop did not end"

step "a recording while the daemon is stopped (SIGSTOP) and stays so: xsprofctl gives up"
t0=$(date +%s%N)
(set +e; "$ctl" -s "$sock" --timeout 3 record -d 60 -o "$dir/stopped.folded" >"$dir/ctl2.out" 2>"$dir/ctl2.err"; echo $? >"$dir/ctl2.rc") &
cpid=$!
pids+=($cpid)
sleep 1.5
kill -STOP "$daemon"
for _ in $(seq 60); do [[ -s $dir/ctl2.rc ]] && break; sleep 0.5; done
kill -CONT "$daemon"
secs=$((($(date +%s%N) - t0) / 1000000000))
if [[ -s $dir/ctl2.rc ]] && (($(cat "$dir/ctl2.rc") != 0)) && grep -q "has been stopped" "$dir/ctl2.err"; then
	pass "xsprofctl returned in ${secs} s (--timeout 3, of a 60 s recording): $(cat "$dir/ctl2.err")"
	((secs <= 15)) || fail "it took ${secs} s (15 at most)"
else
	fail "xsprofctl still waiting ${secs} s into a stopped daemon, or said: $(cat "$dir/ctl2.err" 2>/dev/null)"
fi
