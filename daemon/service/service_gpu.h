/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The service's sessions made into profiles: a recording's CPU stacks, its CUDA launches and
 * the GPU records of its processes joined (gpu_join) into one profile_data for every writer;
 * and a window slice's GPU work as a call tree under "uid:N" roots, for the rolling store.
 */
#ifndef XSPROF_DAEMON_SERVICE_GPU_H
#define XSPROF_DAEMON_SERVICE_GPU_H

#include <stdbool.h>
#include <stdint.h>

#include "correlate/correlate.h"
#include "daemon/session/gpu_waits.h"
#include "output/profile.h"

struct calltree;
struct gpu_join;
struct group_by;
struct gpu_join_scope;
struct gpu_store;
struct launch_store;
struct recording;
struct stack_names;
struct symbolizer;

/* How a session's profile is shown. */
struct session_view {
	enum gpu_mode mode;
	bool mode_set; /* else merged when GPU work was joined, cpu otherwise */
	enum weight_unit unit;
	unsigned int freq_hz;
	const char *strategy; /* correlation strategy name */
	int cpu_mode;	      /* enum xsprofd_mode: on-CPU samples, off-CPU time or wall time */
	int group_by;	      /* enum xsprofd_group_by: a root level above the process, or none */
	struct group_by *groups; /* its names, noted while the processes ran (may be NULL) */
};

/* A profile and what it points at. */
struct session_profile {
	struct profile_data pd;
	struct calltree *tree;
	struct stack_names *names;
	struct gpu_join *join;
	struct gpu_waits_stats waits;	     /* what the GPU waits came to */
	struct group_by *groups;	     /* view->group_by's names */
	struct ranges *ranges;		     /* view->group_by range's NVTX ranges */
	struct profile_wait *waits_timeline; /* pd.waits */
};

/*
 * Fill sp from the stopped recording rec: its stacks, its timeline if it kept one, its launches
 * joined to gs's records in scope (gs may be NULL). Adds the join's counters to *cs. 0 or
 * -errno; session_profile__release in any case.
 */
int session_profile__build(struct session_profile *sp, struct recording *rec,
			   struct symbolizer *sym, const struct gpu_store *gs,
			   const struct gpu_join_scope *scope, const struct session_view *view,
			   struct correlate_stats *cs);
void session_profile__release(struct session_profile *sp);

/*
 * The GPU work of one window slice: ls's launches joined to gs's records in scope, each as a
 * "uid:N;comm;launch stack;[gpu] name" stack weighted in microseconds (GPU work nothing
 * launched goes under "[no launch stack]"). *ret_tree is NULL when there was none.
 */
int gpu_slice__tree(const struct launch_store *ls, const struct gpu_store *gs,
		    const struct gpu_join_scope *scope, struct symbolizer *sym,
		    const char *strategy, unsigned int freq_hz, struct calltree **ret_tree,
		    struct correlate_stats *cs);

#endif
