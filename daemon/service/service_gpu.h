/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A window slice's GPU work (and, grouped by range, its CPU samples) as a call tree under
 * "uid:N" roots, for the window. (A recording's profile is made by daemon/session/profile.c,
 * whose session_view the service's recordings embed.)
 */
#ifndef XSPROF_DAEMON_SERVICE_SERVICE_GPU_H
#define XSPROF_DAEMON_SERVICE_SERVICE_GPU_H

#include <stdbool.h>
#include <stdint.h>

#include "correlate/correlate.h"
#include "daemon/session/profile.h"

struct calltree;
struct gpu_join_scope;
struct gpu_report;
struct gpu_store;
struct launch_store;
struct profile_sample;
struct ranges;
struct stack_table;
struct symbolizer;

/* uid_report.uid of a report of every user's processes. */
#define UID_REPORT_ALL UINT32_MAX

/*
 * One user's GPU report of a slice: the facts of the processes of uid (no findings). Two
 * users' reports of one device cannot be merged into the device's (their work overlaps in
 * time): a slice with GPU work of several users has a report of them all too (UID_REPORT_ALL);
 * one with a single user's has only theirs, sole (it stands for all).
 */
struct uid_report {
	uint32_t uid;
	bool sole;
	struct gpu_report *report;
};

void uid_reports__free(struct uid_report *v, size_t n);

/* What a window slice's GPU work is made from. */
struct gpu_slice {
	const struct launch_store *ls; /* the slice's launches, waits and memory calls */
	const struct gpu_store *gs;
	const struct gpu_join_scope *scope;
	struct symbolizer *sym;
	const char *strategy;
	unsigned int freq_hz;
	const struct ranges *ranges; /* the tree's, grouped by range; NULL: none */
	uint64_t start_ns, end_ns;
	/* For the reports: the slice's samples one by one (stack ids of st; both may be none),
	 * for the host's stacks in its idle gaps. */
	const struct stack_table *st;
	const struct profile_sample *samples;
	size_t nr_samples;
};

/*
 * The slice's GPU tree (as gpu_slice__tree) into *ret_tree (NULL when there was no GPU work)
 * and, when ret_reports is given, a collected GPU report per user whose processes had GPU
 * work or memory calls in it, and one of all of them when there are several (*ret_reports,
 * *ret_nr; none: NULL, 0; the uid a process has in the slice's samples, else now, else 0 for
 * one gone). 0 or -errno (nothing returned).
 */
int gpu_slice__build(const struct gpu_slice *in, struct calltree **ret_tree,
		     struct uid_report **ret_reports, size_t *ret_nr, struct correlate_stats *cs);

/*
 * The GPU work of one window slice: ls's launches joined to gs's records in scope, each as a
 * "uid:N;comm;launch stack;[gpu] name" stack weighted in microseconds (GPU work nothing
 * launched goes under "[no launch stack]"); with ranges, "uid:N;range;comm;..." (the range
 * its launch was made in). *ret_tree is NULL when there was none.
 */
int gpu_slice__tree(const struct launch_store *ls, const struct gpu_store *gs,
		    const struct gpu_join_scope *scope, struct symbolizer *sym,
		    const char *strategy, unsigned int freq_hz, const struct ranges *ranges,
		    struct calltree **ret_tree, struct correlate_stats *cs);

/*
 * A slice's CPU samples one by one (n of them, stack ids of st) as "uid:N;range;comm;stack"
 * stacks, each under the range its thread was in. *ret_tree is NULL when there was none.
 */
int cpu_slice__tree_by_range(const struct stack_table *st, const struct profile_sample *samples,
			     size_t n, struct symbolizer *sym, const struct ranges *ranges,
			     struct calltree **ret_tree);

#endif
