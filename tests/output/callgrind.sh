#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The callgrind format (-o FILE.callgrind, output/callgrind.h) read by valgrind's own
# callgrind_annotate, against the folded profile of the same run (tests/output/callgrind_check.py:
# every function's inclusive share within 2 points of the share of the folded samples that hold
# it, and the program totals equal): xs_split's C functions with --debug-info (their lines in
# split.c); Python functions of tests/daemon/python/nested.py; the GPU test double xs_usdt_gpu, whose
# GPU time is a second event equal to the folded [gpu] weight; off-CPU time in microseconds;
# and the service's window through xsprofctl flamegraph -o FILE.callgrind.
# Needs root, BTF, valgrind (callgrind_annotate), python3.
#
# Usage: tests/output/callgrind.sh BUILD_DIR      (ctest runs it as callgrind)
set -uo pipefail

build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
xsprofd=$build/daemon/xsprofd
ctl=$build/daemon/ctl/xsprofctl
split=$build/tests/xs_split
gpu=$build/tests/xs_usdt_gpu
napwait=$build/tests/xs_napwait
py=/usr/bin/python3.11
failures=0
pass() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*"; failures=$((failures + 1)); }
for f in "$xsprofd" "$ctl" "$split" "$napwait" "$py"; do
	[[ -x $f ]] || { echo "FAIL missing $f"; exit 1; }
done
command -v callgrind_annotate >/dev/null ||
	{ echo "FAIL callgrind_annotate missing (scripts/deps.sh installs valgrind)"; exit 1; }
[[ $(id -u) == 0 ]] || { echo "FAIL needs root"; exit 1; }
dir=$(mktemp -d /tmp/xsprof-callgrind-XXXXXX)
svc=
trap '[[ -n $svc ]] && kill "$svc" 2>/dev/null; rm -rf "$dir"' EXIT

# compare NAME: NAME.folded against NAME.callgrind.
compare() {
	if python3 "$here/output/callgrind_check.py" "$dir/$1.folded" "$dir/$1.callgrind" 2 >"$dir/$1.check"; then
		pass "$1: $(tail -1 "$dir/$1.check")"
	else
		fail "$1: $(grep FAIL "$dir/$1.check")"
		sed 's/^/     /' "$dir/$1.check"
	fi
}

# The event line and the totals line of a callgrind file.
events() { sed -n 's/^events: //p' "$1"; }
totals() { sed -n 's/^totals: //p' "$1"; }

# CPU: xs_split's worker threads (alpha 1:3 beta), with their source lines.
if ! timeout 120 "$xsprofd" -f -F 499 --debug-info -o "$dir/split.folded" -o "$dir/split.callgrind" \
	-- "$split" 1300 3900 1.5 2 >"$dir/split.log" 2>&1; then
	fail "xsprofd -o split.callgrind: $(tail -5 "$dir/split.log")"
else
	compare split
	[[ $(events "$dir/split.callgrind") == Samples ]] && pass "one event: Samples" ||
		fail "events: $(events "$dir/split.callgrind")"
	# The lines of xs_work_alpha are in split.c: callgrind_annotate --auto shows them when it
	# finds the source, so ask for the file's line costs by name.
	if callgrind_annotate --inclusive=yes "$dir/split.callgrind" |
		grep -Eq '[0-9,]+ \(\s*[0-9.]+%\)\s+\S*split\.c:xs_work_alpha'; then
		pass "xs_work_alpha in split.c"
	else
		fail "xs_work_alpha has no split.c: $(callgrind_annotate "$dir/split.callgrind" | grep alpha)"
	fi
	# xs_spin's self cost, on its own source lines (the loop's two).
	spin=$(python3 "$here/output/callgrind_check.py" --fn xs_spin "$dir/split.callgrind")
	[[ $spin =~ :\ ([0-9]+)\ lines ]] && ((BASH_REMATCH[1] >= 2)) &&
		pass "self cost by line: $spin" || fail "xs_spin's lines: $spin"
fi

# Python: nested.py's functions by their .py file.
if ! timeout 120 "$xsprofd" -f -F 999 -o "$dir/nested.folded" -o "$dir/nested.callgrind" \
	-- "$py" "$here/daemon/python/nested.py" 3 >"$dir/nested.log" 2>&1; then
	fail "xsprofd -o nested.callgrind: $(tail -5 "$dir/nested.log")"
else
	compare nested
	callgrind_annotate --inclusive=yes "$dir/nested.callgrind" |
		grep -Eq 'nested\.py:(nested\.)?leaf_b' && pass "leaf_b in nested.py" ||
		fail "no nested.py:leaf_b: $(callgrind_annotate --inclusive=yes "$dir/nested.callgrind" | head -30)"
fi

# GPU: the test double's kernels (7 x 1 ms, 5 x 2 ms), a second event under their launching
# sites, in microseconds.
if [[ -x $gpu ]]; then
	if ! timeout 120 "$xsprofd" -f --weight us --cupti-socket "$dir/cupti.sock" -o "$dir/gpu.folded" \
		-o "$dir/gpu.callgrind" -- "$gpu" >"$dir/gpu.log" 2>&1; then
		fail "xsprofd -o gpu.callgrind: $(tail -5 "$dir/gpu.log")"
	else
		want=$(awk '$0 ~ /\[gpu\] / { s += $NF } END { print s + 0 }' "$dir/gpu.folded")
		got=$(totals "$dir/gpu.callgrind" | awk '{ print $2 + 0 }')
		ev=$(events "$dir/gpu.callgrind")
		if [[ $ev == "CPU_us GPU_us" ]] && ((want == 17000 && got == want)); then
			pass "GPU event: $got (the folded [gpu] weight: $want)"
		else
			fail "GPU event: events '$ev', total $got, folded [gpu] $want"
		fi
		k=$(python3 "$here/output/callgrind_check.py" --fn "[gpu] xs_kernel_alpha" "$dir/gpu.callgrind")
		[[ $k == *", 0 7000 self" ]] && pass "a function of its own: $k" ||
			fail "xs_kernel_alpha: $k"
	fi
else
	echo "skip GPU double: not built (no CUDA toolkit)"
fi

# Off-CPU: microseconds off the CPU.
if ! timeout 120 "$xsprofd" -f --mode offcpu --no-cuda -o "$dir/off.folded" \
	-o "$dir/off.callgrind" -- "$napwait" 20 >"$dir/off.log" 2>&1; then
	fail "xsprofd --mode offcpu -o off.callgrind: $(tail -5 "$dir/off.log")"
else
	[[ $(events "$dir/off.callgrind") == OffCPU_us ]] && pass "off-CPU event: OffCPU_us" ||
		fail "off-CPU events: $(events "$dir/off.callgrind")"
	compare off
fi

# The service's window, through xsprofctl.
sock=$dir/api.sock
"$xsprofd" --socket "$sock" --cupti-socket "$dir/svc-cupti.sock" --socket-group nogroup \
	--freq 199 --dump-dir "$dir/dumps" >"$dir/svc.log" 2>&1 &
svc=$!
for _ in $(seq 150); do [[ -S $sock ]] && break; sleep 0.1; done
timeout 60 "$split" 1300 3900 2 2 >/dev/null 2>&1
if timeout 60 "$ctl" -s "$sock" flamegraph --since 60 -o "$dir/svc.callgrind" \
	>"$dir/svc.out" 2>&1; then
	n=$(totals "$dir/svc.callgrind")
	a=$(python3 "$here/output/callgrind_check.py" --fn xs_work_alpha "$dir/svc.callgrind")
	((n > 0)) && [[ $a != FAIL* ]] &&
		pass "xsprofctl flamegraph -o svc.callgrind: $n samples; $a" ||
		fail "the window's callgrind: totals '$n'; $a"
else
	fail "xsprofctl flamegraph -o .callgrind: $(tail -3 "$dir/svc.out")"
fi
kill "$svc" 2>/dev/null
wait "$svc" 2>/dev/null
svc=

exit $((failures > 0))
