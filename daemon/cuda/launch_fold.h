/* SPDX-License-Identifier: Apache-2.0 */
/* The GPU-only profile: the CPU stacks that called CUDA, one count per call. */
#ifndef XSPROF_DAEMON_CUDA_LAUNCH_FOLD_H
#define XSPROF_DAEMON_CUDA_LAUNCH_FOLD_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/xsprof_events.h"
#include "daemon/stacks/fold.h"

struct calltree;
struct launch_stack;
struct launch_store;
struct symbolizer;

struct launch_fold_stats {
	uint64_t launches;	  /* calls added to the tree */
	uint64_t frames;	  /* frames named */
	uint64_t unnamed_frames;  /* kept as module+0xOFF or [unknown] */
	uint64_t uprobe_left_out; /* entry uprobes on APIs xsprof:launch reports, in processes
				   * whose USDT fired: the same launches, not counted twice */
	uint64_t missing_ustacks; /* calls whose stack could not be read */
};

/* A launch stack's frames: the user frames and up to three placeholders. */
#define LAUNCH_FOLD_MAX_FRAMES (XSPROF_MAX_STACK_DEPTH + 3)

/*
 * Name one launch stack's frames into frames[LAUNCH_FOLD_MAX_FRAMES], outermost first, without
 * the process name and the API leaf; returns how many. Names are valid until
 * symbolizer__trim(). Adds to stats (may be NULL).
 */
size_t launch_fold__name_stack(struct symbolizer *sym, const struct launch_stack *s,
			       const char **frames, struct launch_fold_stats *stats);

/*
 * Add every launch stack of ls to tree as comm;outermost frame;...;caller;[cuda] API, weighted
 * by its number of calls. A process's xsprof:launch firings are used only when no uprobe
 * reported for it (they are the same launches, seen by CUPTI). Only the processes accept
 * keeps (--job, --rank; NULL: all). 0 or -ENOMEM.
 */
int launch_fold(const struct launch_store *ls, struct symbolizer *sym, struct calltree *tree,
		fold_accept_fn accept, void *accept_ctx, struct launch_fold_stats *ret_stats);

#endif
