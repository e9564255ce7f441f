// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "daemon/base/hash.h"
#include "daemon/base/proc_stat.h"
#include "daemon/log.h"
#include "daemon/probes/stop_ledger.h"

#define LEDGER_ENTRIES 16384 /* bpf/shared_maps.bpf.h's max_entries */

static int ledger_fd = -1;
static pid_t watchdog_pid;

/* Stopped now (state T), as the ledger says it was: a process the daemon's probes stopped. */
static bool still_stopped(pid_t pid)
{
	struct proc_stat ps;

	return !proc_stat__read(NULL, pid, &ps) && (ps.state == 'T' || ps.state == 't');
}

int stop_ledger__continue_all(int fd)
{
	/* Deleting while iterating restarts the walk: the keys first. Static: the watchdog runs
	 * it in a child forked from a daemon that may have threads (no malloc there). */
	static uint32_t pids[LEDGER_ENTRIES];
	uint32_t key, next, *prev = NULL;
	int continued = 0;
	size_t n = 0;

	while (n < LEDGER_ENTRIES && !bpf_map_get_next_key(fd, prev, &next)) {
		pids[n++] = next;
		key = next;
		prev = &key;
	}
	for (size_t i = 0; i < n; i++) {
		if (still_stopped((pid_t)pids[i]) && !kill((pid_t)pids[i], SIGCONT))
			continued++;
		bpf_map_delete_elem(fd, &pids[i]);
	}
	return continued;
}

void stop_ledger__done(int fd, pid_t pid)
{
	uint32_t key = (uint32_t)pid;

	if (fd >= 0)
		bpf_map_delete_elem(fd, &key);
}

pid_t stop_ledger__watchdog(void)
{
	return watchdog_pid;
}

/* The watchdog: the map and the read end of the daemon's pipe, nothing else; at the pipe's
 * end (the daemon went), the ledger is emptied. Never returns. */
static void watch(int map_fd, int pipe_fd)
{
	char c, msg[160];
	int n;

	/* Only these two are kept: no socket, file or lock of the daemon outlives it here. */
	if (dup2(map_fd, 3) < 0 || dup2(pipe_fd, 4) < 0)
		_exit(1);
	close_range(5, ~0u, 0);
	/* Nor the daemon's output (a pipe someone reads to its end): stderr alone, for its line. */
	n = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (n >= 0) {
		dup2(n, 0);
		dup2(n, 1);
		close(n);
	}
	/* The daemon's process group may be sent Ctrl-C or SIGTERM: the daemon handles them, the
	 * watchdog waits for it to go. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	prctl(PR_SET_NAME, "xsprofd-watch");
	while (read(4, &c, 1) < 0 && errno == EINTR)
		;
	n = stop_ledger__continue_all(3);
	if (n > 0) {
		int len =
			snprintf(msg, sizeof(msg),
				 "xsprofd watchdog: the daemon went; continued %d process%s it had "
				 "stopped for its probes\n",
				 n, n == 1 ? "" : "es");

		if (write(2, msg, (size_t)len) < 0)
			_exit(1);
	}
	_exit(0);
}

int stop_ledger__fd(void)
{
	int p[2], fd;
	pid_t pid;

	if (ledger_fd >= 0)
		return ledger_fd;
	fd = bpf_map_create(BPF_MAP_TYPE_HASH, "stopped", sizeof(uint32_t), sizeof(uint64_t),
			    LEDGER_ENTRIES, NULL);
	if (fd < 0)
		return -errno;
	/* The daemon keeps the write end until it exits: the watchdog reads its end. */
	if (pipe2(p, O_CLOEXEC)) {
		close(fd);
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(fd);
		close(p[0]);
		close(p[1]);
		return err;
	}
	if (!pid) {
		close(p[1]);
		watch(fd, p[0]);
	}
	close(p[0]);
	watchdog_pid = pid;
	ledger_fd = fd;
	return fd;
}

const char *stop_ledger__pin_path(const char *socket_path, char *buf, size_t size)
{
	snprintf(buf, size, "/sys/fs/bpf/xsprofd-%016llx-stopped",
		 (unsigned long long)hash_str(socket_path));
	return buf;
}

int stop_ledger__continue_pinned(const char *path)
{
	int fd = bpf_obj_get(path), n;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	n = stop_ledger__continue_all(fd);
	close(fd);
	if (unlink(path) && errno != ENOENT)
		return -errno;
	return n;
}

/* BPF_FS_MAGIC (include/uapi/linux/magic.h). */
#define XS_BPF_FS_MAGIC 0xcafe4a11

int stop_ledger__bpffs(const char *dir)
{
	struct statfs sfs;

	if (!statfs(dir, &sfs) && (unsigned long)sfs.f_type == XS_BPF_FS_MAGIC)
		return 0;
	/* A fresh machine (or a container) may have none: mounted as systemd would, root only. */
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	if (mount("bpf", dir, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700"))
		return -errno;
	log_info("mounted bpffs at %s (there was none)", dir);
	return 0;
}

int stop_ledger__claim(const char *path)
{
	int fd = stop_ledger__fd(), n, err;
	char dir[256];
	char *slash;

	if (fd < 0)
		return fd;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = 0;
	err = stop_ledger__bpffs(dir);
	if (err)
		return err;
	n = stop_ledger__continue_pinned(path);
	if (n > 0)
		log_info("continued %d process%s a previous xsprofd had stopped for its probes", n,
			 n == 1 ? "" : "es");
	return bpf_obj_pin(fd, path) ? -errno : 0;
}

void stop_ledger__unpin(const char *path)
{
	unlink(path);
}
