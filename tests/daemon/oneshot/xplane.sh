#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# XPlane (-o FILE.xplane.pb, output/xplane.h) decoded by protoc against the vendored
# xplane.proto (output/proto/xla) and read back by tests/lib/xplane_read.py (python3-protobuf),
# against the Chrome trace of the same run: the GPU test double xs_usdt_gpu's kernels on the
# GPU plane, as many of each as the trace has, with their GPU time (7 x 1 ms, 5 x 2 ms) and each
# under its launching site; NVTX ranges of xs_nvtx_phases on its thread's line, as many as the
# trace's; xs_split's sampled stacks as nested frames whose time splits as the folded profile
# does (within 2 points); written where TensorBoard looks (LOGDIR/plugins/profile/RUN/).
# Needs root, BTF, protoc, python3-protobuf, the CUDA toolkit (the doubles).
#
# Usage: tests/daemon/oneshot/xplane.sh BUILD_DIR      (ctest runs it as xplane)
set -uo pipefail

build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")/../.." && pwd)
src=$(cd "$here/.." && pwd)
xsprofd=$build/daemon/xsprofd
split=$build/tests/xs_split
gpu=$build/tests/xs_usdt_gpu
phases=$build/tests/xs_nvtx_phases
lib=$build/cupti_inject/libxsprof_cupti.so
py=/usr/bin/python3
failures=0
pass() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*"; failures=$((failures + 1)); }
for f in "$xsprofd" "$split" "$gpu" "$phases" "$lib" "$py"; do
	[[ -x $f ]] || { echo "FAIL missing $f"; exit 1; }
done
command -v protoc >/dev/null || { echo "FAIL protoc missing (scripts/deps.sh installs protobuf-compiler)"; exit 1; }
$py -c 'import google.protobuf' 2>/dev/null ||
	{ echo "FAIL python3-protobuf missing (scripts/deps.sh installs it)"; exit 1; }
[[ $(id -u) == 0 ]] || { echo "FAIL needs root"; exit 1; }
dir=$(mktemp -d /tmp/xsprof-xplane-XXXXXX)
trap 'rm -rf "$dir"' EXIT
decode() {
	protoc --decode=tensorflow.profiler.XSpace -I "$src/output/proto/xla" \
		tsl/profiler/protobuf/xplane.proto <"$1"
}

# read NAME: NAME.xplane.pb decoded by protoc, then read into NAME.lines.
read_back() {
	if ! decode "$dir/$1.xplane.pb" >"$dir/$1.txt" 2>"$dir/$1.err"; then
		fail "protoc --decode $1: $(head -5 "$dir/$1.err")"
		return 1
	fi
	pass "protoc decodes $1 ($(stat -c %s "$dir/$1.xplane.pb") bytes)"
	if ! $py "$here/lib/xplane_read.py" "$dir/$1.xplane.pb" >"$dir/$1.lines" 2>"$dir/$1.rerr"; then
		fail "xplane_read $1: $(grep FAIL "$dir/$1.lines") $(tail -3 "$dir/$1.rerr")"
		return 1
	fi
	pass "$1: metadata, epoch times, streams apart, frames nested"
}

# count_trace NAME CAT NAME_RE: the Chrome trace's events of that category (complete events,
# or async begins) whose name matches.
count_trace() {
	$py - "$dir/$1.json" "$2" "$3" <<'EOF'
import json, re, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"] if isinstance(t, dict) else t
print(sum(1 for e in ev if e.get("cat") == sys.argv[2] and e.get("ph") in ("X", "b")
          and re.fullmatch(sys.argv[3], e.get("name", ""))))
EOF
}

# GPU: the double's kernels, written where TensorBoard finds a run.
run=$dir/logs/plugins/profile/2026_12_05_00_00_00
mkdir -p "$run"
if ! timeout 120 "$xsprofd" -f --cupti-socket "$dir/cupti.sock" -o "$run/$(hostname).xplane.pb" \
	-o "$dir/gpu.json" -- "$gpu" >"$dir/gpu.log" 2>&1; then
	fail "xsprofd -o HOST.xplane.pb: $(tail -5 "$dir/gpu.log")"
else
	cp "$run/$(hostname).xplane.pb" "$dir/gpu.xplane.pb"
	if read_back gpu; then
		grep -q "^hostname $(hostname)$" "$dir/gpu.lines" && pass "hostname $(hostname)" ||
			fail "no hostname: $(head -2 "$dir/gpu.lines")"
		grep -q '^plane /host:CPU ' "$dir/gpu.lines" && grep -q '^plane /device:GPU:0 ' "$dir/gpu.lines" &&
			pass "planes /host:CPU and /device:GPU:0" || fail "planes: $(grep '^plane' "$dir/gpu.lines")"
		for k in alpha:7:7000000000 beta:5:10000000000; do
			IFS=: read -r name n ps <<<"$k"
			got=$(awk -v k="xs_kernel_$name" '$1 == "event" && $3 == "gpu" && $4 == k { print $5, $6 }' "$dir/gpu.lines")
			want=$(count_trace gpu gpu "xs_kernel_$name")
			[[ $got == "$n $ps" && $want == "$n" ]] &&
				pass "xs_kernel_$name: $n on the GPU plane as in the trace, ${ps} ps" ||
				fail "xs_kernel_$name: xplane '$got', trace $want, want $n $ps"
			grep -Eq "^stack /device:GPU:0 xs_kernel_$name .*;main;xs_gpu_${name}_site$" "$dir/gpu.lines" &&
				pass "xs_kernel_$name's launch_stack ends in xs_gpu_${name}_site" ||
				fail "xs_kernel_$name's launch stacks: $(grep "^stack .*$name" "$dir/gpu.lines")"
		done
		n=$(awk '$1 == "event" && $3 == "launch" { s += $5 } END { print s + 0 }' "$dir/gpu.lines")
		((n == 12)) && pass "12 launches on the thread's line" || fail "launches on the host plane: $n"
	fi
fi

# NVTX: xs_nvtx_phases' ranges on its thread's line, as many as the trace has.
rm -f "$dir/cupti.sock"
if ! XSPROF_CUPTI_LIB=$lib XSPROF_CUPTI_SOCKET=$dir/cupti.sock timeout 120 "$xsprofd" -f -F 499 \
	--cupti-socket "$dir/cupti.sock" -o "$dir/nvtx.xplane.pb" -o "$dir/nvtx.json" -- "$phases" 2 \
	>"$dir/nvtx.log" 2>&1; then
	fail "xsprofd -o nvtx.xplane.pb: $(tail -5 "$dir/nvtx.log")"
elif read_back nvtx; then
	for r in data step forward backward; do
		got=$(awk -v r="$r" '$1 == "event" && $3 == "nvtx" && $4 == r { print $5 }' "$dir/nvtx.lines")
		want=$(count_trace nvtx nvtx "$r")
		[[ -n $got && $got == "$want" ]] && pass "NVTX $r: $got ranges, as the trace" ||
			fail "NVTX $r: xplane '$got', trace $want"
	done
	got=$(awk '$1 == "event" && $3 == "gpu" { s += $5 } END { print s + 0 }' "$dir/nvtx.lines")
	want=$(count_trace nvtx gpu 'xs_kernel.*')
	((got > 0 && got == want)) && pass "$got kernels, as the trace" || fail "kernels: xplane $got, trace $want"
fi

# CPU: xs_split's sampled stacks as nested frames, their time split as the folded profile's.
if ! timeout 120 "$xsprofd" -f -F 499 -o "$dir/cpu.xplane.pb" -o "$dir/cpu.folded" -- "$split" 1300 3900 1.5 2 \
	>"$dir/cpu.log" 2>&1; then
	fail "xsprofd -o cpu.xplane.pb: $(tail -5 "$dir/cpu.log")"
elif read_back cpu; then
	# A frame's time over a period a sample is its samples: alpha's share of alpha + beta.
	shares=$(awk '$1 == "event" && $3 == "frame" && ($4 == "xs_work_alpha" || $4 == "xs_work_beta") { t[$4] += $6 }
		END { if (t["xs_work_alpha"] + t["xs_work_beta"] > 0) printf "%.1f", 100 * t["xs_work_alpha"] / (t["xs_work_alpha"] + t["xs_work_beta"]) }' "$dir/cpu.lines")
	folded=$(awk '{ w = $NF } /;xs_work_alpha(;| )/ { a += w } /;xs_work_beta(;| )/ { b += w }
		END { if (a + b > 0) printf "%.1f", 100 * a / (a + b) }' "$dir/cpu.folded")
	if [[ -n $shares && -n $folded ]] && awk -v x="$shares" -v y="$folded" 'BEGIN { d = x - y; exit !(d < 2 && d > -2) }'; then
		pass "xs_work_alpha: ${shares}% of alpha + beta frame time, ${folded}% of the folded samples"
	else
		fail "xs_work_alpha: xplane '${shares}'%, folded '${folded}'%"
	fi
fi

# The service's recording: xsprofctl record -o FILE.xplane.pb -- CMD.
sock=$dir/api.sock
"$xsprofd" --socket "$sock" --cupti-socket "$dir/svc-cupti.sock" --socket-group nogroup \
	--dump-dir "$dir/dumps" >"$dir/svc.log" 2>&1 &
svc=$!
for _ in $(seq 150); do [[ -S $sock ]] && break; sleep 0.1; done
if XSPROF_CUPTI_SOCKET=$dir/svc-cupti.sock timeout 120 "$build/daemon/ctl/xsprofctl" -s "$sock" \
	--timeout 60 record -F 499 -o "$dir/rec.xplane.pb" -- "$gpu" >"$dir/rec.out" 2>&1 &&
	read_back rec; then
	n=$(awk '$1 == "event" && $3 == "gpu" { s += $5 } END { print s + 0 }' "$dir/rec.lines")
	((n == 12)) && pass "xsprofctl record -o .xplane.pb: 12 kernels" ||
		fail "the recording's kernels: $n"
else
	fail "xsprofctl record -o .xplane.pb: $(tail -3 "$dir/rec.out")"
fi
kill "$svc" 2>/dev/null
wait "$svc" 2>/dev/null

exit $((failures > 0))
