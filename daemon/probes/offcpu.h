/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Off-CPU time (bpf/offcpu.bpf.c): attaches the sched_switch program of a sampler loaded with
 * sampler_opts.offcpu, keeps the stack of each (thread, stack) key as it arrives, and at the end
 * reads the time the kernel summed per key into a stack table whose counts are microseconds.
 */
#ifndef XSPROF_DAEMON_PROBES_OFFCPU_H
#define XSPROF_DAEMON_PROBES_OFFCPU_H

#include <stdint.h>
#include <sys/types.h>

struct offcpu;
struct sampler;
struct stack_table;
struct unwinder;
struct xsprof_sample;

/* The symbolizer generation of tgid now (a stack is named in the image it blocked in). */
typedef uint32_t (*offcpu_gen_fn)(void *ctx, pid_t tgid);

struct offcpu_stats {
	uint64_t switches, blocks, below_min, new_stacks; /* BPF counters, summed over CPUs */
	uint64_t agg_full, drop_ringbuf, start_full, ustack_err;
	uint64_t keys;	       /* keys read at the end */
	uint64_t keys_lost;    /* ... whose stack never arrived: counted without it */
	uint64_t ns;	       /* off-CPU time read */
	uint64_t pending_full; /* stacks not kept: max_stacks reached (their time is counted
				* without the stack) */
	uint64_t held;	       /* stacks of processes not loaded yet, walked by the unwinder */
	/* --wakers: */
	uint64_t wakeups, waits, wait_lost; /* BPF counters (xsprof_offcpu_stats) */
	uint64_t wake_irq; /* stretches woken from an interrupt (a watched waker's stack says so,
			      or a nanosleep's waker is not watched): no thread blamed (at collect) */
	uint64_t waits_dropped;	   /* wait records not kept: OFFCPU_MAX_WAITS reached */
	uint64_t waits_chained;	   /* stretches charged to their wakers' chain */
	uint64_t waits_unchained;  /* ... left under their own stack (no thread woke them, or
				      their stack is not here) */
	uint64_t chain_hops;	   /* hops in those chains */
	uint64_t chain_names_full; /* waker frames left out: the frame name table is full */
	uint64_t chains_untimed;   /* chains the timeline did not keep (its cap): the GPU
				      report does not follow them */
};

/* Woken stretches kept for the chains at most (64 bytes each). */
#define OFFCPU_MAX_WAITS (1u << 20)
/* Hops a chain follows at most. */
#define OFFCPU_MAX_HOPS 8
/* A hop with Python frames keeps that many innermost native frames, then its Python ones. */
#define OFFCPU_HOP_NATIVE 4
/* A waker that ran at most this much CPU time between its own wakeup and the one it made passed
 * the wakeup on: the chain goes on to its own waker. */
#define OFFCPU_RELAY_NS (1000 * 1000)

/*
 * Attach to s (loaded with sampler_opts.offcpu). max_stacks caps the stacks kept here (0: the
 * kernel map's size). NULL with errno set.
 */
struct offcpu *offcpu__attach(struct sampler *s, offcpu_gen_fn gen, void *ctx, size_t max_stacks);
void offcpu__free(struct offcpu *oc);

/* Stacks of processes not loaded yet (XSPROF_REC_OFFCPU_HELD) are walked by uw. */
void offcpu__set_unwinder(struct offcpu *oc, struct unwinder *uw);
/*
 * --wakers (sampler loaded with sampler_opts.wakers): keep each woken stretch's record, and at
 * collect charge it to the chain of threads that woke it (its waker's stack where it woke it,
 * and on through wakers that only passed the wakeup on), naming their frames with sym;
 * stretches under min_ns are only kept for the chains, as their time is not counted.
 */
struct symbolizer;
int offcpu__set_wakers(struct offcpu *oc, struct symbolizer *sym, uint64_t min_ns);
/* Attach the program: once the pid filter is set, so that no other process gets in. */
int offcpu__start(struct offcpu *oc);
/* Detach it; stacks already queued can still be read. */
void offcpu__stop(struct offcpu *oc);

/*
 * A woken stretch as offcpu__collect charged it to its chain (--wakers), for the timelines: the
 * thread, when it waited, its stack there, and its hops, nearest first. A hop's stack is where
 * it woke the thread before it (NULL: not kept); run_ns is when the hop began running before
 * that, its own last wakeup (0: not seen, as for a thread not watched). The last hop did the
 * work. Valid during the call only.
 */
struct offcpu_hop {
	uint32_t tgid, tid;
	uint32_t gen;
	uint64_t wake_ns, run_ns;
	uint64_t cpu_ns; /* its CPU time when it woke it */
	const struct xsprof_sample *s;
};
struct offcpu_chain {
	uint32_t tgid, tid;
	uint32_t gen;
	uint64_t start_ns, end_ns;
	const struct xsprof_sample *s;
	const struct offcpu_hop *hops;
	size_t nr_hops;
};
/* fn (ctx) is given each stretch offcpu__collect charges to a chain: it returns 0, 1 when it
 * did not keep it (counted: chains_untimed), or an error, which ends the collect. */
void offcpu__on_chain(struct offcpu *oc, int (*fn)(void *ctx, const struct offcpu_chain *c),
		      void *ctx);

/* Read the kernel's sums into t, one count per microsecond. 0 or -errno. */
int offcpu__collect(struct offcpu *oc, struct stack_table *t);
void offcpu__stats(const struct offcpu *oc, struct offcpu_stats *ret_stats);

#endif
