/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A window slice's GPU work (and, grouped by range, its CPU samples) as a call tree under
 * "uid:N" roots, for the window. (A recording's profile is made by daemon/session/profile.c,
 * whose session_view the service's recordings embed.)
 */
#ifndef XSPROF_DAEMON_SERVICE_SERVICE_GPU_H
#define XSPROF_DAEMON_SERVICE_SERVICE_GPU_H

#include "correlate/correlate.h"
#include "daemon/session/profile.h"

struct calltree;
struct gpu_join_scope;
struct gpu_store;
struct launch_store;
struct profile_sample;
struct ranges;
struct stack_table;
struct symbolizer;

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
