/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * A CUDA launch loop calls the API from the same place again and again: the CUDA probes
 * (uprobe_cuda.bpf.c, usdt_launch.bpf.c) walk a thread's stack once and then reuse it while a
 * cheap check says it has not changed, sending a small record (struct xsprof_launch_reuse)
 * that the daemon counts under the thread's last walked stack. Counts stay exact: every call
 * is sent.
 *
 * The check. After a walk the thread keeps (per probe kind): the probe's site (the USDT's pc,
 * or the uprobe's return address), its stack pointer and rbp, a fingerprint of its innermost
 * Python frames (python_key: their addresses and instructions), and where the walk read its
 * first return addresses (LAUNCH_SLOTS_UPROBE of them for an entry uprobe, LAUNCH_SLOTS_USDT
 * for xsprof:launch), with their values. A later call reuses the stack when the site, sp, rbp
 * and Python frames are the same and those slots, read again (one read each instead of a
 * walk), still hold the same return addresses: the same innermost frames at the same places,
 * so a walk would have found the same ones. xsprof:launch fires inside CUPTI's callback, a
 * dozen frames of libcupti, libcuda and libcudart below the application's call that are the
 * same for every launch: with 8 slots a real GPU showed the launches of one function reusing the
 * stack of another called at the same depth (tests/gpu/RESULTS.md), so it checks 32.
 *
 * When it can be wrong: when a caller further out than those frames changed while all of them
 * stayed the same (one function called at the same depth, through the same innermost callers
 * and Python frames, from another place further out). A walk at least every REUSE_MAX_NS per
 * thread bounds how long such a change goes unseen. Walks, reuses and each kind of miss are
 * counted (struct xsprof_launch_reuse_stats).
 */
#ifndef XSPROF_BPF_LAUNCH_REUSE_BPF_H
#define XSPROF_BPF_LAUNCH_REUSE_BPF_H

#include "xsprof_events.h"
#include "unwind.bpf.h"

#ifdef XSPROF_CUDA_MAPS_OWNER
#define XSPROF_REUSE_LINKAGE
#else
#define XSPROF_REUSE_LINKAGE __weak
#endif

#define REUSE_MAX_NS (10 * 1000 * 1000)
/* Slots kept: an entry uprobe's first callers are the application's; xsprof:launch's first
 * are CUDA's own (see above). At most UNWIND_TRACE_SLOTS. */
#define LAUNCH_SLOTS_UPROBE 8
#define LAUNCH_SLOTS_USDT   XSPROF_LAUNCH_SLOTS_USDT

struct launch_cache {
	__u64 site, sp, bp, pykey;
	__u64 walked_ns;
	__u64 slot[UNWIND_TRACE_SLOTS];
	__u64 val[UNWIND_TRACE_SLOTS];
	__u32 nr; /* slots kept; 0: nothing to reuse */
	__u32 pad;
};

/* Per thread: [0] the uprobes' last walked stack, [1] the USDT's. */
struct launch_caches {
	struct launch_cache k[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct launch_caches);
} launch_caches SEC(".maps") XSPROF_REUSE_LINKAGE;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xsprof_launch_reuse_stats);
} launch_reuse_stats SEC(".maps") XSPROF_REUSE_LINKAGE;

/* The current thread's cache of kind (enum xsprof_launch_kind), or NULL. */
static __always_inline struct launch_cache *launch__cache(int kind)
{
	struct launch_caches *c = bpf_task_storage_get(&launch_caches, bpf_get_current_task_btf(),
						       0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!c)
		return NULL;
	barrier_var(c); /* the offset added after the null check, where the verifier wants it */
	return &c->k[kind == XSPROF_LAUNCH_USDT];
}

/* Whether the stack of this call is the cached one (see above); counts the misses. */
static __always_inline bool launch__same(struct launch_cache *c, __u64 site, __u64 sp, __u64 bp,
					 __u64 pykey, __u64 now,
					 struct xsprof_launch_reuse_stats *st)
{
	__u64 v;

	if (!c->nr)
		return false;
	if (c->site != site || c->sp != sp || c->bp != bp || c->pykey != pykey) {
		st->miss_key++;
		return false;
	}
	if (now - c->walked_ns > REUSE_MAX_NS) {
		st->miss_age++;
		return false;
	}
	for (int j = 0; j < UNWIND_TRACE_SLOTS; j++) {
		if (j >= c->nr)
			break;
		if (bpf_probe_read_user(&v, sizeof(v), (void *)c->slot[j]) || v != c->val[j]) {
			st->miss_slots++;
			return false;
		}
	}
	return true;
}

/* After a walk whose record was sent: its key, and its first callers (callers[0, n)) with
 * where they were read (trace). untraced: one was not read from a slot: nothing to reuse. */
static __always_inline void launch__keep(struct launch_cache *c, __u64 site, __u64 sp, __u64 bp,
					 __u64 pykey, __u64 now, const __u64 *trace,
					 const __u64 *callers, long n, __u32 untraced, long slots)
{
	c->nr = 0;
	if (untraced || !trace || n <= 0)
		return;
	if (n > slots)
		n = slots;
	if (n > UNWIND_TRACE_SLOTS)
		n = UNWIND_TRACE_SLOTS;
		/* Unrolled: each store at a constant offset. Left to itself clang may make this a loop
	 * counting down from n, whose bound Linux 6.1's verifier loses. */
#pragma unroll
	for (int j = 0; j < UNWIND_TRACE_SLOTS; j++) {
		if (j >= n)
			break;
		c->slot[j] = trace[j];
		c->val[j] = callers[j];
	}
	c->site = site;
	c->sp = sp;
	c->bp = bp;
	c->pykey = pykey;
	c->walked_ns = now;
	c->nr = (__u32)n;
}

/* The small record of a reused stack; 0, or -1 (the cache is dropped: the next call walks,
 * so that the daemon's last stack of the thread stays this one). */
static __always_inline int launch__send_reuse(struct launch_cache *c, __u32 tgid, __u32 tid,
					      int kind, __u32 api, __u16 flags, __u64 now,
					      __u64 arg, __u64 rb_flags,
					      struct xsprof_launch_reuse_stats *st)
{
	/* Written in place, not built on the BPF stack and copied. */
	struct xsprof_launch_reuse *r = bpf_ringbuf_reserve(&samples, sizeof(*r), 0);

	if (!r) {
		c->nr = 0;
		st->reuse_drops++;
		return -1;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->type = XSPROF_REC_LAUNCH_REUSE;
	r->tgid = tgid;
	r->tid = tid;
	r->kind = (__u16)kind;
	r->flags = flags;
	r->time_ns = now;
	r->arg = arg;
	r->api = api;
	bpf_ringbuf_submit(r, rb_flags);
	st->reused++;
	return 0;
}

#endif
