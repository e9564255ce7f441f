/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU path's records as they arrive: CUDA API calls caught by uprobes and xsprof:launch
 * USDT firings. Each distinct (process, thread name, user stack, API) is kept once with its
 * count, for the launch flamegraph; each call is also kept as a small event (time, thread,
 * stream or correlation id, stack index) for correlation with the GPU's records. Both are
 * capped; what the caps turn away is counted.
 */
#ifndef XSPROF_DAEMON_CUDA_LAUNCH_STORE_H
#define XSPROF_DAEMON_CUDA_LAUNCH_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "bpf/xsprof_events.h"

struct launch_store;

enum launch_kind {
	LAUNCH_UPROBE = 1, /* struct xsprof_cuda_call: api is enum xsprof_cuda_api */
	LAUNCH_USDT = 2,   /* struct xsprof_usdt_launch: api is CUPTI domain << 16 | cbid */
};

/* Set on the per-(process, API) bucket that counts calls after the stack table filled up. */
#define LAUNCH_STACK_F_OVERFLOW 0x1
/* ips[0] is where the probe fired, not a return address (a USDT site kept as is). */
#define LAUNCH_STACK_F_PC_FIRST 0x2
/* Bits 8-11: how the stack's walk ended (enum xsprof_walk_end), part of its identity. */
#define LAUNCH_STACK_F_END_SHIFT   8
#define LAUNCH_STACK_END_OF(flags) (((flags) >> LAUNCH_STACK_F_END_SHIFT) & 0xf)

/* A distinct stack and the calls that had it. */
struct launch_stack {
	uint64_t count;
	uint32_t tgid;
	uint32_t api;
	uint16_t kind;	/* enum launch_kind */
	uint16_t flags; /* LAUNCH_STACK_F_* */
	uint16_t nr_user;
	int16_t user_err;
	char comm[XSPROF_COMM_LEN];
	const uint64_t *ips; /* innermost first; see the record types for what ips[0] is */
};

/* One call. */
struct launch_event {
	uint64_t time_ns; /* CLOCK_MONOTONIC */
	uint64_t arg;	  /* LAUNCH_UPROBE: the stream (an allocation's size, a free's address);
			 LAUNCH_USDT: the correlation id */
	uint32_t tgid;
	uint32_t tid;
	uint32_t api;
	uint32_t stack; /* index for launch_store__stack */
	uint16_t kind;
	uint16_t flags; /* the record's XSPROF_CUDA_F_* */
	uint32_t pad;
};

/* A call that waited for the GPU, or allocated GPU memory, timed from entry to return (struct
 * xsprof_cuda_wait). Its stack is the one of the uprobe event of the same tid whose time_ns is
 * entry_ns (that event's arg is an allocation's size). */
struct launch_wait {
	uint64_t entry_ns, return_ns; /* CLOCK_MONOTONIC */
	uint64_t stream; /* the stream argument (0: none or the legacy stream); an allocation's
			    address or handle */
	uint32_t tgid, tid;
	uint32_t api;	/* enum xsprof_cuda_api */
	uint32_t flags; /* the record's XSPROF_CUDA_F_* (an allocation: FAILED, READ_ERR) */
	int32_t device; /* the thread's device, or XSPROF_CUDA_DEVICE_UNSET (xsprof_events.h) */
	uint32_t pad;
};

/* An xsprof scope (xsprof/scope.h) a thread opened and closed: a range, as NVTX ones are. */
struct launch_range {
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC */
	uint32_t tgid, tid;
	const char *name; /* owned by the cuda_probes that read it (cuda_scopes) */
};

struct launch_store_stats {
	uint64_t calls;		 /* uprobe records stored */
	uint64_t usdt;		 /* USDT records stored */
	uint64_t distinct;	 /* stacks kept */
	uint64_t overflowed;	 /* calls counted without their stack: stack table full */
	uint64_t events_dropped; /* calls not kept as events: event cap reached (still counted) */
	uint64_t bytes;		 /* memory held */
	uint64_t waits;		 /* timed waits stored */
	uint64_t waits_dropped;	 /* timed waits not kept: the event cap reached */
	uint64_t reused;	 /* calls stored under their thread's last stack (reuse records) */
	uint64_t reuse_orphans;	 /* reuse records of a thread with no last stack: not stored */
	uint64_t last_emptied;	 /* times the threads' last stacks were forgotten at the cap */
	uint64_t ranges;	 /* scopes stored */
	uint64_t ranges_dropped; /* scopes not kept: the event cap reached */
	uint64_t allocs;	 /* allocations' returns stored */
	uint64_t allocs_dropped; /* allocations' returns not kept: the event cap reached */
	uint64_t weighted;	 /* calls stored standing for more than one (--max-cpu) */
};

/* Caps: distinct stacks and events kept; 0 picks the defaults (100000 and 1000000). */
struct launch_store *launch_store__new(size_t max_stacks, size_t max_events);
void launch_store__free(struct launch_store *ls);

/* What each call stored from now on stands for: 1, or N while launch stacks are walked 1 in N
 * (--max-cpu: the others were counted in the kernel). Its stack's count grows by that much. */
void launch_store__set_weight(struct launch_store *ls, uint64_t weight);

/* Store one record (already validated). 0, or -ENOMEM / -ENOSPC when even its overflow bucket
 * cannot be made (then nothing is stored). */
int launch_store__add_call(struct launch_store *ls, const struct xsprof_cuda_call *r);
/* skip: innermost frames left out (those inside the CUDA and injection libraries). */
int launch_store__add_usdt(struct launch_store *ls, const struct xsprof_usdt_launch *r,
			   unsigned int skip);

/* A reuse record (bpf/launch_reuse.bpf.h): one more call with the stack of the last record of
 * the same thread and kind (with r's API). -ENOENT when the thread has none (counted). */
int launch_store__add_reuse(struct launch_store *ls, const struct xsprof_launch_reuse *r);

/* Keep the last stack of each thread of old (the store fresh replaces) for reuse records read
 * after the change, whose full record old received. Replaces what fresh carried before. */
int launch_store__carry_last(struct launch_store *fresh, const struct launch_store *old);

/* Store one timed wait (already validated); -ENOSPC past the event cap (counted). */
int launch_store__add_wait(struct launch_store *ls, const struct xsprof_cuda_wait *w);
size_t launch_store__nr_waits(const struct launch_store *ls);
/* A closed scope, kept up to the event cap (-ENOSPC past it, counted). */
int launch_store__add_range(struct launch_store *ls, const struct launch_range *r);
size_t launch_store__nr_ranges(const struct launch_store *ls);
const struct launch_range *launch_store__ranges(const struct launch_store *ls);
/* Waits in arrival order; valid until the next add. */
const struct launch_wait *launch_store__waits(const struct launch_store *ls);
/* The same for the returns of allocating calls (XSPROF_REC_CUDA_ALLOC, already validated). */
int launch_store__add_alloc(struct launch_store *ls, const struct xsprof_cuda_wait *w);
size_t launch_store__nr_allocs(const struct launch_store *ls);
const struct launch_wait *launch_store__allocs(const struct launch_store *ls);

/* Visit every distinct stack in insertion order; stops at and returns fn's first non-zero. */
int launch_store__for_each(const struct launch_store *ls,
			   int (*fn)(void *ctx, const struct launch_stack *s), void *ctx);
size_t launch_store__nr_stacks(const struct launch_store *ls);
/* Stack i (0 <= i < nr_stacks) into ret; -ERANGE otherwise. */
int launch_store__stack(const struct launch_store *ls, size_t i, struct launch_stack *ret);

size_t launch_store__nr_events(const struct launch_store *ls);
/* Events in arrival order (per CPU in time order); valid until the next add. */
const struct launch_event *launch_store__events(const struct launch_store *ls);

void launch_store__stats(const struct launch_store *ls, struct launch_store_stats *ret);

#endif
