/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Rank statistics over runs: a change against its base (Mann-Whitney U, the Hodges-Lehmann
 * shift and its interval) and the commits where a figure stepped (change points over history).
 * Pure functions of arrays: no store, no I/O.
 */
#ifndef XSPROF_OUTPUT_HISTORY_STATS_H
#define XSPROF_OUTPUT_HISTORY_STATS_H

#include "output/history/history.h"

/* The median of n values (n > 0); the array is not changed. */
double hist_median(const double *v, size_t n);

/* The two-sided Mann-Whitney p of a against b: exact (no ties) for small sets, else the
 * normal approximation with the tie correction. 1 when either is empty. */
double hist_mann_whitney_p(const double *a, size_t na, const double *b, size_t nb);

/* base against head, as struct hist_compare says. 0, or -EINVAL (NULL arrays with n > 0), or
 * -ENOMEM. */
int hist_compare(const double *base, size_t nb, const double *head, size_t nh,
		 const struct hist_stats_opts *o, struct hist_compare *out);

/* A figure's runs over commits, oldest first: commit i has n[i] runs in runs[i]. */
struct hist_series {
	size_t ncommits;
	const size_t *n;
	const double *const *runs;
};

/* A step: the figure's runs from commit `at` on differ from those before it. cmp compares the
 * segment before (from the previous step) with the one after (to the next step). */
struct hist_step {
	size_t at;
	struct hist_compare cmp;
};

/*
 * The steps of a series: a step is DIFFERENT as hist_compare says between the segments on
 * either side, at a level corrected for the splits tried, so one noisy run or commit is not a
 * step. Up to max steps in out, in commit order; their count in *ret_n. 0, -EINVAL or -ENOMEM.
 */
int hist_steps(const struct hist_series *s, const struct hist_stats_opts *o,
	       struct hist_step *out, size_t max, size_t *ret_n);

#endif
