// SPDX-License-Identifier: Apache-2.0
/*
 * Off-CPU and wall time through the real xsprofd and the real sched_switch program: a thread
 * that computes, sleeps, waits on a pipe and waits on a mutex in measured parts
 * (workloads/wallsplit.c). The wall view must give each part its measured share within 2
 * points; the off-CPU view must hold the three waits, each its share within 2 points, and not
 * the computing. Needs root and BTF.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/harness.h"

#define COMM   "xs_wallsplit"
#define NPARTS 4

static const char *const parts[NPARTS] = {"compute_fn", "sleep_fn", "pipe_fn", "mutex_fn"};

struct truth {
	double us[NPARTS];
	double total;
	double compute_cpu;    /* compute_fn's time on a CPU: the rest it was preempted */
	double compute_waited; /* ... of the rest, on a run queue (the rest of it: VM steal) */
};

/* compute_fn's time taken by the hypervisor (neither on a CPU nor switched out), in us. */
static double stolen_us(const struct truth *t)
{
	double s = t->us[0] - t->compute_cpu - t->compute_waited;

	return s > 0 ? s : 0;
}

static void read_truth(const char *path, struct truth *t)
{
	char *text = read_file(path), *line;
	int got = 0;

	cr_assert(text, "no output from the workload");
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char name[32];
		double v;

		if (sscanf(line, "%31s %lf", name, &v) != 2)
			continue;
		for (int k = 0; k < NPARTS; k++)
			if (!strcmp(name, parts[k]))
				t->us[k] = v, got++;
		if (!strcmp(name, "total"))
			t->total = v, got++;
		if (!strcmp(name, "compute_fn_cpu"))
			t->compute_cpu = v, got++;
		if (!strcmp(name, "compute_fn_waited"))
			t->compute_waited = v, got++;
	}
	free(text);
	cr_assert_eq(got, NPARTS + 3, "workload output incomplete");
}

/* Weights of the main thread's stacks (not the helper's) under each part, and in all. */
static void profile_parts(const char *path, double *ret_us, double *ret_total)
{
	struct folded f;

	memset(ret_us, 0, NPARTS * sizeof(*ret_us));
	*ret_total = 0;
	folded_load(path, &f);
	for (size_t i = 0; i < f.n; i++) {
		struct folded_line *l = &f.lines[i];

		if (strcmp(l->frames[0], COMM) || folded_find(l, "helper_main") >= 0 ||
		    folded_find(l, "main") < 0)
			continue;
		*ret_total += (double)l->count;
		for (int k = 0; k < NPARTS; k++)
			if (folded_find(l, parts[k]) >= 0)
				ret_us[k] += (double)l->count;
	}
	folded_free(&f);
}

static void run_mode(const char *mode, const char *out, const char *wout, const char *err)
{
	/* 999 Hz: the computing's share is sampled, within a point at this length. */
	char *argv[] = {XSPROFD_PATH,
			"-f",
			"-F",
			"999",
			"--mode",
			(char *)mode,
			"--cupti-socket",
			(char *)test_path("offcpu", ".sock"),
			"-o",
			(char *)out,
			"--",
			XS_WALLSPLIT_PATH,
			"30",
			NULL};

	cr_assert_eq(run(argv, wout, err), 0, "%s", read_file(err));
}

Test(offcpu, wall_view_gives_each_part_its_measured_share, .timeout = 120)
{
	const char *out = test_path("wall", ".folded"), *err = test_path("wall", ".err");
	const char *wout = test_path("wall", ".out");
	double us[NPARTS], total, stolen;
	struct truth t = {0};

	run_mode("wall", out, wout, err);
	read_truth(wout, &t);
	profile_parts(out, us, &total);
	cr_log_info("wall: %.0f us profiled for %.0f us of the loop\n", total, t.total);
	/* The loop is most of the thread's life; start-up and exit come on top. */
	cr_expect(total > 0.9 * t.total && total < 1.2 * t.total,
		  "the main thread adds up to %.0f us, its loop took %.0f us", total, t.total);
	/* Time the hypervisor stole from the VM during compute_fn is seen by no profiler: the
	 * computing's share may be short of it, the waits' long by it. */
	stolen = 100.0 * stolen_us(&t) / t.total;
	if (stolen > 0.5)
		cr_log_info("compute_fn lost %.1f%% of the loop to the hypervisor (steal)\n",
			    stolen);
	for (int k = 0; k < NPARTS; k++) {
		double want = 100.0 * t.us[k] / t.total, got = 100.0 * us[k] / total;

		cr_log_info("%-10s measured %5.1f%%, profiled %5.1f%%\n", parts[k], want, got);
		cr_expect(got > want - 2 - (k ? 0 : stolen) && got < want + 2 + (k ? stolen : 0),
			  "%s: %.1f%% profiled, %.1f%% measured", parts[k], got, want);
	}
}

Test(offcpu, offcpu_view_holds_the_waits_not_the_computing, .timeout = 120)
{
	const char *out = test_path("off", ".folded"), *err = test_path("off", ".err");
	const char *wout = test_path("off", ".out");
	double us[NPARTS], total, waits;
	struct truth t = {0};
	char *log;

	run_mode("offcpu", out, wout, err);
	read_truth(wout, &t);
	profile_parts(out, us, &total);
	waits = t.us[1] + t.us[2] + t.us[3];
	for (int k = 0; k < NPARTS; k++)
		cr_log_info("%-10s measured %8.0f us, off the CPU %8.0f us\n", parts[k], t.us[k],
			    us[k]);
	/* Each wait is off the CPU nearly all of its time; computing only when preempted. */
	for (int k = 1; k < NPARTS; k++)
		cr_expect(us[k] > 0.85 * t.us[k] && us[k] < 1.1 * t.us[k],
			  "%s: %.0f us off the CPU, %.0f us measured", parts[k], us[k], t.us[k]);
	/* Computing is off the CPU only when preempted (a busy machine does): as long as it
	 * waited on a run queue (time the hypervisor stole is not a switch). */
	cr_expect(fabs(us[0] - t.compute_waited) <= 0.1 * t.us[0] + 2000,
		  "compute_fn: %.0f us off the CPU of %.0f, waited %.0f on a run queue (%.0f "
		  "stolen)",
		  us[0], t.us[0], t.compute_waited, stolen_us(&t));
	/* Each wait's share of the waits' off-CPU time, as measured, within 2 points (the
	 * computing is off the CPU only when preempted, which a busy machine does). */
	for (int k = 1; k < NPARTS; k++) {
		double want = 100.0 * t.us[k] / waits,
		       got = 100.0 * us[k] / (us[1] + us[2] + us[3]);

		cr_log_info("%-10s off-CPU share measured %5.1f%%, profiled %5.1f%%\n", parts[k],
			    want, got);
		cr_expect(got > want - 2 && got < want + 2,
			  "%s: %.1f%% of the off-CPU time, %.1f%% measured", parts[k], got, want);
	}
	cr_expect(total > 0.85 * waits, "%.0f us off the CPU, %.0f us of waits", total, waits);
	log = read_file(err);
	cr_expect(strstr(log, "off-CPU: "), "no off-CPU report line:\n%s", log);
	cr_expect(!strstr(log, "off-CPU: lost"), "off-CPU losses:\n%s", log);
	free(log);
}

Test(offcpu, mode_is_refused_outside_one_shot_and_checked)
{
	const char *err = test_path("offbad", ".err");
	char *bad_mode[] = {XSPROFD_PATH, "-f", "--mode", "idle", "-o", "/dev/null", NULL};
	char *service[] = {XSPROFD_PATH, "--mode", "wall", NULL};
	char *min0[] = {XSPROFD_PATH, "-f", "--min-block-us", "0", "-o", "/dev/null", NULL};
	char *log;

	cr_expect_eq(run(bad_mode, NULL, err), 2);
	log = read_file(err);
	cr_expect(strstr(log, "--mode") && strstr(log, "cpu, offcpu or wall"), "%s", log);
	free(log);
	cr_expect_eq(run(service, NULL, err), 2);
	log = read_file(err);
	cr_expect(strstr(log, "only with --foreground"), "%s", log);
	free(log);
	cr_expect_eq(run(min0, NULL, err), 2);
}
