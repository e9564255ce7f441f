# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# A real systemd, as PID 1 of a fresh PID namespace, for testing xsprofd's unit without booting a
# machine. Sourced by run.sh and ablate.sh.
#
# systemd started like this shares the host's file systems and kernel, and a stock boot would
# change the host: systemd-tmpfiles empties /tmp, udev re-triggers devices, journald puts
# /dev/log in the shared devtmpfs, services like postgresql start on the host's data. So before
# systemd runs, the namespace gets its own /run, /tmp, /var/tmp, /var/lib/systemd and a small
# private /dev; systemd boots into an empty target, runs in container mode (no swapoff or loop
# device detaching at shutdown), and ns_isolate masks every unit a test unit would pull in
# except the journal.
#
# Needs: util-linux (unshare, nsenter, setpriv), systemd.

NS_PID=
NS_UNSHARE_PID=

# ns_boot LOGFILE: start systemd; NS_PID is its pid in our namespace. Its console goes to LOGFILE.
ns_boot() {
	local log=$1 i state

	: >"$log"
	# shellcheck disable=SC2016
	unshare --pid --fork --mount-proc --mount --uts --propagation private -- \
		env -i container=xsprof-ci PATH=/usr/sbin:/usr/bin:/sbin:/bin LOG="$log" /bin/sh -c '
		set -e
		exec 3>>"$LOG" # before /tmp and /var/tmp are covered: LOG may live there
		mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run
		mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
		mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /var/tmp
		mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /var/lib/systemd
		if [ -d /var/log/journal ]; then mount -t tmpfs -o mode=2755 tmpfs /var/log/journal; fi
		d=/run/ci-dev
		mkdir -p $d
		mount -t tmpfs -o mode=0755,nosuid tmpfs $d
		for n in null zero full random urandom tty; do
			touch $d/$n
			mount --bind /dev/$n $d/$n
		done
		touch $d/console
		mount --bind /proc/self/fd/3 $d/console
		exec 3>&-
		mkdir $d/pts $d/shm
		mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts $d/pts
		ln -s pts/ptmx $d/ptmx
		mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs $d/shm
		ln -s /proc/self/fd $d/fd
		ln -s /proc/self/fd/0 $d/stdin
		ln -s /proc/self/fd/1 $d/stdout
		ln -s /proc/self/fd/2 $d/stderr
		mount --move $d /dev
		hostname xsprof-ci
		mkdir -p /run/systemd/system
		printf "[Unit]\nDescription=xsprof CI (nothing started at boot)\nDefaultDependencies=no\n" \
			>/run/systemd/system/xsprof-ci.target
		exec /lib/systemd/systemd --system --unit=xsprof-ci.target --log-target=console \
			--log-level=info --show-status=no
	' >>"$log" 2>&1 </dev/null &
	NS_UNSHARE_PID=$!
	for ((i = 0; i < 100; i++)); do
		NS_PID=$(cat "/proc/$NS_UNSHARE_PID/task/$NS_UNSHARE_PID/children" 2>/dev/null || true)
		NS_PID=${NS_PID%% *}
		if [[ -n $NS_PID ]] && [[ $(readlink "/proc/$NS_PID/exe" 2>/dev/null) == */systemd ]]; then
			state=$(ns systemctl is-system-running 2>/dev/null || true)
			case $state in
			running | degraded) return 0 ;;
			esac
		fi
		kill -0 "$NS_UNSHARE_PID" 2>/dev/null || break
		sleep 0.2
	done
	echo "systemd did not come up in its namespace (state '${state:-}'); its console:" >&2
	tail -n 30 "$log" >&2
	return 1
}

# ns CMD...: run CMD as root inside the namespace (its /proc, /run, /dev, PIDs).
ns() {
	nsenter -t "$NS_PID" -p -m -u -- "$@"
}

# ns_as USER CMD...: run CMD inside the namespace as USER with USER's groups.
ns_as() {
	local user=$1
	shift
	ns setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups -- \
		env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/ USER="$user" "$@"
}

# ns_isolate UNIT...: mask every unit that starting UNIT would pull in, except the journal, D-Bus
# (systemd-run --wait needs it) and what is already active, so a start changes nothing outside
# the namespace.
ns_isolate() {
	local u keep units=() mask=()

	while read -r u; do
		case $u in
		*.target | *.slice | *.scope) continue ;;
		systemd-journald.service | systemd-journald.socket | dbus.service | dbus.socket) continue ;;
		esac
		[[ $u =~ ^[A-Za-z0-9@_.:\\-]+$ ]] || continue
		for keep in "$@"; do [[ $u == "$keep" ]] && continue 2; done
		units+=("$u")
	done < <(ns systemctl list-dependencies --plain --all --no-legend --no-pager "$@" |
		sed 's/^[^A-Za-z0-9@_-]*//' | sort -u)
	((${#units[@]})) || return 0
	# One ActiveState per unit, in order, blocks separated by blank lines.
	local states i=0
	mapfile -t states < <(ns systemctl show -P ActiveState -- "${units[@]}" | grep .)
	((${#states[@]} == ${#units[@]})) || {
		echo "ns_isolate: systemctl show gave ${#states[@]} states for ${#units[@]} units" >&2
		return 1
	}
	for ((i = 0; i < ${#units[@]}; i++)); do
		[[ ${states[i]} == active ]] || mask+=("${units[i]}")
	done
	((${#mask[@]} == 0)) || ns systemctl mask --runtime --quiet -- "${mask[@]}"
	ns systemctl daemon-reload
}

# ns_poweroff: stop systemd and everything it runs; kill the namespace if that hangs.
ns_poweroff() {
	local i d

	[[ -n $NS_UNSHARE_PID ]] || return 0
	if kill -0 "$NS_UNSHARE_PID" 2>/dev/null; then
		ns systemctl poweroff --no-block >/dev/null 2>&1 || true
		for ((i = 0; i < 150; i++)); do
			kill -0 "$NS_UNSHARE_PID" 2>/dev/null || break
			sleep 0.2
		done
		if kill -0 "$NS_UNSHARE_PID" 2>/dev/null; then
			echo "systemd did not power off in 30 s; killing its namespace" >&2
			[[ -n $NS_PID ]] && kill -KILL "$NS_PID" 2>/dev/null
		fi
	fi
	wait "$NS_UNSHARE_PID" 2>/dev/null || true
	NS_UNSHARE_PID=
	NS_PID=
	# systemd leaves its init.scope cgroups behind in the shared hierarchy; once empty they go
	# (rmdir fails on a cgroup in use, such as a host systemd's own).
	for d in /sys/fs/cgroup/systemd/init.scope /sys/fs/cgroup/unified/init.scope; do
		for ((i = 0; i < 10; i++)); do
			if [[ ! -d $d ]] || rmdir "$d" 2>/dev/null; then break; fi
			sleep 0.2
		done
	done
}

# unit_sandbox_props UNITFILE: the unit's [Service] settings that shape its sandbox, as systemd-run
# arguments (one per line), so a one-shot run sees exactly what the service would. The runtime
# directory gets another name, so this can run beside the service.
unit_sandbox_props() {
	sed -n '/^\[Service\]/,/^\[/p' "$1" | grep -E '^[A-Za-z]+=' |
		grep -vE '^(Type|NotifyAccess|ExecStart|ExecReload|Restart|RestartSec|WatchdogSec|TimeoutStopSec)=' |
		sed -e 's/^RuntimeDirectory=.*/RuntimeDirectory=xsprof-sandbox/' -e 's/^/--property=/'
}

# spawn_as USER DIR BINARY NAME ARGS...: copy BINARY to DIR/NAME (DIR readable by USER only) and run
# it as USER in the background inside the namespace; prints its pid (as the namespace sees it).
spawn_as() {
	local user=$1 dir=$2 bin=$3 name=$4
	shift 4
	ns install -d -m 0700 -o "$user" -g "$(id -g "$user")" "$dir"
	ns install -m 0755 -o "$user" "$bin" "$dir/$name"
	ns_as "$user" /bin/sh -c 'exec "$@" >/dev/null 2>&1 </dev/null & echo $!' sh "$dir/$name" "$@"
}
