// SPDX-License-Identifier: Apache-2.0
/* The GPU reports a lasting profile keeps: by user (sole or all), length, cap, merging. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/session/report_window.h"
#include "daemon/session/window.h"
#include "output/gpu_report/gpu_report.h"
#include "output/model/profile.h"

#define S(n)  ((uint64_t)(n)*1000000000ull)
#define MS(n) ((uint64_t)(n)*1000000ull)

/* A slice's report of kernels of 1 ms every 10 ms on device 0 from start_ns on, of pid. */
static struct gpu_report *report(uint32_t pid, uint64_t start_ns, size_t kernels)
{
	struct corr_gpu_rec *g = calloc(kernels, sizeof(*g));
	struct profile_data pd = {
		.gpu = g, .nr_gpu = kernels, .start_ns = start_ns, .end_ns = start_ns + S(10)};
	struct gpu_report *r = NULL;

	cr_assert(g);
	for (size_t i = 0; i < kernels; i++)
		g[i] = (struct corr_gpu_rec){.kind = CORR_GPU_KERNEL,
					     .pid = pid,
					     .stream_id = 7,
					     .start_ns = start_ns + MS(10) * i,
					     .end_ns = start_ns + MS(10) * i + MS(1),
					     .name = "k"};
	cr_assert_eq(gpu_report__collect(&pd, NULL, NULL, &r), 0);
	free(g);
	return r;
}

/* The JSON of what the query merged, finished: its first device's kernels (-1: none). */
static long kernels_of(const struct report_window *w, uint64_t since, bool all, uid_t uid,
		       uint64_t *ret_from)
{
	struct gpu_report *r = gpu_report__new();
	char *buf = NULL, *k;
	size_t len = 0;
	long n = -1;
	FILE *f;

	cr_assert(r);
	cr_assert_eq(report_window__query(w, since, UINT64_MAX, all, uid, r, ret_from), 0);
	cr_assert_eq(gpu_report__finish(r), 0);
	f = open_memstream(&buf, &len);
	cr_assert(f);
	cr_assert_eq(gpu_report__write_json(r, f), 0);
	fclose(f);
	k = strstr(buf, "\"kernels\":");
	if (gpu_report__nr_devices(r) && k)
		n = strtol(k + strlen("\"kernels\":"), NULL, 10);
	free(buf);
	gpu_report__free(r);
	return n;
}

Test(report_window, users_sole_and_all)
{
	struct window_opts o = {.window_s = 300, .cap_bytes = 16 << 20};
	struct report_window *w = report_window__new(&o);
	struct report_window_stats st;
	uint64_t from;

	cr_assert(w);
	/* Slice 1: user 1000 alone (sole). Slice 2: users 1000 and 1001, and all of them. */
	cr_assert_eq(report_window__add(w, S(100), S(110), 1000, true, report(10, S(100), 5)), 0);
	cr_assert_eq(report_window__add(w, S(110), S(120), 1000, false, report(10, S(110), 3)), 0);
	cr_assert_eq(report_window__add(w, S(110), S(120), 1001, false, report(11, S(110), 2)), 0);
	cr_assert_eq(report_window__add(w, S(110), S(120), REPORT_WINDOW_ALL, false,
					report(10, S(110), 5)),
		     0);
	cr_expect_eq(kernels_of(w, 0, false, 1000, &from), 8);
	cr_expect_eq(from, S(100));
	cr_expect_eq(kernels_of(w, 0, false, 1001, &from), 2);
	cr_expect_eq(from, S(110));
	cr_expect_eq(kernels_of(w, 0, false, 1002, &from), -1, "another user sees nothing");
	cr_expect_eq(from, 0);
	/* All users: slice 1's sole report and slice 2's report of all, not its users' too. */
	cr_expect_eq(kernels_of(w, 0, true, 0, &from), 10);
	/* Since 115 s: slice 2 only (whole slices). */
	cr_expect_eq(kernels_of(w, S(115), false, 1000, &from), 3);
	cr_expect_eq(from, S(110));
	report_window__stats(w, &st);
	cr_expect_eq(st.reports, 4);
	cr_expect_gt(st.bytes, 0);
	/* Expired with the window's length. */
	report_window__expire(w, S(415));
	report_window__stats(w, &st);
	cr_expect_eq(st.reports, 3);
	cr_expect_eq(st.expired, 1);
	report_window__free(w);
}

Test(report_window, short_slices_merge_per_user_and_kind)
{
	struct window_opts o = {.window_s = 300, .cap_bytes = 16 << 20};
	struct report_window *w = report_window__new(&o);
	struct report_window_stats st;
	uint64_t from;

	cr_assert(w);
	/* Queries cut slices short: 2 s, then 3 s more of the same user join one report. */
	cr_assert_eq(report_window__add(w, S(100), S(102), 1000, true, report(10, S(100), 1)), 0);
	cr_assert_eq(report_window__add(w, S(102), S(105), 1000, true, report(10, S(102), 2)), 0);
	/* Not sole: kept apart from the sole one, or all users' would count it twice. */
	cr_assert_eq(report_window__add(w, S(105), S(106), 1000, false, report(10, S(105), 1)), 0);
	cr_assert_eq(report_window__add(w, S(105), S(106), REPORT_WINDOW_ALL, false,
					report(10, S(105), 1)),
		     0);
	report_window__stats(w, &st);
	cr_expect_eq(st.merged, 1);
	cr_expect_eq(st.reports, 3);
	cr_expect_eq(kernels_of(w, 0, false, 1000, &from), 4);
	cr_expect_eq(kernels_of(w, 0, true, 0, &from), 4);
	/* Past a slice's time together: a report of its own. */
	cr_assert_eq(report_window__add(w, S(106), S(115), 1000, true, report(10, S(106), 1)), 0);
	report_window__stats(w, &st);
	cr_expect_eq(st.reports, 4);
	report_window__free(w);
}

Test(report_window, cap_drops_oldest_and_counts)
{
	struct gpu_report *r = report(10, S(0), 50);
	size_t one = gpu_report__bytes(r);
	struct window_opts o = {.window_s = 300, .cap_bytes = one * 2 + one / 2};
	struct report_window *w = report_window__new(&o);
	struct report_window_stats st;
	uint64_t from;

	cr_assert(w);
	cr_assert_eq(report_window__add(w, S(0), S(10), 1000, true, r), 0);
	cr_assert_eq(report_window__add(w, S(10), S(20), 1000, true, report(10, S(10), 50)), 0);
	cr_assert_eq(report_window__add(w, S(20), S(30), 1000, true, report(10, S(20), 50)), 0);
	report_window__stats(w, &st);
	cr_expect_eq(st.reports, 2);
	cr_expect_eq(st.dropped, 1);
	cr_expect_eq(st.dropped_bytes, one);
	cr_expect_leq(st.bytes, st.cap_bytes);
	cr_expect_eq(kernels_of(w, 0, true, 0, &from), 100);
	cr_expect_eq(from, S(10), "the oldest went");
	/* Bigger than the whole cap on its own: refused, counted. */
	o.cap_bytes = one / 2;
	report_window__configure(w, &o);
	report_window__stats(w, &st);
	cr_expect_eq(st.reports, 0, "a smaller cap drops at once");
	cr_expect_eq(st.dropped, 3);
	cr_expect_eq(report_window__add(w, S(30), S(40), 1000, true, report(10, S(30), 50)),
		     -E2BIG);
	report_window__stats(w, &st);
	cr_expect_eq(st.dropped, 4);
	cr_expect_eq(st.bytes, 0);
	report_window__free(w);
}
