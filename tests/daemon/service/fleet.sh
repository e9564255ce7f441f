#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Fleet collection against real xsprofd instances, each in its own network namespace with its
# own workload: two live hosts, one whose address answers nothing (down), one that accepts
# connections and never answers; a host's recordings grouped by NVTX range under the host
# (--group-by); every host's GPU report and their merge (--report gpu). Then the remote API of one host over TLS: go tool pprof on the
# scrape endpoint, tokens refused, writes refused, malformed and oversized requests answered
# with clear errors while the daemon keeps serving.
# Usage: tests/daemon/service/fleet.sh BUILD_DIR. Needs root, BPF, iproute2, openssl, curl, go.
set -u
build=$(cd "$1" && pwd)
xsprofd=$build/daemon/xsprofd
ctl=$build/daemon/ctl/xsprofctl
tag=xf$$
dir=$(mktemp -d /tmp/xsprof-fleet.XXXXXX)
failures=0
pids=()
netns=()

fail() {
	echo "FAIL $*"
	failures=$((failures + 1))
}

cleanup() {
	local p n
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	for n in "${netns[@]}"; do ip netns del "$n" 2>/dev/null; done
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for tool in ip openssl curl go; do
	command -v $tool >/dev/null || { echo "FAIL $tool is needed (apt-get install)"; exit 1; }
done

# Test certificates: a CA, the hosts' certificate (their addresses), a client certificate.
certs() {
	cd "$dir" || return 1
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
		-out ca.pem -days 2 -subj /CN=xsprof-test-ca &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key \
			-out srv.csr -subj /CN=xsprofd &&
		printf 'subjectAltName=IP:10.213.1.2,IP:10.213.2.2,IP:10.213.3.2,IP:10.213.4.2\n' >ext &&
		openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem \
			-days 2 -extfile ext &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout cli.key \
			-out cli.csr -subj /CN=client &&
		openssl x509 -req -in cli.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out cli.pem -days 2
} >"$dir/openssl.log" 2>&1
certs || { echo "FAIL openssl"; cat "$dir/openssl.log"; exit 1; }
chmod 600 "$dir"/*.key
echo "fleet-test-token-$$-0123456789" >"$dir/token"
chmod 600 "$dir/token"
token=$(cat "$dir/token")

# Namespace N: veth xfN<pid> (host side 10.213.N.1/30) to the namespace (10.213.N.2).
mkns() {
	local n=$1 ns=$tag-$1 v=x$$h$1
	ip netns add "$ns" || return 1
	netns+=("$ns")
	ip link add "$v" type veth peer name eth0 netns "$ns" || return 1
	ip addr add "10.213.$n.1/30" dev "$v" && ip link set "$v" up &&
		ip -n "$ns" addr add "10.213.$n.2/30" dev eth0 && ip -n "$ns" link set eth0 up &&
		ip -n "$ns" link set lo up
}

# A daemon in namespace N with its own workload, a copy of a busy loop named burn_NAME (and
# more daemon options after the name).
start_host() {
	local n=$1 name=$2 ns=$tag-$1
	shift 2
	ip netns exec "$ns" "$xsprofd" --socket "$dir/ctl$n.sock" --cupti-socket "$dir/cupti$n.sock" \
		--listen "10.213.$n.2:7717" --token-file "$dir/token" --tls-cert "$dir/srv.pem" \
		--tls-key "$dir/srv.key" --tls-client-ca "$dir/ca.pem" --dump-dir "$dir/dumps$n" \
		"$@" >"$dir/d$n.log" 2>&1 &
	pids+=($!)
	cp /usr/bin/yes "$dir/burn_$name"
	ip netns exec "$ns" "$dir/burn_$name" >/dev/null &
	pids+=($!)
}

# Namespaces a run killed before its cleanup left behind hold the same addresses.
for ns in $(ip netns list | awk '/^xf[0-9]+-[0-9]/ {print $1}'); do
	p=${ns%%-*}
	kill -0 "${p#xf}" 2>/dev/null || ip netns del "$ns"
done
for n in 1 2 3 4; do mkns $n || { echo "FAIL creating network namespace $n"; exit 1; }; done
start_host 1 alpha --debug-info
# Host 1 also runs a workload built with debug info, whose source lines pprof lists.
ip netns exec "$tag-1" "$build/tests/xs_split" 2000 2000 300 1 >/dev/null &
pids+=($!)
start_host 2 beta --listen-allow-writes
# 3: accepts and never answers. 4: nothing listens (down).
ip netns exec "$tag-3" python3 -c '
import socket
s = socket.socket(); s.bind(("10.213.3.2", 7717)); s.listen(16); c = []
while True: c.append(s.accept()[0])' &
pids+=($!)

auth=(-H "Authorization: Bearer $token")
url1=https://10.213.1.2:7717
for _ in $(seq 100); do
	curl -s --cacert "$dir/ca.pem" "${auth[@]}" "$url1/v1/status" -o /dev/null -m 2 &&
		curl -s --cacert "$dir/ca.pem" "${auth[@]}" https://10.213.2.2:7717/v1/status \
			-o /dev/null -m 2 && break
	sleep 0.2
done
for _ in $(seq 50); do
	ip netns exec "$tag-3" ss -ltn | grep -q 10.213.3.2:7717 && break
	sleep 0.2
done

step() { echo "--- $(date +%T) $*"; }

step "fleet over two live hosts, one down, one hanging"
cat >"$dir/hosts" <<EOF
# host labels
10.213.1.2:7717 host=alpha job=train
10.213.2.2:7717 host=beta job=serve
10.213.3.2:7717 host=hang job=serve
10.213.4.2:7717 host=down job=train
EOF
t0=$(date +%s.%N)
"$ctl" fleet -f "$dir/hosts" --cacert "$dir/ca.pem" --token-file "$dir/token" -d 3 \
	--host-timeout 8 --deadline 10 -o "$dir/fleet.folded" 2>"$dir/fleet.err"
st=$?
t1=$(date +%s.%N)
cat "$dir/fleet.err"
[[ $st == 5 ]] || fail "fleet exit status $st, expected 5 (some hosts answered)"
grep -q '^alpha;burn_alpha' "$dir/fleet.folded" || fail "alpha's workload is not under alpha"
grep -q '^beta;burn_beta' "$dir/fleet.folded" || fail "beta's workload is not under beta"
grep -q '^hang;\|^down;' "$dir/fleet.folded" && fail "a failed host has stacks"
grep -q '10.213.3.2:7717 *FAILED' "$dir/fleet.err" || fail "the hanging host is not reported"
grep -q '10.213.4.2:7717 *FAILED' "$dir/fleet.err" || fail "the down host is not reported"
grep -q 'PARTIAL' "$dir/fleet.err" || fail "the partial result does not say so"
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 12) }' || fail "fleet took longer than its deadline"

step "fleet by label, selected hosts, pprof and json outputs"
"$ctl" fleet -f "$dir/hosts" --cacert "$dir/ca.pem" --token-file "$dir/token" --since 60 \
	--select job=train --by job -o "$dir/train.json" --deadline 10 2>"$dir/train.err"
st=$?
[[ $st == 5 ]] || fail "fleet --select job=train exit $st (alpha answers, down does not)"
grep -q '"job=train"' "$dir/train.json" || fail "no job=train root in the json"
grep -q '10.213.2.2' "$dir/train.json" && fail "--select kept a host without the label"
"$ctl" fleet 10.213.1.2:7717 10.213.2.2:7717 --cacert "$dir/ca.pem" --token-file "$dir/token" \
	--since 60 -o "$dir/both.pb.gz" 2>/dev/null || fail "fleet of two live hosts exit $?"
HOME=$dir GOCACHE=$dir/gocache go tool pprof -top "$dir/both.pb.gz" >"$dir/both.top" 2>&1 ||
	fail "go tool pprof cannot read the merged profile: $(tail -3 "$dir/both.top")"
"$ctl" fleet 10.213.4.2:7717 --token-file "$dir/token" --since 5 --deadline 3 -o "$dir/none.folded" \
	2>/dev/null
st=$?
[[ $st == 3 ]] || fail "fleet with no host answering exit $st, expected 3"

step "fleet --group-by range: each host's recording grouped by NVTX range, under the host"
# Host 1 runs NVTX phases sending to its CUPTI socket; its recording groups them by range. A
# range is known once it ends (the injection sends it then): on this busy machine a phase
# takes seconds, so 4 s recordings hold a few ends, whichever they are.
NVTX_INJECTION64_PATH=$build/cupti_inject/libxsprof_cupti.so XSPROF_CUPTI_SOCKET=$dir/cupti1.sock \
	ip netns exec "$tag-1" "$build/tests/xs_nvtx_phases" 30 >/dev/null &
pids+=($!)
"$ctl" fleet 10.213.1.2:7717 --cacert "$dir/ca.pem" --token-file "$dir/token" -d 4 \
	--comm xs_nvtx_phases --group-by range -o "$dir/ranges.folded" --deadline 20 2>"$dir/ranges.err" ||
	fail "fleet --group-by range exit $?: $(tail -3 "$dir/ranges.err")"
grep -qE "^10\.213\.1\.2:7717;(data|step|forward|backward);xs_nvtx_phases;" "$dir/ranges.folded" ||
	fail "no range under the host: $(head -c 400 "$dir/ranges.folded")"
"$ctl" fleet 10.213.1.2:7717 --cacert "$dir/ca.pem" --token-file "$dir/token" -d 4 --by none \
	--comm xs_nvtx_phases --group-by outer-range -o "$dir/outer.folded" --deadline 20 2>/dev/null ||
	fail "fleet --by none --group-by outer-range exit $?"
# (An inner range whose outer one is still open when the recording ends is the outermost
# known: only ended ranges are.)
grep -qE '^(data|step);xs_nvtx_phases;' "$dir/outer.folded" && ! grep -q '^10\.213' "$dir/outer.folded" ||
	fail "--by none, outer-range: no outermost range at the root: $(head -c 400 "$dir/outer.folded")"
# --range-domain goes to every host's recording: xs_domain's one range (io) comes only at the
# program's end, so none is known here and every sample is outside the domain's ranges.
"$ctl" fleet 10.213.1.2:7717 --cacert "$dir/ca.pem" --token-file "$dir/token" -d 4 \
	--comm xs_nvtx_phases --group-by range --range-domain xs_domain -o "$dir/dom.folded" \
	--deadline 20 2>"$dir/dom.err" || fail "fleet --range-domain exit $?: $(tail -3 "$dir/dom.err")"
grep -qE '^10\.213\.1\.2:7717;\[no range\];xs_nvtx_phases;' "$dir/dom.folded" &&
	! grep -qE '^10\.213\.1\.2:7717;(data|step|forward|backward);' "$dir/dom.folded" ||
	fail "--range-domain xs_domain: another domain's range under the host: $(head -c 400 "$dir/dom.folded")"
"$ctl" fleet 10.213.1.2:7717 --since 60 --group-by unit -o "$dir/x.folded" 2>"$dir/x.err"
st=$?
[[ $st == 2 ]] && grep -q 'range or outer-range only' "$dir/x.err" ||
	fail "--since with --group-by unit: exit $st: $(cat "$dir/x.err")"
"$ctl" fleet 10.213.1.2:7717 -d 4 --range-domain xs_domain -o "$dir/x.folded" 2>"$dir/x.err"
st=$?
[[ $st == 2 ]] || fail "--range-domain without --group-by: exit $st: $(cat "$dir/x.err")"
# A host whose xsprofd was not started with --window-group-by says so.
"$ctl" fleet 10.213.1.2:7717 --cacert "$dir/ca.pem" --token-file "$dir/token" --since 60 \
	--group-by range -o "$dir/x.folded" --deadline 20 2>"$dir/x.err"
st=$?
[[ $st == 3 ]] && grep -q 'not grouped by range' "$dir/x.err" ||
	fail "--since --group-by range of an ungrouped window: exit $st: $(cat "$dir/x.err")"

step "fleet --report gpu: every host's GPU report and their merge, of a recording and of the windows"
# Host 2 receives GPU records during its recording (xs_gpu_bound plays CUPTI: 20 steps of 4
# kernels of 2 ms, sent to its CUPTI socket; no launch is probed there, so every gap's cause is
# unknown); host 1 has none. The summary names the finding and on how many hosts. (Host 1 runs
# with --debug-info: naming a whole machine's timeline there costs it seconds of reading DWARF.)
"$ctl" fleet 10.213.1.2:7717 10.213.2.2:7717 --cacert "$dir/ca.pem" --token-file "$dir/token" \
	-d 6 --report gpu -o "$dir/fleet.gpu.json" --host-timeout 60 --deadline 70 >"$dir/gpu.out" \
	2>"$dir/gpu.err" &
fleet_pid=$!
# The workload starts once host 2's recording runs (its start, under load, may take seconds):
# GPU work that ended before the recording began is not the recording's.
for _ in $(seq 300); do
	curl -s --cacert "$dir/ca.pem" "${auth[@]}" -m 2 https://10.213.2.2:7717/v1/status |
		python3 -c 'import json, sys; sys.exit(not any(r["state"] == "running" for r in json.load(sys.stdin)["recordings"]))' \
		2>/dev/null && break
	sleep 0.1
done
XSPROF_CUPTI_SOCKET=$dir/cupti2.sock ip netns exec "$tag-2" "$build/tests/xs_gpu_bound" input 20 \
	>"$dir/gpu_work.out" 2>&1 || fail "xs_gpu_bound on host 2: $(tail -2 "$dir/gpu_work.out")"
wait "$fleet_pid"
st=$?
[[ $st == 0 ]] || fail "fleet --report gpu exit $st: $(tail -3 "$dir/gpu.err")"
python3 - "$dir/fleet.gpu.json" <<'PYEOF' || fail "fleet GPU reports: $(cat "$dir/gpu.out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "xsprof.gpu_report_fleet" and d["version"] == 1, d.get("schema")
hosts = {h["host"]: h for h in d["hosts"]}
beta = hosts["10.213.2.2:7717"]["report"]
assert [x["busy_ns"] for x in beta["devices"]] == [160000000], beta["devices"]
assert hosts["10.213.1.2:7717"]["report"]["devices"] == [], "alpha has no GPU work"
assert d["merged"]["devices"] == 1 and d["merged"]["busy_ns"] == 160000000, d["merged"]
assert d["merged"]["findings"]["low_utilisation"]["hosts"] == ["10.213.2.2:7717"], d["merged"]
PYEOF
grep -q 'low_utilisation on 1 of 2 hosts' "$dir/gpu.out" || fail "fleet GPU summary: $(cat "$dir/gpu.out")"
# The same work in the hosts' windows (--since): merged from their slices' kept reports;
# a window holds all it saw in the last 120 s, not only this step's.
"$ctl" fleet 10.213.1.2:7717 10.213.2.2:7717 --cacert "$dir/ca.pem" --token-file "$dir/token" \
	--since 120 --report gpu -o "$dir/fleet-win.gpu.json" --deadline 60 >"$dir/gpu-win.out" \
	2>"$dir/gpu-win.err"
st=$?
[[ $st == 0 ]] || fail "fleet --since --report gpu exit $st: $(tail -3 "$dir/gpu-win.err")"
python3 - "$dir/fleet-win.gpu.json" <<'PYEOF' || fail "fleet window GPU reports: $(cat "$dir/gpu-win.out")"
import json, sys
d = json.load(open(sys.argv[1]))
hosts = {h["host"]: h for h in d["hosts"]}
beta = hosts["10.213.2.2:7717"]["report"]
assert [x["busy_ns"] for x in beta["devices"]] == [160000000], beta["devices"]
# Alpha's window holds no GPU work but the kernels xs_nvtx_phases sends at its exit (the
# --group-by step's workload, which may still be running).
alpha = hosts["10.213.1.2:7717"]["report"]
assert {k["name"] for k in alpha["kernels"]} <= {"xs_kernel_fwd"}, alpha["kernels"]
assert "10.213.2.2:7717" in d["merged"]["findings"]["low_utilisation"]["hosts"], d["merged"]
PYEOF

step "go tool pprof reads the scrape endpoint over TLS"
HOME=$dir GOCACHE=$dir/gocache SSL_CERT_FILE=$dir/ca.pem timeout 60 go tool pprof -raw -seconds 2 \
	"https://x:$token@10.213.1.2:7717/debug/pprof/profile" >"$dir/raw.txt" 2>&1 ||
	fail "go tool pprof -raw: $(tail -3 "$dir/raw.txt")"
grep -q 'burn_alpha\|yes' "$dir/raw.txt" || fail "the scraped profile lacks the workload"
# Mappings with build ids and addresses; with --debug-info, -list finds the source (from /:
# pprof trims a source path at the name of the directory it runs in).
bid=$(readelf -n "$build/tests/xs_split" | awk '/Build ID/ {print $3}')
grep -q " $build/tests/xs_split $bid \[FN\]\[FL\]\[LN\]" "$dir/raw.txt" ||
	fail "no mapping of xs_split with its build id $bid: $(grep -A9 ^Mappings "$dir/raw.txt")"
grep -q ' \[kernel.kallsyms\] ' "$dir/raw.txt" || fail "no [kernel.kallsyms] mapping"
(cd / && HOME=$dir GOCACHE=$dir/gocache SSL_CERT_FILE=$dir/ca.pem timeout 60 go tool pprof \
	-list xs_work_beta -seconds 2 "https://x:$token@10.213.1.2:7717/debug/pprof/profile") \
	>"$dir/list.txt" 2>&1 || fail "go tool pprof -list: $(tail -3 "$dir/list.txt")"
grep -q 'uint64_t used = burn(ns);' "$dir/list.txt" ||
	fail "pprof -list shows no source lines: $(head -20 "$dir/list.txt")"
code=$(curl -s --cacert "$dir/ca.pem" --cert "$dir/cli.pem" --key "$dir/cli.key" \
	"$url1/debug/pprof/profile?seconds=1" -o "$dir/cert.pb.gz" -w '%{http_code}')
[[ $code == 200 ]] || fail "scrape with a client certificate: HTTP $code"
gzip -t "$dir/cert.pb.gz" || fail "the scrape is not gzipped"

step "fleet --dump: every host's flight recorder saves the same wall-clock moment"
# Host 2 takes writes from the network, host 1 does not (its read-only default): a partial dump.
rc=0
"$ctl" fleet 10.213.1.2:7717 10.213.2.2:7717 --cacert "$dir/ca.pem" --token-file "$dir/token" \
	--dump 20 2>"$dir/dump.err" || rc=$?
at=$(sed -nE 's/.* before ([0-9.]+) \(wall clock\)/\1/p' "$dir/dump.err")
name2=$(awk '$1 == "10.213.2.2:7717" && $2 == "ok" { print $NF }' "$dir/dump.err")
if [[ $rc == 5 && -n $name2 ]] && grep -q '10.213.1.2:7717 .*FAILED.*HTTP 403' "$dir/dump.err"; then
	echo "ok   fleet --dump: host 2 saved $name2, host 1 refused (read-only), exit 5"
else
	fail "fleet --dump: exit $rc: $(cat "$dir/dump.err")"
fi
for _ in $(seq 50); do [[ -f $dir/dumps2/$name2/manifest.json ]] && break; sleep 0.2; done
if [[ -n $name2 ]] && python3 - "$dir/dumps2/$name2/manifest.json" "${at:-0}" <<'PY'; then
import json, sys
m = json.load(open(sys.argv[1]))
t = m["trigger"]
sys.exit(0 if abs(t["at_unix_s"] - float(sys.argv[2])) < 0.01 and t["before_s"] == 20 else 1)
PY
	echo "ok   its manifest has the fleet's moment ($at) and the 20 s before it"
else
	fail "host 2's dump $name2: $(cat "$dir/dumps2/$name2/manifest.json" 2>&1 | head -20)"
fi

step "tokens, writes, malformed and oversized requests"
expect() { # CODE WHAT CURL-ARGS...
	local want=$1 what=$2 code
	shift 2
	code=$(curl -s --cacert "$dir/ca.pem" -o "$dir/body" -w '%{http_code}' -m 10 "$@")
	[[ $code == "$want" ]] || fail "$what: HTTP $code, expected $want ($(head -c 200 "$dir/body"))"
}
expect 401 "no token" "$url1/v1/status"
expect 401 "wrong token" -H "Authorization: Bearer fleet-test-token-wrong-0123456789" "$url1/v1/status"
expect 401 "wrong basic password" -u "x:nope-nope-nope-nope" "$url1/v1/status"
expect 403 "POST over TCP" "${auth[@]}" -X POST -d '{"duration_s":1}' "$url1/v1/recordings"
expect 403 "attach over TCP" "${auth[@]}" -X POST -d '{"pid":1}' "$url1/v1/attach"
expect 400 "bad seconds" "${auth[@]}" "$url1/debug/pprof/profile?seconds=-1"
expect 400 "bad gpu_mode" "${auth[@]}" "$url1/debug/pprof/profile?gpu_mode=x"
expect 400 "unknown comm" "${auth[@]}" "$url1/debug/pprof/profile?comm=no_such_proc"
expect 400 "too long" "${auth[@]}" "$url1/debug/pprof/profile?seconds=99999999999"
expect 403 "PUT over TCP" "${auth[@]}" -X PUT "$url1/debug/pprof/profile"
printf 'X-Big: %s\n' "$(head -c 200000 /dev/zero | tr '\0' a)" >"$dir/bighdr"
# Refused as soon as the headers pass the limit: 431, or, when the refusal and the close come
# while curl is still sending (a busy machine), a reset connection (HTTP 000: the kernel
# drops the unread request and the answer with it). The daemon answers on after either.
code=$(curl -s --cacert "$dir/ca.pem" -o "$dir/body" -w '%{http_code}' -m 10 "${auth[@]}" \
	-H @"$dir/bighdr" "$url1/v1/status" || true)
[[ $code == 431 || $code == 000 ]] || fail "200 kB of headers: HTTP $code, expected 431 or a reset"
expect 200 "a status after the oversized headers" "${auth[@]}" "$url1/v1/status"
expect 401 "a malformed Authorization" -H "Authorization: Basic !!!" "$url1/v1/status"
expect 401 "an empty bearer" -H "Authorization: Bearer " "$url1/v1/status"
# Not HTTP, and not even TLS: the connection is dropped, the daemon goes on.
printf 'GARBAGE\r\n\r\n' | timeout 5 openssl s_client -quiet -connect 10.213.1.2:7717 \
	-CAfile "$dir/ca.pem" >/dev/null 2>&1
head -c 4096 /dev/urandom | timeout 5 bash -c 'cat >/dev/tcp/10.213.1.2/7717' 2>/dev/null
expect 200 "still serving" "${auth[@]}" "$url1/v1/status"

if ((failures)); then
	echo "$failures failures; daemon logs:"
	tail -n 5 "$dir"/d*.log
	exit 1
fi
echo "fleet: all passed"
