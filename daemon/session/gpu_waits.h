/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Time spent waiting for the GPU, as flamegraph frames: each timed wait of a launch store (a
 * stream, event or device synchronize, a blocking copy) becomes
 *   comm;caller's stack;API;[wait gpu]
 * weighted by its duration, with the GPU work of its process that ran during the wait, on the
 * stream it waited for (every stream for a device-wide wait), as "[gpu] name" children weighted
 * by how long each overlapped the wait. The children never add up to more than the wait: when
 * streams ran side by side, each child gets its share.
 */
#ifndef XSPROF_DAEMON_SESSION_GPU_WAITS_H
#define XSPROF_DAEMON_SESSION_GPU_WAITS_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/stacks/fold.h"

struct calltree;
struct xsprof_wait_stats;
struct launch_store;
struct profile_data;
struct profile_mem;
struct profile_wait;

struct gpu_waits_stats {
	uint64_t waits;	       /* waits added */
	uint64_t wait_ns;      /* their time */
	uint64_t gpu_ns;       /* of which GPU work was seen running on what they waited for */
	uint64_t no_stack;     /* waits whose call's stack was not kept ("[unknown]") */
	uint64_t stream_guess; /* stream waits whose stream could not be told: every stream */
};

/* The frame that stands for the time a thread waited for the GPU. */
#define GPU_WAITS_FRAME "[wait gpu]"

/*
 * Add ls's waits to tree, weights in units of ns_per_unit nanoseconds (rounded per stack, after
 * summing). pd gives the stack names (pd->stack over STACK_NAMES_LAUNCH ids; "[unknown]" when
 * NULL) and the GPU records and joins (may be none); procs (may be NULL) the processes whose
 * waits are kept (--job, --rank) and a frame above the thread's name (--group-by). 0 or -errno.
 */
int gpu_waits__add(const struct launch_store *ls, const struct profile_data *pd,
		   struct calltree *tree, uint64_t ns_per_unit, const struct fold_procs *procs,
		   struct gpu_waits_stats *ret_stats);

/* ls's waits as timeline slices into a new array (*ret, free() it; NULL when none). 0 or
 * -ENOMEM. */
int gpu_waits__timeline(const struct launch_store *ls, struct profile_wait **ret, size_t *ret_n);

/* The GPU memory calls of ls (allocations at their return, frees at their entry), in time
 * order, into a new array (*ret, free() it; NULL when none), for the GPU report. 0 or -ENOMEM. */
int gpu_waits__memory(const struct launch_store *ls, struct profile_mem **ret, size_t *ret_n);

/* Log what the waits came to (a line when there were any; losses as warnings). */
void gpu_waits__report(const struct gpu_waits_stats *st, const struct launch_store *ls,
		       const struct xsprof_wait_stats *bpf);

#endif
