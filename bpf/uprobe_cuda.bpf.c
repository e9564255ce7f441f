// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * CUDA API entry uprobes. One program serves every API: the attach cookie says which API fired
 * and where its stream argument lies (enum xsprof_cuda_stream_loc). The daemon attaches it per
 * process to the libcudart / libcuda that process maps, or system-wide by library path.
 *
 * This file sorts after sampler.bpf.c on purpose: bpftool (libbpf 1.1) links the objects in
 * that order, and its linker only merges a __weak map into a strong one defined earlier. The
 * license is sampler.bpf.c's, the one the linked object carries.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "xsprof_events.h"
#include "shared_maps.bpf.h"
#define XSPROF_CUDA_MAPS_OWNER
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

/* Flipped by the daemon at run time (mmapped .bss): stop profiled processes where the daemon
 * must act before they run on (see send_held, and watch.bpf.c). */
bool cuda_stop_processes = false;

/* A record is far over the 512-byte BPF stack: it is built in per-CPU scratch space, next to
 * the top of the caller's stack, read at once (ustack.bpf.h says why). */
struct cuda_scratch {
	struct xsprof_cuda_call rec;
	__u64 win[USTACK_WINDOW / 8];
	__u32 win_ok, pad_win;		 /* win holds the top of the stack (read whole) */
	__u64 trace[UNWIND_TRACE_SLOTS]; /* where the walk read its first callers */
	struct xs_unwind_state walk;
	__u64 args[8];	  /* arg_reg's choice */
	__u64 ret, pykey; /* cuda_call's, see there */
	__u32 pytid, untraced;
	__u32 slot;		 /* which of the two (its region of unwind_row_cache) */
	__u8 fp_end, pad_end[3]; /* why a frame-pointer walk ended (XSPROF_END_*) */
	__u64 busy;		 /* held by a run (compare-and-swap) */
};

/* Two slots per CPU: a launch probe can be preempted (it runs with migration, not preemption,
 * disabled), and another thread's probe then runs on the same CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct cuda_scratch);
} cuda_scratch SEC(".maps");

static __always_inline struct cuda_scratch *scratch_take(void)
{
	for (__u32 i = 0; i < 2; i++) {
		__u32 k = i;
		struct cuda_scratch *s = bpf_map_lookup_elem(&cuda_scratch, &k);

		if (s && __sync_val_compare_and_swap(&s->busy, 0, 1) == 0) {
			s->slot = i;
			return s;
		}
	}
	return NULL;
}

static __always_inline __u64 arg_reg(struct pt_regs *ctx, __u32 idx, __u64 *args)
{
	/* Each context field is loaded at a constant offset (the verifier refuses a computed
	 * one, which a switch or an if-chain compiles to); the choice is made in the scratch
	 * (args: 8 words of it, not the BPF stack), the index masked into it. r9 is the sixth
	 * integer argument, which bpf_tracing.h does not name. */
	args[0] = PT_REGS_PARM1(ctx);
	args[1] = PT_REGS_PARM2(ctx);
	args[2] = PT_REGS_PARM3(ctx);
	args[3] = PT_REGS_PARM4(ctx);
	args[4] = PT_REGS_PARM5(ctx);
	args[5] = ctx->r9;
	args[6] = 0;
	args[7] = 0;
	barrier_var(idx);
	return args[idx & 7];
}

/*
 * The stream argument as the cookie locates it; 0 with *flags set when there is none. A stack
 * argument is in the window already read (win, when win_ok: a flag beside a pointer that is
 * never NULL, as Linux 6.1's verifier cannot tie a NULL check kept in one spilled register to
 * the pointer kept in another).
 */
static __always_inline __u64 read_stream(struct pt_regs *ctx, __u64 cookie, __u64 sp,
					 const __u64 *win, __u32 win_ok, __u16 *flags, __u64 *args)
{
	__u32 loc = XSPROF_CUDA_COOKIE_LOC(cookie), idx = XSPROF_CUDA_COOKIE_IDX(cookie);
	__u64 v = 0, addr;

	switch (loc) {
	case XSPROF_CUDA_STREAM_REG:
		return arg_reg(ctx, idx, args);
	case XSPROF_CUDA_STREAM_STACK:
		if (win_ok && idx < USTACK_WINDOW / 8)
			return win[idx &
				   (USTACK_WINDOW / 8 - 1)]; /* the mask is for the verifier */
		addr = sp + 8 * (__u64)idx;
		break;
	case XSPROF_CUDA_STREAM_PTR:
		addr = arg_reg(ctx, idx, args) + XSPROF_CUDA_COOKIE_OFF(cookie);
		break;
	default:
		*flags |= XSPROF_CUDA_F_NO_STREAM;
		return 0;
	}
	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr)) {
		*flags |= XSPROF_CUDA_F_STREAM_ERR;
		return 0;
	}
	return v;
}

/*
 * Whether the outer call's frame is on the current frame-pointer chain: a probed function that
 * keeps a frame pushes rbp right under its return address, so inside it some frame pointer is
 * outer_sp - 8. Only frames below outer_sp are walked (a few, inside the CUDA libraries).
 */
static __always_inline bool inside_frame(__u64 fp, __u64 outer_sp)
{
	for (int i = 0; i < 32; i++) {
		if (fp == outer_sp - 8)
			return true;
		if (fp >= outer_sp || (fp & 7) || bpf_probe_read_user(&fp, sizeof(fp), (void *)fp))
			return false;
	}
	return false;
}

/*
 * Whether this entry belongs to a call already counted on this thread: the tail call of a
 * wrapper (same sp and return address, right after it), or a call made from inside the
 * outermost probed call (e.g. the runtime calling the driver): deeper sp, that call's return
 * address still in its slot, and its frame on the chain, which tells it from a new call made
 * lower in the caller's frame while the old slot happens to be intact. Otherwise this call
 * becomes the outermost one.
 */
static __always_inline bool nested_call(struct xsprof_call_mark *m, __u64 sp, __u64 ret, __u64 fp,
					bool wrapper, __u64 tramp)
{
	__u64 outer_ret;

	if (m->pending) {
		m->pending = 0;
		if (sp == m->sp && (ret == m->ret || (tramp && ret == tramp)))
			return true;
	}
	/* The outer call's slot holds the trampoline instead while its return probe is pending
	 * (the calls that wait or allocate have one: uret.bpf.h). */
	if (m->sp && sp < m->sp &&
	    !bpf_probe_read_user(&outer_ret, sizeof(outer_ret), (void *)m->sp) &&
	    (outer_ret == m->ret || (tramp && outer_ret == tramp)) && inside_frame(fp, m->sp))
		return true;
	m->sp = sp;
	m->ret = ret;
	m->pending = wrapper;
	return false;
}

/* The outermost call begins: a waiting one is timed until the return probe sees it end, an
 * allocating one until it reads the address the call wrote. */
static __always_inline void mark_wait(struct pt_regs *ctx, struct xsprof_call_mark *m, __u64 cookie,
				      const struct xsprof_cuda_call *r)
{
	struct xsprof_wait_stats *ws;
	__u32 zero = 0;

	m->wait_ns = 0;
	m->alloc_ns = 0;
	if (cookie & XSPROF_CUDA_COOKIE_ALLOC) {
		m->alloc_ns = r->time_ns;
		m->alloc_out = PT_REGS_PARM1(ctx);
		m->alloc_api = r->api;
		return;
	}
	if (!(cookie & XSPROF_CUDA_COOKIE_WAIT))
		return;
	m->wait_ns = r->time_ns;
	m->wait_stream = r->stream;
	m->wait_api = r->api;
	ws = bpf_map_lookup_elem(&wait_stats, &zero);
	if (ws)
		ws->entries++;
}

/*
 * A profiled process's first call: it is stopped (SIGSTOP, on its way back to user space) until
 * the daemon has read its mappings and sent SIGCONT, so that a process that makes a few calls
 * and exits still has its stacks named; the same for a call whose walk asked for a table
 * (XSPROF_CUDA_F_TABLES). Reserved first: only a process the daemon is sure to hear of is
 * stopped.
 */
static __noinline int send_held(struct xsprof_cuda_call *r, struct xsprof_cuda_stats *st)
{
	struct xsprof_cuda_call *e = bpf_ringbuf_reserve(&samples, sizeof(*e), 0);

	if (!e) {
		st->drop_ringbuf++;
		return 0;
	}
	if (bpf_probe_read_kernel(e, sizeof(*e), r)) {
		bpf_ringbuf_discard(e, 0);
		st->drop_ringbuf++;
		return 0;
	}
	if (!xsprof_stop_self(e->tgid))
		e->flags |= XSPROF_CUDA_F_STOPPED;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	st->emitted++;
	return 0;
}

/*
 * The caller's stack of a CUDA call, at its entry: the callee has not pushed a frame, so the
 * caller's frame is known without the API library's table (the return address at sp, its stack
 * pointer above it, rbp still its own); by tables from there, else by frame pointers.
 */
static __always_inline void walk_call(struct pt_regs *ctx, struct xsprof_cuda_call *r,
				      struct cuda_scratch *scr, __u32 tgid, __u64 ret, __u64 sp,
				      const __u64 *win, __u32 *untraced)
{
	long n;

	r->ips[0] = ret;
	r->nr_user = 1;
	n = unwind__probe_walk(&scr->walk, r->ips, &r->nr_user, tgid, unwind_mode, ret, sp + 8,
			       PT_REGS_FP(ctx), 0, scr->trace, untraced,
			       UNWIND_CACHE_CUDA + (scr->slot & 1));
	if (n >= 0 && n < XSPROF_MAX_STACK_DEPTH) {
		r->nr_user = 1 + n;
		r->flags |= (__u16)(UNWIND_END_OF(scr->walk.regs.flags) << XSPROF_CUDA_F_END_SHIFT);
	} else {
		*untraced = 1;
		r->ips[0] = ret;
		scr->fp_end = XSPROF_END_NONE;
		r->nr_user =
			1 + ustack__walk_fp_loop(r->ips, 1, PT_REGS_FP(ctx), sp, win, &scr->fp_end);
		r->flags |= (__u16)((scr->fp_end & 0xf) << XSPROF_CUDA_F_END_SHIFT);
	}
}

/* The call's record out: held (the process stops for its tables) or into the ring buffer.
 * 0 when it went into the ring buffer (its stack may be kept for reuse), else 1. */
static __always_inline int send_call(struct xsprof_cuda_call *r, struct xsprof_cuda_stats *st,
				     struct xsprof_call_mark *m, __u32 tgid, __u32 untraced)
{
	long size = XSPROF_CUDA_CALL_HDR_SIZE + (long)r->nr_user * 8 +
		    (long)r->nr_python * sizeof(struct xsprof_py_frame);
	__u64 flags;
	__u8 one = 1;
	bool first;

	/* Keep the bound on the register that is passed on (clang may clamp a copy). */
	barrier_var(size);
	if (size > sizeof(*r))
		size = sizeof(*r);
	barrier_var(size);
	/* A thread's first record wakes the reader, which then snapshots the process's mappings
	 * while it still runs; otherwise only a quarter-full buffer does (read every 16th). */
	first = m && !m->sent;
	if (first)
		r->flags |= XSPROF_CUDA_F_FIRST;
	/* The walk asked for a file's table: a profiled process waits while it is built, so
	 * that its next launches are walked whole (once per file: only the asking walk). */
	if ((untraced & UNWIND_OUT_ASKED) && cuda_stop_processes && pid_filter_on)
		r->flags |= XSPROF_CUDA_F_TABLES;
	/* A process's first record is one of its threads' first: only those look. */
	if ((first && cuda_stop_processes && pid_filter_on &&
	     !bpf_map_lookup_elem(&cuda_seen, &tgid) &&
	     !bpf_map_update_elem(&cuda_seen, &tgid, &one, BPF_NOEXIST)) ||
	    (r->flags & XSPROF_CUDA_F_TABLES)) {
		if (m)
			m->sent = 1;
		send_held(r, st);
		return 1;
	}
	flags = BPF_RB_NO_WAKEUP;
	if (first || ((st->emitted & 15) == 0 &&
		      bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= wakeup_bytes))
		flags = BPF_RB_FORCE_WAKEUP;
	else if (r->nr_python && python__wake())
		flags = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&samples, r, size, flags)) {
		st->drop_ringbuf++;
		return 1;
	}
	if (m)
		m->sent = 1;
	st->emitted++;
	return 0;
}

/* A call whose stack was not reused: walked, its Python frames added, sent, and kept in the
 * thread's cache for the next call's reuse. */
static __always_inline void walk_and_send(struct pt_regs *ctx, struct cuda_scratch *scr,
					  struct xsprof_cuda_stats *st,
					  struct xsprof_launch_reuse_stats *rst,
					  struct xsprof_call_mark *m, __u32 tgid)
{
	struct xsprof_cuda_call *r = &scr->rec;
	struct launch_cache *c;

	r->nr_user = 0;
	if (!r->user_err)
		walk_call(ctx, r, scr, tgid, scr->ret, PT_REGS_SP(ctx),
			  scr->win_ok ? scr->win : NULL, &scr->untraced);
	/* The Python function and line that made the call (mask: nr_user <= 127). */
	if (python_on && r->nr_user)
		r->nr_python = python_append_call(r, scr->pytid);
	if (send_call(r, st, m, tgid, scr->untraced))
		return;
	/* A thread's first record may be held (above): only the ones after are reused. */
	c = rst && !r->user_err ? launch__cache(XSPROF_LAUNCH_CALL) : NULL;
	if (c && rst) {
		/* Callers from ips[1]: their slots are trace[0, ...). */
		launch__keep(c, scr->ret, PT_REGS_SP(ctx), PT_REGS_FP(ctx), scr->pykey, r->time_ns,
			     scr->trace, &r->ips[1], (long)r->nr_user - 1, scr->untraced,
			     LAUNCH_SLOTS_UPROBE);
		rst->walked++;
	}
}

static __always_inline int cuda_call(struct pt_regs *ctx, __u64 cookie, struct cuda_scratch *scr)
{
	__u64 pid_tgid = xsprof_ids();
	__u32 zero = 0, tgid = pid_tgid >> 32;
	struct xsprof_cuda_stats *st = bpf_map_lookup_elem(&cuda_stats, &zero);
	struct xsprof_launch_reuse_stats *rst = bpf_map_lookup_elem(&launch_reuse_stats, &zero);
	struct task_struct *task = bpf_get_current_task_btf();
	struct launch_cache *c = NULL;
	struct xsprof_call_mark *m;
	struct xsprof_cuda_call *r;
	__u64 flags;
	/* Waits and allocations are timed by their return probe: never shed (--max-cpu). */
	bool sheddable = !(cookie & (XSPROF_CUDA_COOKIE_WAIT | XSPROF_CUDA_COOKIE_ALLOC));
	__u16 sampled = 0;

	if (!st || !pid_tgid) /* 0: outside the daemon's pid namespace */
		return 0;
	st->calls++;
	if (pid_filter_on && !(cookie & XSPROF_CUDA_COOKIE_ONE_PROCESS) &&
	    !bpf_map_lookup_elem(&pid_filter, &tgid)) {
		st->filtered++;
		return 0;
	}
	if (!xsprof_owner_pass(task, XSPROF_OWNER_CUDA_CALL))
		return 0;
	if (!scr) {
		st->scratch_busy++;
		return 0;
	}
	r = &scr->rec;
	r->user_err = 0;
	/* The call's return address, stack pointer (read again from ctx), Python key and thread,
	 * and what its walk said live in the scratch, not in spilled registers: this frame is
	 * the first of every chain the program has (512 bytes for all). */
	scr->ret = 0;
	scr->pykey = 0;
	scr->pytid = 0;
	scr->untraced = 1;
	/* The top of the stack, return address first; near the top of a stack the window may
	 * not fit: then frame by frame. */
	scr->win_ok = !bpf_probe_read_user(scr->win, sizeof(scr->win), (void *)PT_REGS_SP(ctx));
	if (scr->win_ok)
		scr->ret = scr->win[0];
	else if (bpf_probe_read_user(&scr->ret, sizeof(scr->ret), (void *)PT_REGS_SP(ctx))) {
		st->ustack_err++;
		r->user_err = -14; /* -EFAULT */
	}

	m = bpf_task_storage_get(&call_marks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!m) {
		st->mark_err++;
	} else if (nested_call(m, PT_REGS_SP(ctx), scr->ret, PT_REGS_FP(ctx),
			       cookie & XSPROF_CUDA_COOKIE_WRAPPER, uret__tramp(task))) {
		st->nested++;
		return 0;
	}
	/* Stacks walked 1 in N, at random (a fixed stride could beat with a loop's sites):
	 * the others are counted, the walked ones stand for N. */
	if (launch_stack_mask && sheddable) {
		if (bpf_get_prandom_u32() & launch_stack_mask) {
			st->stacks_shed++;
			return 0;
		}
		sampled = XSPROF_CUDA_F_SAMPLED;
	}

	r->type = XSPROF_REC_CUDA_CALL;
	r->tgid = tgid;
	r->tid = (__u32)pid_tgid;
	r->api = XSPROF_CUDA_COOKIE_API(cookie);
	r->flags = sampled;
	r->time_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	r->pad = 0;
	r->nr_python = 0;
	r->stream = read_stream(ctx, cookie, PT_REGS_SP(ctx), scr->win, scr->win_ok, &r->flags,
				scr->args);
	if (r->flags & XSPROF_CUDA_F_STREAM_ERR)
		st->stream_err++;
	if (m)
		mark_wait(ctx, m, cookie, r);

	/* The stack of the thread's last call, if a cheap check proves it unchanged. */
	if (python_on) {
		scr->pytid = python__own_tid(task);
		scr->pykey = python_key(tgid, scr->pytid);
	}
	c = rst && m && m->sent && !r->user_err ? launch__cache(XSPROF_LAUNCH_CALL) : NULL;
	if (c && rst &&
	    launch__same(c, scr->ret, PT_REGS_SP(ctx), PT_REGS_FP(ctx), scr->pykey, r->time_ns,
			 rst)) {
		flags = BPF_RB_NO_WAKEUP;
		if ((st->emitted & 15) == 0 &&
		    bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
			flags = BPF_RB_FORCE_WAKEUP;
		if (launch__send_reuse(c, tgid, r->tid, XSPROF_LAUNCH_CALL, r->api, r->flags,
				       r->time_ns, r->stream, flags, rst)) {
			st->drop_ringbuf++;
			return 0;
		}
		st->emitted++;
		return 0;
	}

	walk_and_send(ctx, scr, st, rst, m, tgid);
	return 0;
}

/*
 * cudaSetDevice(device): the thread's current device, kept for its allocations (the CUDA
 * runtime keeps one per thread). PyTorch's device guards call it often: no record, no stack,
 * no scratch; not counted in calls (nothing is sent).
 */
static __noinline int set_device(struct pt_regs *ctx, __u64 cookie)
{
	struct xsprof_call_mark *m;
	__u32 tgid;

	/* The pid filter holds tgids of the daemon's namespace: looked up only where needed. */
	if (pid_filter_on && !(cookie & XSPROF_CUDA_COOKIE_ONE_PROCESS)) {
		tgid = xsprof_ids() >> 32;
		if (!tgid || !bpf_map_lookup_elem(&pid_filter, &tgid))
			return 0;
	}
	m = bpf_task_storage_get(&call_marks, bpf_get_current_task_btf(), 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (m) {
		m->device = (__s32)PT_REGS_PARM1(ctx);
		m->device_set = 1;
	}
	return 0;
}

/* One run in XSPROF_TIMED_EVERY is timed: what a launch costs, said by the daemon. */
SEC("uprobe")
int xsprof_cuda_call(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 zero = 0;
	struct xsprof_cuda_stats *st;
	struct xsprof_launch_reuse_stats *rst;
	struct cuda_scratch *scr;
	bool timed;
	__u64 t0;

	if (cookie & XSPROF_CUDA_COOKIE_SET_DEVICE)
		return set_device(ctx, cookie);
	st = bpf_map_lookup_elem(&cuda_stats, &zero);
	/* --max-cpu shed the calls: counted, at the least cost (any process the probe is on;
	 * a call inside another counts too). Waits and allocations are timed still. */
	if (cuda_calls_shed && !(cookie & (XSPROF_CUDA_COOKIE_WAIT | XSPROF_CUDA_COOKIE_ALLOC))) {
		if (st)
			st->calls_shed++;
		return 0;
	}
	rst = bpf_map_lookup_elem(&launch_reuse_stats, &zero);
	timed = st && rst && !(st->calls & (XSPROF_TIMED_EVERY - 1));
	t0 = timed ? bpf_ktime_get_ns() : 0;
	scr = scratch_take();
	cuda_call(ctx, cookie, scr);
	if (scr)
		scr->busy = 0;
	if (timed && rst) {
		rst->timed++;
		rst->timed_ns += bpf_ktime_get_ns() - t0;
	}
	return 0;
}
