// SPDX-License-Identifier: Apache-2.0
/*
 * The table unwinder for real: xsprofd loads its BPF into this kernel and profiles xs_nofp, built
 * -O2 -fomit-frame-pointer with a library built the same way. Its stacks must be whole (the
 * worker's chain from clone3, all 64 recursive frames, nothing past the outermost frame), as
 * `perf record --call-graph dwarf` finds them on the same workload; frame-pointer mode must not
 * find them (or the test would prove nothing). Needs root, BTF and perf: fails without them.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/harness.h"

#define PERF_PATH "/usr/bin/perf"

/* The worker thread's chain, root first, as the tables must give it (below the comm). */
static const char *const worker_chain[] = {"start_thread", "xs_nofp_worker_main", "xs_nofp_burn_a",
					   "xs_nofp_lib_spin"};

struct shape {
	uint64_t spin, spin_whole; /* samples in xs_nofp_lib_spin; with the whole chain */
	uint64_t leaf, leaf_whole; /* in xs_nofp_leaf; with main and all 64 xs_nofp_deep */
	uint64_t total, rooted;	   /* all; starting at _start or clone3 */
};

static bool is_clone3(const char *f)
{
	size_t n = strlen(f);

	return n >= 6 && !strcmp(f + n - 6, "clone3");
}

/* frames[0..n) root first, without the comm. */
static void shape_add(struct shape *sh, char **frames, int n, uint64_t count)
{
	int deep = 0, i;

	sh->total += count;
	if (n > 0 && (!strcmp(frames[0], "_start") || is_clone3(frames[0])))
		sh->rooted += count;
	for (i = 0; i < n && strcmp(frames[i], "xs_nofp_lib_spin"); i++)
		;
	if (i < n) {
		bool whole = i == 4 && is_clone3(frames[0]);

		for (int k = 0; whole && k < 4; k++)
			whole = !strcmp(frames[k + 1], worker_chain[k]);
		sh->spin += count;
		sh->spin_whole += whole ? count : 0;
	}
	for (i = 0; i < n && strcmp(frames[i], "xs_nofp_leaf"); i++)
		deep += !strcmp(frames[i], "xs_nofp_deep");
	if (i < n) {
		int im = -1;

		for (int k = 0; k < i; k++)
			if (!strcmp(frames[k], "main"))
				im = k;
		sh->leaf += count;
		/* main, then exactly the 64 recursive frames, then the leaf. */
		if (im >= 0 && deep == 64 && i == im + 65 && !strcmp(frames[0], "_start"))
			sh->leaf_whole += count;
	}
}

static void shape_of_folded(const char *path, struct shape *sh)
{
	struct folded f;

	memset(sh, 0, sizeof(*sh));
	folded_load(path, &f);
	for (size_t i = 0; i < f.n; i++) {
		struct folded_line *l = &f.lines[i];
		int n = l->n - 1;

		/* Kernel frames (_[k]) hang below the user ones: leave them out. */
		while (n > 0 && strstr(l->frames[n], "_[k]"))
			n--;
		shape_add(sh, l->frames + 1, n, l->count);
	}
	folded_free(&f);
}

/* perf script's blocks: "comm tid" then one "addr sym" line per frame, innermost first. */
static void shape_of_perf(const char *script, struct shape *sh)
{
	char *txt = read_file(script), *save = NULL, *frames[512];
	int n = 0;

	cr_assert(txt, "no perf script output");
	memset(sh, 0, sizeof(*sh));
	for (char *line = strtok_r(txt, "\n", &save);; line = strtok_r(NULL, "\n", &save)) {
		char addr[32], sym[256];

		if (!line || (line[0] != '\t' && line[0] != ' ')) {
			/* A new sample starts: count the last one, root first. */
			if (n) {
				for (int i = 0; i < n / 2; i++) {
					char *t = frames[i];

					frames[i] = frames[n - 1 - i];
					frames[n - 1 - i] = t;
				}
				shape_add(sh, frames, n, 1);
				for (int i = 0; i < n; i++)
					free(frames[i]);
				n = 0;
			}
			if (!line)
				break;
			continue;
		}
		if (sscanf(line, " %31s %255s", addr, sym) == 2 && n < 512 &&
		    strcmp(sym, "[unknown]"))
			frames[n++] = strdup(sym);
	}
	free(txt);
}

static pid_t start_nofp(const char *secs)
{
	char *argv[] = {XS_NOFP_PATH, (char *)secs, NULL};

	return spawn(argv, "/dev/null", NULL);
}

/* Profile pid with xsprofd --unwind how; its report goes to *ret_report. */
static const char *profile(pid_t pid, const char *how, char **ret_report)
{
	const char *out = test_path("unwind", ".folded"), *err = test_path("unwind", ".err");
	char pidbuf[16];
	/* -v: the report's walk lines are in its full form only. */
	char *argv[] = {XSPROFD_PATH, "-f",	   "-v", "-d",	 "3",  "-F",	    "999",
			"--unwind",   (char *)how, "-p", pidbuf, "-o", (char *)out, NULL};
	int st;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = run(argv, NULL, err);
	*ret_report = read_file(err);
	cr_assert_eq(st, 0, "xsprofd exited %d:\n%s", st, *ret_report ? *ret_report : "");
	return out;
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

static void log_shape(const char *who, const struct shape *sh)
{
	cr_log_info("%s: %llu samples, %.1f%% rooted at _start/clone3; spin %llu (%.1f%% whole "
		    "chain), leaf %llu (%.1f%% with main and 64 deep frames)\n",
		    who, (unsigned long long)sh->total, pct(sh->rooted, sh->total),
		    (unsigned long long)sh->spin, pct(sh->spin_whole, sh->spin),
		    (unsigned long long)sh->leaf, pct(sh->leaf_whole, sh->leaf));
}

Test(unwind_bpf, whole_stacks_without_frame_pointers, .timeout = 120)
{
	pid_t pid = start_nofp("8");
	char *report;
	const char *prof = profile(pid, "auto", &report);
	struct shape sh;

	cr_assert_eq(wait_exit(pid), 0);
	shape_of_folded(prof, &sh);
	log_shape("xsprofd --unwind auto", &sh);
	cr_assert(sh.spin > 100 && sh.leaf > 100, "too few samples: %llu spin, %llu leaf",
		  (unsigned long long)sh.spin, (unsigned long long)sh.leaf);
	/* Tables are loaded before sampling starts (--pid): every stack is whole. A sample
	 * between a call and the callee's first row is the rare miss: 97% leaves room. */
	cr_expect(sh.spin_whole * 100 >= sh.spin * 97, "only %.1f%% of spin samples whole",
		  pct(sh.spin_whole, sh.spin));
	cr_expect(sh.leaf_whole * 100 >= sh.leaf * 97, "only %.1f%% of leaf samples whole",
		  pct(sh.leaf_whole, sh.leaf));
	/* No garbage frames above the outermost one. */
	cr_expect(sh.rooted * 100 >= sh.total * 97, "only %.1f%% of stacks start at the root",
		  pct(sh.rooted, sh.total));
	cr_expect(strstr(report, "user stack walks: ") &&
			  !strstr(report, "user stack walks: 0 with"),
		  "no stack walked with tables:\n%s", report);
	free(report);
}

Test(unwind_bpf, frame_pointer_mode_does_not_find_them, .timeout = 120)
{
	pid_t pid = start_nofp("8");
	char *report;
	const char *prof = profile(pid, "fp", &report);
	struct shape sh;

	cr_assert_eq(wait_exit(pid), 0);
	shape_of_folded(prof, &sh);
	log_shape("xsprofd --unwind fp", &sh);
	cr_assert(sh.spin > 100 && sh.leaf > 100);
	/* Without frame pointers the walk stops at once: the test above would notice. */
	cr_expect(sh.spin_whole * 2 < sh.spin && sh.leaf_whole * 2 < sh.leaf,
		  "frame pointers found whole stacks in code without them?");
	cr_expect(!strstr(report, "user stack walks: "), "fp mode reports table walks:\n%s",
		  report);
	free(report);
}

Test(unwind_bpf, same_stacks_as_perf_dwarf, .timeout = 180)
{
	const char *data = test_path("perf", ".data"), *script = test_path("perf", ".script");
	const char *perr = test_path("perf", ".err");
	char pidbuf[16], *report;
	struct shape ours, theirs;
	pid_t pid;
	int st;

	cr_assert(!access(PERF_PATH, X_OK), "%s missing: apt-get install linux-perf", PERF_PATH);
	pid = start_nofp("12");
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	{
		char *argv[] = {PERF_PATH, "record", "-q",	   "--call-graph", "dwarf", "-F",
				"999",	   "-o",     (char *)data, "-p",	   pidbuf,  "--",
				"sleep",   "3",	     NULL};

		st = run(argv, NULL, perr);
		cr_assert_eq(st, 0, "perf record failed (%d): %s", st, read_file(perr));
	}
	shape_of_folded(profile(pid, "auto", &report), &ours);
	free(report);
	cr_assert_eq(wait_exit(pid), 0);
	{
		char *argv[] = {PERF_PATH, "script",	      "-i", (char *)data,
				"-F",	   "comm,tid,ip,sym", NULL};

		st = run(argv, script, perr);
		cr_assert_eq(st, 0, "perf script failed (%d): %s", st, read_file(perr));
	}
	shape_of_perf(script, &theirs);
	log_shape("perf --call-graph dwarf", &theirs);
	log_shape("xsprofd", &ours);
	cr_assert(theirs.spin > 100 && theirs.leaf > 100, "perf found too few samples");
	/* As complete as perf's (within noise), and the same split between the threads. */
	cr_expect(pct(ours.spin_whole, ours.spin) >= pct(theirs.spin_whole, theirs.spin) - 2,
		  "whole worker chains: ours %.1f%%, perf %.1f%%", pct(ours.spin_whole, ours.spin),
		  pct(theirs.spin_whole, theirs.spin));
	cr_expect(pct(ours.leaf_whole, ours.leaf) >= pct(theirs.leaf_whole, theirs.leaf) - 2,
		  "whole recursions: ours %.1f%%, perf %.1f%%", pct(ours.leaf_whole, ours.leaf),
		  pct(theirs.leaf_whole, theirs.leaf));
	cr_expect(fabs(pct(ours.spin, ours.spin + ours.leaf) -
		       pct(theirs.spin, theirs.spin + theirs.leaf)) < 5,
		  "thread split: ours %.1f%% spin, perf %.1f%%",
		  pct(ours.spin, ours.spin + ours.leaf),
		  pct(theirs.spin, theirs.spin + theirs.leaf));
}
