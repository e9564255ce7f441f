// SPDX-License-Identifier: Apache-2.0
/*
 * The in-kernel filters of the real xsprofd: --comm (a process name) and --cgroup / --unit (a
 * cgroup v2 directory). Two busy processes run; the profile must hold the chosen one and
 * nothing of the other. Needs root, BTF and a cgroup2 mount.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/probes/cgroup_path.h"
#include "tests/harness.h"

static pid_t busy(const char *name)
{
	char *argv[] = {(char *)name, "/dev/zero", NULL};
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (!pid) {
		execv("/usr/bin/sha256sum", argv); /* argv[0] does not set comm: exec's name does */
		_exit(127);
	}
	return pid;
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
