/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * Frame-pointer walk of a user stack, as the kernel's perf_callchain_user() does, shared by the
 * CPU sampler and the CUDA probes. It stops at a zero, misaligned or non-increasing frame pointer
 * instead of reading it: thread entry frames hold 0 there (main holds 1), so the kernel's walk
 * (bpf_get_stack with BPF_F_USER_STACK) ends every stack with a read of address 0 and a page
 * fault, about 1 us per stack here.
 */
#ifndef XSPROF_BPF_USTACK_BPF_H
#define XSPROF_BPF_USTACK_BPF_H

#include "uret.bpf.h"

/*
 * Store the return addresses along the frame-pointer chain that starts at fp into ips[first],
 * ips[first + 1], ... while the index stays below end (a constant once inlined, which bounds
 * the index for the verifier), at most XSPROF_MAX_STACK_DEPTH - 1 of them. sp is the innermost
 * stack pointer: a frame pointer below it is not one. Returns how many were stored.
 */
static __always_inline long ustack__walk_fp(__u64 *ips, long first, long end, __u64 fp, __u64 sp)
{
	long n = 0;

	for (int i = 0; i < XSPROF_MAX_STACK_DEPTH - 1; i++) {
		struct {
			__u64 next, ret;
		} fr;
		long idx = first + i;

		if (fp < sp || (fp & 7) || idx >= end)
			break;
		if (bpf_probe_read_user(&fr, sizeof(fr), (void *)fp))
			break;
		if (!fr.ret)
			break;
		ips[idx] = fr.ret;
		n++;
		if (fr.next <= fp)
			break;
		fp = fr.next;
	}
	return n;
}

/*
 * The same walk driven by bpf_loop() (Linux 5.17), for records whose ips[] has exactly
 * XSPROF_MAX_STACK_DEPTH entries: the verifier checks the step once instead of every
 * iteration, which makes the program load in a millisecond rather than ~70 ms; the kernel
 * inlines the loop, so it runs as fast. Kernels without bpf_loop get ustack__walk_fp.
 *
 * With a window (the USTACK_WINDOW bytes above sp, read at once: win may be NULL), frames in
 * it are taken from it: each bpf_probe_read_user costs ~0.1 us here, far more than copying a
 * few hundred bytes more, and the first frames above a probe are usually close together.
 */
#define USTACK_WINDOW 1024

struct ustack_walk {
	__u64 *ips;
	const __u64 *win;
	__u64 fp, sp;
	__u64 tramp; /* uret.bpf.h */
	__u32 idx, n;
	__u32 end; /* enum xsprof_walk_end: why the chain ended */
};

/* A chain that stops at frame pointer fp: a zero one is the root's (_start and clone clear
 * rbp), any other stop is before it. */
static __always_inline __u32 ustack__end_at(__u64 fp)
{
	return fp ? XSPROF_END_FP_BROKEN : XSPROF_END_ROOT;
}

static long ustack__step(__u32 i, void *arg)
{
	struct ustack_walk *w = arg;
	__u64 fr[2], next, ret, k = (w->fp - w->sp) >> 3;
	__u32 idx = w->idx;

	if (w->fp < w->sp || (w->fp & 7)) {
		w->end = ustack__end_at(w->fp);
		return 1;
	}
	if (idx >= XSPROF_MAX_STACK_DEPTH) {
		w->end = XSPROF_END_DEPTH;
		return 1;
	}
	if (w->win && k < USTACK_WINDOW / 8 - 1) {
		next = w->win[k];
		ret = w->win[k + 1];
	} else {
		if (bpf_probe_read_user(fr, sizeof(fr), (void *)w->fp)) {
			w->end = XSPROF_END_FP_BROKEN;
			return 1;
		}
		next = fr[0];
		ret = fr[1];
	}
	/* Two loads of one name: keep clang from merging them into one through a pointer to
	 * either place, which this kernel's verifier mis-tracks in a callback. */
	barrier_var(next);
	barrier_var(ret);
	if (!ret) {
		w->end = XSPROF_END_ROOT;
		return 1;
	}
	if (w->tramp && ret == w->tramp)
		ret = unwind_uret_orig(w->fp + 8, w->tramp);
	w->ips[idx] = ret;
	w->idx = idx + 1;
	w->n++;
	if (next <= w->fp) {
		w->end = ustack__end_at(next);
		return 1;
	}
	w->fp = next;
	return 0;
}

static __always_inline long ustack__walk_fp_loop(__u64 *ips, __u32 first, __u64 fp, __u64 sp,
						 const __u64 *win, __u8 *ret_end)
{
	struct ustack_walk w = {.ips = ips,
				.win = win,
				.fp = fp,
				.sp = sp,
				.tramp = uret__tramp(bpf_get_current_task_btf()),
				.idx = first,
				/* The iterations can run out before the chain does (every other
				 * stop sets its own): the depth cap. */
				.end = XSPROF_END_DEPTH};

	if (!bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_loop))
		return ustack__walk_fp(ips, first, XSPROF_MAX_STACK_DEPTH, fp, sp);
	bpf_loop(XSPROF_MAX_STACK_DEPTH - 1, ustack__step, &w, 0);
	/* No branch on w.end: its value is unknown to the verifier here, and a branch would have
	 * it walk the rest of the caller twice. */
	if (ret_end)
		*ret_end = (__u8)w.end;
	/* The verifier does not know what the step left in w.n. */
	return w.n < XSPROF_MAX_STACK_DEPTH - first ? w.n : XSPROF_MAX_STACK_DEPTH - first;
}

#endif
