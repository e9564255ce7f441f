// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * The global functions of the table walk (unwind.bpf.h says why they are global), defined once
 * for every program that walks user stacks: the CPU sampler, the CUDA uprobes, the USDT probe.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "xsprof_events.h"
#include "unwind.bpf.h"

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

char LICENSE[] SEC("license") = "Dual BSD/GPL";
