// SPDX-License-Identifier: Apache-2.0
/*
 * The in-kernel filters of the real xsprofd: --comm (a process name), --cgroup / --unit (a
 * cgroup v2 directory) and --tid (threads), and --group-by's root level (unit, container, comm,
 * and rank and job from the environment); --job and --rank, which keep processes by what
 * their environment says when the profile is made. Two busy processes
 * (or threads) run; the profile must hold the chosen one and nothing of the other. Needs root,
 * BTF and a cgroup2 mount.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/probes/cgroup_path.h"
#include "daemon/session/group_by.h"
#include "tests/lib/harness.h"

/* sha256sum reading /dev/zero, with envp (NULL: ours). */
static pid_t busy_env(const char *name, char *const *envp)
{
	char *argv[] = {(char *)name, "/dev/zero", NULL};
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (!pid) {
		/* argv[0] does not set comm: exec's name does */
		execve("/usr/bin/sha256sum", argv, envp ? envp : environ);
		_exit(127);
	}
	return pid;
}

static pid_t busy(const char *name)
{
	return busy_env(name, NULL);
}

/* Samples of each comm in a folded profile. */
static void count(const char *path, uint64_t *ret_sha, uint64_t *ret_other)
{
	struct folded f;

	*ret_sha = *ret_other = 0;
	folded_load(path, &f);
	for (size_t i = 0; i < f.n; i++) {
		if (!strcmp(f.lines[i].frames[0], "sha256sum"))
			*ret_sha += f.lines[i].count;
		else
			*ret_other += f.lines[i].count;
	}
	folded_free(&f);
}

Test(filters, comm_keeps_that_process_name_only, .timeout = 120)
{
	const char *out = test_path("comm", ".folded"), *err = test_path("comm", ".err");
	char *argv[] = {XSPROFD_PATH,
			"-f",
			"-d",
			"2",
			"-F",
			"199",
			"--comm",
			"sha256sum",
			"--cupti-socket",
			(char *)test_path("comm", ".sock"),
			"-o",
			(char *)out,
			NULL};
	pid_t a = busy("sha256sum"), b = fork();
	uint64_t sha, other;

	cr_assert_geq(b, 0);
	if (!b) {
		for (;;)
			; /* another busy process, named like the test */
	}
	cr_assert_eq(run(argv, NULL, err), 0, "%s", read_file(err));
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	wait_exit(a);
	wait_exit(b);
	count(out, &sha, &other);
	cr_log_info("--comm sha256sum: %llu samples of it, %llu of others\n",
		    (unsigned long long)sha, (unsigned long long)other);
	cr_expect_gt(sha, 50, "the named process was not sampled");
	cr_expect_eq(other, 0, "%llu samples of other processes got in", (unsigned long long)other);
}

Test(filters, cgroup_keeps_its_processes_only, .timeout = 120)
{
	const char *out = test_path("cg", ".folded"), *err = test_path("cg", ".err");
	char mnt[PATH_MAX], dir[PATH_MAX + 80], procs[PATH_MAX + 112], name[64], found[PATH_MAX];
	char *argv[] = {XSPROFD_PATH,
			"-f",
			"-d",
			"2",
			"-F",
			"199",
			"--cgroup",
			name,
			"--cupti-socket",
			(char *)test_path("cg", ".sock"),
			"-o",
			(char *)out,
			NULL};
	char *unit[] = {XSPROFD_PATH, "-f",	   "-d", "1", "--unit", "xsprof-no-such.service",
			"-o",	      (char *)out, NULL};
	pid_t in, outside = fork();
	uint64_t sha, other;
	FILE *f;
	int fd;

	cr_assert_geq(outside, 0);
	if (!outside) {
		for (;;)
			;
	}
	cr_assert_eq(cgroup_path__mount(mnt, sizeof(mnt)), 0, "no cgroup2 mount");
	snprintf(name, sizeof(name), "xsprof-test-%d", (int)getpid());
	snprintf(dir, sizeof(dir), "%s/%s", mnt, name);
	cr_assert(!mkdir(dir, 0755) || errno == EEXIST, "mkdir %s: %s", dir, strerror(errno));
	in = busy("sha256sum");
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	f = fopen(procs, "we");
	cr_assert(f && fprintf(f, "%d\n", (int)in) > 0 && !fclose(f), "moving %d into %s", (int)in,
		  dir);
	fd = cgroup_path__open(name, NULL, found, sizeof(found));
	cr_assert_geq(fd, 0, "%s", strerror(-fd));
	close(fd);

	cr_assert_eq(run(argv, NULL, err), 0, "%s", read_file(err));
	kill(in, SIGKILL);
	kill(outside, SIGKILL);
	wait_exit(in);
	wait_exit(outside);
	rmdir(dir);
	count(out, &sha, &other);
	cr_log_info("--cgroup %s: %llu samples inside, %llu outside\n", name,
		    (unsigned long long)sha, (unsigned long long)other);
	cr_expect_gt(sha, 50, "the process in the cgroup was not sampled");
	cr_expect_eq(other, 0, "%llu samples from outside the cgroup", (unsigned long long)other);
	/* A unit that does not exist is a usage error, said before any sampling. */
	cr_expect_eq(run(unit, NULL, err), 2);
}

/* Spinning threads named xs_tid_in and xs_tid_out beside the process's main thread (which
 * keeps the process's name, and sleeps); xs_tid_in writes its tid to the fd. */
static int tid_fd;

static void *spin(void *arg)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);

	pthread_setname_np(pthread_self(), (const char *)arg);
	if (!strcmp(arg, "xs_tid_in") && write(tid_fd, &tid, sizeof(tid)) != sizeof(tid))
		_exit(1);
	for (;;)
		;
	return NULL;
}

static pid_t two_threads(int fd)
{
	pid_t pid = fork();
	pthread_t a, b;

	cr_assert_geq(pid, 0);
	if (!pid) {
		tid_fd = fd;
		pthread_create(&a, NULL, spin, "xs_tid_out");
		pthread_create(&b, NULL, spin, "xs_tid_in");
		for (;;)
			pause();
	}
	return pid;
}

Test(filters, tid_keeps_that_thread_only_under_its_group, .timeout = 120)
{
	const char *out = test_path("tid", ".folded"), *err = test_path("tid", ".err");
	char tidbuf[16];
	char *argv[] = {XSPROFD_PATH,
			"-f",
			"-d",
			"2",
			"-F",
			"199",
			"--tid",
			tidbuf,
			"--group-by",
			"comm",
			"--cupti-socket",
			(char *)test_path("tid", ".sock"),
			"-o",
			(char *)out,
			NULL};
	uint64_t in = 0, other = 0;
	struct folded f;
	int p[2];
	pid_t child, tid;

	cr_assert(!pipe(p));
	child = two_threads(p[1]);
	cr_assert_eq(read(p[0], &tid, sizeof(tid)), (ssize_t)sizeof(tid));
	snprintf(tidbuf, sizeof(tidbuf), "%d", (int)tid);
	cr_assert_eq(run(argv, NULL, err), 0, "%s", read_file(err));
	kill(child, SIGKILL);
	wait_exit(child);
	folded_load(out, &f);
	for (size_t i = 0; i < f.n; i++) {
		/* --group-by comm: the process's name above the thread's. */
		if (f.lines[i].n > 1 && !strcmp(f.lines[i].frames[1], "xs_tid_in")) {
			in += f.lines[i].count;
			cr_expect_str_eq(f.lines[i].frames[0], "test_filters");
		} else {
			other += f.lines[i].count;
		}
	}
	folded_free(&f);
	cr_log_info("--tid %d: %llu samples of it, %llu of others\n", (int)tid,
		    (unsigned long long)in, (unsigned long long)other);
	/* A busy machine may give a spinning thread little CPU: some samples, none of others. */
	cr_expect_gt(in, 5, "the thread was not sampled");
	cr_expect_eq(other, 0, "%llu samples of other threads got in", (unsigned long long)other);
}

Test(filters, group_by_names_units_and_containers)
{
	char b[96];

	group_by__unit_of("/system.slice/nginx.service", b, sizeof(b));
	cr_expect_str_eq(b, "nginx.service");
	group_by__unit_of("/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope", b,
			  sizeof(b));
	cr_expect_str_eq(b, "x.scope");
	group_by__unit_of("/", b, sizeof(b));
	cr_expect_str_eq(b, "");
	group_by__container_of("/system.slice/docker-3f2a9c1b7d0e11223344556677889900aabbccddeeff"
			       "00112233445566778899.scope",
			       b, sizeof(b));
	cr_expect_str_eq(b, "container 3f2a9c1b7d0e");
	group_by__container_of("/kubepods/burstable/pod1234/0123456789abcdef0123456789abcdef0123",
			       b, sizeof(b));
	cr_expect_str_eq(b, "container 0123456789ab");
	group_by__container_of("/system.slice/nginx.service", b, sizeof(b));
	cr_expect_str_eq(b, "");
}

/*
 * --pid follows the process's descendants in the kernel (a child forked after sampling
 * started, then exec'd), and --no-children keeps the named process alone.
 */
Test(filters, pid_follows_descendants_unless_no_children, .timeout = 120)
{
	for (int alone = 0; alone < 2; alone++) {
		const char *out = test_path(alone ? "kids_no" : "kids", ".folded");
		const char *err = test_path(alone ? "kids_no" : "kids", ".err");
		char pid_arg[16];
		char *argv[] = {XSPROFD_PATH,	 "-f", "-d",	"3",  "-F",
				"199",		 "-p", pid_arg, "-o", (char *)out,
				"--no-children", NULL};
		pid_t sh = fork(), prof;
		uint64_t sha, other;

		cr_assert_geq(sh, 0);
		if (!sh) {
			setpgid(0, 0);
			/* The child comes once xsprofd samples: only the kernel can catch it. */
			execl("/bin/sh", "sh", "-c", "sleep 1.5; /usr/bin/sha256sum /dev/zero",
			      NULL);
			_exit(127);
		}
		snprintf(pid_arg, sizeof(pid_arg), "%d", (int)sh);
		if (!alone)
			argv[10] = NULL;
		prof = spawn(argv, NULL, err);
		cr_assert_eq(wait_exit(prof), 0, "%s", read_file(err));
		kill(-sh, SIGKILL);
		wait_exit(sh);
		count(out, &sha, &other);
		cr_log_info("--pid %s%s: %llu samples of the child, %llu of others\n", pid_arg,
			    alone ? " --no-children" : "", (unsigned long long)sha,
			    (unsigned long long)other);
		if (alone)
			cr_expect_eq(sha, 0, "--no-children: the child was sampled");
		else
			cr_expect_gt(sha, 50, "the child of the --pid process was not sampled");
	}
}

/*
 * A descendant already running when xsprofd starts (a grandchild, busy before the profile
 * begins) is profiled too: the fork follower cannot have seen it forked. With --no-children it
 * is not.
 */
Test(filters, pid_takes_in_descendants_already_running, .timeout = 120)
{
	for (int alone = 0; alone < 2; alone++) {
		const char *out = test_path(alone ? "old_kids_no" : "old_kids", ".folded");
		const char *err = test_path(alone ? "old_kids_no" : "old_kids", ".err");
		char pid_arg[16];
		char *argv[] = {XSPROFD_PATH,	 "-f", "-d",	"2",  "-F",
				"199",		 "-p", pid_arg, "-o", (char *)out,
				"--no-children", NULL};
		pid_t sh = fork(), prof;
		uint64_t sha, other;
		char *log;

		cr_assert_geq(sh, 0);
		if (!sh) {
			setpgid(0, 0);
			/* sh -> sh -> sha256sum: a grandchild, running before xsprofd starts. */
			execl("/bin/sh", "sh", "-c",
			      "sh -c '/usr/bin/sha256sum /dev/zero; :'; :", NULL);
			_exit(127);
		}
		snprintf(pid_arg, sizeof(pid_arg), "%d", (int)sh);
		usleep(500 * 1000); /* both forks and the exec done (exec is slow here) */
		if (!alone)
			argv[10] = NULL;
		prof = spawn(argv, NULL, err);
		cr_assert_eq(wait_exit(prof), 0, "%s", read_file(err));
		kill(-sh, SIGKILL);
		wait_exit(sh);
		count(out, &sha, &other);
		log = read_file(err);
		cr_log_info("--pid %s%s: %llu samples of the grandchild, %llu of others\n", pid_arg,
			    alone ? " --no-children" : "", (unsigned long long)sha,
			    (unsigned long long)other);
		if (alone) {
			cr_expect_eq(sha, 0, "--no-children: the grandchild was sampled");
		} else {
			cr_expect_gt(sha, 50, "the running grandchild was not sampled");
			cr_expect(strstr(log, "with 2 of their descendants already running"), "%s",
				  log);
		}
		free(log);
	}
}

/* A busy process as its launcher would start rank `rank` of job "xs-filters-job". */
static pid_t busy_rank(int rank)
{
	char r[32];
	char *envp[] = {r, "WORLD_SIZE=2", "TORCHELASTIC_RUN_ID=xs-filters-job", NULL};

	snprintf(r, sizeof(r), "RANK=%d", rank);
	return busy_env("sha256sum", envp);
}

/* --group-by rank and job: the roots its launcher's environment gives each process. */
Test(filters, group_by_rank_and_job_from_the_environment, .timeout = 120)
{
	const char *out = test_path("rank", ".folded"), *err = test_path("rank", ".err");
	const char *jout = test_path("job", ".folded");
	pid_t a = busy_rank(0), b = busy_rank(1);
	char pids[32];
	char *argv[] = {XSPROFD_PATH,
			"-f",
			"-d",
			"2",
			"-F",
			"199",
			"--pid",
			pids,
			"--group-by",
			"rank",
			"--cupti-socket",
			(char *)test_path("rank", ".sock"),
			"-o",
			(char *)out,
			NULL};
	uint64_t r0 = 0, r1 = 0, other = 0, job = 0, jother = 0;
	struct folded f;

	snprintf(pids, sizeof(pids), "%d,%d", (int)a, (int)b);
	cr_assert_eq(run(argv, NULL, err), 0, "%s", read_file(err));
	argv[9] = "job";
	argv[13] = (char *)jout;
	cr_assert_eq(run(argv, NULL, err), 0, "%s", read_file(err));
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	wait_exit(a);
	wait_exit(b);
	folded_load(out, &f);
	for (size_t i = 0; i < f.n; i++) {
		if (!strcmp(f.lines[i].frames[0], "rank 0"))
			r0 += f.lines[i].count;
		else if (!strcmp(f.lines[i].frames[0], "rank 1"))
			r1 += f.lines[i].count;
		else
			other += f.lines[i].count;
	}
	folded_free(&f);
	folded_load(jout, &f);
	for (size_t i = 0; i < f.n; i++) {
		if (!strcmp(f.lines[i].frames[0], "job xs-filters-job") && f.lines[i].n > 1 &&
		    !strcmp(f.lines[i].frames[1], "sha256sum"))
			job += f.lines[i].count;
		else
			jother += f.lines[i].count;
	}
	folded_free(&f);
	cr_log_info("--group-by rank: %llu under rank 0, %llu under rank 1, %llu else; job: %llu\n",
		    (unsigned long long)r0, (unsigned long long)r1, (unsigned long long)other,
		    (unsigned long long)job);
	cr_expect_gt(r0, 5, "rank 0 has %llu samples", (unsigned long long)r0);
	cr_expect_gt(r1, 5, "rank 1 has %llu samples", (unsigned long long)r1);
	cr_expect_eq(other, 0, "%llu samples under another root", (unsigned long long)other);
	cr_expect_gt(job, 10, "job xs-filters-job has %llu samples", (unsigned long long)job);
	cr_expect_eq(jother, 0, "%llu samples under another root", (unsigned long long)jother);
}

/* Samples under each --group-by rank root of a folded profile: [0] rank 0, [1] rank 1, [2]
 * anything else. */
static void by_rank(const char *path, uint64_t ret[3])
{
	struct folded f;

	ret[0] = ret[1] = ret[2] = 0;
	folded_load(path, &f);
	for (size_t i = 0; i < f.n; i++)
		ret[!strcmp(f.lines[i].frames[0], "rank 0")   ? 0
		    : !strcmp(f.lines[i].frames[0], "rank 1") ? 1
							      : 2] += f.lines[i].count;
	folded_free(&f);
}

/*
 * --rank and --job keep only the processes their environment places there: rank 1 alone, then
 * the whole job without the process that names none, then another job's (none at all); the
 * log says how many processes each kept and left out.
 */
/* One filtered run: its samples by rank (0, 1, else) and what its log must say. */
static void keep_run(char **argv, const char *out, const char *err, uint64_t counts[3],
		     const char *says)
{
	char *log;

	cr_assert_eq(run(argv, NULL, err), 0, "%s", read_file(err));
	by_rank(out, counts);
	log = read_file(err);
	cr_expect(strstr(log, says), "%s", log);
	free(log);
}

Test(filters, job_and_rank_keep_only_those_processes, .timeout = 180)
{
	const char *out = test_path("keep", ".folded"), *err = test_path("keep", ".err");
	pid_t a = busy_rank(0), b = busy_rank(1), c = busy_env("sha256sum", (char *[]){NULL});
	char pids[48];
	char *argv[] = {XSPROFD_PATH,
			"-f",
			"-d",
			"2",
			"-F",
			"199",
			"--pid",
			pids,
			"--group-by",
			"rank",
			"--cupti-socket",
			(char *)test_path("keep", ".sock"),
			"-o",
			(char *)out,
			"--rank",
			"1",
			NULL};
	uint64_t r1[3], job[3], none[3];

	snprintf(pids, sizeof(pids), "%d,%d,%d", (int)a, (int)b, (int)c);
	keep_run(argv, out, err, r1, "rank 1: kept 1 processes, left out 2");
	argv[14] = "--job";
	argv[15] = "xs-filters-job";
	keep_run(argv, out, err, job, "job xs-filters-job: kept 2 processes, left out 1");
	argv[15] = "another-job";
	keep_run(argv, out, err, none, "no process was kept");
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	kill(c, SIGKILL);
	wait_exit(a);
	wait_exit(b);
	wait_exit(c);
	cr_log_info("--rank 1: %llu rank 0, %llu rank 1, %llu else; --job: %llu, %llu, %llu\n",
		    (unsigned long long)r1[0], (unsigned long long)r1[1], (unsigned long long)r1[2],
		    (unsigned long long)job[0], (unsigned long long)job[1],
		    (unsigned long long)job[2]);
	cr_expect_gt(r1[1], 5, "rank 1 has %llu samples", (unsigned long long)r1[1]);
	cr_expect_eq(r1[0], 0, "--rank 1 kept %llu of rank 0's", (unsigned long long)r1[0]);
	cr_expect_eq(r1[2], 0, "--rank 1 kept %llu of others", (unsigned long long)r1[2]);
	cr_expect_gt(job[0], 5, "--job kept %llu of rank 0's", (unsigned long long)job[0]);
	cr_expect_gt(job[1], 5, "--job kept %llu of rank 1's", (unsigned long long)job[1]);
	cr_expect_eq(job[2], 0, "--job kept %llu without a job", (unsigned long long)job[2]);
	cr_expect_eq(none[0] + none[1] + none[2], 0, "another job's profile holds %llu",
		     (unsigned long long)(none[0] + none[1] + none[2]));
}

/* Bad values name themselves and exit 2 before anything starts. */
Test(filters, bad_job_and_rank_values_are_usage_errors)
{
	const char *err = test_path("badrank", ".err");
	static const char *const bad[][2] = {
		{"--rank", "1-100"}, {"--rank", "0,"}, {"--rank", "a"}, {"--job", ""}};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = {XSPROFD_PATH,	   "-f", "-o", "/dev/null", (char *)bad[i][0],
				(char *)bad[i][1], NULL};
		char *log;

		cr_expect_eq(run(argv, NULL, err), 2, "%s %s", bad[i][0], bad[i][1]);
		log = read_file(err);
		cr_expect(strstr(log, bad[i][0]) && strstr(log, "Try 'xsprofd --help'"), "%s", log);
		free(log);
	}
}
