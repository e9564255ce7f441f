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
	__uint(max_entries, 1); /* sized by the daemon before load; written by batched updates */
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
 * The binary searches and the two kinds of step are global functions, defined once in
 * unwind.bpf.c: the verifier checks each on its own with unknown arguments, instead of inside
 * every state of the step callback that calls them (as plain loops it gave up after 1M
 * instructions; as inline code the sampler took 0.8 s to load). Every program file that walks
 * stacks includes this header; the linker joins the calls to the one definition.
 */
/* 1 + the index of the mapping of proc holding pc, or 0. */
__noinline int unwind_map_index(const struct xsprof_unwind_proc *proc, __u64 pc);
/* 1 + the index in unwind_rows of the last row of [first, first + count) at or below key,
 * or 0. */
__noinline __s64 unwind_row_index(__u32 first, __u32 count, __u32 key);
/* One step through the frame-pointer chain: 0, or 1 when the chain ends. */
__noinline int unwind_fp_step(struct unwind_regs *w, struct xsprof_unwind_stats *st);
/* One step by a table row: 0, 1 when the walk ends, -1 to try the frame-pointer step. */
__noinline int unwind_row_step(const struct xsprof_unwind_row *r, struct unwind_regs *w,
			       struct xsprof_unwind_stats *st);

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
 * be NULL (frame pointers only). exact: pc is where the thread is, not a return address. Returns how many were stored; needs bpf_loop (Linux 5.17).
 */
static __always_inline long unwind__walk(__u64 *ips, __u32 first, __u32 end,
					 const struct xsprof_unwind_proc *proc, __u32 mode,
					 __u64 pc, __u64 sp, __u64 bp, __u32 exact)
{
	__u32 zero = 0;
	struct unwind_walk w = {
		.ips = ips,
		.proc = proc,
		.regs = {.pc = pc, .sp = sp, .bp = bp, .exact = exact},
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

/*
 * A probe's user stack (the CUDA uprobes, the USDT probe) from (pc, sp, bp; exact as for
 * unwind__walk), callers stored from ips[*nr] (0 or 1: the slots already filled) up to XSPROF_MAX_STACK_DEPTH slots: the table walk where the daemon loaded tgid's tables and mode is
 * not fp; -1 otherwise (the probe walks frame pointers as before). ips must have room up to
 * index 2 * XSPROF_MAX_STACK_DEPTH in its map value (the probes' records are followed by
 * their stack window).
 */
static __always_inline long unwind__probe_walk(__u64 *ips, __u16 *nr, __u32 tgid, __u32 mode,
					       __u64 pc, __u64 sp, __u64 bp, __u32 exact)
{
	const struct xsprof_unwind_proc *proc;
	__u32 first;

	if (mode == XSPROF_UNWIND_FP)
		return -1;
	proc = bpf_map_lookup_elem(&unwind_procs, &tgid);
	if (!proc)
		return -1;
	/* The first slot comes through the record (*nr, in the map value): the verifier then
	 * knows a range, not a constant, and checks the step a few times, not once per frame. */
	/* Masked, not compared: a range as wide as the step's own mask converges at once. The
	 * step bounds every store at 2 * XSPROF_MAX_STACK_DEPTH, inside the probes' scratch. */
	first = *(volatile __u16 *)nr & 0xff;
	/* The limit from first too (a range as well): ips has XSPROF_MAX_STACK_DEPTH slots. */
	return unwind__walk(ips, first, first + XSPROF_MAX_STACK_DEPTH - 1, proc, mode, pc, sp, bp,
			    exact);
}

#endif
