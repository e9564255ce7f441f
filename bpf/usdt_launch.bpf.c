// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * USDT xsprof:launch(corr_id, api) in libxsprof_cupti.so: the CUPTI correlation id of a launch
 * with the user stack that made it, for exact correlation with the GPU's activity records.
 * Sorts after sampler.bpf.c and uprobe_cuda.bpf.c, whose maps it shares (see there why).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
/* One spec per attached library and process: this many processes with the library at once. */
#define BPF_USDT_MAX_SPEC_CNT 1024
#include <bpf/usdt.bpf.h>
#include "xsprof_events.h"
#include "shared_maps.bpf.h"
#include "cuda_maps.bpf.h"
#include "pidns.bpf.h"
#include "filters.bpf.h"
#include "ustack.bpf.h"
#include "unwind.bpf.h"
#include "python.bpf.h"
#include "launch_reuse.bpf.h"

extern bool pid_filter_on;
extern bool python_on;
extern __u32 launch_stack_mask;
extern bool cuda_calls_shed;
extern const volatile __u32 unwind_mode;
extern const volatile __u64 wakeup_bytes;

/* The record, the top of the stack read at once (ustack.bpf.h says why), and where the walk
 * read its first callers (launch_reuse.bpf.h). */
struct usdt_scratch {
	struct xsprof_usdt_launch rec;
	__u64 win[USTACK_WINDOW / 8];
	__u64 trace[UNWIND_TRACE_SLOTS];
	struct xs_unwind_state walk;
	long corr, api;	  /* the probe's arguments */
	__u64 now, pykey; /* usdt_launch's, see there */
	__u32 pytid, untraced;
	__u32 slot;		 /* which of the two (its region of unwind_row_cache) */
	__u8 fp_end, pad_end[3]; /* why a frame-pointer walk ended (XSPROF_END_*) */
	__u64 busy;		 /* held by a run (compare-and-swap) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2); /* as uprobe_cuda.bpf.c's cuda_scratch */
	__type(key, __u32);
	__type(value, struct usdt_scratch);
} usdt_scratch SEC(".maps");

static __always_inline struct usdt_scratch *scratch_take(void)
{
	for (__u32 i = 0; i < 2; i++) {
		__u32 k = i;
		struct usdt_scratch *s = bpf_map_lookup_elem(&usdt_scratch, &k);

		if (s && __sync_val_compare_and_swap(&s->busy, 0, 1) == 0) {
			s->slot = i;
			return s;
		}
	}
	return NULL;
}

extern bool cuda_stop_processes;

/* Threads that already sent a record: a thread's first one wakes the reader. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u32);
} usdt_threads SEC(".maps");

static __noinline int send_held(struct xsprof_usdt_launch *r, struct xsprof_cuda_stats *st)
{
	struct xsprof_usdt_launch *e = bpf_ringbuf_reserve(&samples, sizeof(*e), 0);

	if (!e) {
		st->usdt_drop++;
		return 0;
	}
	if (bpf_probe_read_kernel(e, sizeof(*e), r)) {
		bpf_ringbuf_discard(e, 0);
		st->usdt_drop++;
		return 0;
	}
	if (!xsprof_stop_self(e->tgid))
		e->flags |= XSPROF_CUDA_F_STOPPED;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	st->usdt_emitted++;
	return 0;
}

/* Whether this firing is recorded: a watched process, its owner's budget, --max-cpu's
 * shedding (as in uprobe_cuda.bpf.c); *ret_sampled: XSPROF_CUDA_F_SAMPLED when shedding. */
static __always_inline bool usdt_admitted(struct xsprof_cuda_stats *st, struct task_struct *task,
					  __u32 tgid, __u16 *ret_sampled)
{
	if (pid_filter_on && !bpf_map_lookup_elem(&pid_filter, &tgid)) {
		st->filtered++;
		return false;
	}
	if (!xsprof_owner_pass(task, XSPROF_OWNER_USDT))
		return false;
	if (launch_stack_mask) {
		if (bpf_get_prandom_u32() & launch_stack_mask) {
			st->stacks_shed++;
			return false;
		}
		*ret_sampled = XSPROF_CUDA_F_SAMPLED;
	}
	return true;
}

/* The record's user stack: the probe site, then the firing function's own frame outward, by
 * the unwind tables, or by frame pointers where that walk cannot go. */
static __always_inline void usdt_walk(struct pt_regs *ctx, struct usdt_scratch *scr, __u32 tgid)
{
	struct xsprof_usdt_launch *r = &scr->rec;
	const __u64 *win;
	long n;

	r->ips[0] = PT_REGS_IP(ctx);
	r->nr_user = 1;
	n = unwind__probe_walk(&scr->walk, r->ips, &r->nr_user, tgid, unwind_mode, PT_REGS_IP(ctx),
			       PT_REGS_SP(ctx), PT_REGS_FP(ctx), 1, scr->trace, &scr->untraced,
			       UNWIND_CACHE_USDT + (scr->slot & 1));
	r->flags = 0;
	if (n >= 0 && n < XSPROF_MAX_STACK_DEPTH) {
		r->nr_user = 1 + n;
		r->flags = (__u16)(UNWIND_END_OF(scr->walk.regs.flags) << XSPROF_CUDA_F_END_SHIFT);
	} else {
		scr->untraced = 1;
		win = bpf_probe_read_user(scr->win, sizeof(scr->win), (void *)PT_REGS_SP(ctx))
			      ? NULL
			      : scr->win;
		scr->fp_end = XSPROF_END_NONE;
		r->nr_user = 1 + ustack__walk_fp_loop(r->ips, 1, PT_REGS_FP(ctx), PT_REGS_SP(ctx),
						      win, &scr->fp_end);
		r->flags |= (__u16)((scr->fp_end & 0xf) << XSPROF_CUDA_F_END_SHIFT);
	}
}

/* The walked record out: held for the daemon (a process's first, or a walk that asked for a
 * table), or into the ring; then kept in the thread's cache for the next launch's reuse. */
static __always_inline int usdt_send(struct pt_regs *ctx, struct usdt_scratch *scr,
				     struct task_struct *task, struct xsprof_cuda_stats *st,
				     struct xsprof_launch_reuse_stats *rst, struct launch_cache *c,
				     __u32 tgid, __u16 sampled)
{
	struct xsprof_usdt_launch *r = &scr->rec;
	__u32 *sent;
	__u8 one = 1;
	__u64 flags;
	long size;

	r->nr_python = 0;
	if (python_on && r->nr_user)
		r->nr_python = python_append_usdt(r, scr->pytid);
	size = XSPROF_USDT_LAUNCH_HDR_SIZE + (long)r->nr_user * 8 +
	       (long)r->nr_python * sizeof(struct xsprof_py_frame);
	/* Keep the bound on the register that is passed on (clang may clamp a copy). */
	barrier_var(size);
	if (size > sizeof(*r))
		size = sizeof(*r);
	barrier_var(size);
	sent = bpf_task_storage_get(&usdt_threads, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	r->flags |= (sent && !*sent ? XSPROF_CUDA_F_FIRST : 0) | sampled;
	/* A profiled process's first record (one of its threads' first): held like
	 * uprobe_cuda.bpf.c's send_held. */
	if (((r->flags & XSPROF_CUDA_F_FIRST) && cuda_stop_processes && pid_filter_on &&
	     !bpf_map_lookup_elem(&cuda_seen, &tgid) &&
	     !bpf_map_update_elem(&cuda_seen, &tgid, &one, BPF_NOEXIST)) ||
	    ((scr->untraced & UNWIND_OUT_ASKED) && cuda_stop_processes && pid_filter_on)) {
		/* ... and a launch whose walk asked for a table (uprobe_cuda.bpf.c says why). */
		if (scr->untraced & UNWIND_OUT_ASKED)
			r->flags |= XSPROF_CUDA_F_TABLES;
		if (sent)
			*sent = 1;
		return send_held(r, st);
	}
	flags = BPF_RB_NO_WAKEUP;
	if ((r->flags & XSPROF_CUDA_F_FIRST) ||
	    ((st->usdt_emitted & 15) == 0 &&
	     bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= wakeup_bytes))
		flags = BPF_RB_FORCE_WAKEUP;
	else if (r->nr_python && python__wake())
		flags = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&samples, r, size, flags)) {
		st->usdt_drop++;
		if (c)
			c->nr = 0;
		return 0;
	}
	if (sent)
		*sent = 1;
	st->usdt_emitted++;
	if (c && rst) {
		/* Callers from ips[1]: their slots are trace[0, ...). */
		launch__keep(c, PT_REGS_IP(ctx), PT_REGS_SP(ctx), PT_REGS_FP(ctx), scr->pykey,
			     scr->now, scr->trace, &r->ips[1], (long)r->nr_user - 1, scr->untraced,
			     LAUNCH_SLOTS_USDT);
		rst->walked++;
	}
	return 0;
}

static __always_inline int usdt_launch(struct pt_regs *ctx, struct usdt_scratch *scr)
{
	__u64 pid_tgid = xsprof_ids();
	__u32 zero = 0, tgid = pid_tgid >> 32;
	struct xsprof_cuda_stats *st = bpf_map_lookup_elem(&cuda_stats, &zero);
	struct xsprof_launch_reuse_stats *rst = bpf_map_lookup_elem(&launch_reuse_stats, &zero);
	struct task_struct *task = bpf_get_current_task_btf();
	/* The site, sp and bp are read from ctx where used, the rest kept in the scratch (not
	 * in spilled registers): this frame is the first of every chain the program has. */
	struct launch_cache *c = NULL;
	struct xsprof_usdt_launch *r;
	__u16 sampled = 0;
	__u64 flags;

	if (!st || !pid_tgid) /* 0: outside the daemon's pid namespace */
		return 0;
	st->usdt_fired++;
	if (!usdt_admitted(st, task, tgid, &sampled))
		return 0;
	if (!scr) {
		st->scratch_busy++;
		return 0;
	}
	r = &scr->rec;
	/* Read into the scratch: two fewer slots of the BPF stack. */
	scr->corr = 0;
	scr->api = 0;
	if (bpf_usdt_arg(ctx, 0, &scr->corr) || bpf_usdt_arg(ctx, 1, &scr->api)) {
		st->usdt_drop++;
		return 0;
	}
	scr->now = bpf_ktime_get_ns();
	scr->pykey = 0;
	scr->pytid = 0;
	scr->untraced = 1;
	/* The stack of the thread's last launch, if a cheap check proves it unchanged. */
	if (python_on) {
		scr->pytid = python__own_tid(task);
		scr->pykey = python_key(tgid, scr->pytid);
	}
	c = rst ? launch__cache(XSPROF_LAUNCH_USDT) : NULL;
	if (c && rst &&
	    launch__same(c, PT_REGS_IP(ctx), PT_REGS_SP(ctx), PT_REGS_FP(ctx), scr->pykey, scr->now,
			 rst)) {
		flags = BPF_RB_NO_WAKEUP;
		if ((st->usdt_emitted & 15) == 0 &&
		    bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
			flags = BPF_RB_FORCE_WAKEUP;
		if (launch__send_reuse(c, tgid, (__u32)pid_tgid, XSPROF_LAUNCH_USDT,
				       (__u32)scr->api, sampled, scr->now, (__u64)scr->corr, flags,
				       rst)) {
			st->usdt_drop++;
			return 0;
		}
		st->usdt_emitted++;
		return 0;
	}
	r->type = XSPROF_REC_USDT_LAUNCH;
	r->tgid = tgid;
	r->tid = (__u32)pid_tgid;
	r->api = (__u32)scr->api;
	r->time_ns = scr->now;
	r->corr_id = (__u64)scr->corr;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	r->user_err = 0;
	usdt_walk(ctx, scr, tgid);
	return usdt_send(ctx, scr, task, st, rst, c, tgid, sampled);
}

/* One run in XSPROF_TIMED_EVERY is timed: what a launch costs, said by the daemon. */
SEC("usdt")
int xsprof_usdt_launch(struct pt_regs *ctx)
{
	__u32 zero = 0;
	struct xsprof_cuda_stats *st = bpf_map_lookup_elem(&cuda_stats, &zero);
	struct xsprof_launch_reuse_stats *rst;
	struct usdt_scratch *scr;
	bool timed;
	__u64 t0;

	/* --max-cpu shed the calls: counted, at the least cost (uprobe_cuda.bpf.c). */
	if (cuda_calls_shed) {
		if (st)
			st->calls_shed++;
		return 0;
	}
	rst = bpf_map_lookup_elem(&launch_reuse_stats, &zero);
	timed = st && rst && !(st->usdt_fired & (XSPROF_TIMED_EVERY - 1));
	t0 = timed ? bpf_ktime_get_ns() : 0;
	scr = scratch_take();

	usdt_launch(ctx, scr);
	if (scr)
		scr->busy = 0;
	if (timed && rst) {
		rst->timed++;
		rst->timed_ns += bpf_ktime_get_ns() - t0;
	}
	return 0;
}
