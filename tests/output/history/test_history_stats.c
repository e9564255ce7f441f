// SPDX-License-Identifier: Apache-2.0
/*
 * output/history/history_stats.c and history_render.c: Mann-Whitney's p against brute-force
 * enumeration and known values, the Hodges-Lehmann shift, the verdicts, steps over simulated
 * histories (seeded, many of them: detection and false-alarm rates), and the renderers'
 * outputs parsed (JSON by json-c; Markdown and XML by Python in history_e2e.sh).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "output/history/history_render.h"
#include "output/history/history_stats.h"

static uint64_t rng = 88172645463325252ull;

static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}

/* A normal value (Box-Muller). */
static double normal(double mean, double sd)
{
	return mean + sd * sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform());
}

static void runs(double *v, size_t n, double mean, double cv)
{
	for (size_t i = 0; i < n; i++)
		v[i] = normal(mean, mean * cv);
}

/* The two-sided p of U by every split of the pooled values: the truth for small sets. */
static double brute_p(const double *a, size_t na, const double *b, size_t nb)
{
	double all[16], u0 = 0, mean = (double)na * nb / 2;
	size_t n = na + nb, hits = 0, total = 0;

	memcpy(all, a, na * sizeof(*a));
	memcpy(all + na, b, nb * sizeof(*b));
	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < nb; j++)
			u0 += a[i] > b[j] ? 1 : a[i] == b[j] ? 0.5 : 0;
	for (unsigned mask = 0; mask < (1u << n); mask++) {
		double u = 0;

		if ((size_t)__builtin_popcount(mask) != na)
			continue;
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < n; j++)
				if ((mask >> i & 1) && !(mask >> j & 1))
					u += all[i] > all[j] ? 1 : all[i] == all[j] ? 0.5 : 0;
		total++;
		hits += fabs(u - mean) >= fabs(u0 - mean) - 1e-9;
	}
	return (double)hits / (double)total;
}

Test(history_stats, mann_whitney_exact_against_enumeration)
{
	const double a[] = {1, 2, 3, 4, 5}, b[] = {6, 7, 8, 9, 10};

	cr_assert_float_eq(hist_mann_whitney_p(a, 5, b, 5), 2.0 / 252, 1e-12);
	cr_assert_float_eq(hist_mann_whitney_p(a, 3, b, 3), 0.1, 1e-12);
	cr_assert_float_eq(hist_mann_whitney_p(a, 0, b, 3), 1, 0);
	for (int t = 0; t < 200; t++) {
		double x[7], y[7];
		size_t nx = 3 + (size_t)(uniform() * 4), ny = 3 + (size_t)(uniform() * 4);

		runs(x, nx, 100, 0.1);
		runs(y, ny, 100 + 10 * uniform(), 0.1);
		cr_assert_float_eq(hist_mann_whitney_p(x, nx, y, ny), brute_p(x, nx, y, ny), 1e-9,
				   "trial %d (%zu, %zu)", t, nx, ny);
	}
}

Test(history_stats, normal_approximation_with_ties)
{
	double a[30], b[30];

	/* 30 against 30, every value tied in pairs, b shifted: scipy's mannwhitneyu
	 * (asymptotic, continuity corrected) gives p = 2.8e-06 for this arrangement */
	for (int i = 0; i < 30; i++) {
		a[i] = i / 2;
		b[i] = i / 2 + 6;
	}
	double p = hist_mann_whitney_p(a, 30, b, 30);

	cr_assert(p > 1e-7 && p < 1e-4, "p %g", p);
	cr_assert_float_eq(hist_mann_whitney_p(a, 30, a, 30), 1, 1e-9);
}

Test(history_stats, hodges_lehmann_and_verdicts)
{
	const double base[] = {100, 101, 99, 100.5, 99.5}, head[] = {115, 116, 114, 115.5, 114.5};
	struct hist_stats_opts o;
	struct hist_compare c;

	hist_stats_opts__default(&o);
	cr_assert_eq(hist_compare(base, 5, head, 5, &o, &c), 0);
	cr_assert_float_eq(c.effect, 0.15, 1e-9);
	cr_assert(c.ci_lo > 0.12 && c.ci_lo <= 0.15 && c.ci_hi >= 0.15 && c.ci_hi < 0.18);
	cr_assert_float_eq(c.p, 2.0 / 252, 1e-12);
	cr_assert_eq(c.verdict, HIST_DIFFERENT);
	cr_assert_eq(hist_compare(base, 5, base, 5, &o, &c), 0);
	cr_assert_eq(c.verdict, HIST_SAME);
	cr_assert_eq(hist_compare(base, 2, head, 2, &o, &c), 0);
	cr_assert_eq(c.verdict, HIST_UNKNOWN, "two runs a side cannot say");
	cr_assert_eq(hist_compare(NULL, 3, head, 3, &o, &c), -EINVAL);
}

/* 1000 seeded comparisons of 5 runs against 5 at 4% noise: how often each verdict. */
static void rates(double shift, size_t *diff, size_t *same)
{
	struct hist_stats_opts o;
	double a[5], b[5];
	struct hist_compare c;

	hist_stats_opts__default(&o);
	*diff = *same = 0;
	for (int t = 0; t < 1000; t++) {
		runs(a, 5, 1000, 0.04);
		runs(b, 5, 1000 * (1 + shift), 0.04);
		cr_assert_eq(hist_compare(a, 5, b, 5, &o, &c), 0);
		*diff += c.verdict == HIST_DIFFERENT;
		*same += c.verdict == HIST_SAME;
	}
}

Test(history_stats, a_15_percent_change_is_found_and_2_percent_is_not)
{
	size_t diff, same;

	rng = 42;
	rates(0.15, &diff, &same);
	cr_log_info("15%%: %zu of 1000 DIFFERENT", diff);
	cr_assert_geq(diff, 900, "15%% on 5 runs at 4%% noise: %zu of 1000 DIFFERENT", diff);
	rates(0.02, &diff, &same);
	cr_log_info("2%%: %zu of 1000 DIFFERENT, %zu SAME", diff, same);
	cr_assert_leq(diff, 30, "2%% on 5 runs at 4%% noise: %zu of 1000 DIFFERENT", diff);
	rates(0, &diff, &same);
	cr_assert_leq(diff, 10, "no change: %zu of 1000 DIFFERENT", diff);
}

/* A history of 20 commits x 5 runs at cv noise, stepping by step[c] from commit c on. */
static void history(double *flat, double **rows, size_t *n, const double *step, double cv)
{
	double level = 1000;

	for (size_t c = 0; c < 20; c++) {
		level *= 1 + step[c];
		rows[c] = &flat[c * 5];
		n[c] = 5;
		runs(rows[c], 5, level, cv);
	}
}

/*
 * Steps as xsprof-history steps looks for them: each figure held to alpha over the figures
 * looked at (16 here, as in a small profile's history). At 5% noise (the e2e runs' own) a step
 * is found at its very commit; at 8% within a commit of it.
 */
Test(history_stats, steps_found_where_they_are_and_nowhere_else)
{
	double flat[100], *rows[20], step[20] = {0};
	size_t n[20], found = 0, near = 0, two = 0, alarms = 0, lone = 0;
	struct hist_series s = {.ncommits = 20, .n = n, .runs = (const double *const *)rows};
	struct hist_stats_opts o;
	struct hist_step out[8];
	size_t k;

	hist_stats_opts__default(&o);
	o.alpha /= 16;
	rng = 7;
	for (int seed = 0; seed < 200; seed++) {
		memset(step, 0, sizeof(step));
		step[11] = 0.15; /* commit 12 */
		history(flat, rows, n, step, 0.05);
		cr_assert_eq(hist_steps(&s, &o, out, 8, &k), 0);
		found += k == 1 && out[0].at == 11;
		history(flat, rows, n, step, 0.08);
		cr_assert_eq(hist_steps(&s, &o, out, 8, &k), 0);
		near += k == 1 && out[0].at >= 10 && out[0].at <= 12;
		step[15] = 0.20; /* and commit 16 */
		history(flat, rows, n, step, 0.05);
		cr_assert_eq(hist_steps(&s, &o, out, 8, &k), 0);
		two += k == 2 && out[0].at == 11 && out[1].at == 15;
		memset(step, 0, sizeof(step));
		history(flat, rows, n, step, 0.10);
		cr_assert_eq(hist_steps(&s, &o, out, 8, &k), 0);
		alarms += k;
		/* one commit 30% high, then back: not a step */
		step[9] = 0.30;
		step[10] = 1 / 1.30 - 1;
		history(flat, rows, n, step, 0.05);
		cr_assert_eq(hist_steps(&s, &o, out, 8, &k), 0);
		lone += k;
	}
	cr_log_info("at 5%%: one step %zu/200, two %zu/200; at 8%%: within a commit %zu/200; "
		    "flat alarms %zu, lone-commit steps %zu",
		    found, two, near, alarms, lone);
	cr_assert_geq(found, 190, "the step at commit 12 found exactly in %zu of 200", found);
	cr_assert_geq(two, 185, "both steps found exactly in %zu of 200", two);
	cr_assert_geq(near, 190, "at 8%% noise, one step within a commit of 12 in %zu of 200",
		      near);
	cr_assert_leq(alarms, 1, "%zu steps in 200 flat histories", alarms);
	cr_assert_leq(lone, 1, "%zu steps from a lone odd commit in 200 histories", lone);
}

Test(history_render, json_badge_and_markdown_say_the_rows)
{
	struct hist_commit commits[] = {
		{"0123456789abcdef0123456789abcdef01234567", "hot: |slower|", 1}};
	struct hist_row rows[] = {
		{.kind = HIST_FN_SELF,
		 .name = "ns::f<a|b>",
		 .cmp = {.n_base = 5,
			 .n_head = 5,
			 .base_median = 100,
			 .head_median = 115,
			 .effect = 0.15,
			 .ci_lo = 0.1,
			 .ci_hi = 0.2,
			 .p = 0.008,
			 .verdict = HIST_DIFFERENT},
		 .commits = commits,
		 .ncommits = 1,
		 .source = "src/f.cc:10-20",
		 .source_how = "line tables"},
		{.kind = HIST_KERNEL,
		 .name = "gemm\"k",
		 .cmp = {.n_base = 5,
			 .n_head = 5,
			 .base_median = 2e6,
			 .head_median = 2e6,
			 .verdict = HIST_SAME}},
	};
	struct hist_report rep = {.project = "p",
				  .bench = "b",
				  .base = "main",
				  .head = "pr",
				  .rows = rows,
				  .n = 2,
				  .min_runs = 3};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json_object *j, *r0, *v;

	cr_assert_eq(hist_report__regressions(&rep), 1);
	cr_assert_eq(hist_render__json(&rep, f), 0);
	fclose(f);
	j = json_tokener_parse(buf);
	cr_assert_not_null(j, "not JSON: %s", buf);
	cr_assert(json_object_object_get_ex(j, "rows", &v));
	cr_assert_eq(json_object_array_length(v), 2);
	r0 = json_object_array_get_idx(v, 0);
	cr_assert(json_object_object_get_ex(r0, "name", &v));
	cr_assert_str_eq(json_object_get_string(v), "ns::f<a|b>");
	cr_assert(json_object_object_get_ex(r0, "verdict", &v));
	cr_assert_str_eq(json_object_get_string(v), "DIFFERENT");
	json_object_put(j);
	free(buf);

	f = open_memstream(&buf, &len);
	cr_assert_eq(hist_render__markdown(&rep, f), 0);
	fclose(f);
	cr_assert_not_null(strstr(buf, "### xsprof: 1 regression in b"), "%s", buf);
	cr_assert_not_null(strstr(buf, "`ns::f<a\\|b>`"), "the | in a cell escaped: %s", buf);
	cr_assert_not_null(strstr(buf, "+15.0% [+10.0%, +20.0%]"), "%s", buf);
	cr_assert_not_null(strstr(buf, "**touched it**"), "%s", buf);
	cr_assert_null(strstr(buf, "gemm"), "a SAME row is not in the table: %s", buf);
	free(buf);

	f = open_memstream(&buf, &len);
	cr_assert_eq(hist_render__badge(&rep, f), 0);
	fclose(f);
	cr_assert_not_null(strstr(buf, "1 regression"), "%s", buf);
	cr_assert_not_null(strstr(buf, "#e05d44"), "red: %s", buf);
	free(buf);
}
