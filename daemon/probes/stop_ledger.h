/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stop ledger: the processes the BPF side stopped (SIGSTOP) for their probes, until the
 * daemon continues them (bpf/shared_maps.bpf.h's `stopped`). One map for the whole daemon,
 * shared by every sampler; a watchdog process, forked when it is made, holds the map and waits
 * on a pipe from the daemon: when the daemon goes, however (exit, crash, kill -9), it continues
 * every process still on the ledger that is still stopped, and exits. No process the daemon
 * stopped stays stopped because the daemon died.
 */
#ifndef XSPROF_DAEMON_PROBES_STOP_LEDGER_H
#define XSPROF_DAEMON_PROBES_STOP_LEDGER_H

#include <stddef.h>
#include <sys/types.h>

/*
 * The daemon's ledger, made (map and watchdog) at the first call: its map fd for the samplers
 * to reuse, or -errno.
 */
int stop_ledger__fd(void);

/* pid was continued: off the ledger. fd: the ledger's (a sampler's map). */
void stop_ledger__done(int fd, pid_t pid);

/* Every process on the ledger fd that is still stopped, continued (SIGCONT) and taken off;
 * returns how many were continued. The watchdog's work, and a test's. */
int stop_ledger__continue_all(int fd);

/* The watchdog's pid (0: none yet), for tests. */
pid_t stop_ledger__watchdog(void);

/*
 * Where a service's ledger is pinned in bpffs, so that it outlives both the daemon and its
 * watchdog (systemd kills the whole unit at once): /sys/fs/bpf/xsprofd-HASH-stopped (bpffs names take no dot), HASH of the
 * API socket path (one per service instance). Into buf; returns buf.
 */
const char *stop_ledger__pin_path(const char *socket_path, char *buf, size_t size);

/*
 * The service's, once it holds its socket's lock: a ledger a previous instance left pinned at
 * path has its stopped processes continued and goes; this daemon's (made by now, or made
 * here) is pinned there instead. 0, or -errno (the pin could not be made: logged by the
 * caller; the watchdog still covers a daemon that dies alone).
 */
int stop_ledger__claim(const char *path);
/* bpffs at dir: there already, or mounted now (root only, mode 0700). 0, or -errno. */
int stop_ledger__bpffs(const char *dir);
/* A clean stop: the pin goes (the watchdog continues what is left when the daemon exits). */
void stop_ledger__unpin(const char *path);

/*
 * xsprofd --continue-stopped (the unit's ExecStopPost): the processes on the ledger pinned at
 * path continued, the pin removed. How many were continued, 0 without a pin, or -errno.
 */
int stop_ledger__continue_pinned(const char *path);

#endif
