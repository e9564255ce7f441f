/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every stack of a recording named once, for the writers that resolve a stack per sample or
 * per launch (Chrome trace, pprof timelines, merged flamegraphs): stack table entries by their
 * id, launch stacks by STACK_NAMES_LAUNCH | index. Names are interned here, so the symbolizer
 * may trim its caches afterwards.
 */
#ifndef XSPROF_DAEMON_SESSION_STACK_NAMES_H
#define XSPROF_DAEMON_SESSION_STACK_NAMES_H

#include <stddef.h>
#include <stdint.h>

struct launch_store;
struct stack_table;
struct symbolizer;
struct stack_names;

/* Launch stack i is stack id STACK_NAMES_LAUNCH | i. */
#define STACK_NAMES_LAUNCH 0x80000000u

/* st and ls may be NULL. NULL with errno set (ENOMEM, EOVERFLOW past 2^31 stacks). */
struct stack_names *stack_names__new(const struct stack_table *st, const struct launch_store *ls,
				     struct symbolizer *sym);
/* The same, naming only the CPU stacks of the nr_pids processes of pids (sorted): the others
 * resolve to -ENOENT. A whole machine's table is costly to name (debug info, every slice). */
struct stack_names *stack_names__new_of(const struct stack_table *st, const struct launch_store *ls,
					struct symbolizer *sym, const uint32_t *pids,
					size_t nr_pids);
void stack_names__free(struct stack_names *sn);

/* A profile_stack_fn over a struct stack_names (ctx): 0, or -ENOENT for an unknown id. */
int stack_names__resolve(void *ctx, uint32_t pid, uint32_t stack_id, const char *const **ret_frames,
			 size_t *ret_n);

/* A profile_name_fn over a struct stack_names (ctx): the process's name, or NULL if unknown. */
const char *stack_names__comm(void *ctx, uint32_t pid, uint32_t tid);

#endif
