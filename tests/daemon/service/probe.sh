#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Runs inside xsprofd's sandbox (a transient unit with the unit's properties) and tries each way
# xsprofd reads another user's process, printing "ok WHAT" or "FAIL WHAT: why" per line.
# Usage: probe.sh PID BINARY GROUP
#   PID     a running process of another (unprivileged) user, in a directory only it can read
#   BINARY  that process's executable, as the process sees it
#   GROUP   a group root is not a member of (for the socket chown)
set -uo pipefail

pid=$1 bin=$2 group=$3

ok() { echo "ok $1"; }
fail() { echo "FAIL $1: $2"; }

if line=$(grep -m1 " $bin\$" "/proc/$pid/maps" 2>&1); then
	ok "maps (read /proc/PID/maps of another user)"
else
	fail maps "cannot read /proc/$pid/maps ($line): needs CAP_SYS_PTRACE"
fi

range=${line%% *}
if [[ -n $range ]] && head -c4 "/proc/$pid/map_files/$range" 2>/dev/null | grep -q ELF; then
	ok "map_files (open the mapped file through /proc/PID/map_files)"
else
	fail map_files "cannot open /proc/$pid/map_files/$range: needs CAP_CHECKPOINT_RESTORE and CAP_SYS_PTRACE"
fi

if head -c4 "/proc/$pid/root$bin" 2>/dev/null | grep -q ELF; then
	ok "root (read the binary through /proc/PID/root, in a directory only its owner can read)"
else
	fail root "cannot read /proc/$pid/root$bin: needs CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH"
fi

addr=$(awk '$3 == "_stext" { print $1; exit }' /proc/kallsyms 2>/dev/null)
if [[ -n $addr && ! $addr =~ ^0+$ ]]; then
	ok "kallsyms (real kernel addresses)"
else
	fail kallsyms "/proc/kallsyms shows '${addr:-nothing}' for _stext: needs CAP_SYSLOG and no ProtectKernelTunables="
fi

# A running process: SIGCONT does nothing to it, but is checked as any signal is.
if kill -CONT "$pid" 2>/dev/null; then
	ok "sigcont (continue another user's process the BPF side stopped for the daemon)"
else
	fail sigcont "cannot send SIGCONT to pid $pid: needs CAP_KILL"
fi

f=${RUNTIME_DIRECTORY:-/run/xsprof}/probe.$$
if : >"$f" && chown "0:$group" "$f" 2>/dev/null; then
	ok "chown (give a file in /run/xsprof to group $group)"
else
	fail chown "cannot chown $f to group $group: needs CAP_CHOWN"
fi
rm -f "$f"

if { : >/var/tmp/xsprof-probe.$$; } 2>/dev/null; then
	rm -f /var/tmp/xsprof-probe.$$
	fail readonly "could write /var/tmp: ProtectSystem=strict is not in force"
else
	ok "readonly (the rest of the file system is read-only)"
fi
exit 0
