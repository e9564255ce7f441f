#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Python frames end to end (ctest python_*): a tests/python workload run under the real xsprofd
# (one-shot command mode, real BPF) with Debian's /usr/bin/python3.11, its folded profile checked
# by check.py against what the workload does. Each case runs with the unwind tables (auto) and
# with frame pointers only (fp): the Python frames must be right with both; the native ones
# around them are checked with the tables.
# run.sh BUILD_DIR CASE   (CASE: nested threads callback gen_async short cuda versions subinterp pidns torch
#   torch_backward torch_engine dataloader_wakers dataloader_gpu no_python unwatched offcpu)
set -u
build=$1
case=$2
here=$(cd "$(dirname "$0")" && pwd)
py=${XS_PYTHON:-/usr/bin/python3.11}
xsprofd=$build/daemon/xsprofd
out=$(mktemp -d /tmp/xs_python.XXXXXX)
trap 'rm -rf "$out"' EXIT
fail=0

[ -x "$py" ] || { echo "run.sh: $py not found (Debian's python3.11)" >&2; exit 1; }
[ -x "$xsprofd" ] || { echo "run.sh: $xsprofd not built" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (BPF)" >&2; exit 1; }

# profile MODE NAME ARGS...: folded profile of the workload into $out/NAME.MODE.folded
profile() {
	local mode=$1 name=$2
	shift 2
	echo "== $name, --unwind $mode"
	if ! timeout 120 "$xsprofd" -f -v -F 999 --unwind "$mode" -o "$out/$name.$mode.folded" \
		"${XS_EXTRA[@]}" -- "$py" "$here/$name.py" "$@" >"$out/$name.$mode.log" 2>&1; then
		cat "$out/$name.$mode.log" >&2
		echo "FAIL xsprofd exited with an error" >&2
		fail=1
		return 1
	fi
	grep -E "python" "$out/$name.$mode.log"
}

check() {
	"$py" "$here/check.py" "$@" || fail=1
}

XS_EXTRA=()
case $case in
nested)
	for mode in auto fp; do
		# 6 s at 999 Hz: ~6000 samples, so sampling error is ~0.6 pp of the 2 allowed.
		profile $mode nested 6 "$out/split.$mode.json" || continue
		native=()
		[ $mode = auto ] && native=(--native-before Py_RunMain)
		check "$out/nested.$mode.folded" nested --split "$out/split.$mode.json" --within 2 \
			--paths "<module>,main,outer,middle_a,leaf_a,spin" \
			"<module>,main,outer,middle_b,leaf_b,spin" "${native[@]}"
	done
	;;
threads)
	for mode in auto fp; do
		profile $mode threads 3 || continue
		check "$out/threads.$mode.folded" threads --min-full 0.9 \
			--paths "<module>,main" "work_red,spin" "work_green,spin" "work_blue,spin"
		# Each thread's own function, never another's: the thread name is the comm.
		for t in red green blue; do
			if grep "threads.work_" "$out/threads.$mode.folded" | grep "^work_$t;" |
				grep -v "threads.work_$t " | grep -q .; then
				echo "FAIL thread work_$t shows another thread's function"
				fail=1
			fi
		done
	done
	;;
callback)
	for mode in auto fp; do
		profile $mode callback 3 || continue
		native=()
		# The native unwind stops in libffi's closure trampoline (anonymous memory) now and
		# then; the frames past it go to the root, still in order.
		[ $mode = auto ] && native=(--between sort_many,compare,qsort --between-min 0.97)
		check "$out/callback.$mode.folded" callback --min-full 0.7 \
			--paths "<module>,main,sort_many,compare,burn" "${native[@]}"
	done
	;;
gen_async)
	for mode in auto fp; do
		profile $mode gen_async 4 || continue
		native=()
		[ $mode = auto ] && native=(--native-before Py_RunMain)
		check "$out/gen_async.$mode.folded" gen_async --min-full 0.8 --named 0.97 \
			--paths "<module>,main,consume,produce,spin" "<module>,main,amain,awork,spin" \
			"${native[@]}"
	done
	;;
short)
	for mode in auto fp; do
		profile $mode short || continue
		check "$out/short.$mode.folded" short --min-full 0.8 --paths "<module>,quick"
	done
	;;
cuda)
	cudart=${XS_CUDART:-/usr/local/cuda/lib64/libcudart.so.13}
	[ -e "$cudart" ] || { echo "run.sh: $cudart not found" >&2; exit 1; }
	line=$(grep -n "# LAUNCH" "$here/cuda_launch.py" | cut -d: -f1)
	for mode in auto fp; do
		XS_EXTRA=(--launches-output "$out/launch.$mode.folded")
		profile $mode cuda_launch "$cudart" 200 || continue
		total=$(awk '{n += $NF} END {print n + 0}' "$out/launch.$mode.folded")
		good=$(grep -F "cuda_launch.launch_step (cuda_launch.py:$line)" "$out/launch.$mode.folded" |
			grep -F "cuda_launch.train (cuda_launch.py:" | grep "\[cuda\] cudaLaunchKernel" |
			awk '{n += $NF} END {print n + 0}')
		echo "$good of $total launches carry launch_step (cuda_launch.py:$line) under train"
		if [ "$total" != 200 ] || [ "$good" != 200 ]; then
			echo "FAIL every one of the 200 launches must"
			head -3 "$out/launch.$mode.folded"
			fail=1
		fi
		# 100 under each step (n = 200): none counted under the other one's Python frames.
		for step in step_a step_b; do
			n=$(grep -F "cuda_launch.$step (cuda_launch.py:" "$out/launch.$mode.folded" |
				grep -F "cuda_launch.launch_step (cuda_launch.py:$line)" |
				awk '{n += $NF} END {print n + 0}')
			echo "$n launches under $step"
			if [ "$n" != 100 ]; then
				echo "FAIL $step must have 100"
				fail=1
			fi
		done
	done
	;;
versions)
	# Other CPython builds (pyenv's shared-library builds of 3.9 to 3.13): the nested
	# workload and the threaded one. 3.9 and 3.10 keep frames as PyFrameObjects; 3.8, which
	# is not walked, must keep its native stacks with a reason.
	found=""
	for v in 3.9 3.10 3.11 3.12 3.13; do
		bins=(/root/.pyenv/versions/$v.*/bin/python$v)
		bin=${bins[-1]}
		[ -x "$bin" ] || { echo "FAIL no pyenv CPython $v under /root/.pyenv" >&2; fail=1; continue; }
		found="$found $v"
		py=$bin
		if profile auto nested 6 "$out/split.$v.json"; then
			cp "$out/nested.auto.folded" "$out/nested.$v.folded"
			# 3.13 on: the offsets are the interpreter's own (_Py_DebugOffsets).
			if [ "$v" = 3.13 ] && ! grep -q " 1 with offsets read from the interpreter" \
				"$out/nested.auto.log"; then
				echo "FAIL 3.13's offsets were not read from its _Py_DebugOffsets"
				fail=1
			fi
			check "$out/nested.$v.folded" nested --split "$out/split.$v.json" --within 2 \
				--min-full 0.95 --paths "<module>,main,outer,middle_a,leaf_a,spin" \
				"<module>,main,outer,middle_b,leaf_b,spin" --native-before Py_RunMain
		fi
		profile auto threads 3 || continue
		check "$out/threads.auto.folded" threads --min-full 0.9 \
			--paths "<module>,main" "work_red,spin" "work_green,spin" "work_blue,spin"
		for t in red green blue; do
			if grep "threads.work_" "$out/threads.auto.folded" | grep "^work_$t;" |
				grep -v "threads.work_$t " | grep -q .; then
				echo "FAIL $v: thread work_$t shows another thread's function"
				fail=1
			fi
		done
	done
	echo "walked:$found"
	bins=(/root/.pyenv/versions/3.8.*/bin/python3.8)
	if [ -x "${bins[-1]}" ]; then
		py=${bins[-1]}
		profile auto nested 1 || true
		if ! grep -q "not walkable" "$out/nested.auto.log" ||
			! grep -q "before 3.9 is not walked" "$out/nested.auto.log"; then
			echo "FAIL 3.8 is not reported as not walkable"
			fail=1
		fi
		grep -q "_PyEval_EvalFrameDefault" "$out/nested.auto.folded" ||
			{ echo "FAIL 3.8 lost its native stacks"; fail=1; }
	else
		echo "FAIL no pyenv CPython 3.8 under /root/.pyenv" >&2
		fail=1
	fi
	;;
subinterp)
	for mode in auto fp; do
		profile $mode subinterp 3 || continue
		# Each run compiles its code anew and frees it after: a sample read late names
		# those frames "[python] ?" (counted), hence --named 0.85.
		check "$out/subinterp.$mode.folded" subinterp --min-full 0.3 --named 0.85 \
			--paths "<module>,main,call_sub,spin_main"
		# Inside the subinterpreter: its frames above the main interpreter's caller.
		total=$(grep -F "spin_sub (<string>:" "$out/subinterp.$mode.folded" |
			awk '{n += $NF} END {print n + 0}')
		good=$(grep -F "spin_sub (<string>:" "$out/subinterp.$mode.folded" |
			grep -E "subinterp\.call_sub \(subinterp.py:[0-9]+\);.*spin_sub \(<string>" |
			awk '{n += $NF} END {print n + 0}')
		echo "$good of $total samples in spin_sub are under subinterp.call_sub"
		if [ "$total" -lt 20 ] || [ $((good * 100)) -lt $((total * 99)) ]; then
			echo "FAIL the subinterpreter's frames must sit above the main interpreter's"
			fail=1
		fi
	done
	;;
pidns)
	# In a pid namespace of its own (a container's): CPython knows its threads by the ids of
	# that namespace, not ours.
	command -v unshare >/dev/null || { echo "run.sh: unshare (util-linux) missing" >&2; exit 1; }
	echo "== nested in a new pid namespace"
	if ! timeout 120 "$xsprofd" -f -F 999 -o "$out/ns.folded" -- unshare --pid --fork \
		"$py" "$here/nested.py" 6 "$out/ns.json" >"$out/ns.log" 2>&1; then
		cat "$out/ns.log" >&2
		fail=1
	else
		grep python "$out/ns.log"
		check "$out/ns.folded" nested --split "$out/ns.json" --within 2 \
			--paths "<module>,main,outer,middle_a,leaf_a,spin" \
			"<module>,main,outer,middle_b,leaf_b,spin" --native-before Py_RunMain
	fi
	;;
torch)
	# A real PyTorch training loop (Debian's python3-torch, CPU: libtorch, oneDNN's JIT
	# kernels, OpenBLAS), started by xsprofd, then already running when xsprofd starts:
	# whole native stacks around the Python frames either way, and the Python split.
	"$py" -c "import torch" 2>/dev/null ||
		{ echo "run.sh: $py cannot import torch (apt-get install python3-torch)" >&2; exit 1; }
	whole=(--native-below 5 --min-native-below 0.95 --root _start --min-root 0.95
		--max-unknown 0.005)
	paths=("<module>,main,train,step,forward,Net.forward" "<module>,main,train,step,backward"
		"<module>,main,train,step,optimizer_step" "<module>,main,train,Net.__init__")
	profile auto torch_train 8 "$out/split.cmd.json" || exit 1
	grep -E "unwind tables|first samples|walk ends" "$out/torch_train.auto.log"
	# Whole paths: all but the import of torch at the start (<module> alone). Whole native
	# stacks judged in the training loop: the import dlopen()s ~60 libraries, whose samples
	# past the hold budget go by frame pointers until their tables are in (counted in the
	# log's "first samples"; a loaded 2-core machine builds them later: 94-97% here).
	check "$out/torch_train.auto.folded" torch_train --split "$out/split.cmd.json" --within 3 \
		--min-full 0.7 --paths "${paths[@]}" "${whole[@]}" --whole-under "<module>,main,train"
	echo "== torch_train, running before xsprofd starts (--pid)"
	"$py" "$here/torch_train.py" 14 "$out/split.pid.json" 2>/dev/null &
	tpid=$!
	sleep 4 # its imports done: the profile is of the training loop
	if ! timeout 120 "$xsprofd" -f -v -F 999 -d 8 -p $tpid -o "$out/pid.folded" \
		>"$out/pid.log" 2>&1; then
		cat "$out/pid.log" >&2
		fail=1
	fi
	wait $tpid
	grep -E "unwind tables|first samples|walk ends" "$out/pid.log"
	# The split is of the whole run (the imports are not in it); the profile is of 8 s of it.
	check "$out/pid.folded" torch_train --split "$out/split.pid.json" --within 3 \
		--min-full 0.95 --paths "${paths[@]}" "${whole[@]}"
	;;
torch_backward)
	# Backward's CPU samples under the forward line that made their node (Debian's
	# python3-torch, CPU: backward runs on the thread that called it), split between two
	# layers as the workload measured; then --no-autograd leaves them where they ran.
	"$py" -c "import torch" 2>/dev/null ||
		{ echo "run.sh: $py cannot import torch (apt-get install python3-torch)" >&2; exit 1; }
	profile auto torch_backward 6 "$out/split.json" || exit 1
	grep "python autograd" "$out/torch_backward.auto.log"
	grep -q "python autograd: 1 processes probed" "$out/torch_backward.auto.log" ||
		{ echo "FAIL the autograd probes were not put on libtorch_cpu"; fail=1; }
	"$py" "$here/check_backward.py" "$out/torch_backward.auto.folded" "$out/split.json" ||
		fail=1
	XS_EXTRA=(--no-autograd)
	profile auto torch_backward 2 "$out/split.none.json" || exit 1
	"$py" "$here/check_backward.py" "$out/torch_backward.auto.folded" --none || fail=1
	if grep "python autograd:" "$out/torch_backward.auto.log" | grep -qv " 0 processes probed"; then
		echo "FAIL --no-autograd still probed libtorch_cpu"
		fail=1
	fi
	;;
torch_engine)
	# PyTorch's GPU backward in shape: the engine's own thread (no Python frames) launches
	# the kernels of nodes made on the Python thread (tests/workloads/torch_double.c as
	# libtorch_cpu.so, kernels on the GPU double). Every backward kernel must carry its
	# node's forward line and the backward() line, the GPU report's NVTX range around
	# backward() (on the Python thread) their GPU time, and the Chrome trace a flow from the
	# forward op that made each kernel's node to the kernel.
	lib="$build/tests/torch_double/libtorch_cpu.so"
	interop=$(ls /usr/local/cuda/lib64/libnvtx3interop.so.1 \
		"${CUDAToolkit_ROOT:-/nonexistent}"/lib64/libnvtx3interop.so.1 2>/dev/null | head -1)
	[ -n "$interop" ] ||
		{ echo "run.sh: no libnvtx3interop.so.1 (the CUDA toolkit): NVTX cannot be tested" >&2; exit 1; }
	rm -f "$out/cupti.sock"
	echo "== torch_engine"
	# NVTX reaches xsprofd through the injection library (the kernels through the double).
	if ! XSPROF_CUPTI_LIB="$build/cupti_inject/libxsprof_cupti.so" timeout 120 "$xsprofd" -f -v -F 999 --cupti-socket "$out/cupti.sock" \
		--gpu-mode merged -o "$out/torch_engine.folded" -o "$out/torch_engine.gpu.json" \
		-o "$out/torch_engine.json" \
		-- "$py" "$here/../../workloads/torch_engine.py" "$lib" \
		"$build/tests/libxs_gpu_double.so" 300 "$interop" >"$out/torch_engine.log" 2>&1; then
		cat "$out/torch_engine.log" >&2
		echo "FAIL xsprofd exited with an error" >&2
		exit 1
	fi
	grep "python autograd" "$out/torch_engine.log"
	"$py" "$here/check_backward.py" "$out/torch_engine.folded" --engine \
		"$here/../../workloads/torch_engine.py" --launches 600 --log "$out/torch_engine.log" \
		--ranges "$out/torch_engine.gpu.json" --trace "$out/torch_engine.json" || fail=1
	;;
dataloader_wakers)
	# A real DataLoader (2 worker processes): the main thread's waits in __next__ charged
	# (--wakers) to the chains of threads that woke it, into the workers.
	"$py" -c "import torch" 2>/dev/null ||
		{ echo "run.sh: $py cannot import torch (apt-get install python3-torch)" >&2; exit 1; }
	XS_EXTRA=(--mode offcpu --wakers)
	profile auto dataloader_wait 4 || exit 1
	grep "off-CPU wakers:" "$out/dataloader_wait.auto.log"
	"$py" "$here/check_wakers.py" "$out/dataloader_wait.auto.folded" || fail=1
	;;
dataloader_gpu)
	# A real DataLoader (2 workers, pin_memory) feeding the GPU double: with --wakers the GPU
	# report's host_bound finding follows the training thread's wait through the pin-memory
	# thread and the worker's feeder to decode() in the worker; without, it has no chain.
	"$py" -c "import torch" 2>/dev/null ||
		{ echo "run.sh: $py cannot import torch (apt-get install python3-torch)" >&2; exit 1; }
	wl="$here/../../workloads/dataloader_gpu.py"
	for how in wakers plain; do
		extra=(--mode wall --wakers)
		[ $how = plain ] && extra=(--mode wall)
		rm -f "$out/cupti.sock"
		echo "== dataloader_gpu, ${extra[*]}"
		if ! timeout 120 "$xsprofd" -f -v -F 999 --cupti-socket "$out/cupti.sock" \
			"${extra[@]}" --report gpu -o "$out/dl.$how.gpu.json" -- "$py" "$wl" \
			"$build/tests/libxs_gpu_double.so" 4 >"$out/dl.$how.txt" 2>"$out/dl.$how.log"; then
			cat "$out/dl.$how.log" >&2
			echo "FAIL xsprofd exited with an error" >&2
			fail=1
			continue
		fi
		grep "off-CPU wakers:" "$out/dl.$how.log"
		args=(--text "$out/dl.$how.txt")
		[ $how = plain ] && args=(--plain)
		"$py" "$here/check_dataloader_gpu.py" "$out/dl.$how.gpu.json" "$wl" "${args[@]}" ||
			fail=1
	done
	;;
no_python)
	XS_EXTRA=(--no-python)
	profile auto nested 1 "$out/split.json" || exit 1
	if grep -q "nested\.\|\[python\]" "$out/nested.auto.folded"; then
		echo "FAIL --no-python still shows interpreter frames"
		fail=1
	fi
	grep -q "_PyEval_EvalFrameDefault" "$out/nested.auto.folded" ||
		{ echo "FAIL --no-python lost the native interpreter frames"; fail=1; }
	;;
offcpu)
	# Python frames where a thread blocks: off-CPU and wall stacks have the Python line it
	# waits at, in place, as the CPU samples do.
	for m in offcpu wall; do
		echo "== offcpu_wait.py, --mode $m"
		if ! timeout 120 "$xsprofd" -f -F 999 --mode "$m" --no-cuda -o "$out/ow.$m.folded" -- \
			"$py" "$here/offcpu_wait.py" 3 "$out/ow.$m.json" >"$out/ow.$m.log" 2>&1; then
			echo "FAIL xsprofd --mode $m: $(tail -3 "$out/ow.$m.log")"
			fail=1
			continue
		fi
		"$py" - "$out/ow.$m.folded" "$out/ow.$m.json" "$m" <<'EOF2' || fail=1
import json, sys
folded, truth, mode = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
# The main thread's time, and the part of it in main()'s measured loop: the shares are of the
# loop, as the workload's own clock's are (the interpreter's start-up is 0.1-0.2 s of wall time
# more on a loaded machine).
main = py = loop = 0
fn = {"wait_batch": 0, "nap": 0}
for line in open(folded):
    if line.startswith("#"):
        continue
    st, w = line.rstrip("\n").rsplit(" ", 1)
    w = int(w)
    if "start_thread" in st:
        continue  # the producer thread
    main += w
    if "(offcpu_wait.py:" in st:
        py += w
    if "offcpu_wait.main (" in st:
        loop += w
    for f in fn:
        if "offcpu_wait.%s (" % f in st:
            fn[f] += w
share = 100.0 * py / max(main, 1)
bad = share < 95
print("%s main thread's %s time with its Python frames: %.1f%% (%d us)" %
      ("FAIL" if bad else "ok  ", mode, share, main))
if mode == "wall":
    # Each function's share of the loop's wall time.
    for f in fn:
        got, want = 100.0 * fn[f] / max(loop, 1), 100.0 * truth[f] / truth["main_wall"]
        ok = abs(got - want) <= 2
        bad += not ok
        print("%s %-10s %5.1f%% of the loop's wall time, its own clock %5.1f%%" %
              ("ok  " if ok else "FAIL", f, got, want))
else:
    # Off-CPU: the two waits' time against the clock's (nothing lost, nothing made up), and
    # their split. A loaded machine adds the time spin() sat preempted to the loop's off-CPU
    # time, which the workload's clock does not see as a wait: the split is of the waits.
    waits, want_us = fn["wait_batch"] + fn["nap"], 1e6 * (truth["wait_batch"] + truth["nap"])
    ok = abs(waits - want_us) <= 0.05 * want_us
    bad += not ok
    print("%s wait_batch and nap off the CPU %.0f us, their own clock %.0f us (within 5%%)" %
          ("ok  " if ok else "FAIL", waits, want_us))
    for f in fn:
        got, want = 100.0 * fn[f] / max(waits, 1), 1e8 * truth[f] / max(want_us, 1)
        ok = abs(got - want) <= 2
        bad += not ok
        print("%s %-10s %5.1f%% of the waits, its own clock %5.1f%%" %
              ("ok  " if ok else "FAIL", f, got, want))
sys.exit(1 if bad else 0)
EOF2
	done
	# A real DataLoader (torch, 2 worker processes): the main thread's wait, attached once
	# the workers run.
	echo "== torch DataLoader, 2 workers: the main thread's wait, --mode offcpu"
	"$py" "$here/dataloader_wait.py" 8 >"$out/dl.out" 2>&1 &
	dl=$!
	for _ in $(seq 600); do grep -q '^ready' "$out/dl.out" && break; sleep 0.1; done
	if ! grep -q '^ready' "$out/dl.out"; then
		echo "FAIL dataloader_wait.py did not start: $(tail -3 "$out/dl.out")"
		fail=1
	elif ! timeout 60 "$xsprofd" -f -p "$dl" --mode offcpu --no-cuda -d 3 -o "$out/dl.folded" \
		>"$out/dl.log" 2>&1; then
		echo "FAIL xsprofd -p: $(tail -3 "$out/dl.log")"
		fail=1
	else
		"$py" - "$out/dl.folded" <<'EOF2' || fail=1
import sys
main = py = 0
for line in open(sys.argv[1]):
    if line.startswith("#"):
        continue
    st, w = line.rstrip("\n").rsplit(" ", 1)
    if st.split(";")[0] == "pt_data_worker" or "start_thread" in st:
        continue  # the workers, and the main process's other threads
    main += int(w)
    py += int(w) if ".py:" in st else 0
share = 100.0 * py / max(main, 1)
ok = share >= 95 and main > 500000
print("%s the DataLoader main thread's off-CPU time with its Python frames: %.1f%% (%d us)" %
      ("ok  " if ok else "FAIL", share, main))
sys.exit(0 if ok else 1)
EOF2
	fi
	kill "$dl" 2>/dev/null
	wait "$dl" 2>/dev/null
	;;
unwatched)
	# A session that watches one program (command mode) leaves the rest of the machine alone:
	# the CPython processes started beside it meanwhile are not looked for, read or walked.
	echo "== xsprofd -f -- sleep 2.5, six python3 started beside it"
	( sleep 0.3; for _ in 1 2 3 4 5 6; do "$py" -c 'import time; time.sleep(0.3)'; done ) &
	side=$!
	timeout 60 "$xsprofd" -f --no-cuda -o "$out/sleep.folded" -- sleep 2.5 >"$out/sleep.log" 2>&1 ||
		{ echo "FAIL xsprofd: $(tail -3 "$out/sleep.log")"; fail=1; }
	wait "$side"
	if grep -q "CPython processes found" "$out/sleep.log"; then
		echo "FAIL the session looked at processes it does not watch: $(grep python: "$out/sleep.log")"
		fail=1
	fi
	;;
*)
	echo "run.sh: unknown case $case" >&2
	exit 2
	;;
esac
[ $fail = 0 ] && echo "PASS $case" || echo "FAIL $case"
exit $fail
