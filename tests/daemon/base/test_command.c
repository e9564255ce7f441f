// SPDX-License-Identifier: Apache-2.0
/*
 * A command run under the profiler (daemon/base/command.c): found in PATH like a shell finds
 * it, held before its exec until released, its exit status (or signal) reaped, the injection
 * library's variable set for it alone, and a child never released killed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/base/command.h"

static char out[] = "/tmp/xsprof-test-command-XXXXXX";

static void make_out(void)
{
	int fd = mkstemp(out);

	cr_assert_geq(fd, 0);
	close(fd);
}

static void drop_out(void)
{
	unlink(out);
}

static char *slurp(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "re");
	size_t n;

	cr_assert_not_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

Test(command, not_found_and_not_executable_fork_nothing, .init = make_out, .fini = drop_out)
{
	char *missing[] = {"xsprof-no-such-command", NULL};
	char *notexec[] = {out, NULL};

	cr_expect_null(command__new(missing, NULL, NULL));
	cr_expect_eq(errno, ENOENT);
	cr_assert_eq(chmod(out, 0644), 0); /* no execute bit: not even root may run it */
	cr_expect_null(command__new(notexec, NULL, NULL));
	cr_expect_eq(errno, EACCES);
}

Test(command, held_until_released_then_its_status, .init = make_out, .fini = drop_out)
{
	char script[256];
	char *argv[] = {"sh", "-c", script, NULL};
	struct command *c;
	int st = -1;

	snprintf(script, sizeof(script), "echo ran > %s; exit 7", out);
	c = command__new(argv, NULL, NULL);
	cr_assert_not_null(c);
	cr_expect(strlen(command__path(c)) > 3 &&
			  !strcmp(command__path(c) + strlen(command__path(c)) - 3, "/sh"),
		  "found as %s", command__path(c));
	/* Held: it has not run (its output file is still empty) and has not exited. */
	usleep(200 * 1000);
	cr_expect_str_eq(slurp(out), "");
	cr_expect_eq(command__reap(c, false, &st), 0);
	cr_assert_eq(command__release(c), 0);
	cr_assert_eq(command__reap(c, true, &st), 1);
	cr_expect_eq(st, 7);
	cr_expect(command__exited(c));
	cr_expect_str_eq(slurp(out), "ran\n");
	command__free(c);
}

Test(command, a_signal_is_128_plus_its_number)
{
	char *argv[] = {"sh", "-c", "kill -TERM $$", NULL};
	struct command *c = command__new(argv, NULL, NULL);
	int st = -1;

	cr_assert_not_null(c);
	cr_assert_eq(command__release(c), 0);
	cr_assert_eq(command__reap(c, true, &st), 1);
	cr_expect_eq(st, 128 + SIGTERM);
	command__free(c);
}

Test(command, the_injection_variable_is_the_childs_alone, .init = make_out, .fini = drop_out)
{
	char script[256];
	char *argv[] = {"sh", "-c", script, NULL};
	struct command *c;
	int st;

	setenv(COMMAND_INJECTION_ENV, "/somewhere/else.so", 1);
	snprintf(script, sizeof(script), "printf %%s \"$%s\" > %s", COMMAND_INJECTION_ENV, out);
	c = command__new(argv, "/opt/xsprof/libxsprof_cupti.so", NULL);
	cr_assert_not_null(c);
	cr_assert_eq(command__release(c), 0);
	cr_assert_eq(command__reap(c, true, &st), 1);
	cr_expect_eq(st, 0);
	cr_expect_str_eq(slurp(out), "/opt/xsprof/libxsprof_cupti.so");
	cr_expect_str_eq(getenv(COMMAND_INJECTION_ENV), "/somewhere/else.so", "ours changed");
	command__free(c);
	unsetenv(COMMAND_INJECTION_ENV);
}

/* INTEL_LIBITTNOTIFY64 is set to the ITT collector, unless the user named another one. */
Test(command, the_itt_collector_unless_one_is_named, .init = make_out, .fini = drop_out)
{
	char script[256];
	char *argv[] = {"sh", "-c", script, NULL};
	struct command *c;
	int st;

	unsetenv(COMMAND_ITT_ENV);
	snprintf(script, sizeof(script), "printf %%s \"$%s\" > %s", COMMAND_ITT_ENV, out);
	c = command__new(argv, NULL, "/opt/xsprof/libxsprof_itt.so");
	cr_assert_not_null(c);
	cr_assert_eq(command__release(c), 0);
	cr_assert_eq(command__reap(c, true, &st), 1);
	cr_expect_str_eq(slurp(out), "/opt/xsprof/libxsprof_itt.so");
	command__free(c);

	setenv(COMMAND_ITT_ENV, "/opt/vtune/libittnotify_collector.so", 1);
	c = command__new(argv, NULL, "/opt/xsprof/libxsprof_itt.so");
	cr_assert_not_null(c);
	cr_assert_eq(command__release(c), 0);
	cr_assert_eq(command__reap(c, true, &st), 1);
	cr_expect_str_eq(slurp(out), "/opt/vtune/libittnotify_collector.so",
			 "the user's was replaced");
	command__free(c);
	unsetenv(COMMAND_ITT_ENV);
}

Test(command, never_released_it_never_runs, .init = make_out, .fini = drop_out)
{
	char script[256];
	char *argv[] = {"sh", "-c", script, NULL};
	struct command *c;
	pid_t pid;

	snprintf(script, sizeof(script), "echo ran > %s", out);
	c = command__new(argv, NULL, NULL);
	cr_assert_not_null(c);
	pid = command__pid(c);
	command__free(c); /* killed and reaped */
	cr_expect_eq(kill(pid, 0), -1, "the held child %d is still there", (int)pid);
	cr_expect_str_eq(slurp(out), "");
}

Test(command, its_pidfd_is_readable_once_it_exits)
{
	char *argv[] = {"true", NULL};
	struct command *c = command__new(argv, NULL, NULL);
	struct pollfd p;
	int st;

	cr_assert_not_null(c);
	p = (struct pollfd){.fd = command__fd(c), .events = POLLIN};
	cr_expect_eq(poll(&p, 1, 0), 0, "readable before it ran");
	cr_assert_eq(command__release(c), 0);
	cr_expect_eq(poll(&p, 1, 30000), 1, "not readable 30 s after it was let go");
	cr_assert_eq(command__reap(c, true, &st), 1);
	cr_expect_eq(st, 0);
	command__free(c);
}
