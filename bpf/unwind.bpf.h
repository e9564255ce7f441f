/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * User stacks through code without frame pointers: a walk driven by the unwind tables that
 * daemon/unwind compiles from each mapped file's .eh_frame (struct xsprof_unwind_row in
 * xsprof_events.h), with the frame-pointer step where a mapping has no table.
 *
 * Per frame: the process's executable mappings (unwind_procs[tgid], sorted) are binary-searched
 * for pc, then the mapping's rows for the last row at or below pc - bias (pc - 1 for a return
 * address: a call can be a function's last instruction). The row gives the CFA (the caller's
 * stack pointer); the return address is at CFA - 8 and, when the row says so, the caller's rbp
 * at CFA + rbp_off. A row that says "outermost" (_start, clone3: the return address is
 * undefined) ends the walk cleanly. The frames are stepped by bpf_loop (verified once), up to
 * the caller's limit; every way a walk ends is counted in unwind_stats.
 *
 * Design notes: one big array holds the rows of every table (array lookups are inlined by the
 * verifier, which a map-in-map per file would not give); the daemon allocates each file a range
 * of it. A process's mappings are one hash value (8 KiB, not preallocated): one lookup per
 * sample, none per frame.
 */
#ifndef XSPROF_UNWIND_BPF_H
#define XSPROF_UNWIND_BPF_H

#include "xsprof_events.h"

#ifdef XSPROF_SAMPLER_MAPS_OWNER
#define XSPROF_UNWIND_LINKAGE
#else
#define XSPROF_UNWIND_LINKAGE __weak
#endif

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE); /* the daemon writes tables straight into it */
	__uint(max_entries, 1);		   /* sized by the daemon before load */
	__type(key, __u32);
	__type(value, struct xsprof_unwind_row);
} unwind_rows SEC(".maps") XSPROF_UNWIND_LINKAGE;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1); /* sized by the daemon before load */
	__type(key, __u32);	/* tgid */
	__type(value, struct xsprof_unwind_proc);
} unwind_procs SEC(".maps") XSPROF_UNWIND_LINKAGE;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xsprof_unwind_stats);
} unwind_stats SEC(".maps") XSPROF_UNWIND_LINKAGE;

/* Offsets in the rt_sigframe at rsp inside __restore_rt (arch/x86/include/uapi/asm/sigcontext.h:
 * struct ucontext's uc_mcontext is at 40; rbp, rsp, rip at 80, 120, 128 in it). */
#define UNWIND_UC_RBP (40 + 80)
#define UNWIND_UC_RSP (40 + 120)
#define UNWIND_UC_RIP (40 + 128)

/* The registers a step needs, and what it learnt. */
struct unwind_regs {
	__u64 pc, sp, bp;
	__u32 exact;	/* pc is not a return address (the first frame, or after a signal frame) */
	__u32 used_cfi; /* 0 or 1: counters would be exact values the verifier checks one by one */
};

struct unwind_walk {
	__u64 *ips;
	const struct xsprof_unwind_proc *proc; /* NULL: frame pointers only */
	struct xsprof_unwind_stats *st;
	struct unwind_regs regs;
	__u32 idx, end; /* next slot of ips, and the limit (at most 2 * XSPROF_MAX_STACK_DEPTH) */
	__u32 mode;	/* enum xsprof_unwind_mode */
	__u32 pad;
};

/*
 * The binary searches are global functions: the verifier checks each once on its own, with
 * unknown arguments, instead of inside every state of the step callback that calls them (as
 * plain loops there it gave up after 1M instructions). Defined here: include this header in one
 * program file only.
 */

/* One bisection step over [lo, hi) per bpf_loop iteration: a bounded loop would have the
 * verifier follow both halves at every step (2^24 paths). */
struct unwind_search {
	const struct xsprof_unwind_proc *proc; /* NULL: search the rows */
	__u64 key;
	__u32 lo, hi;
};

static long unwind__bisect(__u32 i, void *arg)
{
	struct unwind_search *q = arg;
	const struct xsprof_unwind_row *r;
	__u64 at;
	__u32 mid;

	if (q->lo >= q->hi)
		return 1;
	mid = q->lo + ((q->hi - q->lo) >> 1);
	if (q->proc) {
		at = q->proc->maps[mid & (XSPROF_UNWIND_MAX_MAPS - 1)].start;
	} else {
		r = bpf_map_lookup_elem(&unwind_rows, &mid);
		if (!r) {
			q->lo = q->hi = 0;
			return 1;
		}
		at = r->pc;
	}
	if (at <= q->key)
		q->lo = mid + 1;
	else
		q->hi = mid;
	return 0;
}

/* 1 + the index of the mapping of proc holding pc, or 0. */
__noinline int unwind_map_index(const struct xsprof_unwind_proc *proc, __u64 pc)
{
	struct unwind_search q = {.proc = proc, .key = pc};
	__u32 n;

	if (!proc)
		return 0;
	n = proc->nr_maps;
	q.hi = n > XSPROF_UNWIND_MAX_MAPS ? XSPROF_UNWIND_MAX_MAPS : n;
	bpf_loop(9, unwind__bisect, &q, 0);
	if (!q.lo || q.lo > XSPROF_UNWIND_MAX_MAPS ||
	    pc >= proc->maps[(q.lo - 1) & (XSPROF_UNWIND_MAX_MAPS - 1)].end)
		return 0;
	return q.lo;
}

/* 1 + the index in unwind_rows of the last row of [first, first + count) at or below key,
 * or 0. */
__noinline __s64 unwind_row_index(__u32 first, __u32 count, __u32 key)
{
	struct unwind_search q = {.proc = NULL, .key = key, .lo = first, .hi = first + count};

	bpf_loop(24, unwind__bisect, &q, 0);
	return q.lo > first ? q.lo : 0;
}

/* The mapping of proc holding pc, or NULL. */
static __always_inline const struct xsprof_unwind_map *
unwind__find_map(const struct xsprof_unwind_proc *proc, __u64 pc)
{
	int i = unwind_map_index(proc, pc);

	if (i <= 0)
		return NULL;
	return &proc->maps[(i - 1) & (XSPROF_UNWIND_MAX_MAPS - 1)];
}

/* The last row of m's table at or below vaddr, or NULL. */
static __always_inline const struct xsprof_unwind_row *
unwind__find_row(const struct xsprof_unwind_map *m, __u64 vaddr)
{
	__s64 i;
	__u32 key;

	if (vaddr > 0xffffffffull)
		return NULL;
	i = unwind_row_index(m->row_first, m->row_count, (__u32)vaddr);
	if (i <= 0)
		return NULL;
	key = (__u32)(i - 1);
	return bpf_map_lookup_elem(&unwind_rows, &key);
}

/*
 * The two kinds of step are global functions too, for the same reason: the bpf_loop step that
 * calls them stays small enough for the verifier to check in a few passes (as inline code the
 * sampler took 0.8 s to load).
 */

/* One step through the frame-pointer chain: 0, or 1 when the chain ends. */
__noinline int unwind_fp_step(struct unwind_regs *w, struct xsprof_unwind_stats *st)
{
	__u64 fr[2];

	if (!w || !st)
		return 1;
	if (w->bp < w->sp || (w->bp & 7)) {
		st->end_fp_chain++;
		return 1;
	}
	if (bpf_probe_read_user(fr, sizeof(fr), (void *)w->bp)) {
		st->end_fp_chain++;
		return 1;
	}
	barrier_var(fr[0]);
	barrier_var(fr[1]);
	if (!fr[1]) {
		st->end_fp_chain++;
		return 1;
	}
	w->sp = w->bp + 16;
	w->pc = fr[1];
	w->bp = fr[0];
	w->exact = 0;
	st->frames_fp++;
	return 0;
}

/* One step by a table row: 0, 1 when the walk ends, -1 to try the frame-pointer step. */
__noinline int unwind_row_step(const struct xsprof_unwind_row *r, struct unwind_regs *w,
			       struct xsprof_unwind_stats *st)
{
	__u64 cfa, ra, bp, fr[2];
	__s32 off, rbp_off;

	if (!r || !w || !st)
		return -1;
	bp = w->bp;
	off = r->cfa_off;
	rbp_off = r->rbp_off * 8;
	switch (r->type) {
	case XSPROF_CFA_OUTERMOST:
		st->end_outermost++;
		return 1;
	case XSPROF_CFA_SIGNAL:
		if (bpf_probe_read_user(&bp, 8, (void *)(w->sp + UNWIND_UC_RBP)) ||
		    bpf_probe_read_user(fr, 16, (void *)(w->sp + UNWIND_UC_RSP))) {
			st->end_unreadable++;
			return 1;
		}
		st->signal_frames++;
		st->frames_cfi++;
		w->bp = bp;
		w->sp = fr[0];
		w->pc = fr[1];
		w->exact = 1;
		w->used_cfi = 1;
		return w->pc ? 0 : 1;
	case XSPROF_CFA_RSP:
		cfa = w->sp + off;
		break;
	case XSPROF_CFA_RBP:
		cfa = w->bp + off;
		break;
	case XSPROF_CFA_PLT:
		cfa = w->sp + 8 + ((w->pc & 15) >= (__u64)off ? 8 : 0);
		break;
	case XSPROF_CFA_DEREF_RBP:
		if (bpf_probe_read_user(&cfa, 8, (void *)(w->bp + off))) {
			st->end_unreadable++;
			return 1;
		}
		break;
	default:
		return -1;
	}
	if (cfa <= w->sp || (cfa & 7)) {
		st->end_bad_cfa++;
		return 1;
	}
	if (rbp_off == -16) {
		/* The usual prologue: push rbp right after the call, one read for both. */
		if (bpf_probe_read_user(fr, 16, (void *)(cfa - 16))) {
			st->end_unreadable++;
			return 1;
		}
		barrier_var(fr[0]);
		barrier_var(fr[1]);
		bp = fr[0];
		ra = fr[1];
	} else {
		if (bpf_probe_read_user(&ra, 8, (void *)(cfa - 8))) {
			st->end_unreadable++;
			return 1;
		}
		if (rbp_off && bpf_probe_read_user(&bp, 8, (void *)(cfa + rbp_off))) {
			st->end_unreadable++;
			return 1;
		}
	}
	if (!ra) {
		/* Thread entry code that marks no rule ends its chain with a zero. */
		st->end_outermost++;
		return 1;
	}
	w->sp = cfa;
	w->pc = ra;
	w->bp = bp;
	w->exact = 0;
	w->used_cfi = 1;
	st->frames_cfi++;
	return 0;
}

static long unwind__step(__u32 i, void *arg)
{
	struct unwind_walk *w = arg;
	const struct xsprof_unwind_map *m = NULL;
	const struct xsprof_unwind_row *r = NULL;
	/* The mask widens what the verifier knows of idx to [0, 255] at once: a range that
	 * shifts by one per frame would have it check the step once per frame. */
	__u32 idx = w->idx & 0xff;
	__u64 pc = w->regs.pc;
	int ret = -1;

	if (idx >= w->end || idx >= 2 * XSPROF_MAX_STACK_DEPTH) {
		w->st->end_depth++;
		return 1;
	}
	if (w->proc)
		m = unwind__find_map(w->proc, pc);
	if (m && m->row_count) {
		r = unwind__find_row(m, (w->regs.exact ? pc : pc - 1) - m->bias);
		ret = unwind_row_step(r, &w->regs, w->st);
		if (ret > 0)
			return 1;
		if (ret < 0 && w->mode == XSPROF_UNWIND_CFI) {
			w->st->end_invalid++;
			return 1;
		}
	} else if (w->mode == XSPROF_UNWIND_CFI) {
		w->st->end_no_table++;
		return 1;
	}
	if (ret < 0 && unwind_fp_step(&w->regs, w->st))
		return 1;
	w->ips[idx] = w->regs.pc;
	w->idx = idx + 1;
	return 0;
}

/*
 * Walk from the interrupted (pc, sp, bp) of a frame already stored at ips[first - 1], storing
 * the callers at ips[first], ... below ips[end] (end <= 2 * XSPROF_MAX_STACK_DEPTH). proc may
 * be NULL (frame pointers only). Returns how many were stored; needs bpf_loop (Linux 5.17).
 */
static __always_inline long unwind__walk(__u64 *ips, __u32 first, __u32 end,
					 const struct xsprof_unwind_proc *proc, __u32 mode,
					 __u64 pc, __u64 sp, __u64 bp)
{
	__u32 zero = 0;
	struct unwind_walk w = {
		.ips = ips,
		.proc = proc,
		.regs = {.pc = pc, .sp = sp, .bp = bp, .exact = 1},
		.idx = first,
		.end = end,
		.mode = mode,
	};

	w.st = bpf_map_lookup_elem(&unwind_stats, &zero);
	if (!w.st)
		return 0;
	bpf_loop(2 * XSPROF_MAX_STACK_DEPTH, unwind__step, &w, 0);
	if (w.regs.used_cfi)
		w.st->walks_cfi++;
	else
		w.st->walks_fp++;
	return w.idx > first ? w.idx - first : 0;
}

#endif
