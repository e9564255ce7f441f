// SPDX-License-Identifier: Apache-2.0
/*
 * Better than frame-pointer profilers: in xs_fpleaf (frame pointers, but none in leaf
 * functions) the leaf's caller is skipped by every frame-pointer walk (perf -g, bcc, bpftrace
 * lose it); with the unwind tables it is there. Needs root and BTF.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tests/lib/harness.h"

/* Samples in fpleaf_leaf, and those with fpleaf_caller right above it. */
static void leaf_caller(const char *unwind, uint64_t *ret_leaf, uint64_t *ret_caller)
{
	const char *out = test_path("fpleaf", ".folded"), *err = test_path("fpleaf", ".err");
	char *argv[] = {XSPROFD_PATH,
			"-f",
			"-F",
			"499",
			"--unwind",
			(char *)unwind,
			"--cupti-socket",
			(char *)test_path("fpleaf", ".sock"),
			"-o",
			(char *)out,
			"--",
			XS_FPLEAF_PATH,
			"2",
			NULL};
	struct folded f;

	cr_assert_eq(run(argv, NULL, err), 0, "%s", read_file(err));
	*ret_leaf = *ret_caller = 0;
	folded_load(out, &f);
	for (size_t i = 0; i < f.n; i++) {
		struct folded_line *l = &f.lines[i];
		int leaf = folded_find(l, "fpleaf_leaf");

		if (leaf < 0)
			continue;
		*ret_leaf += l->count;
		if (leaf > 0 && !strcmp(l->frames[leaf - 1], "fpleaf_caller"))
			*ret_caller += l->count;
	}
	folded_free(&f);
}

Test(unwind_leaf, leaves_without_a_frame_show_their_caller, .timeout = 120)
{
	uint64_t leaf, caller;

	leaf_caller("auto", &leaf, &caller);
	cr_log_info("auto: %llu of %llu leaf samples under their caller\n",
		    (unsigned long long)caller, (unsigned long long)leaf);
	cr_assert_gt(leaf, 300, "too few samples in the leaf: %llu", (unsigned long long)leaf);
	cr_expect_geq(caller * 100, leaf * 99, "only %llu of %llu", (unsigned long long)caller,
		      (unsigned long long)leaf);
}

Test(unwind_leaf, frame_pointers_skip_the_caller, .timeout = 120)
{
	uint64_t leaf, caller;

	leaf_caller("fp", &leaf, &caller);
	cr_log_info("fp: %llu of %llu leaf samples under their caller\n",
		    (unsigned long long)caller, (unsigned long long)leaf);
	cr_assert_gt(leaf, 300);
	cr_expect_lt(caller * 2, leaf, "frame pointers found the caller in %llu of %llu",
		     (unsigned long long)caller, (unsigned long long)leaf);
}

/*
 * Code mapped after the process's mappings were read: xs_dlleaf dlopen()s 32 copies of a
 * library in a second, faster than the mappings are read again. The first samples in each
 * copy come before the loader's notice has been read; walked by frame pointers as code
 * unknown (JIT code) they lose dlleaf_caller (3 to 15 of ~940 samples when BPF did so); held
 * until the mappings are read again, they keep it.
 */
Test(unwind_leaf, code_mapped_since_the_mappings_were_read_keeps_its_caller, .timeout = 120)
{
	const char *out = test_path("dlleaf", ".folded"), *err = test_path("dlleaf", ".err");
	char *argv[] = {XSPROFD_PATH, "-f",	   "-F", "999",		 "--no-cuda",
			"-o",	      (char *)out, "--", XS_DLLEAF_PATH, XS_DLLEAF_LIB_PATH,
			"32",	      "0.03",	   NULL};
	uint64_t leaf = 0, caller = 0;
	struct folded f;
	const char *held;

	cr_assert_eq(run(argv, NULL, err), 0, "%s", read_file(err));
	folded_load(out, &f);
	for (size_t i = 0; i < f.n; i++) {
		struct folded_line *l = &f.lines[i];
		int at = folded_find(l, "dlleaf_leaf");

		if (at < 0)
			continue;
		leaf += l->count;
		if (at > 0 && !strcmp(l->frames[at - 1], "dlleaf_caller"))
			caller += l->count;
	}
	folded_free(&f);
	held = strstr(read_file(err), "given up waiting; ");
	cr_log_info("new code: %llu of %llu leaf samples under their caller (%.40s)\n",
		    (unsigned long long)caller, (unsigned long long)leaf, held ? held + 18 : "?");
	cr_assert_gt(leaf, 300, "too few samples in the leaf: %llu", (unsigned long long)leaf);
	cr_expect_leq(leaf - caller, 1, "%llu of %llu leaf samples lost their caller",
		      (unsigned long long)(leaf - caller), (unsigned long long)leaf);
}

/*
 * One rule for every stop: xs_notable's functions have neither frame pointers nor unwind
 * rows. With --unwind cfi every walk from inside them stops there and says so, in one frame
 * where the root would be ("[truncated: no unwind rule]" right above the leaf), and the report
 * counts it by reason; with the default walk every stack either reaches _start or carries
 * such a mark: none just ends.
 */
Test(unwind_leaf, every_stop_before_the_root_is_marked, .timeout = 120)
{
	const char *out = test_path("notable", ".folded"), *err = test_path("notable", ".err");
	const char *modes[] = {"cfi", "auto"};

	for (int m = 0; m < 2; m++) {
		char *argv[] = {XSPROFD_PATH,
				"-f",
				"-F",
				"499",
				"--unwind",
				(char *)modes[m],
				"--cupti-socket",
				(char *)test_path("notable", ".sock"),
				"-o",
				(char *)out,
				"--",
				XS_NOTABLE_PATH,
				"2",
				NULL};
		uint64_t total = 0, leaf = 0, leaf_marked = 0, rooted = 0, marked = 0;
		unsigned shown = 0;
		struct folded f;
		char *report;

		cr_assert_eq(run(argv, NULL, err), 0, "%s", read_file(err));
		report = read_file(err);
		folded_load(out, &f);
		for (size_t i = 0; i < f.n; i++) {
			struct folded_line *l = &f.lines[i];
			int k = folded_find(l, "fpleaf_leaf");

			if (strcmp(l->frames[0], "xs_notable") || l->n < 2 ||
			    strstr(l->frames[1], "_[k]"))
				continue; /* another process, or kernel frames only (exec) */
			total += l->count;
			rooted += !strcmp(l->frames[1], "_start") ? l->count : 0;
			marked += !strncmp(l->frames[1], "[truncated: ", 12) ? l->count : 0;
			if (strcmp(l->frames[1], "_start") &&
			    strncmp(l->frames[1], "[truncated: ", 12) && shown++ < 5)
				cr_log_warn("--unwind %s: neither rooted nor marked: %s;%s;...;%s "
					    "(%d frames)\n",
					    modes[m], l->frames[0], l->frames[1],
					    l->frames[l->n - 1], l->n);
			if (k < 0)
				continue;
			leaf += l->count;
			if (k == 2 && !strcmp(l->frames[1], "[truncated: no unwind rule]"))
				leaf_marked += l->count;
		}
		folded_free(&f);
		cr_log_info("--unwind %s: %llu samples, %llu at _start, %llu marked; %llu in the "
			    "leaf, %llu of them marked no unwind rule right above it\n",
			    modes[m], (unsigned long long)total, (unsigned long long)rooted,
			    (unsigned long long)marked, (unsigned long long)leaf,
			    (unsigned long long)leaf_marked);
		cr_assert_gt(leaf, 200, "too few samples in the leaf");
		cr_expect_eq(rooted + marked, total,
			     "--unwind %s: %llu stacks neither rooted nor "
			     "marked",
			     modes[m], (unsigned long long)(total - rooted - marked));
		if (m == 0) {
			/* A few cut by the symbolizer instead (a garbage caller): marked too. */
			cr_expect_geq(leaf_marked * 100, leaf * 99,
				      "cfi: %llu of %llu leaf samples marked no unwind rule",
				      (unsigned long long)leaf_marked, (unsigned long long)leaf);
			cr_expect(strstr(report, "marked [truncated: reason]") &&
					  strstr(report, "% no unwind rule"),
				  "the report does not count the stops by reason:\n%s", report);
		}
		free(report);
	}
}
