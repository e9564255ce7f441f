#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A kernel that refuses one optional BPF program still samples (issue 9): each optional program
# is refused in turn, for real (XSPROF_TEST_REFUSE_PROGRAM turns it into a program this kernel
# cannot load), and xsprofd must load the others, say what is missing, and profile the workload;
# off-CPU time asked for and refused is a clear error; the sampler itself refused is fatal.
# Usage: tests/daemon/oneshot/refused_programs.sh BUILD_DIR        (ctest runs it as refused_programs)
set -uo pipefail
build=$(cd "$1" && pwd)
xsprofd=$build/daemon/xsprofd
split=$build/tests/xs_split
dir=$(mktemp -d /tmp/xsprof-refused-XXXXXX)
trap 'rm -rf "$dir"' EXIT
failures=0
pass() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*"; failures=$((failures + 1)); }
[[ $(id -u) == 0 ]] || { echo "FAIL needs root"; exit 1; }

# Each program with the warning that names what goes missing without it.
while IFS='|' read -r prog what; do
	rc=0
	XSPROF_TEST_REFUSE_PROGRAM=$prog "$xsprofd" -f --cuda-lib "$build/tests/libxsprof_cupti_fake.so" \
		-o "$dir/out.folded" -- "$split" 300 300 1 1 >"$dir/log" 2>&1 || rc=$?
	n=$(awk '$1 ~ /^xs_split;/ {s += $NF} END {print s + 0}' "$dir/out.folded" 2>/dev/null)
	if [[ $rc == 0 ]] && grep -q "refused a BPF program: sampling goes on without $what" "$dir/log" &&
		((n >= 20)); then
		pass "$prog refused: warned ($what), xs_split sampled ($n samples)"
	else
		fail "$prog refused: exit $rc, $n samples:"$'\n'"$(tail -5 "$dir/log")"
	fi
done <<'LIST'
xsprof_exec_begin|telling samples inside an exec apart
xsprof_proc_exec|exec events
xsprof_proc_exit|exit events
xsprof_proc_libs|unwind tables of libraries loaded later
xsprof_cuda_call|CUDA API uprobes
xsprof_usdt_launch|the xsprof:launch USDT
xsprof_follow_fork|following children at fork
xsprof_unfollow_exit|letting children go at exit
xsprof_watch_mmap|probing CUDA libraries mapped later
xsprof_usdt_scope|xsprof scopes (xsprof:scope_begin / scope_end)
xsprof_watch_exec|probing executables exec'd later
LIST

rc=0
XSPROF_TEST_REFUSE_PROGRAM=xsprof_offcpu "$xsprofd" -f --mode offcpu -d 1 -o "$dir/off.folded" \
	>"$dir/log" 2>&1 || rc=$?
[[ $rc != 0 ]] && grep -q "refused tp_btf/sched_switch; --mode cpu still works" "$dir/log" &&
	pass "--mode offcpu with its program refused: a clear error (exit $rc)" ||
	fail "--mode offcpu refused: exit $rc: $(tail -3 "$dir/log")"
rc=0
XSPROF_TEST_REFUSE_PROGRAM=xsprof_offcpu "$xsprofd" -f -d 1 -o "$dir/cpu.folded" >"$dir/log" 2>&1 || rc=$?
[[ $rc == 0 ]] && ! grep -q "refused a BPF program" "$dir/log" &&
	pass "--mode cpu does not load the off-CPU program at all" || fail "--mode cpu: exit $rc: $(grep "refused a BPF" "$dir/log")"
rc=0
XSPROF_TEST_REFUSE_PROGRAM=xsprof_sample_cpu "$xsprofd" -f -d 1 -o "$dir/none.folded" >"$dir/log" 2>&1 || rc=$?
[[ $rc == 1 && ! -e $dir/none.folded ]] && pass "the sampler itself refused: exit 1, nothing written" ||
	fail "sampler refused: exit $rc"
((failures == 0)) && echo "refused_programs: all checks passed" || { echo "refused_programs: $failures failed"; exit 1; }
