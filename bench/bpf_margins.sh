#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Every BPF program's margins against the classic verifier limits, veristat's habit: xsprofd
# loads its programs in each configuration that changes their code (unwind modes, off-CPU,
# wall, the CUDA probes), with XSPROF_BPF_MARGINS set, and this prints per program the worst
# of them: the deepest BPF-to-BPF / bpf_loop callback chain's stack with frames rounded to 32
# bytes (Linux before 6.9, the interpreter: the count that matters) and to 16 (a JIT on 6.9+),
# the spare below 512, the instructions the verifier processed and their spare below 1 M, its
# states, and its time. With --run-time, also each program's run time per event
# (kernel.bpf_stats_enabled) on the budget's workloads: a 64-deep loop at 999 Hz, a
# ping-pong of context switches, CUDA launches.
#
# Exits 1 when a program was refused, or keeps less than 64 bytes of stack (32-byte frames) or
# less than half the instruction limit: the check fails on every build before a kernel does
# (ctest runs it as bpf_margins). 2 on a usage or setup error.
#
# Usage: sudo bench/bpf_margins.sh [--build DIR] [--run-time] [--keep FILE]
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

prog=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../build
run_time=0
keep=
die() { echo "$prog: $*" >&2; exit 2; }
while (($#)); do
	case $1 in
	--build) build=${2:?}; shift 2 ;;
	--run-time) run_time=1; shift ;;
	--keep) keep=${2:?}; shift 2 ;;
	-h | --help) sed -n '3,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done
build=$(cd "$build" && pwd)
xsprofd=$build/daemon/xsprofd
fake=$build/tests/libxsprof_cupti_fake.so
split=$build/tests/xs_split
[[ $EUID -eq 0 ]] || die "needs root (BPF)"
for f in "$xsprofd" "$split"; do
	[[ -e $f ]] || die "$f missing: build first"
done
cuda=(--cuda-lib "$fake")
if [[ ! -e $fake ]]; then
	# A build without CUDA has no fake library to attach the CUDA probes to.
	echo "$prog: no $fake (built without CUDA): the CUDA probes are not checked" >&2
	cuda=()
fi

tmp=$(mktemp -d /tmp/xsprof-margins-XXXXXX)
bg=()
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
	for p in "${bg[@]}"; do kill "$p" 2>/dev/null || true; done
	sysctl -q -w kernel.bpf_stats_enabled="$old_stats" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# Each configuration that changes what a program's code is (rodata set before load).
configs=(
	"cpu, CUDA probes|${cuda[*]}"
	"offcpu|--mode offcpu ${cuda[*]}"
	"wakers|--mode offcpu --wakers"
	"wall|--mode wall"
	"unwind fp|--unwind fp --mode offcpu ${cuda[*]}"
	"unwind cfi|--unwind cfi --mode offcpu ${cuda[*]}"
)
margins=$tmp/margins
: >"$margins"
for c in "${configs[@]}"; do
	name=${c%%|*}
	# shellcheck disable=SC2086 # the flags are words
	if ! XSPROF_BPF_MARGINS=$tmp/one timeout 120 "$xsprofd" -f --cupti-socket "$tmp/c.sock" \
		${c#*|} -o "$tmp/out.folded" -- "$split" 50 50 1 1 >"$tmp/log" 2>&1; then
		echo "$prog: xsprofd ($name) failed:" >&2
		tail -5 "$tmp/log" >&2
		exit 1
	fi
	sed "s/^/$name|/" "$tmp/one" >>"$margins"
	rm -f "$tmp/one"
done
[[ -n $keep ]] && cp "$margins" "$keep"

rc=0
python3 - "$margins" <<'EOF' || rc=$?
import re, sys

LIMIT, SPARE, INSN_LIMIT = 512, 64, 1_000_000
progs = {}
last = None
for line in open(sys.argv[1]):
    conf, _, rest = line.rstrip("\n").partition("|")
    if rest.startswith("  refusal: "):
        if last is not None:
            last["refusal"] = rest[len("  refusal: "):]
        continue
    m = re.match(r"prog (\S+) (loaded|refused) insns (-?\d+) states (-?\d+) peak (-?\d+) "
                 r"time_us (-?\d+) stack32 (-?\d+) stack16 (-?\d+) chain (.*)", rest)
    if not m:
        continue
    name = m.group(1)
    rec = dict(conf=conf, loaded=m.group(2) == "loaded", insns=int(m.group(3)),
               states=int(m.group(4)), time_us=int(m.group(6)), s32=int(m.group(7)),
               s16=int(m.group(8)), chain=m.group(9))
    last = rec
    # A program left out of a load (its own or another's refusal) has no statistics.
    if rec["insns"] < 0 and not rec["loaded"]:
        continue
    p = progs.setdefault(name, dict(worst=None, insns=None, loaded=True, refused=[]))
    if not rec["loaded"]:
        p["loaded"] = False
        p["refused"].append(rec)
    if p["worst"] is None or rec["s32"] > p["worst"]["s32"]:
        p["worst"] = rec
    if p["insns"] is None or rec["insns"] > p["insns"]["insns"]:
        p["insns"] = rec

fail = 0
print(f"{'program':22} {'stack32':>7} {'spare':>5} {'stack16':>7} {'insns':>7} {'spare%':>6} "
      f"{'states':>6} {'time ms':>7}  worst in / deepest chain (bytes per frame)")
for name in sorted(progs):
    p = progs[name]
    w, i = p["worst"], p["insns"]
    spare = LIMIT - w["s32"]
    ispare = 100 * (INSN_LIMIT - i["insns"]) / INSN_LIMIT
    bad = []
    if not p["loaded"]:
        bad.append("refused: " + p["refused"][0].get("refusal", "?"))
    if w["s32"] < 0:
        bad.append("stack unknown")
    elif spare < SPARE:
        bad.append(f"stack spare {spare} < {SPARE}")
    if ispare < 50:
        bad.append(f"instructions {i['insns']} over half the limit")
    print(f"{name:22} {w['s32']:7} {spare:5} {w['s16']:7} {i['insns']:7} {ispare:5.1f}% "
          f"{i['states']:6} {i['time_us'] / 1000:7.1f}  {w['conf']}: {w['chain']}")
    for b in bad:
        print(f"  FAIL {name}: {b}")
        fail += 1
print(f"{len(progs)} programs, {fail} over a margin" + ("" if fail else
      f": every chain keeps {SPARE} bytes of {LIMIT} with 32-byte frames"))
sys.exit(1 if fail else 0)
EOF

if ((run_time)); then
	# Run time per event, read by xsprofd itself at its end (-v: "BPF cost: NAME: N runs, X ns
	# each"); kernel.bpf_stats_enabled taxes every program on the machine while it is on.
	sysctl -q -w kernel.bpf_stats_enabled=1
	fpdeep=$build/tests/xs_fpdeep pingpong=$build/tests/xs_pingpong
	cudabench=$build/tests/xs_cuda_bench
	cudart=$(readlink -f /usr/local/cuda/lib64/libcudart.so 2>/dev/null || true)
	costs() { sed -nE 's/^xsprofd: BPF cost: ([a-z_]+): ([0-9]+) runs, ([0-9]+) ns each/\1 \2 \3/p' "$1"; }
	echo
	echo "run time per event (bpf_stats):"
	for mode in fp auto; do
		"$fpdeep" 600 >/dev/null &
		pid=$!
		bg+=("$pid")
		"$xsprofd" -f -v -F 999 -d 4 --unwind "$mode" -p "$pid" -o "$tmp/s.folded" \
			>/dev/null 2>"$tmp/s.log" || true
		kill "$pid" 2>/dev/null || true
		costs "$tmp/s.log" | awk -v m="$mode" '$1 == "xsprof_sample_cpu" {
			printf "  %-20s %7d ns  (xs_fpdeep, 64 frames, 999 Hz, --unwind %s; %d runs)\n", $1, $3, m, $2 }'
	done
	"$xsprofd" -f -v --mode offcpu -o "$tmp/o.folded" -- "$pingpong" 20000 >/dev/null \
		2>"$tmp/o.log" || true
	costs "$tmp/o.log" | awk '$1 == "xsprof_offcpu" {
		printf "  %-20s %7d ns  (xs_pingpong, per context switch; %d runs)\n", $1, $3, $2 }'
	if [[ -x $cudabench && -n $cudart ]]; then
		"$xsprofd" -f -v -F 1 --launches-output "$tmp/l.folded" -- "$cudabench" both 20000 \
			"$cudart" >/dev/null 2>"$tmp/l.log" || true
		costs "$tmp/l.log" | awk '$1 ~ /^xsprof_(cuda|usdt)/ {
			printf "  %-20s %7d ns  (xs_cuda_bench, per launch; %d runs)\n", $1, $3, $2 }'
	fi
fi
exit $rc
