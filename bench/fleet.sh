#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Fleet collection at scale on one machine: N xsprofd instances (default 50, at most 200), each
# in its own network namespace behind a veth pair (10.214.I.0/30, addresses this script creates
# and nothing else), each serving its API on TCP with a token. Then `xsprofctl fleet` over the
# first 1, 10, 25, ... N of them, rounds interleaved: wall time of the collection and the
# client's peak RSS, for the rolling window (--since: every host answers at once) and for a
# recording of the next second on every host (-d 1). Figures are medians of --reps rounds.
# Every namespace, link and process it started is removed at the end, also on Ctrl-C; the
# whole run is bounded (--max-time, default 900 s).
#
# Usage: sudo bench/fleet.sh [--build DIR] [--hosts N] [--reps R] [--max-time S]
set -u

build=build
hosts=50
reps=3
max_time=900
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=$2; shift 2 ;;
	--hosts) hosts=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--max-time) max_time=$2; shift 2 ;;
	-h | --help) sed -n '3,13p' "$0"; exit 0 ;;
	*) echo "fleet.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
case $hosts in '' | *[!0-9]*) echo "fleet.sh: --hosts N, 1..200" >&2; exit 2 ;; esac
((hosts >= 1 && hosts <= 200)) || { echo "fleet.sh: --hosts N, 1..200" >&2; exit 2; }
xsprofd=$build/daemon/xsprofd
ctl=$build/daemon/ctl/xsprofctl
for f in "$xsprofd" "$ctl" /usr/bin/time; do
	[ -x "$f" ] || { echo "fleet.sh: $f missing (cmake --build $build; apt-get install time)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "fleet.sh: needs root (BPF, network namespaces)" >&2; exit 1; }

tag=xfb$$
dir=$(mktemp -d /tmp/xsprof-fleetbench.XXXXXX)
pids=()
made=()
cleanup() {
	local p n
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	for n in "${made[@]}"; do ip netns del "$n" 2>/dev/null; done
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'echo "fleet.sh: interrupted, cleaning up" >&2; exit 130' INT TERM
# The whole run is bounded: past max_time, this shell is told to stop (and cleans up).
(sleep "$max_time" && kill -TERM $$ 2>/dev/null) &
watchdog=$!
pids+=($watchdog)

head -c 24 /dev/urandom | base64 >"$dir/token"
chmod 600 "$dir/token"

echo "starting $hosts xsprofd instances in network namespaces ..."
t0=$(date +%s)
for ((i = 1; i <= hosts; i++)); do
	ns=$tag-$i
	ip netns add "$ns" || exit 1
	made+=("$ns")
	ip link add "x${$}b$i" type veth peer name eth0 netns "$ns" || exit 1
	ip addr add "10.214.$i.1/30" dev "x${$}b$i"
	ip link set "x${$}b$i" up
	ip -n "$ns" addr add "10.214.$i.2/30" dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" link set lo up
	ip netns exec "$ns" "$xsprofd" --socket "$dir/c$i.sock" --cupti-socket "$dir/u$i.sock" \
		--listen "10.214.$i.2:7717" --token-file "$dir/token" --freq 19 --unwind fp --no-cuda \
		>"$dir/d$i.log" 2>&1 &
	pids+=($!)
	echo "10.214.$i.2:7717 host=h$i rack=r$((i % 5))" >>"$dir/all"
	# Started in batches of 5, each batch answering before the next (startup is CPU-heavy).
	if ((i % 5 == 0 || i == hosts)); then
		for ((j = i - (i - 1) % 5; j <= i; j++)); do
			until curl -s -m 5 -o /dev/null -H "Authorization: Bearer $(cat "$dir/token")" \
				"http://10.214.$j.2:7717/v1/status"; do
				kill -0 "${pids[$j]}" 2>/dev/null ||
					{ echo "xsprofd $j died:"; tail -n 3 "$dir/d$j.log"; exit 1; }
				sleep 0.5
			done
		done
		echo "  $i up after $(($(date +%s) - t0)) s"
	fi
done
echo "all $hosts up after $(($(date +%s) - t0)) s; letting the windows fill 10 s"
sleep 10

counts=()
for c in 1 10 25 50 100 200; do ((c < hosts)) && counts+=($c); done
counts+=($hosts)

# One collection: "SECONDS PEAK_KB STATUS" on stdout.
run() { # COUNT MODE-ARGS...
	local n=$1
	shift
	head -n "$n" "$dir/all" >"$dir/h$n"
	/usr/bin/time -f '%e %M' -o "$dir/time" "$ctl" fleet -f "$dir/h$n" --token-file "$dir/token" \
		--parallel 64 --deadline 60 -o "$dir/out.folded" "$@" 2>"$dir/err"
	echo "$(cat "$dir/time" | tail -n 1) $?"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A secs kb bad
for ((r = 1; r <= reps; r++)); do
	for n in "${counts[@]}"; do
		for mode in since record; do
			if [[ $mode == since ]]; then set -- --since 30; else set -- -d 1; fi
			read -r s k st < <(run "$n" "$@")
			secs[$mode,$n]+="$s "
			kb[$mode,$n]+="$k "
			[[ $st == 0 ]] || bad[$mode,$n]=$((${bad[$mode,$n]:-0} + 1))
		done
	done
done

printf '\n%-6s  %-28s  %-28s\n' hosts "window (--since 30)" "recording (-d 1)"
printf '%-6s  %-12s %-15s  %-12s %-15s\n' "" "time s" "client peak MiB" "time s" "client peak MiB"
for n in "${counts[@]}"; do
	line=$(printf '%-6s' "$n")
	for mode in since record; do
		s=$(echo "${secs[$mode,$n]}" | tr ' ' '\n' | grep . | median)
		k=$(echo "${kb[$mode,$n]}" | tr ' ' '\n' | grep . | median)
		line+=$(printf '  %-12s %-15s' "$s" "$(awk -v k="$k" 'BEGIN { printf "%.1f", k / 1024 }')")
		[[ -n ${bad[$mode,$n]:-} ]] && line+=" (${bad[$mode,$n]} runs incomplete)"
	done
	echo "$line"
done
echo "(medians of $reps rounds; the merged profile of the last run: $(wc -l <"$dir/out.folded") stacks)"
kill "$watchdog" 2>/dev/null
