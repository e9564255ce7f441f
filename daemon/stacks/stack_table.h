/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Raw (unsymbolized) stacks counted as they arrive: one entry per distinct (process, thread
 * name, kernel stack, user stack). Naming is deferred to the end of a run or of a window slice,
 * where each distinct stack is symbolized once however many samples hit it.
 */
#ifndef XSPROF_DAEMON_STACKS_STACK_TABLE_H
#define XSPROF_DAEMON_STACKS_STACK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "bpf/xsprof_events.h"

struct stack_table;

struct stack_entry {
	uint64_t count;
	uint32_t tgid;
	uint32_t uid;
	uint32_t gen;	/* symbolizer__gen() of tgid when sampled: names it after exec, pid reuse */
	uint32_t flags; /* XSPROF_SAMPLE_F_* and STACK_F_* */
	uint32_t id;	/* 0, 1, 2, ... in the order entries were made */
	char comm[XSPROF_COMM_LEN];
	uint16_t nr_kernel;
	uint16_t nr_user;
	int16_t kernel_err;
	int16_t user_err;
	/* Innermost first; valid during stack_table__for_each's call only. */
	const uint64_t *kernel_ips;
	const uint64_t *user_ips;
};

/* Set on the per-process bucket that counts samples after the table filled up. */
#define STACK_F_OVERFLOW 0x100
/* Bits 16-19: how the user walk ended (enum xsprof_walk_end): part of a stack's identity. */
#define STACK_F_END_SHIFT   16
#define STACK_END_OF(flags) (((flags) >> STACK_F_END_SHIFT) & 0xf)

struct stack_table_stats {
	uint64_t samples;
	uint64_t distinct;
	uint64_t overflowed; /* samples counted in an overflow bucket (stack not kept) */
	uint64_t bytes;	     /* memory held */
};

/* max_distinct caps the distinct stacks kept (overflow buckets come on top of it). */
struct stack_table *stack_table__new(size_t max_distinct);
void stack_table__free(struct stack_table *t);

/* Count one sample. -ENOMEM only when even the overflow bucket cannot be made. */
int stack_table__add(struct stack_table *t, const struct xsprof_sample *s, uint32_t gen);

/* The same, and the id of the entry that counted it into *ret_id. */
int stack_table__add_id(struct stack_table *t, const struct xsprof_sample *s, uint32_t gen,
			uint32_t *ret_id);
/* Count one stack weight times (off-CPU microseconds). */
int stack_table__add_weighted(struct stack_table *t, const struct xsprof_sample *s, uint32_t gen,
			      uint64_t weight);
/* Both: a sample that stands for weight (taken at a lowered rate: --max-cpu). */
int stack_table__add_id_weighted(struct stack_table *t, const struct xsprof_sample *s, uint32_t gen,
				 uint64_t weight, uint32_t *ret_id);
/* Entries made so far: ids are below this. */
size_t stack_table__nr_entries(const struct stack_table *t);

/* Visit every entry (one at a time: its ips are rebuilt for the call); stops early and
 * returns fn's value when it is not 0. */
int stack_table__for_each(const struct stack_table *t,
			  int (*fn)(void *ctx, const struct stack_entry *e), void *ctx);

void stack_table__stats(const struct stack_table *t, struct stack_table_stats *ret);

#endif
