#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# What off-CPU profiling costs on a switch-heavy load: xs_pingpong (two threads handing a byte
# back and forth through pipes, two context switches per round) unprofiled, under
# `xsprofd --foreground --mode offcpu -- CMD`, and under the bpftrace equivalent (sched_switch,
# stacks saved at switch-out, time summed per stack at switch-in, filtered to the command).
# bcc's offcputime needs a kprobe on finish_task_switch and kernel headers; where it runs it is
# measured too. Rounds are interleaved (one run of each per round), figures are medians, and
# xsprofd's program cost per context switch comes from one more run with BPF statistics on;
# then what the Python frames add per switch (bench/pingpong.py, two Python threads blocked a
# few frames deep, and xs_pingpong), against --no-python, interleaved.
#
# Usage: sudo bench/offcpu.sh [--build DIR] [--rounds N] [--reps R] [--no-bpftrace]
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

build=build
rounds=100000
reps=5
bpftrace=yes
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--no-bpftrace) bpftrace=no; shift ;;
	-h | --help) sed -n '3,11p' "$0"; exit 0 ;;
	*) echo "offcpu.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
xsprofd=$build/daemon/xsprofd
load=$build/tests/xs_pingpong
for f in "$xsprofd" "$load"; do
	[ -x "$f" ] || { echo "offcpu.sh: $f missing: cmake --build $build" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "offcpu.sh: needs root (BPF)" >&2; exit 1; }
if [ "$bpftrace" = yes ] && ! command -v bpftrace > /dev/null; then
	echo "offcpu.sh: no bpftrace (apt-get install bpftrace): skipping it" >&2
	bpftrace=no
fi
bcc=no
if command -v offcputime-bpfcc > /dev/null &&
	timeout 20 offcputime-bpfcc 1 > /dev/null 2>&1; then
	bcc=yes
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/off.bt" << 'EOF'
tracepoint:sched:sched_switch
{
	if (pid == cpid) {
		@start[args->prev_pid] = nsecs;
		@ks[args->prev_pid] = kstack;
		@us[args->prev_pid] = ustack;
	}
	$s = @start[args->next_pid];
	if ($s) {
		@[@ks[args->next_pid], @us[args->next_pid]] = sum(nsecs - $s);
		delete(@start[args->next_pid]);
	}
}
EOF

# run NAME CMD...: one run; the load's switches per second appended to $tmp/NAME.
run() {
	name=$1
	shift
	if ! "$@" > "$tmp/out" 2> "$tmp/err"; then
		echo "offcpu.sh: '$*' failed:" >&2
		tail -5 "$tmp/err" >&2
		exit 1
	fi
	sed -n 's/.*switches_per_s //p' "$tmp/out" >> "$tmp/$name"
}

median() { median_of "$tmp/$1"; }

tools="none xsprofd"
[ "$bpftrace" = yes ] && tools="$tools bpftrace"
[ "$bcc" = yes ] && tools="$tools bcc"
i=0
while [ $i -lt "$reps" ]; do
	for t in $tools; do
		case $t in
		none) run none "$load" "$rounds" ;;
		xsprofd) run xsprofd "$xsprofd" --foreground --mode offcpu --cupti-socket \
			"$tmp/cupti.sock" -o "$tmp/off.folded" -- "$load" "$rounds" ;;
		bpftrace) run bpftrace bpftrace "$tmp/off.bt" -c "$load $rounds" ;;
		bcc) "$load" "$rounds" > "$tmp/out" &
			lpid=$!
			timeout 60 offcputime-bpfcc -p "$lpid" > /dev/null 2>&1 &
			wait "$lpid"
			sed -n 's/.*switches_per_s //p' "$tmp/out" >> "$tmp/bcc" ;;
		esac
	done
	i=$((i + 1))
done

base=$(median none)
printf 'Off-CPU profiling of xs_pingpong (%s rounds, 2 switches each), median of %s interleaved runs\n' \
	"$rounds" "$reps"
printf '(%s CPUs, %s)\n' "$(nproc)" "$(uname -r)"
printf '%-12s %14s %12s\n' profiler "switches/s" "slowdown"
for t in $tools; do
	m=$(median "$t")
	printf '%-12s %14.0f %11.2fx\n' "$t" "$m" "$(echo "$base $m" | awk '{ print $1 / $2 }')"
done
[ "$bcc" = yes ] || printf '(bcc offcputime does not run here: it needs kprobes and kernel headers)\n'

old=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -q -w kernel.bpf_stats_enabled=1
"$xsprofd" --foreground -v --mode offcpu --cupti-socket "$tmp/cupti.sock" -o "$tmp/off.folded" \
	-- "$load" "$rounds" 2> "$tmp/err" > /dev/null || true
printf '\nxsprofd per context switch (kernel.bpf_stats_enabled, one more run):\n'
sed -n 's/^xsprofd: BPF cost: xsprof_offcpu: /  sched_switch program: /p' "$tmp/err"
sed -n 's/^xsprofd: off-CPU: /  /p' "$tmp/err"

# Python frames at switch-out: ns per run of the sched_switch program, walks on and off.
py=/usr/bin/python3.11
if [ -x "$py" ]; then
	for k in $(seq 3); do
		for walk in on off; do
			flag=
			[ "$walk" = off ] && flag=--no-python
			for l in c python; do
				cmd="$load $rounds"
				[ "$l" = python ] && cmd="$py $(dirname "$0")/pingpong.py $((rounds / 5))"
				# shellcheck disable=SC2086
				"$xsprofd" --foreground -v --mode offcpu $flag --cupti-socket "$tmp/cupti.sock" \
					-o "$tmp/off.folded" -- $cmd 2> "$tmp/err" > /dev/null || true
				sed -n 's/^xsprofd: BPF cost: xsprof_offcpu: .* runs, \([0-9]*\) ns each.*/\1/p' \
					"$tmp/err" >> "$tmp/py_${l}_$walk"
			done
		done
	done
	printf '\nPython frames at switch-out (ns per switch, median of 3, interleaved):\n'
	printf '  %-34s %8s %8s\n' load walks "--no-python"
	printf '  %-34s %8s %8s\n' "xs_pingpong (C)" "$(median py_c_on)" "$(median py_c_off)"
	printf '  %-34s %8s %8s\n' "bench/pingpong.py (Python 3.11)" "$(median py_python_on)" \
		"$(median py_python_off)"
fi

# --wakers: who woke each stretch (sched_waking reads the waker's stacks, and each woken
# stretch is sent): xs_pingpong's switches per second and the BPF time per switch, with and
# without, interleaved. Every switch of xs_pingpong is a wakeup by the other thread: the worst
# case.
for k in $(seq 3); do
	for w in plain wakers; do
		flag=
		[ "$w" = wakers ] && flag=--wakers
		# shellcheck disable=SC2086
		"$xsprofd" --foreground -v --mode offcpu $flag --cupti-socket "$tmp/cupti.sock" \
			-o "$tmp/off.folded" -- "$load" "$rounds" 2> "$tmp/err" > "$tmp/out" || true
		sed -n 's/.*switches_per_s //p' "$tmp/out" >> "$tmp/wk_rate_$w"
		pid_ns=$(sed -n 's/^xsprofd: BPF cost: xsprof_offcpu: .* runs, \([0-9]*\) ns each.*/\1/p' \
			"$tmp/err")
		echo "${pid_ns:-nan}" >> "$tmp/wk_switch_$w"
	done
done
# The waking program's own time, from the kernel's statistics of a run held open.
"$xsprofd" --foreground --mode offcpu --wakers --cupti-socket "$tmp/cupti.sock" \
	-o "$tmp/off.folded" -- "$load" "$((rounds * 4))" 2> /dev/null > /dev/null &
xpid=$!
sleep 3
waking=$(bpftool prog show 2> /dev/null | awk '/ name xsprof_waking / {
	for (i = 1; i < NF; i++) { if ($i == "run_time_ns") t = $(i + 1); if ($i == "run_cnt") c = $(i + 1) }
	if (c > 0) printf "%.0f ns a wakeup (%d wakeups)", t / c, c }')
wait "$xpid" || true
printf '\n--wakers on xs_pingpong (median of 3, interleaved):\n'
printf '  %-24s %14s %14s\n' "" "--mode offcpu" "--wakers"
printf '  %-24s %14.0f %14.0f\n' "switches/s" "$(median wk_rate_plain)" "$(median wk_rate_wakers)"
printf '  %-24s %14s %14s\n' "sched_switch ns/run" "$(median wk_switch_plain)" \
	"$(median wk_switch_wakers)"
printf '  %-24s %s\n' "sched_waking program" "${waking:-not seen}"
sysctl -q -w kernel.bpf_stats_enabled="$old"
