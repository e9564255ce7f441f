// SPDX-License-Identifier: Apache-2.0
/*
 * Short-lived processes through the real xsprofd: a parent forks and execs hundreds of children
 * that each live ~20 ms, burning CPU in symfix_child_burn -> symfix_burn_spin (a library the
 * loader maps after exec). xsprofd -p cannot follow children (its filter is by process), so the
 * whole machine is profiled and the children are picked by their comm. Every frame must be
 * named: samples inside the exec itself, in the loader's uprobe, in the vDSO and in PLT stubs
 * included. Needs root and BTF.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/harness.h"

#define CHILD_COMM "symfix_child"

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts))
		;
}

/* Waits until xsprofd says it is sampling (its log goes to err_path). */
static void wait_sampling(const char *err_path)
{
	for (int i = 0; i < 300; i++) {
		char *text = read_file(err_path);
		bool ready = text && strstr(text, "sampling");

		free(text);
		if (ready)
			return;
		sleep_ms(50);
	}
	cr_assert_fail("xsprofd did not start sampling:\n%s", read_file(err_path));
}

/* A frame with no name. The mark of a walk that stopped in exit() (past exit_mm() there is no
 * memory to read the rest from) names why, and the frames under it are named: not unnamed. */
static bool is_unnamed(const char *f)
{
	return (f[0] == '[' && strncmp(f, "[bpf] ", 6) &&
		strcmp(f, "[truncated: process exiting]")) ||
	       strstr(f, "+0x");
}

Test(short_lived, hundreds_of_20ms_children_are_named, .timeout = 180)
{
	const char *out = test_path("short", ".folded"), *err = test_path("short", ".err");
	char *xargv[] = {XSPROFD_PATH, "-f", "-F", "999", "-v", "-o", (char *)out, NULL};
	char *pargv[] = {SYMFIX_SPAWNER, SYMFIX_CHILD, "200", "20", NULL};
	uint64_t total = 0, named = 0, in_main = 0, in_fn = 0;
	struct folded f;
	pid_t prof;

	prof = spawn(xargv, NULL, err);
	wait_sampling(err);
	cr_assert_eq(run(pargv, "/dev/null", NULL), 0, "the spawner failed");
	sleep_ms(300);
	kill(prof, SIGINT);
	cr_assert_eq(wait_exit(prof), 0, "%s", read_file(err));

	/* The execs were seen in the kernel: samples between two images carry no stale pc. */
	{
		char *log = read_file(err);
		const char *at = log ? strstr(log, "user stacks: ") : NULL;
		unsigned long long in_exec = 0;

		cr_assert(at && sscanf(at, "user stacks: %llu", &in_exec) == 1, "no report: %s",
			  log);
		cr_log_info("%llu samples inside an exec\n", in_exec);
		cr_expect_gt(in_exec, 0, "200 execs at 999 Hz, and no sample between two images");
		free(log);
	}
	folded_load(out, &f);
	for (size_t i = 0; i < f.n; i++) {
		struct folded_line *l = &f.lines[i];
		bool all = true;

		if (strcmp(l->frames[0], CHILD_COMM))
			continue;
		total += l->count;
		for (int j = 1; j < l->n; j++)
			all = all && !is_unnamed(l->frames[j]);
		named += all ? l->count : 0;
		if (!all)
			cr_log_info("unnamed: %llu x %s;%s;%s\n", (unsigned long long)l->count,
				    l->frames[1], l->n > 2 ? l->frames[2] : "",
				    l->n > 3 ? l->frames[3] : "");
		/* Past the loader's start-up, the child runs main and nothing but the burn. */
		if (folded_find(l, "main") >= 0) {
			in_main += l->count;
			in_fn += folded_find(l, "symfix_child_burn") >= 0 ? l->count : 0;
		}
	}
	cr_log_info("children: %llu samples, %llu with every frame named (%.1f%%); %llu in main, "
		    "%llu of them in symfix_child_burn (%.1f%%)\n",
		    (unsigned long long)total, (unsigned long long)named,
		    total ? 100.0 * named / total : 0.0, (unsigned long long)in_main,
		    (unsigned long long)in_fn, in_main ? 100.0 * in_fn / in_main : 0.0);
	/* 200 x 20 ms at 999 Hz is ~4000 samples; allow for a busy machine. */
	cr_assert_gt(total, 1000, "too few samples of the children: %llu",
		     (unsigned long long)total);
	cr_expect_geq(named * 100, total * 98, "only %llu of %llu samples fully named",
		      (unsigned long long)named, (unsigned long long)total);
	cr_expect_geq(in_fn * 100, in_main * 98, "only %llu of %llu samples in main show the burn",
		      (unsigned long long)in_fn, (unsigned long long)in_main);
	folded_free(&f);
}
