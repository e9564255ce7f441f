/* SPDX-License-Identifier: Apache-2.0 */
/* Turning counted raw stacks into a named call tree. */
#ifndef XSPROF_DAEMON_FOLD_H
#define XSPROF_DAEMON_FOLD_H

#include <stdint.h>

struct stack_table;
struct symbolizer;
struct calltree;

struct fold_stats {
	uint64_t frames;	  /* frames named (user + kernel) */
	uint64_t unnamed_frames;  /* kept as module+0xOFF or [unknown] */
	uint64_t missing_ustacks; /* samples whose user stack could not be read */
};

/*
 * Add every stack of the table to the tree as comm;user frames (outermost first);kernel frames
 * suffixed "_[k]". Frames that cannot be named stay in place under a placeholder, so every
 * sample is counted. 0 or -errno (-ENOMEM).
 */
int fold_stacks(const struct stack_table *st, struct symbolizer *sym, struct calltree *tree,
		struct fold_stats *ret_stats);

/* Same, under a first frame "uid:N" naming the sampled thread's uid (for the service's store). */
int fold_stacks_by_uid(const struct stack_table *st, struct symbolizer *sym, struct calltree *tree,
		       struct fold_stats *ret_stats);

#endif
