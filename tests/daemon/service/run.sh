#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# xsprofd as a service, for real: build the .deb, install it, boot systemd as PID 1 of a fresh PID
# namespace, run xsprofd.service there, drive it with xsprofctl as root, as a member of group
# xsprof and as an outsider, throw malformed and oversized requests at it, reload, crash, stop,
# and check that no BPF program is left behind. Every check prints "ok" or "FAIL"; any FAIL
# makes the exit status 1. Needs root, a kernel with BTF, and a built tree.
#
# Usage: tests/daemon/service/run.sh BUILD_DIR      (ctest runs it as the test service_systemd)
#
# It changes the host only for its duration: the package (purged at the end), two users
# (xsprof-ci-in, xsprof-ci-out; deleted), the group xsprof (deleted again if the test created
# it). systemd runs with its own /run, /tmp and /dev (tests/daemon/service/lib.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

[[ $# -eq 1 ]] || {
	echo "usage: $0 BUILD_DIR" >&2
	exit 2
}
build=$(cd "$1" && pwd)
work=$build/service-test
user_in=xsprof-ci-in
user_out=xsprof-ci-out
stage=/var/tmp/xsprof-ci # inside the namespace (its own tmpfs)
sock=/run/xsprof/xsprofd.sock
failures=0
group_created=0
pkg_installed=0
users_created=()

pass() { printf 'ok   %s\n' "$*"; }
fail() {
	printf 'FAIL %s\n' "$*"
	failures=$((failures + 1))
}
die() {
	printf 'FAIL %s\n' "$*"
	failures=$((failures + 1))
	exit 1
}
step() { printf '\n== %s\n' "$*"; }
# expect DESC CMD...: CMD must succeed.
expect() {
	local desc=$1
	shift
	if "$@" >/dev/null; then pass "$desc"; else fail "$desc"; fi
}

cleanup() {
	local rc=$?

	set +e
	if [[ -n $NS_PID ]] && ((failures)); then
		echo "--- journal of xsprofd (last 40 lines)"
		ns journalctl -u xsprofd --no-pager -n 40 -o short-monotonic 2>/dev/null
	fi
	ns_poweroff
	for u in "${users_created[@]}"; do userdel "$u" >/dev/null 2>&1; done
	if ((pkg_installed)); then
		DEBIAN_FRONTEND=noninteractive dpkg --purge xsprof >"$work/purge.log" 2>&1 ||
			echo "FAIL dpkg --purge xsprof (see $work/purge.log)"
	fi
	((group_created)) && groupdel xsprof 2>/dev/null
	if ((rc == 0 && failures == 0)); then
		echo
		echo "service_systemd: all checks passed"
	else
		echo
		echo "service_systemd: $failures check(s) failed"
		rc=1
	fi
	exit $rc
}

# ---- preconditions -------------------------------------------------------------------------

[[ $EUID -eq 0 ]] || die "needs root (it installs a package and runs systemd)"
[[ -r /sys/kernel/btf/vmlinux ]] || die "kernel without BTF (/sys/kernel/btf/vmlinux)"
for c in cpack dpkg dpkg-deb unshare nsenter setpriv flock curl bpftool useradd /lib/systemd/systemd; do
	command -v "$c" >/dev/null || die "missing $c (scripts/deps.sh installs it)"
done
[[ -x $build/tests/xs_split ]] || die "no $build/tests/xs_split: build the tree first"
# One run at a time on a machine: the package, the users and the group are machine-wide.
exec 9>/run/lock/xsprof-service-test.lock
flock -w 600 9 || die "another service test holds /run/lock/xsprof-service-test.lock"
if dpkg-query -W -f='${Status}' xsprof 2>/dev/null | grep -q "ok installed"; then
	die "package xsprof is installed on this machine; remove it first (this test installs and purges it)"
fi
rm -rf "$work"
mkdir -p "$work"
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the package ---------------------------------------------------------------------------

step "package"
(cd "$build" && cpack -G DEB -B "$work/pkg") >"$work/cpack.log" 2>&1 ||
	die "cpack -G DEB failed: $(tail -n 5 "$work/cpack.log")"
debs=("$work"/pkg/xsprof_*_"$(dpkg --print-architecture)".deb)
[[ ${#debs[@]} -eq 1 && -f ${debs[0]} ]] || die "cpack made no xsprof_VERSION_ARCH.deb"
deb=${debs[0]}
pass "cpack -G DEB -> ${deb##*/}"

dpkg-deb -c "$deb" | awk '{ print substr($6, 2) }' >"$work/contents"
want_files=(/usr/bin/xsprofd /usr/bin/xsprofctl /lib/systemd/system/xsprofd.service
	/etc/xsprof/xsprofd.conf /usr/share/man/man8/xsprofd.8.gz /usr/share/man/man1/xsprofctl.1.gz
	/usr/share/bash-completion/completions/xsprofctl /usr/share/bash-completion/completions/xsprofd
	/usr/lib/sysusers.d/xsprof.conf /usr/share/doc/xsprof/copyright)
[[ -e $build/cupti_inject/libxsprof_cupti.so ]] && want_files+=(/usr/lib/xsprof/libxsprof_cupti.so)
for f in "${want_files[@]}"; do
	grep -qx "$f" "$work/contents" || fail "the package lacks $f"
done
grep -vE '^/(usr|lib|etc)/' "$work/contents" | grep -v '^/$' >"$work/stray" || true
[[ -s $work/stray ]] && fail "the package holds files outside /usr, /lib, /etc: $(head -3 "$work/stray")"
mkdir -p "$work/control"
dpkg-deb -e "$deb" "$work/control"
expect "/etc/xsprof/xsprofd.conf is a conffile" grep -qx /etc/xsprof/xsprofd.conf "$work/control/conffiles"
if grep -v '^[[:space:]]*#' "$work/control/postinst" |
	grep -qE '(systemctl|deb-systemd-invoke|deb-systemd-helper).*\b(enable|start)\b'; then
	fail "postinst enables or starts the service"
else
	pass "postinst neither enables nor starts the service"
fi
if command -v lintian >/dev/null; then
	lintian --tag-display-limit 0 "$deb" >"$work/lintian.log" 2>&1 || true
	if grep -q '^E:' "$work/lintian.log"; then
		fail "lintian errors: $(grep '^E:' "$work/lintian.log" | head -5)"
	else
		pass "lintian: no errors ($(grep -c '^W:' "$work/lintian.log" || true) warnings)"
	fi
fi

step "install"
getent group xsprof >/dev/null || group_created=1
pkg_installed=1
DEBIAN_FRONTEND=noninteractive dpkg -i "$deb" >"$work/install.log" 2>&1 ||
	die "dpkg -i failed: $(tail -n 5 "$work/install.log")"
pass "dpkg -i ${deb##*/}"
expect "postinst created group xsprof" getent group xsprof
expect "nothing enabled" test ! -e /etc/systemd/system/multi-user.target.wants/xsprofd.service
for m in /usr/share/man/man8/xsprofd.8.gz /usr/share/man/man1/xsprofctl.1.gz; do
	out=$(zcat "$m" | groff -man -z -ww 2>&1) || true
	if [[ -z $out ]]; then pass "man page ${m##*/} renders without warnings"; else fail "man page $m: $out"; fi
done
expect "the default config parses" /usr/bin/xsprofd -c /etc/xsprof/xsprofd.conf --version
sed -E 's/^#([a-z-]+ = .+)$/\1/' /etc/xsprof/xsprofd.conf >"$work/all-defaults.conf"
expect "every default in the config, uncommented, parses" \
	/usr/bin/xsprofd -c "$work/all-defaults.conf" --version
if [[ -r /usr/share/bash-completion/bash_completion ]]; then
	expect "bash completion loads" bash -c '. /usr/share/bash-completion/bash_completion
		. /usr/share/bash-completion/completions/xsprofctl
		. /usr/share/bash-completion/completions/xsprofd
		complete -p xsprofctl && complete -p xsprofd' >/dev/null
fi

for u in "$user_in" "$user_out"; do
	userdel "$u" >/dev/null 2>&1 || true
	useradd --system --no-create-home --shell /usr/sbin/nologin "$u"
	users_created+=("$u")
done
usermod -a -G xsprof "$user_in"

# ---- systemd -------------------------------------------------------------------------------

step "systemd in a PID namespace"
ns_boot "$work/systemd-console.log" || die "systemd did not boot"
pass "systemd is PID 1 of a new PID namespace (host pid $NS_PID)"
ns_isolate xsprofd.service || die "could not mask the units xsprofd.service pulls in"
ns systemctl start dbus.socket
expect "xsprofd.service is installed disabled" \
	test "$(ns systemctl is-enabled xsprofd.service 2>&1)" = disabled
expect "xsprofd.service is not running after install" \
	test "$(ns systemctl is-active xsprofd.service 2>&1)" = inactive
out=$(ns systemd-analyze verify /lib/systemd/system/xsprofd.service 2>&1) || out+=" (failed)"
if [[ -z $out ]]; then pass "systemd-analyze verify: clean"; else fail "systemd-analyze verify: $out"; fi
score=$(ns systemd-analyze security --no-pager xsprofd.service 2>/dev/null |
	sed -n 's/.*Overall exposure level for xsprofd.service: \([0-9.]*\).*/\1/p')
if [[ -n $score ]] && awk -v s="$score" 'BEGIN { exit !(s <= 4.0) }'; then
	pass "systemd-analyze security: exposure $score (at most 4.0)"
else
	fail "systemd-analyze security: exposure '${score:-?}', want at most 4.0"
fi

# Files the namespace needs, placed in its own /var/tmp.
root=/proc/$NS_PID/root
ns install -d -m 1777 "$stage" "$stage/out"
cp "$build/tests/xs_split" "$root$stage/xs_split"
head -c $((1024 * 1024)) /dev/zero | tr '\0' ' ' >"$root$stage/big.json"
printf '# xsprof service test\nfreq = 49\nwindow = 60\nstore-mb = 8\n' >"$root$stage/xsprofd.conf"
ns mount --bind "$stage/xsprofd.conf" /etc/xsprof/xsprofd.conf
# A short watchdog, so the keep-alives are seen within the test; a quick restart.
ns mkdir -p /run/systemd/system/xsprofd.service.d
printf '[Service]\nWatchdogSec=6s\nRestartSec=1s\n' >"$root/run/systemd/system/xsprofd.service.d/ci.conf"
ns systemctl daemon-reload

# Workloads: one of the member, one of the outsider, each from a directory only it can read.
pid_in=$(spawn_as "$user_in" /var/tmp/$user_in "$stage/xs_split" xs_mine 300 300 120 1)
pid_out=$(spawn_as "$user_out" /var/tmp/$user_out "$stage/xs_split" xs_theirs 300 300 120 1)

# ---- the sandbox, one-shot -----------------------------------------------------------------

step "the unit's sandbox, as a one-shot transient unit"
mapfile -t props < <(unit_sandbox_props /lib/systemd/system/xsprofd.service)
cp "$here/probe.sh" "$root$stage/probe.sh"
ns systemd-run --wait --pipe --quiet "${props[@]}" /bin/bash "$stage/probe.sh" \
	"$pid_out" "/var/tmp/$user_out/xs_theirs" xsprof >"$work/probe.log" 2>&1 || true
while read -r status what; do
	case $status in
	ok) pass "sandbox: $what" ;;
	FAIL) fail "sandbox: $what" ;;
	esac
done <"$work/probe.log"
grep -q '^ok readonly' "$work/probe.log" || fail "sandbox probe did not run: $(tail -3 "$work/probe.log")"
if ns systemd-run --wait --pipe --quiet "${props[@]}" /usr/bin/xsprofd --foreground --duration 2 \
	--pid "$pid_out" --output - >"$work/oneshot.folded" 2>"$work/oneshot.log"; then
	pass "sandbox: xsprofd one-shot loads and attaches BPF"
else
	fail "sandbox: xsprofd one-shot failed: $(tail -3 "$work/oneshot.log")"
fi
if grep -q 'xs_theirs;.*xs_work_alpha' "$work/oneshot.folded"; then
	pass "sandbox: one-shot names the frames of another user's process (xs_work_alpha)"
else
	fail "sandbox: one-shot names no frame of another user's process (xs_work_alpha):" \
		"$(head -c 300 "$work/oneshot.folded")"
fi

# ---- the service ---------------------------------------------------------------------------

step "start"
ns timeout 60 systemctl start xsprofd.service || die "systemctl start xsprofd failed"
t_start=$SECONDS
expect "is-active: active" test "$(ns systemctl is-active xsprofd)" = active
status_text=$(ns systemctl show -P StatusText xsprofd)
if [[ -n $status_text ]]; then
	pass "notifies: StatusText '$status_text'"
else
	fail "no StatusText: sd_notify STATUS= not received"
fi
main_pid=$(ns systemctl show -P MainPID xsprofd)
[[ $main_pid -gt 0 ]] || die "no MainPID"
expect "socket $sock is root:xsprof 0660" test "$(ns stat -c '%U:%G %a' "$sock")" = "root:xsprof 660"
expect "/run/xsprof is 0755" test "$(ns stat -c '%a' /run/xsprof)" = 755
journal=$(ns journalctl -u xsprofd --no-pager -o cat)
expect "journal: the start is logged" grep -q . <<<"$journal"
if grep -qE '^<[0-7]>' <<<"$journal"; then
	fail "journal: lines keep a literal <N> prefix (priority not parsed)"
else
	pass "journal: priorities parsed (no literal <N> prefixes)"
fi
wd0=$(ns systemctl show -P WatchdogTimestampMonotonic xsprofd)

# ctl USER ARGS...: run xsprofctl; RC and OUT hold the result.
ctl() {
	local user=$1
	shift
	set +e
	if [[ $user == root ]]; then
		OUT=$(ns timeout 60 xsprofctl "$@" 2>&1)
	else
		OUT=$(ns_as "$user" timeout 60 xsprofctl "$@" 2>&1)
	fi
	RC=$?
	set -e
}
# expect_ctl DESC WANT_RC USER ARGS...
expect_ctl() {
	local desc=$1 want=$2
	shift 2
	ctl "$@"
	if [[ $RC == "$want" ]]; then
		pass "$desc (exit $RC)"
	else
		fail "$desc: exit $RC, want $want: $(head -c 300 <<<"$OUT")"
	fi
}
json_num() { { grep -Eo "\"$1\" *: *[0-9]+" | head -1 | grep -Eo '[0-9]+$'; } || true; }
# has FILE PATTERN: FILE (in the namespace) has a line matching PATTERN; else show its start.
has() {
	ns grep -q -- "$2" "$1" && return 0
	echo "     $1 does not match '$2'; it starts:" >&2
	ns head -c 600 "$1" 2>&1 | head -n 5 | sed 's/^/     | /' >&2
	return 1
}

step "xsprofctl as root"
expect_ctl "root: status" 0 root status
ctl root --json status
expect "root: --json status shows freq_hz 49 from the config" test "$(json_num freq_hz <<<"$OUT")" = 49
cost_ok() { # the cost a user sees: xsprofd's share of one CPU, the sampler's time per sample
	python3 -c 'import json, sys
c = json.loads(sys.argv[1])["cost"]
sys.exit(0 if 0 < c["own_cpu_pct"] < 100 and 0 < c["bpf_ns_per_sample"] < 1e6 and
         0 < c["bpf_cpu_pct"] < 100 else 1)' "$OUT"
}
expect "root: status says what profiling costs (own CPU share, BPF time per sample)" cost_ok
ctl root status
cost_line() { grep -q "^cost: xsprofd .* of one CPU" <<<"$OUT"; }
expect "root: status prints the cost line" cost_line
expect_ctl "root: record another user's process" 0 root record --pid "$pid_in" --duration 2 \
	-o "$stage/out/root-pid.folded"
expect "root: the recording names the process's frames (xs_work_alpha)" \
	has "$stage/out/root-pid.folded" 'xs_mine;.*xs_work_alpha'
expect_ctl "root: record the whole machine" 0 root record --duration 2 -o "$stage/out/root-all.svg"
expect "root: the whole-machine SVG holds both users' workloads" \
	ns sh -c "grep -q xs_mine $stage/out/root-all.svg && grep -q xs_theirs $stage/out/root-all.svg"

inj=/usr/lib/xsprof/libxsprof_cupti.so
# shellcheck disable=SC2016
expect_ctl "root: record a command" 0 root record -o "$stage/out/root-cmd.folded" -- \
	/bin/sh -c 'printf "%s" "$CUDA_INJECTION64_PATH" >'"$stage/out/inj"
got=$(ns cat "$stage/out/inj" 2>/dev/null || true)
if grep -qx "$inj" "$work/contents"; then
	expect "record -- CMD presets CUDA_INJECTION64_PATH=$inj (got '$got')" test "$got" = "$inj"
else
	expect "record -- CMD presets no injection library the package lacks (got '$got')" \
		test -z "$got" -o "$got" = "$inj"
fi

step "xsprofctl as a member of group xsprof ($user_in)"
expect_ctl "member: status" 0 "$user_in" status
expect_ctl "member: record its own process" 0 "$user_in" record --pid "$pid_in" --duration 2 \
	-o "$stage/out/member-own.folded"
expect "member: its recording names its frames" has "$stage/out/member-own.folded" 'xs_work_alpha'
expect_ctl "member: record another user's process is refused" 4 "$user_in" record \
	--pid "$pid_out" --duration 1 -o "$stage/out/member-other.folded"
expect_ctl "member: record the whole machine is refused" 4 "$user_in" record --duration 1 \
	-o "$stage/out/member-all.folded"
expect_ctl "member: record a command it runs" 0 "$user_in" record \
	-o "$stage/out/member-cmd.folded" -- "/var/tmp/$user_in/xs_mine" 200 200 1 1
expect "member: the command's recording names its frames" has "$stage/out/member-cmd.folded" 'xs_work_'

step "xsprofctl as a user outside group xsprof ($user_out)"
expect_ctl "outsider: status is refused at the socket" 4 "$user_out" status
expect_ctl "outsider: record its own process is refused" 4 "$user_out" record --pid "$pid_out" \
	--duration 1 -o "$stage/out/outsider.folded"

step "the API's permission checks, without xsprofctl"
# as USER METHOD PATH [CURL ARGS...]: CODE holds the HTTP status (000: no connection).
as() {
	local user=$1
	shift
	CODE=$(ns_as "$user" curl -s --max-time 30 -o /dev/null -w '%{http_code}' \
		--unix-socket "$sock" -X "$1" "http://xsprofd$2" "${@:3}") || true
}
j=(-H 'Content-Type: application/json')
as "$user_in" POST /v1/recordings "${j[@]}" --data "{\"duration_s\": 1, \"pids\": [$pid_out]}"
expect "API: a member recording another user's process gets 403 (got $CODE)" test "$CODE" = 403
as "$user_in" POST /v1/recordings "${j[@]}" --data '{"duration_s": 1}'
expect "API: a member recording the whole machine gets 403 (got $CODE)" test "$CODE" = 403
as "$user_in" POST /v1/recordings "${j[@]}" --data "{\"duration_s\": 1, \"pids\": [$pid_in]}"
expect "API: a member recording its own process gets 201 (got $CODE)" test "$CODE" = 201
as "$user_in" GET "/v1/profile?since_s=60&pid=$pid_out"
expect "API: pid= of a process nobody attached is 404 (got $CODE)" test "$CODE" = 404
as "$user_out" GET /v1/status
expect "API: an outsider cannot connect to the socket (got $CODE)" test "$CODE" = 000

step "malformed and oversized requests"
# http METHOD PATH [CURL ARGS...]: CODE and BODY hold the answer.
http() {
	local r
	r=$(ns curl -sS --max-time 30 -o - -w '\n%{http_code}' --unix-socket "$sock" -X "$1" \
		"http://xsprofd$2" "${@:3}" 2>&1) || true
	CODE=${r##*$'\n'}
	BODY=${r%$'\n'*}
}
# expect_http DESC WANT_CODE METHOD PATH [CURL ARGS...]: the code, and a JSON error body.
expect_http() {
	local desc=$1 want=$2
	shift 2
	http "$@"
	if [[ $CODE != "$want" ]]; then
		fail "$desc: HTTP $CODE, want $want: $(head -c 200 <<<"$BODY")"
	elif ! grep -q '"error" *:' <<<"$BODY"; then
		fail "$desc: HTTP $CODE without a JSON error body: $(head -c 200 <<<"$BODY")"
	else
		pass "$desc (HTTP $CODE, JSON error)"
	fi
}
json=(-H 'Content-Type: application/json')
expect_http "bad JSON" 400 POST /v1/recordings "${json[@]}" --data '{"duration_s": 1,'
expect_http "not an object" 400 POST /v1/recordings "${json[@]}" --data '[1, 2, 3]'
expect_http "a string for a number" 400 POST /v1/recordings "${json[@]}" \
	--data '{"duration_s": "ten"}'
expect_http "a negative duration" 400 POST /v1/recordings "${json[@]}" --data '{"duration_s": -1}'
expect_http "a duration past max-record" 400 POST /v1/recordings "${json[@]}" \
	--data '{"duration_s": 99999999}'
expect_http "an unknown format" 400 POST /v1/recordings "${json[@]}" \
	--data '{"duration_s": 1, "format": "exe"}'
expect_http "attach without a pid" 400 POST /v1/attach "${json[@]}" --data '{}'
expect_http "a pid that is not a number" 400 POST /v1/attach "${json[@]}" --data '{"pid": "x"}'
expect_http "a 1 MiB body" 413 POST /v1/recordings "${json[@]}" --data-binary "@$stage/big.json"
expect_http "wrong method on status" 405 DELETE /v1/status
expect_http "wrong method on recordings" 405 PUT /v1/recordings "${json[@]}" --data '{}'
expect_http "an unknown path" 404 GET /v1/nothing-here
expect_http "an unknown recording" 404 GET /v1/recordings/987654321
expect_http "a bad since_s" 400 GET '/v1/profile?since_s=abc'
# Past the daemon's per-connection memory, yet small enough for the socket to take all of it
# before the answer comes (a bigger one ends in a reset while curl is still sending). The answer
# is libmicrohttpd's own (431, an HTML body).
head -c 200000 /dev/zero | tr '\0' a | sed 's/^/X-Padding: /' >"$root$stage/big.header"
http GET /v1/status -H "@$stage/big.header"
if [[ $CODE == 4?? ]]; then
	pass "a 200 KB header gets HTTP $CODE"
else
	fail "a 200 KB header: HTTP $CODE, want 4xx"
fi
expect "the daemon is still active" test "$(ns systemctl is-active xsprofd)" = active
expect "... and was not restarted" test "$(ns systemctl show -P MainPID xsprofd)" = "$main_pid"
expect_ctl "... and still answers" 0 root status

step "rolling window"
((SECONDS - t_start < 13)) && sleep $((13 - (SECONDS - t_start)))
expect_ctl "root: flamegraph of the last minute" 0 root flamegraph --since 1m -o "$stage/out/fg.svg"
expect "root: the flamegraph is an SVG with both workloads" \
	ns sh -c "grep -q '<svg' $stage/out/fg.svg && grep -q xs_mine $stage/out/fg.svg &&
		grep -q xs_theirs $stage/out/fg.svg"
if command -v xmllint >/dev/null; then
	expect "root: the flamegraph is well-formed XML" ns xmllint --noout "$stage/out/fg.svg"
fi
expect_ctl "member: flamegraph" 0 "$user_in" flamegraph --since 1m -o "$stage/out/fg-member.folded"
expect_ctl "member: flamegraph --pid of a process not attached fails (1)" 1 "$user_in" \
	flamegraph --since 1m --pid "$pid_out" -o "$stage/out/fg-member-other.folded"
expect "member: its flamegraph holds its process" has "$stage/out/fg-member.folded" xs_mine
if ns grep -q xs_theirs "$stage/out/fg-member.folded"; then
	fail "member: its flamegraph shows another user's process"
else
	pass "member: its flamegraph shows no other user's process"
fi

step "watchdog"
wd1=$(ns systemctl show -P WatchdogTimestampMonotonic xsprofd)
if [[ $wd1 != "$wd0" && $wd1 -gt 0 ]]; then
	pass "watchdog keep-alives arrive (WatchdogSec=6s in this test)"
else
	fail "no watchdog keep-alive in $((SECONDS - t_start)) s (WATCHDOG=1 not sent?)"
fi

step "reload"
printf '# xsprof service test\nfreq = 29\nwindow = 60\nstore-mb = 8\n' >"$root$stage/xsprofd.conf"
ns systemctl reload xsprofd || fail "systemctl reload xsprofd failed"
freq=
for ((i = 0; i < 50; i++)); do
	http GET /v1/status
	freq=$(json_num freq_hz <<<"$BODY")
	[[ $freq == 29 ]] && break
	sleep 0.2
done
expect "reload: status shows the new freq_hz 29" test "$freq" = 29
expect "reload: same process" test "$(ns systemctl show -P MainPID xsprofd)" = "$main_pid"
printf 'freq = fast\n' >"$root$stage/xsprofd.conf"
ns systemctl reload xsprofd || fail "systemctl reload xsprofd (bad config) failed"
sleep 1
expect "reload with a bad config: still active" test "$(ns systemctl is-active xsprofd)" = active
http GET /v1/status
expect "reload with a bad config: keeps freq_hz 29" test "$(json_num freq_hz <<<"$BODY")" = 29
expect "reload with a bad config: an error in the journal (priority err)" \
	ns sh -c 'journalctl -u xsprofd -p err --no-pager -o cat | grep -q fast'
printf 'freq = 29\n' >"$root$stage/xsprofd.conf"

# host_pid NSPID: the pid the host gives the namespace's process NSPID.
host_pid() {
	local f pidns
	pidns=$(readlink "/proc/$NS_PID/ns/pid")
	for f in /proc/[0-9]*; do
		[[ $(readlink "$f/ns/pid" 2>/dev/null) == "$pidns" ]] || continue
		[[ $(awk '/^NSpid:/ { print $NF }' "$f/status" 2>/dev/null) == "$1" ]] && {
			echo "${f#/proc/}"
			return 0
		}
	done
	return 1
}
# prog_ids HOSTPID: the BPF programs the process holds (program and link fds).
prog_ids() {
	grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -un
}
# expect_progs_gone DESC ID...: none of the programs is loaded any more (give the kernel 5 s).
expect_progs_gone() {
	local desc=$1 left i id
	shift
	for ((i = 0; i < 25; i++)); do
		left=()
		for id in "$@"; do bpftool prog show id "$id" >/dev/null 2>&1 && left+=("$id"); done
		((${#left[@]} == 0)) && break
		sleep 0.2
	done
	if ((${#left[@]})); then
		fail "$desc: BPF programs still loaded:" \
			"$(for id in "${left[@]}"; do bpftool prog show id "$id" | head -1; done)"
	else
		pass "$desc: its $# BPF programs are gone"
	fi
}

# stopped_under NSPID: the processes in state T among NSPID's descendants (namespace pids).
stopped_under() {
	ns python3 - "$1" <"$here/stopped_under.py"
}

step "crash and restart, with a process stopped for its probes"
hp=$(host_pid "$main_pid") || die "cannot find xsprofd's host pid"
mapfile -t progs < <(prog_ids "$hp")
if ((${#progs[@]})); then
	pass "xsprofd holds ${#progs[@]} BPF programs"
else
	fail "xsprofd holds no BPF program fds"
fi
# A recorded command that maps libcudart again and again (each run is stopped at its exec and at
# the library's mapping until the daemon has attached its probes), or, in a tree built without
# CUDA, that execs again and again. The daemon is stopped first, so that a stop is pending when
# it is killed; the unit's ExecStopPost (xsprofd --continue-stopped) must continue it.
if [[ -x $build/tests/xs_cudart_smoke ]]; then
	cp "$build/tests/xs_cudart_smoke" "$root$stage/xs_cudart_smoke"
	loop_cmd="$stage/xs_cudart_smoke 1"
	loop_what="an exec or a libcudart mapping"
else
	loop_cmd=/bin/true
	loop_what="an exec (this tree has no CUDA program)"
fi
cat >"$root$stage/loop.sh" <<SH
#!/bin/sh
end=\$((\$(date +%s) + 10))
while [ \$(date +%s) -lt \$end ]; do $loop_cmd >/dev/null 2>&1; done
echo done >$stage/out/loop.done
SH
chmod 755 "$root$stage/loop.sh"
ns sh -c "timeout 90 xsprofctl --timeout 5 record -o $stage/out/loop.folded -- $stage/loop.sh \
	>$stage/out/loop.ctl 2>&1; echo \$? >$stage/out/loop.rc" &
loop_ctl=$!
loop_ns=
for ((i = 0; i < 100; i++)); do
	loop_ns=$(ns pgrep -f "^/bin/sh $stage/loop.sh" | head -1 || true)
	[[ -n $loop_ns ]] && break
	sleep 0.1
done
[[ -n $loop_ns ]] || fail "the recorded loop did not start: $(ns cat $stage/out/loop.ctl 2>&1)"
sleep 2
ns systemctl kill --kill-whom=main -s SIGSTOP xsprofd
# The loop's next exec stops it (its children are followed in the daemon's pid namespace).
for ((i = 0; i < 50; i++)); do
	pending=$(stopped_under "$loop_ns")
	[[ -n $pending ]] && break
	sleep 0.1
done
if [[ -n $pending ]]; then
	pass "with the daemon stopped, the recorded command's child is stopped at $loop_what"
else
	fail "no process of the recorded command was stopped in 5 s with the daemon stopped"
fi
ns systemctl kill -s SIGKILL xsprofd
for ((i = 0; i < 50; i++)); do
	[[ $(ns systemctl show -P NRestarts xsprofd) -ge 1 &&
		$(ns systemctl is-active xsprofd) == active ]] && break
	sleep 0.2
done
expect "Restart=on-failure: restarted after SIGKILL" \
	test "$(ns systemctl show -P NRestarts xsprofd)" -ge 1
expect "... and active again" test "$(ns systemctl is-active xsprofd)" = active
expect_progs_gone "the killed daemon" "${progs[@]}"
sleep 5
left=$(stopped_under "$loop_ns")
if [[ -z $left ]]; then
	pass "5 s after systemctl kill -s KILL no process is stopped (at the kill: ${pending:-none} stopped at $loop_what)"
else
	fail "stopped 5 s after the kill: $left (at the kill: ${pending:-none})"
fi
if [[ -n $pending ]]; then
	expect "ExecStopPost (xsprofd --continue-stopped) continued what the killed daemon held" \
		ns sh -c 'journalctl -u xsprofd --no-pager -o cat |
			grep -Eq "continued [1-9][0-9]* process(es)? (the service|a previous xsprofd)"'
fi
wait "$loop_ctl" || true
expect "the recorded command ran to its end" ns test -f "$stage/out/loop.done"
rc=$(ns cat "$stage/out/loop.rc" 2>/dev/null || echo none)
if [[ $rc != 0 && $rc != none && $rc != 124 ]] && ns grep -q "xsprofd went away" "$stage/out/loop.ctl"; then
	pass "xsprofctl record returned (exit $rc): $(ns grep -m1 'went away' "$stage/out/loop.ctl")"
else
	fail "xsprofctl record: exit $rc: $(ns head -c 300 "$stage/out/loop.ctl")"
fi
main_pid=$(ns systemctl show -P MainPID xsprofd)
expect_ctl "the restarted daemon answers" 0 root status

step "stop"
hp=$(host_pid "$main_pid") || die "cannot find xsprofd's host pid"
mapfile -t progs < <(prog_ids "$hp")
ns timeout 60 systemctl stop xsprofd || fail "systemctl stop xsprofd failed"
expect "stopped: inactive" test "$(ns systemctl is-active xsprofd)" = inactive
expect "stopped cleanly (Result=success)" test "$(ns systemctl show -P Result xsprofd)" = success
expect "stopped: /run/xsprof removed" ns test ! -e /run/xsprof
expect_progs_gone "after stop" "${progs[@]}"
others=$(bpftool prog show 2>/dev/null | grep -E '^[0-9]+: .* name xsprof' || true)
[[ -n $others ]] && echo "note: xsprof BPF programs of other processes on this machine: $others"

step "uninstall"
ns_poweroff
DEBIAN_FRONTEND=noninteractive dpkg --purge xsprof >"$work/purge.log" 2>&1 ||
	fail "dpkg --purge xsprof: $(tail -n 3 "$work/purge.log")"
pkg_installed=0
expect "purge removed the binaries, unit and config" \
	test ! -e /usr/bin/xsprofd -a ! -e /lib/systemd/system/xsprofd.service -a ! -e /etc/xsprof
expect "purge keeps group xsprof (Debian practice)" getent group xsprof
((failures == 0))
