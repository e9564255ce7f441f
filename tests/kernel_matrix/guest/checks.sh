#!/bin/sh
# shellcheck shell=dash disable=SC2086,SC1091
# SPDX-License-Identifier: Apache-2.0
# The kernel matrix's checks, inside the guest (busybox sh): each runs the real xsprofd on a test
# workload of the build and asserts what it captured (km_check.py, mirroring the host tests
# named below), printing "KM PASS|FAIL <kernel> <check> <detail>", and on failure the tail of
# xsprofd's log as "KM LOG <kernel> <check> | <line>". At the end, every line in which xsprofd
# said the kernel refused something, once each, as "KM REFUSED <kernel> <line>".
# Usage: checks.sh KERNEL_NAME [CHECK,CHECK...]     (/km/env gives B, the build directory)
name=$1
want=${2:-btf,margins,cpu,python,offcpu,wall,wakers,cuda,usdt,scopes,nvtx,service}
. /km/env
xsprofd=$B/daemon/xsprofd
ctl=$B/daemon/ctl/xsprofctl
py=/usr/bin/python3.11
chk="$py /km/km_check.py"
w=/tmp/km
mkdir -p $w
# Per xsprofd run and per check: generous under TCG, where everything runs 10-50 times slower.
limit=${KM_LIMIT:-150}

pass() { echo "KM PASS $name $1 $2"; }
fail() {
	local c=$1 d=$2 log=$3
	echo "KM FAIL $name $c $d"
	if [ -n "$log" ] && [ -e "$log" ]; then
		tail -n 15 "$log" | sed "s/^/KM LOG $name $c | /"
	fi
}
# verdict CHECK LOG CMD...: CMD's last output line is the detail, its status the verdict.
verdict() {
	local c=$1 log=$2 out
	shift 2
	out=$("$@" 2>&1)
	if [ $? = 0 ]; then
		pass "$c" "$(echo "$out" | tail -n 1)"
	else
		fail "$c" "$(echo "$out" | tail -n 1)" "$log"
		echo "$out" | sed '$d' | tail -n 8 | sed "s/^/KM LOG $name $c | /"
	fi
}
# xs CHECK ARGS...: xsprofd ARGS with its log in $w/CHECK.log; its exit status.
xs() {
	local c=$1
	shift
	timeout $limit "$xsprofd" "$@" >"$w/$c.out" 2>"$w/$c.log"
}
t0=0
start() { t0=$(cut -d. -f1 /proc/uptime); }
took() { echo "$(($(cut -d. -f1 /proc/uptime) - t0))s"; }

# btf: the kernel's own BTF, which CO-RE needs.
c_btf() {
	if [ -e /sys/kernel/btf/vmlinux ]; then
		pass btf "/sys/kernel/btf/vmlinux $(wc -c </sys/kernel/btf/vmlinux) bytes"
	else
		fail btf "no /sys/kernel/btf/vmlinux"
	fi
}

# cpu: code built without frame pointers (tests/daemon/unwind/tests.cmake's xs_nofp; test_unwind_bpf):
# whole caller chains from the unwind tables.
c_cpu() {
	start
	xs cpu -f -F 299 -o $w/cpu.folded -- "$B/tests/xs_nofp" 3
	rc=$?
	if [ $rc != 0 ]; then
		fail cpu "xsprofd exited $rc ($(took))" $w/cpu.log
		return
	fi
	verdict cpu $w/cpu.log $chk cpu $w/cpu.folded "$(took)"
}

# python: Python frames of tests/daemon/python/nested.py (tests/daemon/python/run.sh nested, check.py).
c_python() {
	start
	xs python -f -F 299 -o $w/py.folded -- $py /km/python/nested.py 5
	rc=$?
	if [ $rc != 0 ]; then
		fail python "xsprofd exited $rc ($(took))" $w/python.log
		return
	fi
	$py /km/python/check.py $w/py.folded nested --min-full 0.8 \
		--paths '<module>,main,outer,middle_a,leaf_a,spin' '<module>,main,outer,middle_b,leaf_b,spin' \
		>$w/py.check 2>&1
	rc=$?
	d="$(grep -E 'samples with|whole path' $w/py.check | sed 's/^[A-Za-z]* *//' | tr '\n' ';') $(took)"
	if [ $rc = 0 ]; then
		pass python "$d"
	else
		fail python "$d" $w/python.log
		sed "s/^/KM LOG $name python | /" $w/py.check
	fi
}

# offcpu and wall: xs_napwait's blocking functions above libc's (test_offcpu_frames).
c_offwall() {
	local mode=$1
	start
	xs $mode -f -F 299 --mode $mode --no-cuda -o $w/$mode.folded -- "$B/tests/xs_napwait" 30
	rc=$?
	if [ $rc != 0 ]; then
		fail $mode "xsprofd exited $rc ($(took))" $w/$mode.log
		return
	fi
	verdict $mode $w/$mode.log $chk blocked $w/$mode.folded $mode "$(took)"
}

# wakers: --wakers on xs_wake_chain (tests/daemon/probes/wakers.sh): the main thread's waits
# charged to the relay that wrote its pipe, the sleeper's timer waits to no thread.
c_wakers() {
	start
	xs wakers -f --mode offcpu --wakers --no-cuda -o $w/wakers.folded -- "$B/tests/xs_wake_chain" 3
	rc=$?
	if [ $rc != 0 ]; then
		fail wakers "xsprofd exited $rc ($(took))" $w/wakers.log
		return
	fi
	verdict wakers $w/wakers.log $chk wakers $w/wakers.folded "$(took)"
}

# cuda: every CUDA API call of xs_cuda counted on its stack (test_cuda_probes
# launch_mode_counts_every_call_and_stack_exactly): libcudart.so.13 and the fake driver.
c_cuda() {
	local rc
	start
	xs cuda -f --launches-output $w/cuda.folded -- "$B/tests/xs_cuda" --exit 3
	rc=$?
	if [ $rc != 3 ]; then
		fail cuda "xsprofd exited $rc, want 3 (the command's) ($(took))" $w/cuda.log
		return
	fi
	verdict cuda $w/cuda.log $chk cuda $w/cuda.folded $w/cuda.log "$(took)"
}

# usdt: the xsprof:launch USDT of the fake injection library, its semaphore set
# (test_cuda_probes usdt_stacks_and_semaphore).
c_usdt() {
	start
	xs usdt -f --launches-output $w/usdt.folded -- "$B/tests/xs_usdt"
	rc=$?
	if [ $rc != 0 ]; then
		fail usdt "xsprofd exited $rc ($(took))" $w/usdt.log
		return
	fi
	verdict usdt $w/usdt.log $chk usdt $w/usdt.folded $w/usdt.out "$(took)"
}

# scopes and nvtx: phases grouped by range (tests/daemon/oneshot/nvtx.sh): xsprof/scope.h's USDT scopes in
# xs_scope_phases; NVTX ranges through libxsprof_cupti.so's NVTX injection in xs_nvtx_phases,
# the fake CUPTI's kernels joined under the range they were launched in.
c_phases() { # CHECK WORKLOAD
	local c=$1
	start
	rm -f $w/cupti.sock
	XSPROF_CUPTI_LIB=$B/cupti_inject/libxsprof_cupti.so XSPROF_CUPTI_SOCKET=$w/cupti.sock \
		xs $c -f -F 299 --group-by range --cupti-socket $w/cupti.sock -o $w/$c.folded -- \
		"$B/tests/$2" 3
	rc=$?
	if [ $rc != 0 ]; then
		fail $c "xsprofd exited $rc ($(took))" $w/$c.log
		return
	fi
	verdict $c $w/$c.log $chk phases $w/$c.folded $w/$c.out $w/$c.log $c "$(took)"
}

# service: xsprofd as the service (not --foreground), as tests/daemon/service/private_daemon.sh starts
# it, answering xsprofctl record with samples of a running workload.
c_service() {
	local sock=$w/api.sock d i wpid
	start
	"$xsprofd" --socket $sock --cupti-socket $w/svc-cupti.sock --socket-group nogroup \
		--dump-dir $w/dumps >$w/service.log 2>&1 &
	d=$!
	i=0
	while [ ! -S $sock ] && [ $i -lt $((limit * 5)) ] && kill -0 $d 2>/dev/null; do
		sleep 0.2
		i=$((i + 1))
	done
	if [ ! -S $sock ]; then
		fail service "xsprofd made no socket ($(took))" $w/service.log
		kill $d 2>/dev/null
		wait $d 2>/dev/null
		return
	fi
	"$B/tests/xs_split" 300 300 120 2 >$w/split.out 2>&1 &
	wpid=$!
	sleep 1
	if timeout $limit "$ctl" --timeout $limit -s $sock record --duration 3 --freq 199 \
		-o $w/service.folded >$w/ctl.out 2>&1; then
		cat $w/ctl.out >>$w/service.log
		# What the workload did meanwhile, for the log.
		echo "xs_split (pid $wpid): $(grep -E '^State' /proc/$wpid/status 2>/dev/null || echo exited);" \
			"its output: $(tr '\n' ' ' <$w/split.out | cut -c1-200)" >>$w/service.log
		verdict service $w/service.log $chk service $w/service.folded $w/service.log "$(took)"
	else
		cat $w/ctl.out >>$w/service.log
		fail service "xsprofctl record failed ($(took))" $w/service.log
	fi
	kill $wpid 2>/dev/null
	kill $d 2>/dev/null
	wait $wpid 2>/dev/null
	wait $d 2>/dev/null
}

# margins: every program loads on this kernel with its deepest call chain at most 448 bytes,
# frames rounded to 32 (64 of the classic 512 to spare), as this kernel's verifier counts them
# (bench/bpf_margins.sh's figures, from XSPROF_BPF_MARGINS).
c_margins() {
	start
	rm -f $w/margins
	for mode in cpu offcpu; do
		XSPROF_BPF_MARGINS=$w/margins xs margins -f -d 1 --mode $mode \
			--cuda-lib "$B/tests/libxsprof_cupti_fake.so" -o $w/margins.folded -- \
			"$B/tests/xs_split" 50 50 1 1
	done
	verdict margins $w/margins.log $py -c '
import re, sys
worst, bad, n = {}, [], 0
for line in open(sys.argv[1]):
    m = re.match(r"prog (\S+) (loaded|refused) insns (-?\d+) .* stack32 (-?\d+) ", line)
    if not m or int(m.group(3)) < 0:
        continue
    n += 1
    name, s32 = m.group(1), int(m.group(4))
    if m.group(2) != "loaded":
        bad.append(name + " refused")
    if s32 < 0 or s32 > 448:
        bad.append(f"{name} {s32} bytes")
    worst[name] = max(worst.get(name, 0), s32)
for b in bad:
    print(b)
top = sorted(worst.items(), key=lambda x: -x[1])[:4]
print(("FAIL " if bad or not n else "") + f"{len(worst)} programs loaded, deepest chains: " +
      ", ".join(f"{k} {v}" for k, v in top))
sys.exit(1 if bad or not n else 0)' $w/margins
}

# minimum: a kernel below xsprofd's minimum (tests/kernel_matrix/expect) is refused in one
# clear line naming what it lacks, and nothing is written.
c_minimum() {
	start
	rc=0
	xs minimum -f -d 1 -o $w/min.folded || rc=$?
	errs=$(grep -c 'error:' $w/minimum.log)
	if [ $rc = 0 ] || [ -e $w/min.folded ]; then
		fail minimum "xsprofd ran (exit $rc) on a kernel below its minimum" $w/minimum.log
	elif [ "$errs" != 1 ] || ! grep -q 'lacks .* (Linux [0-9.]* and later.*xsprofd needs it' $w/minimum.log ||
		grep -q 'libbpf:' $w/minimum.log; then
		fail minimum "exit $rc, but not one clear line ($errs error lines)" $w/minimum.log
	else
		pass minimum "refused, exit $rc: $(grep 'error:' $w/minimum.log | cut -c1-160)"
	fi
}

for c in $(echo "$want" | tr ',' ' '); do
	case $c in
	btf) c_btf ;;
	minimum) c_minimum ;;
	margins) c_margins ;;
	cpu) c_cpu ;;
	python) c_python ;;
	offcpu | wall) c_offwall $c ;;
	wakers) c_wakers ;;
	cuda) c_cuda ;;
	usdt) c_usdt ;;
	scopes) c_phases scopes xs_scope_phases ;;
	nvtx) c_phases nvtx xs_nvtx_phases ;;
	service) c_service ;;
	*) fail "$c" "no such check" ;;
	esac
done

# What this kernel refused, as xsprofd and libbpf said it (each line once, with how many times),
# and for each program the verifier refused, the last lines of its verifier log (the reason).
for f in $w/*.log; do
	awk '/-- BEGIN PROG LOAD LOG --/ { inlog = 1; n = 0; prog = $0; sub(/.*prog \047/, "", prog);
		sub(/\047.*/, "", prog); next }
	inlog && /-- END PROG LOAD LOG --/ { inlog = 0; s = "";
		for (i = (n > 3 ? n - 3 : 0); i < n; i++) s = s (s == "" ? "" : " / ") l[i % 4];
		print "verifier log of " prog " ends: " s; next }
	inlog { l[n % 4] = $0; n++; next }
	/refused|refuses|minimum kernel|libbpf: (prog|map|failed to load)|not found in vmlinux BTF|error: loading|warning:.*kernel/ { sub(/^xsprofd: /, ""); print }' "$f"
done | sort | uniq -c | sort -rn |
	while read -r n line; do echo "KM REFUSED $name (${n}x) $line"; done
# KM_VERBOSE=1 (run.sh's): every log whole.
if [ "${KM_VERBOSE:-0}" = 1 ]; then
	for f in $w/*.log $w/*.out $w/*.folded; do sed "s#^#KM FILE $name $(basename "$f") | #" "$f"; done
fi
dmesg | grep -E 'BUG|WARNING|Oops|Call Trace|verifier|uprobe|segfault|bpf' | grep -v 'LSM support for eBPF' | tail -n 20 | sed "s/^/KM DMESG $name | /"
