#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Which of xsprofd.service's capabilities this kernel really needs: runs the unit's sandbox as a
# transient unit under systemd (in a PID namespace, tests/daemon/service/lib.sh), first as the unit is,
# then once without each capability of its CapabilityBoundingSet=, and prints what breaks: the
# probes of probe.sh (reading another user's process) and a one-shot xsprofd (BPF and perf).
# Not a CI test: what a capability gates differs between kernels. Run it after changing the
# unit or on a new kernel, and update the comments at the top of the unit.
#
# Usage: tests/daemon/service/ablate.sh [UNIT_FILE [XSPROFD [WORKLOAD]]]
#   defaults: systemd/xsprofd.service.in (ExecStart= is not used), build/daemon/xsprofd,
#   build/tests/xs_split
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

unit=${1:-$repo/systemd/xsprofd.service.in}
xsprofd=${2:-$repo/build/daemon/xsprofd}
workload=${3:-$repo/build/tests/xs_split}
[[ $EUID -eq 0 ]] || {
	echo "needs root" >&2
	exit 1
}
for f in "$unit" "$xsprofd" "$workload"; do
	[[ -e $f ]] || {
		echo "missing $f" >&2
		exit 1
	}
done

log=$(mktemp /var/tmp/xsprof-ablate.XXXXXX)
trap 'ns_poweroff; rm -f "$log"' EXIT
ns_boot "$log"
ns_isolate sysinit.target basic.target
ns systemctl start dbus.socket

root=/proc/$NS_PID/root
stage=/var/tmp/xsprof-ablate
ns install -d -m 0755 "$stage"
cp "$here/probe.sh" "$xsprofd" "$root$stage/"
user=nobody
pid=$(spawn_as "$user" "/var/tmp/$user-ablate" "$workload" xs_theirs 300 300 600 1)

mapfile -t props < <(unit_sandbox_props "$unit")
caps=$(printf '%s\n' "${props[@]}" | sed -n 's/^--property=CapabilityBoundingSet=//p')

# run_with CAPS: what breaks with CapabilityBoundingSet=CAPS.
run_with() {
	local p=() q broken

	for q in "${props[@]}"; do
		[[ $q == --property=CapabilityBoundingSet=* ]] && q="--property=CapabilityBoundingSet=$1"
		p+=("$q")
	done
	broken=$(ns systemd-run --wait --pipe --quiet "${p[@]}" /bin/bash "$stage/probe.sh" "$pid" \
		"/var/tmp/$user-ablate/xs_theirs" nogroup | awk '$1 == "FAIL" { sub(":", "", $2); print $2 }' |
		tr '\n' ' ')
	if ! ns systemd-run --wait --pipe --quiet "${p[@]}" "$stage/xsprofd" --foreground --duration 1 \
		--output - >/dev/null 2>&1; then
		broken+="xsprofd-one-shot"
	fi
	echo "${broken:-nothing}"
}

printf '%-32s %s\n' "capabilities" "what breaks"
printf '%-32s %s\n' "as in the unit" "$(run_with "$caps")"
for c in $caps; do
	printf '%-32s %s\n' "without $c" "$(run_with "${caps//$c/}")"
done
