// SPDX-License-Identifier: Apache-2.0
/*
 * The stop ledger (daemon/probes/stop_ledger.c, issue 39 G2): a "daemon" process makes the
 * ledger (its watchdog is forked then), a victim is stopped and put on the ledger as the BPF side
 * does, and the daemon is killed -9: the watchdog must continue the victim within seconds, and
 * leave alone a process stopped by someone else (not on the ledger). Needs root (BPF maps).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "daemon/base/proc_stat.h"
#include "daemon/probes/stop_ledger.h"

/* Every process a test forks, killed at its end whatever failed (a stopped one would hold the
 * test's output open for ever). */
static pid_t forked[8];
static int nr_forked;

static pid_t fork_tracked(void)
{
	pid_t pid = fork();

	if (pid > 0 && nr_forked < 8)
		forked[nr_forked++] = pid;
	return pid;
}

static void kill_forked(void)
{
	for (int i = 0; i < nr_forked; i++) {
		kill(forked[i], SIGKILL);
		waitpid(forked[i], NULL, 0);
	}
	nr_forked = 0;
}

static char state_of(pid_t pid)
{
	struct proc_stat ps;

	return proc_stat__read(NULL, pid, &ps) ? '?' : ps.state;
}

/* A process that waits to be killed, stopped (and seen stopped). */
static pid_t stopped_sleeper(void)
{
	pid_t pid = fork_tracked();

	cr_assert_geq(pid, 0);
	if (!pid) {
		for (;;)
			pause();
	}
	cr_assert_eq(kill(pid, SIGSTOP), 0);
	for (int i = 0; i < 200 && state_of(pid) != 'T'; i++)
		usleep(10000);
	cr_assert_eq(state_of(pid), 'T');
	return pid;
}

static bool runs_within(pid_t pid, double seconds)
{
	for (int i = 0; i < (int)(seconds * 100); i++) {
		char s = state_of(pid);

		if (s != 'T' && s != 't')
			return true;
		usleep(10000);
	}
	return false;
}

/* What a fake daemon says once its ledger holds the victim. */
struct daemon_msg {
	pid_t watchdog;
	int err;
};

/* A "daemon": makes the ledger (forking its watchdog), pins it at pin (NULL: not), puts
 * victim on it as the BPF side does, says so, and waits to be killed. */
static pid_t fake_daemon(pid_t victim, const char *pin, struct daemon_msg *ret)
{
	int ready[2];
	pid_t daemon;

	cr_assert_eq(pipe(ready), 0);
	daemon = fork_tracked();
	cr_assert_geq(daemon, 0);
	if (!daemon) {
		struct daemon_msg msg = {0};
		int fd = stop_ledger__fd();
		uint32_t key = (uint32_t)victim;
		uint64_t when = 1;

		msg.err = fd < 0 ? fd : pin ? stop_ledger__claim(pin) : 0;
		if (!msg.err && bpf_map_update_elem(fd, &key, &when, BPF_ANY))
			msg.err = -errno;
		msg.watchdog = stop_ledger__watchdog();
		if (write(ready[1], &msg, sizeof(msg)) != sizeof(msg))
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	cr_assert_eq(read(ready[0], ret, sizeof(*ret)), sizeof(*ret), "the daemon said nothing");
	close(ready[0]);
	return daemon;
}

Test(stop_ledger, the_watchdog_continues_what_a_killed_daemon_stopped, .timeout = 60,
     .fini = kill_forked)
{
	pid_t victim = stopped_sleeper(), other = stopped_sleeper(), daemon;
	struct daemon_msg msg;

	cr_assert_eq(getuid(), 0, "run as root (BPF maps)");
	daemon = fake_daemon(victim, NULL, &msg);
	cr_assert_eq(msg.err, 0, "the daemon could not make its ledger: %s", strerror(-msg.err));
	usleep(100000);
	cr_expect_eq(state_of(victim), 'T', "nothing continues the victim while the daemon lives");
	cr_assert_eq(kill(daemon, SIGKILL), 0);
	waitpid(daemon, NULL, 0);
	cr_expect(runs_within(victim, 5), "the victim is still stopped 5 s after the daemon died");
	usleep(300000);
	cr_expect_eq(state_of(other), 'T', "a process the daemon did not stop stays stopped");
	kill(victim, SIGKILL);
	kill(other, SIGKILL);
	waitpid(victim, NULL, 0);
	waitpid(other, NULL, 0);
}

Test(stop_ledger, continue_all_takes_each_off, .timeout = 30, .fini = kill_forked)
{
	pid_t victim = stopped_sleeper();
	int fd = stop_ledger__fd();
	uint32_t key = (uint32_t)victim, gone = 4194000, next;
	uint64_t when = 1;

	cr_assert_geq(fd, 0);
	cr_assert_gt(stop_ledger__watchdog(), 0, "the watchdog was forked");
	cr_assert_eq(bpf_map_update_elem(fd, &key, &when, BPF_ANY), 0);
	cr_assert_eq(bpf_map_update_elem(fd, &gone, &when, BPF_ANY), 0);
	cr_expect_eq(stop_ledger__continue_all(fd), 1,
		     "the stopped one continued, the gone one not");
	cr_expect(runs_within(victim, 2));
	cr_expect_neq(bpf_map_get_next_key(fd, NULL, &next), 0, "the ledger is empty");
	stop_ledger__done(fd, victim); /* already off: harmless */
	kill(victim, SIGKILL);
	waitpid(victim, NULL, 0);
}

/* The service's case: systemd kills the daemon and its watchdog at once; the ledger pinned in
 * bpffs is what --continue-stopped (the unit's ExecStopPost) and the next daemon read. */
Test(stop_ledger, a_pinned_ledger_outlives_daemon_and_watchdog, .timeout = 60, .fini = kill_forked)
{
	pid_t victim = stopped_sleeper(), daemon;
	char path[96];
	struct daemon_msg msg;

	snprintf(path, sizeof(path), "/sys/fs/bpf/xsprof-test-%d-stopped", (int)getpid());
	daemon = fake_daemon(victim, path, &msg);
	cr_assert_eq(msg.err, 0, "claiming %s: %s", path, strerror(-msg.err));
	/* Both at once, as systemctl kill -s KILL does to the unit's cgroup. */
	cr_assert_eq(kill(msg.watchdog, SIGKILL), 0);
	cr_assert_eq(kill(daemon, SIGKILL), 0);
	waitpid(daemon, NULL, 0);
	usleep(300000);
	cr_expect_eq(state_of(victim), 'T', "nothing was left to continue it");
	cr_assert_eq(access(path, F_OK), 0, "the pin outlived them");
	cr_expect_eq(stop_ledger__continue_pinned(path), 1);
	cr_expect(runs_within(victim, 2), "--continue-stopped continued it");
	cr_expect_neq(access(path, F_OK), 0, "and removed the pin");
	cr_expect_eq(stop_ledger__continue_pinned(path), 0, "no pin: nothing to do");
	kill(victim, SIGKILL);
	waitpid(victim, NULL, 0);
}

/* A fresh machine has no bpffs: the pin's directory gets one (in a mount namespace of the test's
 * own, with /sys/fs/bpf unmounted there first), and a second call leaves it as it is. */
Test(stop_ledger, bpffs_is_mounted_where_missing, .timeout = 30)
{
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0);
	if (!pid) {
		struct statfs sfs;

		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
			_exit(10);
		while (!umount2("/sys/fs/bpf", MNT_DETACH))
			;
		if (!statfs("/sys/fs/bpf", &sfs) && sfs.f_type == 0xcafe4a11)
			_exit(11); /* still bpffs: the test proves nothing */
		if (stop_ledger__bpffs("/sys/fs/bpf"))
			_exit(12);
		if (statfs("/sys/fs/bpf", &sfs) || sfs.f_type != 0xcafe4a11)
			_exit(13);
		if (stop_ledger__bpffs("/sys/fs/bpf"))
			_exit(14);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "the child died by a signal");
	cr_assert_eq(WEXITSTATUS(status), 0,
		     "exit %d: 10 no namespace, 11 bpffs stayed, 12 mount failed, 13 not bpffs, "
		     "14 the second call failed",
		     WEXITSTATUS(status));
}
