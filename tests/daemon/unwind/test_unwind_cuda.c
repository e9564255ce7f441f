// SPDX-License-Identifier: Apache-2.0
/*
 * CUDA launch stacks through code built without frame pointers: the entry uprobe on the real
 * libcudart and the xsprof:launch USDT walk the caller's stack with the unwind tables, so each
 * launch hangs under main;nofp_cuda_outer;nofp_cuda_mid;nofp_cuda_launch. Frame-pointer mode,
 * run the same way, loses them (so the test tells the two apart). Needs root and BTF.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/harness.h"

#define CALLS "200"

/* Launch records (of both probes) whose stack holds the whole chain, all of them, and those
 * whose stack says why it stops before the root ("[truncated: reason]"). */
static void chain_share(const char *unwind, uint64_t *ret_whole, uint64_t *ret_all,
			uint64_t *ret_marked)
{
	const char *out = test_path("nofp_cuda", ".folded"), *err = test_path("nofp_cuda", ".err");
	char *argv[] = {XSPROFD_PATH,
			"-f",
			"--unwind",
			(char *)unwind,
			"--freq",
			"1",
			"--cupti-socket",
			(char *)test_path("nofp_cuda", ".sock"),
			"--launches-output",
			(char *)out,
			"--",
			XS_NOFP_CUDA_PATH,
			CALLS,
			NULL};
	struct folded f;

	cr_assert_eq(run(argv, NULL, err), 0, "%s", read_file(err));
	*ret_whole = *ret_all = *ret_marked = 0;
	folded_load(out, &f);
	for (size_t i = 0; i < f.n; i++) {
		struct folded_line *l = &f.lines[i];
		int o = folded_find(l, "nofp_cuda_outer"), m = folded_find(l, "nofp_cuda_mid");
		int c = folded_find(l, "nofp_cuda_launch"), top = folded_find(l, "main");

		if (strcmp(l->frames[0], "xs_nofp_cuda") ||
		    strcmp(l->frames[l->n - 1], "[cuda] cudaLaunchKernel"))
			continue;
		*ret_all += l->count;
		for (int k = 0; k < l->n; k++)
			if (!strncmp(l->frames[k], "[truncated: ", 12)) {
				*ret_marked += l->count;
				break;
			}
		if (top > 0 && o == top + 1 && m == o + 1 && c == m + 1)
			*ret_whole += l->count;
		else
			cr_log_info("%s: %llu x ...%s;%s;%s\n", unwind,
				    (unsigned long long)l->count,
				    l->n > 3 ? l->frames[l->n - 4] : "",
				    l->n > 2 ? l->frames[l->n - 3] : "", l->frames[l->n - 2]);
	}
	folded_free(&f);
}

Test(unwind_cuda, launch_stacks_are_whole_without_frame_pointers, .timeout = 120)
{
	uint64_t whole, all, marked;

	chain_share("auto", &whole, &all, &marked);
	cr_log_info("auto: %llu of %llu launches under the whole chain\n",
		    (unsigned long long)whole, (unsigned long long)all);
	/* One launch per call: the USDT reports them (the uprobe is trimmed after its first). */
	cr_assert_geq(all, 200, "only %llu launches recorded", (unsigned long long)all);
	cr_expect_geq(whole * 100, all * 99, "only %llu of %llu launch stacks whole",
		      (unsigned long long)whole, (unsigned long long)all);
}

Test(unwind_cuda, frame_pointer_mode_loses_the_callers, .timeout = 120)
{
	uint64_t whole, all, marked;

	chain_share("fp", &whole, &all, &marked);
	cr_log_info("fp: %llu of %llu launches under the whole chain\n", (unsigned long long)whole,
		    (unsigned long long)all);
	cr_assert_geq(all, 200);
	cr_expect_lt(whole * 2, all, "frame pointers found the chain in %llu of %llu",
		     (unsigned long long)whole, (unsigned long long)all);
	/* Every stack that stops short says so: the frame-pointer walk's end is marked. */
	cr_expect_eq(whole + marked, all, "%llu whole, %llu marked of %llu launch stacks",
		     (unsigned long long)whole, (unsigned long long)marked,
		     (unsigned long long)all);
}

/* ---- Reused launch stacks (bpf/launch_reuse.bpf.h) stay exact ---- */

#define SITES_ROUNDS	 600
#define SITES_ROUNDS_ARG "600"
/* Launches of one run: the runs, then 6 blocks of a quarter as many. */
#define SITES_LAUNCHES (2 * SITES_ROUNDS + 6 * (SITES_ROUNDS / 4))

struct sites {
	uint64_t site_a, site_b, deep_x, deep_y, site_c, site_d, other;
};

/* A launch of run_inner: under site_c or site_d, through launch_deep (and, for the
 * xsprof:launch copy, inner_chain below it). */
static void classify_inner(const struct folded_line *l, int at, struct sites *s)
{
	int k = at + 1;

	while (k < l->n - 1 && !strcmp(l->frames[k], "inner_chain"))
		k++;
	if (at < 2 || k != l->n - 1 || (k != at + 1 && k != at + 13) ||
	    strcmp(l->frames[at - 2], "run_inner"))
		s->other += l->count;
	else if (!strcmp(l->frames[at - 1], "site_c"))
		s->site_c += l->count;
	else if (!strcmp(l->frames[at - 1], "site_d"))
		s->site_d += l->count;
	else
		s->other += l->count;
}

/* Which of xs_launch_sites's places a launch line is under (see its header). */
static void classify(const struct folded_line *l, struct sites *s)
{
	int at = folded_find(l, "launch_here"), c = at - 1;

	if (at < 0 && (at = folded_find(l, "launch_deep")) >= 0) {
		classify_inner(l, at, s);
		return;
	}
	if (at < 2 || at != l->n - 2) {
		s->other += l->count;
		return;
	}
	if (!strcmp(l->frames[at - 1], "site_a") || !strcmp(l->frames[at - 1], "site_b")) {
		if (strcmp(l->frames[at - 2], "run_sites"))
			s->other += l->count;
		else if (l->frames[at - 1][5] == 'a')
			s->site_a += l->count;
		else
			s->site_b += l->count;
		return;
	}
	while (c > 0 && !strcmp(l->frames[c], "chain"))
		c--;
	if (at - 1 - c != 12 || c < 1 || strcmp(l->frames[c - 1], "run_deep"))
		s->other += l->count;
	else if (!strcmp(l->frames[c], "deep_x"))
		s->deep_x += l->count;
	else if (!strcmp(l->frames[c], "deep_y"))
		s->deep_y += l->count;
	else
		s->other += l->count;
}

/* One run of xs_launch_sites; copies: how many probes see each launch (2 when the entry
 * uprobes stay beside xsprof:launch; 1 when they are removed after its first firing). The
 * launch stacks written are one per launch either way. */
static void sites_run(const char *correlate, uint64_t copies)
{
	const char *out = test_path("sites", ".folded"), *err = test_path("sites", ".err");
	char *argv[] = {XSPROFD_PATH,
			"-f",
			"-v", /* the launch walk's reuse line is in the full report only */
			"--freq",
			"1",
			"--cupti-socket",
			(char *)test_path("sites", ".sock"),
			"--correlate",
			(char *)correlate,
			"--launches-output",
			(char *)out,
			"--",
			XS_LAUNCH_SITES_PATH,
			SITES_ROUNDS_ARG,
			NULL};
	const uint64_t want_site = SITES_ROUNDS / 2, want_deep = 3 * (SITES_ROUNDS / 4);
	unsigned long long walked = 0, reused = 0;
	struct sites s = {0};
	struct folded f;
	const char *at;
	char *log;

	cr_assert_eq(run(argv, NULL, err), 0, "%s", read_file(err));
	folded_load(out, &f);
	for (size_t i = 0; i < f.n; i++)
		if (!strcmp(f.lines[i].frames[0], "xs_launch_sites") &&
		    !strcmp(f.lines[i].frames[f.lines[i].n - 1], "[cuda] cudaLaunchKernel"))
			classify(&f.lines[i], &s);
	folded_free(&f);
	log = read_file(err);
	at = strstr(log, "launch stacks walked ");
	cr_assert(at && sscanf(at, "launch stacks walked %llu times, reused %llu", &walked,
			       &reused) == 2,
		  "no reuse line:\n%s", log);
	cr_log_info("%s: site_a %llu, site_b %llu, deep_x %llu, deep_y %llu, site_c %llu, site_d "
		    "%llu, other %llu; walked %llu, reused %llu\n",
		    correlate, (unsigned long long)s.site_a, (unsigned long long)s.site_b,
		    (unsigned long long)s.deep_x, (unsigned long long)s.deep_y,
		    (unsigned long long)s.site_c, (unsigned long long)s.site_d,
		    (unsigned long long)s.other, walked, reused);
	/* Every launch counted once per record, under its own place: none moved to another
	 * (each at most its due), none lost; a first walk may end early (other, at most one
	 * per probe kind and thread). */
	cr_expect_eq(s.site_a + s.site_b + s.deep_x + s.deep_y + s.site_c + s.site_d + s.other,
		     4 * want_site + 2 * want_deep, "launches lost or added");
	cr_expect_leq(s.other, 2, "%llu launches not under their place",
		      (unsigned long long)s.other);
	cr_expect(s.site_a <= want_site && s.site_b <= want_site && s.deep_x <= want_deep &&
			  s.deep_y <= want_deep,
		  "a launch counted under another place");
	/* xsprof:launch under a dozen frames of the CUDA libraries' own: the frames a reuse reads
	 * first are the same from either site, yet no launch moves to the other. */
	cr_expect(s.site_c <= want_site && s.site_d <= want_site,
		  "a launch made under the CUDA libraries' frames counted under another site");
	/* The reuse took part: most launches repeat the stack before them. */
	cr_expect_geq(reused * 2, copies * SITES_LAUNCHES,
		      "only %llu of the launches reused their stack", reused);
	/* Each probe's first record of the process is sent aside (held for the attach); before
	 * the uprobes are removed both probes see a launch. */
	cr_expect(walked + reused <= 2 * SITES_LAUNCHES &&
			  walked + reused + 2 >= copies * SITES_LAUNCHES,
		  "walked %llu + reused %llu, for %llu launches", walked, reused,
		  (unsigned long long)SITES_LAUNCHES);
	free(log);
}

Test(unwind_cuda, reused_launch_stacks_stay_under_their_place, .timeout = 120)
{
	sites_run("auto", 1);
}

Test(unwind_cuda, reused_stacks_of_both_probes_stay_under_their_place, .timeout = 120)
{
	sites_run("timestamp", 2);
}
