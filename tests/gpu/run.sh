#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The real-GPU suite (issue 41): xsprofd on a machine with an NVIDIA GPU, CUDA 13 and PyTorch,
# as root, with a kernel that has BTF. Everything it runs and checks is in tests/gpu/README.md;
# the figures of a run are in tests/gpu/RESULTS.md.
#
#   sites    a CUDA C program with known kernels per call site (runtime, cudaLaunchKernelEx,
#            driver, cuLaunchKernelEx, a graph), copies, allocations and device synchronizes,
#            under xsprofd -f at 999 Hz with --correlate-check and --report gpu
#   torch    a PyTorch training step: an MLP eager (with --group-by range: NVTX ranges), a
#            convolution net eager, the MLP with CUDA graphs
#   bound    an input-bound and a sync-bound loop, built to be so
#   launch   the CPU time of one real kernel launch: unprofiled, under xsprofd (xsprof:launch in
#            the injection library), with the entry uprobe alone, with CUPTI alone
#   policy   the step time of an MLP, a convolution net and a ~50 ms GPU-bound step (steps.py)
#            under each GPU timing policy (cupti_inject/README.md): unprofiled; CUPTI alone
#            (the injection library, no daemon); the service (19 Hz) with the job as it is;
#            the service with the job's injection library at XSPROF_CUPTI_POLICY launch,
#            kernels and full; the service also probing its launches (--cuda-lib: launch
#            stacks) at kernels and full. Interleaved, ROUNDS rounds, the service's CPU too
#   features the service's flight recorder (a slow-step trigger on a step made slow on
#            purpose), its OTLP export to the suite's receiver (tests/lib/export_receiver.py) and
#            --max-cpu, on one job
#   loader   a DataLoader with two workers feeding the GPU (loader.py), host-bound
#   nccl     two ranks over NCCL (nccl_pair.py): one GPU each, or both on GPU 0 where there
#            is one (NCCL may refuse; the refusal is recorded), under --report job
#   cost     (not run by default) the MLP step's time unprofiled, with the service in its
#            default settings, with --cuda-lib, and under a one-shot 999 Hz profile
# then tests/gpu/check.py checks the outputs and prints every figure (summary.json).
#
# Usage: tests/gpu/run.sh [--kit DIR] [--out DIR] [--rounds N] [--only STAGE,...]
#                         (stages run in the order above, policy first)
#   --kit DIR   what tests/gpu/kit.sh packed (default .devkit): xsprofd, the injection
#               library, the suite's CUDA programs and the libraries they need
#   --out DIR   where the outputs go (default $OUT, else /tmp/xsprof-gpu)
# Environment: POLICY_MODELS (mlp,conv,big), POLICY_SECS (1.2 s a model), POLICY_FIRST (the
# first round's number: more rounds beside an earlier run's), STAGE_TIMEOUT (120 s a profile).
# Exit status: 0 when every check passed, 1 when one failed, 2 on bad arguments.
set -u

here=$(cd "$(dirname "$0")" && pwd)
kit=.devkit
out=${OUT:-/tmp/xsprof-gpu}
rounds=3
only=policy,features,sites,torch,loader,bound,launch,nccl
while [ $# -gt 0 ]; do
	case "$1" in
	--kit) kit=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	-h | --help) sed -n '3,40p' "$0"; exit 0 ;;
	*) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
kit=$(cd "$kit" 2>/dev/null && pwd) || { echo "run.sh: no kit at $kit (tests/gpu/kit.sh)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
xsprofd=$kit/bin/xsprofd
ctl=$kit/bin/xsprofctl
inject=$kit/lib/xsprof/libxsprof_cupti.so
work=$kit/work
py=${PYTHON:-python3}
export XSPROF_CUPTI_LIB=$inject
exec > >(tee "$out/run.log") 2>&1

step() { printf '\n== %s (%s)\n' "$*" "$(date +%T)"; }
want() { case ",$only," in *",$1,"*) return 0 ;; esac; return 1; }

step machine
{
	echo "kernel $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ {print int($2/1048576)}' /proc/meminfo) GiB"
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
	$py -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__,
	        "cuda", torch.version.cuda, "gpu", torch.cuda.is_available())' 2>&1
	echo "python binary $(readlink -f "$(command -v "$py")") ($(command -v "$py"))"
	ldd "$(readlink -f "$(command -v "$py")")" 2>&1 | grep -E "python|not found"
	echo "btf $(ls -la /sys/kernel/btf/vmlinux 2>&1)"
	echo "perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid)"
} | tee "$out/machine.txt"
# What BPF needs mounted; a bare machine may lack them.
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf 2>/dev/null
mountpoint -q /sys/kernel/tracing || mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
"$xsprofd" --version || { echo "FAIL xsprofd does not start here"; exit 1; }

# The CUDA runtime and CUPTI the C programs use: the toolkit's, else PyTorch's wheels'.
find_lib() { # NAME: the first directory that has it
	local d
	for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib \
		$($py -c 'import nvidia, sys; print(" ".join(nvidia.__path__))' 2>/dev/null); do
		[ -e "$d/$1" ] && { echo "$d"; return; }
		local f
		f=$(find "$d" -maxdepth 4 -name "$1" 2>/dev/null | head -1)
		[ -n "$f" ] && { dirname "$f"; return; }
	done
}
cudart_dir=$(find_lib libcudart.so.13)
cupti_dir=$(find_lib libcupti.so.13)
echo "libcudart.so.13 in ${cudart_dir:-?}, libcupti.so.13 in ${cupti_dir:-?}" | tee -a "$out/machine.txt"
cenv=(env "LD_LIBRARY_PATH=$cudart_dir")
[ -n "$cupti_dir" ] && cenv+=("XSPROF_CUPTI_LIBRARY=$cupti_dir/libcupti.so.13")

# profile NAME ARGS... -- CMD...: xsprofd -f at 999 Hz with the check of the join and the GPU
# report, its outputs in $out/NAME/; the command's stderr (the injection's counts) in its log.
profile() {
	local name=$1 d=$out/$1
	shift
	local args=()
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	shift
	mkdir -p "$d"
	echo "xsprofd -f -F 999 --correlate-check --report gpu ${args[*]} -- $*" > "$d/command"
	timeout "${STAGE_TIMEOUT:-120}" "$xsprofd" -f -F 999 --correlate-check --report gpu --weight us \
		--cupti-socket "$d/cupti.sock" -o "$d/profile.folded" -o "$d/profile.gpu.json" \
		-o "$d/profile.timeline.json" "${args[@]}" -- env XSPROF_CUPTI_VERBOSE=1 "$@" \
		> "$d/report.txt" 2> "$d/xsprofd.log"
	local rc=$?
	echo "$name: exit $rc, $(grep -c . "$d/report.txt") lines of report"
	grep -E "correlation check|^xsprofd: GPU|xsprof-cupti.*(handed|recording)|fired under|warning" "$d/xsprofd.log" | head -14
	return $rc
}

svc=
# start_service DIR [ARGS]: xsprofd as a service on DIR's private sockets; stop_service.
start_service() {
	local sd=$1
	shift
	rm -f "$sd/api.sock" "$sd/cupti.sock"
	"$xsprofd" --socket "$sd/api.sock" --cupti-socket "$sd/cupti.sock" --socket-group root \
		"$@" >> "$sd/service.log" 2>&1 &
	svc=$!
	for _ in $(seq 300); do [ -S "$sd/api.sock" ] && break; sleep 0.1; done
	[ -S "$sd/api.sock" ] || echo "FAIL the service did not start ($sd/service.log)"
}
stop_service() {
	[ -n "$svc" ] && kill "$svc" && wait "$svc"
	svc=
}
svc_cpu() { # the service's CPU time so far, in clock ticks (0 with no service)
	if [ -n "$svc" ] && [ -r "/proc/$svc/stat" ]; then
		awk '{print $14 + $15}' "/proc/$svc/stat"
	else
		echo 0
	fi
}

if want policy; then
	step "policy cost"
	d=$out/policy
	mkdir -p "$d"
	secs=${POLICY_SECS:-1.2}
	# pjob COND ROUND: steps.py under COND; its step times in COND.ROUND.json, the service's
	# CPU over the job in COND.ROUND.cpu (ticks).
	pjob() {
		local f=$d/$1.$2.json c0 c1
		local job=("$py" "$here/steps.py" "$secs" "$f" "${POLICY_MODELS:-mlp,conv,big}")
		local inj=(env "CUDA_INJECTION64_PATH=$inject" "NVTX_INJECTION64_PATH=$inject"
			"XSPROF_CUPTI_SOCKET=$d/cupti.sock" XSPROF_CUPTI_VERBOSE=1)
		c0=$(svc_cpu)
		case $1 in
		none | service) "${job[@]}" ;;
		cupti_alone) env "CUDA_INJECTION64_PATH=$inject" "NVTX_INJECTION64_PATH=$inject" \
			"XSPROF_CUPTI_SOCKET=$d/nobody.sock" XSPROF_CUPTI_POLICY=kernels \
			XSPROF_CUPTI_VERBOSE=1 "${job[@]}" ;;
		launch | kernels | full) "${inj[@]}" "XSPROF_CUPTI_POLICY=$1" "${job[@]}" ;;
		*_stacks) "${inj[@]}" "XSPROF_CUPTI_POLICY=${1%_stacks}" "${job[@]}" ;;
		esac > /dev/null 2> >(sed "s/^/$1.$2: /" >> "$d/workload.log")
		c1=$(svc_cpu)
		echo $((c1 - c0)) > "$d/$1.$2.cpu"
		printf '%s round %s: %s\n' "$1" "$2" "$($py -c "import json
j = json.load(open('$f'))
print(' '.join(f'{m} {v[\"step_s\"] * 1e3:.3f} ms' for m, v in j['models'].items()))" 2>/dev/null)"
	}
	plain() { for c in "$@"; do pjob "$c" "$r"; done; }
	with_service() { # ARGS -- CONDS
		local a=()
		while [ "$1" != -- ]; do a+=("$1"); shift; done
		shift
		start_service "$d" "${a[@]}"
		plain "$@"
		stop_service
	}
	for r in $(seq "${POLICY_FIRST:-1}" "$rounds"); do
		if [ $((r % 2)) = 1 ]; then
			plain none cupti_alone
			with_service -- service launch kernels full
			with_service --cuda-lib "$inject" -- kernels_stacks full_stacks
		else
			with_service --cuda-lib "$inject" -- full_stacks kernels_stacks
			with_service -- full kernels launch service
			plain cupti_alone none
		fi
	done
	# What the service said of the last jobs: their policies, the window's GPU report.
	start_service "$d" --cuda-lib "$inject"
	pjob kernels_stacks extra
	"$ctl" -s "$d/api.sock" --timeout 60 --json status > "$d/status.json"
	"$ctl" -s "$d/api.sock" --timeout 60 report --since 2m -o "$d/window.gpu.json"
	stop_service
fi

if want features; then
	step "features: flight recorder, export, --max-cpu"
	d=$out/features
	mkdir -p "$d/otlp"
	"$py" "$here/../lib/export_receiver.py" "$d/otlp" 0 > "$d/receiver.log" 2>&1 &
	recv=$!
	for _ in $(seq 100); do [ -s "$d/otlp/port" ] && break; sleep 0.1; done
	port=$(cat "$d/otlp/port" 2> /dev/null)
	start_service "$d" --cuda-lib "$inject" --trigger slow-step,range=step,factor=3 \
		--export "otlp,url=http://127.0.0.1:${port:-9}/v1development/profiles" --max-cpu 2
	env "CUDA_INJECTION64_PATH=$inject" "NVTX_INJECTION64_PATH=$inject" \
		"XSPROF_CUPTI_SOCKET=$d/cupti.sock" XSPROF_CUPTI_VERBOSE=1 \
		"$py" "$here/steps.py" 6 "$d/slow.json" mlp --slow-step 400 > /dev/null 2> "$d/job.log"
	"$ctl" -s "$d/api.sock" --timeout 30 --json status > "$d/status.json"
	for _ in $(seq 40); do
		"$ctl" -s "$d/api.sock" --timeout 10 dumps > "$d/dumps.txt" 2>&1
		awk '$2 == "slow-step" && ($3 == "done" || $3 == "failed") {f = 1} END {exit !f}' "$d/dumps.txt" && break
		sleep 0.5
	done
	name=$(awk '$2 == "slow-step" {print $1; exit}' "$d/dumps.txt")
	[ -n "$name" ] && "$ctl" -s "$d/api.sock" --timeout 60 dump get "$name" -o "$d/dump" \
		> "$d/dump_get.txt" 2>&1
	for _ in $(seq 60); do ls "$d/otlp/"*.otlp.pb > /dev/null 2>&1 && break; sleep 0.5; done
	"$ctl" -s "$d/api.sock" --timeout 30 --json status > "$d/status_end.json"
	stop_service
	kill "$recv" 2> /dev/null
	echo "dumps: $(grep -c . "$d/dumps.txt") lines, slow-step dump ${name:-none}; OTLP bodies: $(ls "$d/otlp/"*.otlp.pb 2> /dev/null | wc -l)"
fi

if want sites; then
	step sites
	profile sites -v -o "$out/sites/profile.json" --launches-output "$out/sites/launches.folded" \
		-- "${cenv[@]}" "$work/xs_gpu_sites" 20 "$out/sites/truth.json"
fi

if want torch; then
	step torch
	profile mlp_eager -v --group-by range -- "$py" "$here/torch_step.py" mlp eager 3 "$out/mlp_eager/step.json"
	profile conv_eager -- "$py" "$here/torch_step.py" conv eager 3 "$out/conv_eager/step.json"
	profile mlp_graph -- "$py" "$here/torch_step.py" mlp graph 3 "$out/mlp_graph/step.json"
fi

if want loader; then
	step loader
	profile loader -- "$py" "$here/loader.py" 8 "$out/loader/truth.json"
fi

if want bound; then
	step bound
	profile input_bound -- "$py" "$here/bound.py" input 150 "$out/input_bound/truth.json"
	profile sync_bound -- "$py" "$here/bound.py" sync 1000 "$out/sync_bound/truth.json"
fi

if want launch; then
	step "launch cost"
	d=$out/launch
	mkdir -p "$d"
	: > "$d/figures.txt"
	for r in $(seq "$rounds"); do
		for mode in none cupti uprobe usdt; do
			case $mode in
			none) cmd=("${cenv[@]}" "$work/xs_gpu_launch_cost" 200000) ;;
			cupti) cmd=("${cenv[@]}" "CUDA_INJECTION64_PATH=$inject"
				"XSPROF_CUPTI_SOCKET=$d/none.sock" "$work/xs_gpu_launch_cost" 200000) ;;
			uprobe) cmd=(timeout 120 "$xsprofd" -f -F 1 --cupti-socket "$d/cupti.sock"
				-o "$d/x.folded" -- "${cenv[@]}" XSPROF_CUPTI_DISABLE=1
				"$work/xs_gpu_launch_cost" 200000) ;;
			usdt) cmd=(timeout 120 "$xsprofd" -f -F 1 --cupti-socket "$d/cupti.sock"
				-o "$d/x.folded" -- "${cenv[@]}" "$work/xs_gpu_launch_cost" 200000) ;;
			esac
			line=$("${cmd[@]}" 2> "$d/$mode.log" | grep ns_per_call)
			echo "$mode $line" | tee -a "$d/figures.txt"
		done
	done
fi

if want nccl; then
	step nccl
	d=$out/nccl
	mkdir -p "$d"
	timeout 60 "$xsprofd" -f -F 999 --report job -o "$d/profile.job.json" \
		--cupti-socket "$d/cupti.sock" -o "$d/profile.folded" -- \
		"$py" "$here/nccl_pair.py" 30 "$d/truth.json" > "$d/report.txt" 2> "$d/xsprofd.log"
	echo "nccl: exit $?; $(cat "$d/truth.json" 2> /dev/null | head -c 600)"
fi

if want cost; then
	step "step cost"
	d=$out/cost
	mkdir -p "$d"
	# none: no profiler; service: xsprofd's defaults (19 Hz, the window), the job as it is;
	# service_cupti: the same, the job with the injection library (GPU timing to the window);
	# service_gpu: the service also probing the injection library's launches (--cuda-lib: the
	# window's launch stacks and GPU reports); oneshot: xsprofd -f -F 999 -- the job.
	step_run() { # COND ROUND
		local f=$d/$1.$2.json
		local job=("$py" "$here/torch_step.py" mlp eager 4 "$f")
		local inj=(env "CUDA_INJECTION64_PATH=$inject" "NVTX_INJECTION64_PATH=$inject"
			"XSPROF_CUPTI_SOCKET=$d/cupti.sock")
		case $1 in
		none | service) "${job[@]}" ;;
		service_cupti | service_gpu) "${inj[@]}" "${job[@]}" ;;
		oneshot) timeout 240 "$xsprofd" -f -F 999 --cupti-socket "$d/oneshot.sock" \
			-o "$d/oneshot.$2.folded" -- "${job[@]}" 2> "$d/oneshot.$2.log" ;;
		esac > /dev/null 2>> "$d/workload.log"
		printf '%s round %s: step %s ms\n' "$1" "$2" \
			"$($py -c "import json; print(round(json.load(open('$f'))['step_s'] * 1e3, 4))" 2>/dev/null)"
	}
	for r in $(seq "$rounds"); do
		if [ $((r % 2)) = 1 ]; then
			step_run none "$r"
			start_service "$d"
			step_run service "$r"
			step_run service_cupti "$r"
			stop_service
			start_service "$d" --cuda-lib "$inject"
			step_run service_gpu "$r"
			stop_service
			step_run oneshot "$r"
		else
			step_run oneshot "$r"
			start_service "$d" --cuda-lib "$inject"
			step_run service_gpu "$r"
			stop_service
			start_service "$d"
			step_run service_cupti "$r"
			step_run service "$r"
			stop_service
			step_run none "$r"
		fi
	done
	# The window's GPU report of a job the service probed, asked as a user would.
	start_service "$d" --cuda-lib "$inject"
	step_run service_gpu extra
	"$ctl" -s "$d/api.sock" --timeout 60 report --since 2m -o "$d/window.gpu.json"
	"$ctl" -s "$d/api.sock" --timeout 60 report --since 2m > "$d/window.gpu.txt"
	"$ctl" -s "$d/api.sock" --timeout 60 --json status > "$d/status.json"
	stop_service
fi

step check
"$py" "$here/check.py" "$out" | tee "$out/summary.txt"
rc=${PIPESTATUS[0]}
exit "$rc"
