/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A lasting profile's GPU reports: one collected report (output/gpu_report/gpu_report.h, facts without
 * findings) per slice and user, kept like the windows of call trees (window.h): for the
 * window's length, within a memory cap, whatever falls out counted. A query merges the
 * reports of a time range, oldest first, for one user or all.
 */
#ifndef XSPROF_DAEMON_SESSION_REPORT_WINDOW_H
#define XSPROF_DAEMON_SESSION_REPORT_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct gpu_report;
struct report_window;
struct window_opts;

struct report_window_stats {
	size_t reports; /* held now */
	size_t bytes;	/* gpu_report__bytes of those */
	size_t cap_bytes;
	uint64_t expired;	/* fell out of the window */
	uint64_t merged;	/* a slice cut short by a query, joined to the user's one before */
	uint64_t dropped;	/* evicted early to stay under the cap, or bigger than it */
	uint64_t dropped_bytes; /* in those */
};

struct report_window *report_window__new(const struct window_opts *opts);
void report_window__free(struct report_window *w);
/* New bounds (reload); applied at once. */
void report_window__configure(struct report_window *w, const struct window_opts *opts);

/* The uid of a report of every user's processes. */
#define REPORT_WINDOW_ALL UINT32_MAX

/*
 * Take r (now owned by w) as uid's report of the slice [start_ns, end_ns) (REPORT_WINDOW_ALL:
 * every user's), sole when it is the slice's only one (it stands for every user's too).
 * Evicts the oldest reports while over the cap; one bigger than the whole cap is dropped
 * (-E2BIG), counted.
 */
int report_window__add(struct report_window *w, uint64_t start_ns, uint64_t end_ns, uint32_t uid,
		       bool sole, struct gpu_report *r);
/* Drop the reports of slices that ended before now_ns - window. */
void report_window__expire(struct report_window *w, uint64_t now_ns);

/*
 * Merge into the reports of the slices that end after since_ns and start before until_ns
 * (UINT64_MAX: no bound), oldest first: uid's, or with all_uids every user's (the slices'
 * REPORT_WINDOW_ALL or sole ones). *ret_from_ns: the start of the oldest slice merged (0:
 * none). 0 or -ENOMEM.
 */
int report_window__query(const struct report_window *w, uint64_t since_ns, uint64_t until_ns,
			 bool all_uids, uid_t uid, struct gpu_report *into, uint64_t *ret_from_ns);

void report_window__stats(const struct report_window *w, struct report_window_stats *ret);

#endif
