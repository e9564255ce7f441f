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

#include "tests/harness.h"

#define CALLS "200"

/* Launch records (of both probes) whose stack holds the whole chain, and all of them. */
static void chain_share(const char *unwind, uint64_t *ret_whole, uint64_t *ret_all)
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
	*ret_whole = *ret_all = 0;
	folded_load(out, &f);
	for (size_t i = 0; i < f.n; i++) {
		struct folded_line *l = &f.lines[i];
		int o = folded_find(l, "nofp_cuda_outer"), m = folded_find(l, "nofp_cuda_mid");
		int c = folded_find(l, "nofp_cuda_launch"), top = folded_find(l, "main");

		if (strcmp(l->frames[0], "xs_nofp_cuda") ||
		    strcmp(l->frames[l->n - 1], "[cuda] cudaLaunchKernel"))
			continue;
		*ret_all += l->count;
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
	uint64_t whole, all;

	chain_share("auto", &whole, &all);
	cr_log_info("auto: %llu of %llu launches under the whole chain\n",
		    (unsigned long long)whole, (unsigned long long)all);
	/* One launch per call: the USDT reports them (the uprobe is trimmed after its first). */
	cr_assert_geq(all, 200, "only %llu launches recorded", (unsigned long long)all);
	cr_expect_geq(whole * 100, all * 99, "only %llu of %llu launch stacks whole",
		      (unsigned long long)whole, (unsigned long long)all);
}

Test(unwind_cuda, frame_pointer_mode_loses_the_callers, .timeout = 120)
{
	uint64_t whole, all;

	chain_share("fp", &whole, &all);
	cr_log_info("fp: %llu of %llu launches under the whole chain\n", (unsigned long long)whole,
		    (unsigned long long)all);
	cr_assert_geq(all, 200);
	cr_expect_lt(whole * 2, all, "frame pointers found the chain in %llu of %llu",
		     (unsigned long long)whole, (unsigned long long)all);
}
