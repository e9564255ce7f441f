// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Off-CPU time: where a thread was when it left the CPU, and for how long it stayed off.
 *
 * One program on sched_switch, which runs in the thread leaving the CPU (prev), on its stack
 * and in its address space: its kernel and user stacks are read there (kprobes on
 * finish_task_switch, the usual switch-in hook, are missing from many kernels, this one
 * included). The switch time and the stack's key wait in offcpu_start until the thread is
 * switched back in (next of a later sched_switch), when the time off the CPU is added to the
 * key in offcpu_agg, the sum the kernel keeps per (tgid, tid, stack hash). A key's stack
 * crosses the ring buffer once, when the key is made, so the ring-buffer traffic does not grow
 * with the switch rate. Preemption counts as off-CPU time too: runnable but not running is
 * time the thread did not get.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "xsprof_events.h"
#include "shared_maps.bpf.h"
#include "pidns.bpf.h"
#include "ustack.bpf.h"
#include "filters.bpf.h"
#include "unwind.bpf.h"
#include "python.bpf.h"

#define PF_KTHREAD 0x00200000

extern bool pid_filter_on;
/* Interpreter frames of the processes in py_procs (sampler.bpf.c; off with --no-python). */
extern bool python_on;
extern const volatile bool gpu_wait_exclusive;
extern const volatile __u32 unwind_mode;

/* Set between open and load. */
const volatile __u64 offcpu_min_ns = 10000;
/* --wakers: each stretch's waker recorded (xsprof_waking) and sent with it (switch_in). Set by
 * the daemon before load; not read-only, so that the verifier sees (and bench/bpf_margins.sh
 * measures) the same code either way. */
bool wakers_on = false;

/* A thread off the CPU since time_ns, under key; who woke it, once woken. */
struct offcpu_start {
	__u64 time_ns;
	struct xsprof_offcpu_key key;
	struct xsprof_offcpu_key waker;
	__u64 wake_ns;
	__u64 waker_cpu_ns; /* the waker's CPU time when it woke it */
	__u32 wake_flags, pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid (host) */
	__type(value, struct offcpu_start);
} offcpu_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* resized by the daemon before load */
	__type(key, struct xsprof_offcpu_key);
	__type(value, struct xsprof_offcpu_val);
} offcpu_agg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xsprof_offcpu_stats);
} offcpu_stats SEC(".maps");

/* The record, and room past its uips for the table walk's bounded stores; where a process
 * not loaded yet was (its stack is held for the daemon). */
struct offcpu_scratch {
	struct xsprof_offcpu_stack r;
	__u64 slack[XSPROF_MAX_STACK_DEPTH];
	struct xs_unwind_state walk;
	struct offcpu_start start;	   /* switch_out's, off the BPF stack */
	struct xsprof_offcpu_val zero_val; /* a new key's first value (zero) */
	struct unwind_regs regs;	   /* where a held walk stopped */
	__u32 hold;			   /* held (non-zero: the file waited for, or 1) */
	__u32 pad;
};

extern bool hold_on;
/* --max-cpu shed the stacks: threads that leave the CPU are not followed (those already away
 * are still timed when they come back). */
extern bool offcpu_shed;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_scratch);
} offcpu_scratch SEC(".maps");

static __always_inline struct xsprof_offcpu_stats *stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&offcpu_stats, &zero);
}

/* FNV-1a over both stacks, a word at a time (a bounded loop: at most 2 x 127 steps). */
static __always_inline __u64 fnv_words(__u64 h, const __u64 *ips, __u32 n)
{
	for (__u32 i = 0; i < XSPROF_MAX_STACK_DEPTH; i++) {
		if (i >= n)
			break;
		h ^= ips[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* The interpreter frames after the user stack: each one's code object and instruction (a
 * thread blocked at another Python line is another stack). */
static __noinline __u64 py_hash(const struct xsprof_offcpu_stack *r, __u64 h)
{
	__u32 at = r->nr_user & 0x7f, n = r->nr_python;

	for (__u32 i = 0; i < XSPROF_PY_MAX_FRAMES; i++) {
		__u32 w = at + 3 * i;

		if (i >= n || w > XSPROF_MAX_STACK_DEPTH + XSPROF_PY_AREA_WORDS - 2)
			break;
		h ^= r->uips[w];
		h *= 0x100000001b3ULL;
		h ^= r->uips[w + 1];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static __noinline __u64 stack_hash(const struct xsprof_offcpu_stack *r)
{
	__u64 h = fnv_words(0xcbf29ce484222325ULL, r->kips, r->nr_kernel);

	h = fnv_words(h ^ 0xff, r->uips, r->nr_user);
	return r->nr_python ? py_hash(r, h ^ 0xfe) : h;
}

/* The thread leaving the CPU (current): the kernel path it leaves from, its user stack. */
static __noinline int read_stacks(void *ctx, struct offcpu_scratch *scr,
				  struct xsprof_offcpu_stats *st)
{
	struct xsprof_offcpu_stack *r = &scr->r;
	struct task_struct *task = bpf_get_current_task_btf();
	const struct xsprof_unwind_proc *proc;
	struct pt_regs *regs;
	__u64 ip, sp, bp;
	__u32 first;
	long nk;

	/* Skip this program's own three frames and the tracepoint's bpf_trace_run4: the stack
	 * then starts where the thread left the CPU (__schedule). */
	nk = bpf_get_stack(ctx, r->kips, sizeof(r->kips), 4 & BPF_F_SKIP_FIELD_MASK);
	r->kernel_err = nk < 0 ? (__s16)nk : 0;
	r->nr_kernel = nk < 0 ? 0 : (__u64)nk >> 3; /* no signed division in BPF */
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	ip = BPF_CORE_READ(regs, ip);
	sp = BPF_CORE_READ(regs, sp);
	bp = BPF_CORE_READ(regs, bp);
	r->uips[0] = ip;
	r->walk_end = XSPROF_END_NONE;
	/* The walk every stack gets: the tables where the daemon loaded the process (so a libc
	 * wrapper without a frame keeps its caller, the function that blocked), else frame
	 * pointers. */
	proc = unwind_mode != XSPROF_UNWIND_FP ? bpf_map_lookup_elem(&unwind_procs, &r->tgid)
					       : NULL;
	if (proc) {
		unwind__proc_used(proc);
		/* Through the record: a range, not a constant, for the verifier (unwind.bpf.h). */
		r->nr_user = 1;
		first = *(volatile __u16 *)&r->nr_user & 0xff;
		r->nr_user = 1 + unwind__walk(&scr->walk, r->uips, first,
					      first + XSPROF_MAX_STACK_DEPTH - 2, proc, r->tgid,
					      unwind_mode, ip, sp, bp, 1, hold_on, 0, 0);
		r->walk_end = UNWIND_END_OF(scr->walk.regs.flags);
		if (scr->walk.held) {
			scr->regs = scr->walk.regs;
			scr->hold = scr->walk.cur.file;
		}
	} else if (hold_on && unwind_mode != XSPROF_UNWIND_FP && unwind_hold_take()) {
		/* Not loaded yet: held, if this stack turns out to be new (switch_out). */
		r->nr_user = 1;
		scr->hold = 1;
		scr->regs.pc = ip;
		scr->regs.sp = sp;
		scr->regs.bp = bp;
		scr->regs.exact = 1;
	} else {
		r->nr_user = 1 + ustack__walk_fp_loop(r->uips, 1, bp, sp, NULL, &r->walk_end);
	}
	r->user_err = 0;
	if (!r->uips[0]) {
		r->nr_user = 0;
		r->user_err = -14; /* -EFAULT */
		st->ustack_err++;
	}
	return 0;
}

/*
 * A new stack to the daemon: as it is, or held (the registers and a copy of the stack, within
 * the hold budget the sampler's holds use) when its process was not loaded. 0, or -1 when it
 * could not be sent.
 */
static __noinline int emit_stack(struct offcpu_scratch *scr)
{
	struct xsprof_offcpu_held *h;
	__u32 len = 0, head;
	void *sp;

	/* The hold was taken from the budget by the walk (read_stacks). */
	if (!scr->hold)
		return bpf_ringbuf_output(&samples, &scr->r, sizeof(scr->r), 0) ? -1 : 0;
	h = bpf_ringbuf_reserve(&samples, sizeof(*h), 0);
	if (!h)
		return -1;
	h->type = XSPROF_REC_OFFCPU_HELD;
	h->pc = scr->regs.pc;
	h->sp = scr->regs.sp;
	h->bp = scr->regs.bp;
	h->exact = scr->regs.exact;
	h->pad = 0;
	bpf_probe_read_kernel(&h->stack, sizeof(h->stack), &scr->r);
	/* As the sampler's holds: to the end of sp's page, then whole pages while readable. */
	sp = (void *)scr->regs.sp;
	head = 4096 - (scr->regs.sp & 4095);
	if (head > 4096)
		head = 4096;
	if (!bpf_probe_read_user(h->copy, head, sp)) {
		len = head;
		for (int k = 0; k < 3; k++) {
			__u32 at = len;

			barrier_var(at);
			if (at > sizeof(h->copy) - 4096)
				break;
			if (bpf_probe_read_user(h->copy + at, 4096, sp + at))
				break;
			len = at + 4096;
		}
	}
	h->copy_len = len;
	bpf_ringbuf_submit(h, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* prev leaves the CPU (current): its record, its kernel and user stacks. */
static __noinline int read_out(void *ctx, struct offcpu_scratch *scr,
			       struct xsprof_offcpu_stats *st)
{
	struct xsprof_offcpu_stack *r = &scr->r;
	__u64 id = xsprof_ids();

	if (!id)
		return -1;
	r->type = XSPROF_REC_OFFCPU;
	r->tgid = id >> 32;
	r->tid = (__u32)id;
	r->uid = visible_uid(bpf_get_current_task_btf());
	r->flags = 0;
	r->nr_python = 0;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	scr->hold = 0;
	return read_stacks(ctx, scr, st);
}

/* The stacks' key in scr->start.key (made, and the stack sent, if new): 0, or -1 when it could
 * not be (counted). */
static __noinline int make_key(struct offcpu_scratch *scr, struct xsprof_offcpu_stats *st)
{
	struct xsprof_offcpu_stack *r = &scr->r;
	struct offcpu_start *start = &scr->start;

	r->hash = stack_hash(r);
	__builtin_memset(start, 0, sizeof(*start));
	__builtin_memset(&scr->zero_val, 0, sizeof(scr->zero_val));
	start->key.tgid = r->tgid;
	start->key.tid = r->tid;
	start->key.hash = r->hash;
	if (bpf_map_lookup_elem(&offcpu_agg, &start->key))
		return 0;
	if (bpf_map_update_elem(&offcpu_agg, &start->key, &scr->zero_val, BPF_NOEXIST)) {
		/* Full (or made meanwhile on another CPU). */
		if (!bpf_map_lookup_elem(&offcpu_agg, &start->key)) {
			st->agg_full++;
			return -1;
		}
	} else if (emit_stack(scr)) {
		/* Without its stack the key could not be named: take it back. */
		bpf_map_delete_elem(&offcpu_agg, &start->key);
		st->drop_ringbuf++;
		return -1;
	} else {
		st->new_stacks++;
	}
	return 0;
}

/* The stacks' key, and the time prev left. */
static __noinline int switch_out(struct offcpu_scratch *scr, struct task_struct *prev,
				 struct xsprof_offcpu_stats *st)
{
	struct offcpu_start *start = &scr->start;
	__u32 tid;

	if (make_key(scr, st))
		return 0; /* this stretch is not timed */
	tid = BPF_CORE_READ(prev, pid);
	start->time_ns = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&offcpu_start, &tid, start, BPF_ANY))
		st->start_full++;
	else
		st->switches++;
	return 0;
}

/* A woken stretch out, with its waker (--wakers): written in the ring buffer in place, so
 * that the record takes none of the switch program's stack. */
static __noinline void emit_wait(const struct offcpu_start *start, __u64 now, __u64 cpu_ns,
				 struct xsprof_offcpu_stats *st)
{
	struct xsprof_wait *w = bpf_ringbuf_reserve(&samples, sizeof(*w), 0);

	if (!w) {
		st->wait_lost++;
		return;
	}
	w->type = XSPROF_REC_WAIT;
	w->tgid = start->key.tgid;
	w->tid = start->key.tid;
	w->flags = start->wake_flags;
	w->hash = start->key.hash;
	w->start_ns = start->time_ns;
	w->wake_ns = start->wake_ns;
	w->end_ns = now;
	w->waker_tgid = start->waker.tgid;
	w->waker_tid = start->waker.tid;
	w->waker_hash = start->waker.hash;
	w->cpu_ns = cpu_ns;
	w->waker_cpu_ns = start->waker_cpu_ns;
	bpf_ringbuf_submit(w, BPF_RB_NO_WAKEUP);
	st->waits++;
}

/* next comes back: the time it was off goes to the key it left under. */
static __always_inline void switch_in(struct task_struct *next, struct xsprof_offcpu_stats *st)
{
	__u32 tid = BPF_CORE_READ(next, pid);
	struct offcpu_start *start = bpf_map_lookup_elem(&offcpu_start, &tid);
	struct xsprof_offcpu_val *v;
	__u64 delta, now;

	if (!start)
		return;
	now = bpf_ktime_get_ns();
	delta = now - start->time_ns;
	st->blocks++;
	if (delta < offcpu_min_ns) {
		st->below_min++;
	} else if ((v = bpf_map_lookup_elem(&offcpu_agg, &start->key))) {
		__sync_fetch_and_add(&v->ns, delta);
		__sync_fetch_and_add(&v->count, 1);
	} else {
		st->agg_full++;
	}
	/* Short ones too: a chain passes through the brief waits of threads that hand a wakeup
	 * on (a lock, the GIL), though their time is not counted. */
	if (wakers_on && start->wake_ns)
		emit_wait(start, now, next->se.sum_exec_runtime, st);
	bpf_map_delete_elem(&offcpu_start, &tid);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(xsprof_offcpu, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct xsprof_offcpu_stats *st = stats();
	struct offcpu_scratch *scr;
	__u32 tgid, zero = 0;

	if (!st)
		return 0;
	switch_in(next, st);
	if (offcpu_shed)
		return 0;
	/* In prev's context: its ids, its filter entry. */
	tgid = xsprof_ids() >> 32;
	if (!tgid || !BPF_CORE_READ(prev, pid) || (BPF_CORE_READ(prev, flags) & PF_KTHREAD))
		return 0;
	if ((pid_filter_on && !bpf_map_lookup_elem(&pid_filter, &tgid)) ||
	    !xsprof_filters_pass(prev) || !xsprof_owner_pass(prev, XSPROF_OWNER_OFFCPU))
		return 0;
	if (gpu_wait_exclusive && xsprof_in_gpu_wait(prev)) {
		struct xsprof_wait_stats *ws = bpf_map_lookup_elem(&wait_stats, &zero);

		if (ws)
			ws->offcpu_in_wait++;
		return 0;
	}
	scr = bpf_map_lookup_elem(&offcpu_scratch, &zero);
	if (!scr || read_out(ctx, scr, st))
		return 0;
	/* Where a Python thread blocked, in Python: as the CPU samples have it (one lookup for
	 * any other process); a held stack too (the daemon puts them in place once it has walked
	 * the rest). Called from here, not from switch_out, so the walk's frames do not stack on
	 * switch_out's. */
	if (python_on && scr->r.nr_user && bpf_map_lookup_elem(&py_procs, &scr->r.tgid))
		python_append_offcpu(&scr->r, python__own_tid(prev));
	return switch_out(scr, prev, st);
}

/*
 * Who woke a watched thread that is off the CPU (--wakers): sched_waking runs in the waker's
 * context. A waker the session watches has its stacks read as a stretch's are, and its key
 * kept (its stack sent once, with no time of its own); another thread only its ids. An
 * interrupt (a timer, a device) wakes in the context of whatever it interrupted: its kernel
 * stack says so, and the daemon blames no thread then (its preempt count would say so here,
 * but reading a per-CPU variable needs its address in kallsyms, which not every kernel lists).
 */
SEC("tp_btf/sched_waking")
int BPF_PROG(xsprof_waking, struct task_struct *p)
{
	struct xsprof_offcpu_stats *st = stats();
	struct task_struct *cur = bpf_get_current_task_btf();
	__u32 tid = BPF_CORE_READ(p, pid), zero = 0, tgid;
	struct offcpu_start *start;
	struct offcpu_scratch *scr;
	__u64 id;

	if (!st)
		return 0;
	start = bpf_map_lookup_elem(&offcpu_start, &tid);
	if (!start || start->wake_ns) /* not watched and away, or woken already */
		return 0;
	start->wake_ns = bpf_ktime_get_ns();
	st->wakeups++;
	if (!BPF_CORE_READ(cur, pid) || (BPF_CORE_READ(cur, flags) & PF_KTHREAD)) {
		start->wake_flags = XSPROF_WAKE_KERNEL;
		return 0;
	}
	id = xsprof_ids();
	tgid = id >> 32;
	start->waker.tgid = tgid;
	start->waker.tid = (__u32)id;
	start->waker_cpu_ns = cur->se.sum_exec_runtime;
	if (!tgid || (pid_filter_on && !bpf_map_lookup_elem(&pid_filter, &tgid)) ||
	    !xsprof_filters_pass(cur) || !xsprof_owner_pass(cur, XSPROF_OWNER_OFFCPU)) {
		start->wake_flags = XSPROF_WAKE_UNWATCHED;
		return 0;
	}
	start->wake_flags = XSPROF_WAKE_UNWATCHED; /* until its stack is in */
	scr = bpf_map_lookup_elem(&offcpu_scratch, &zero);
	if (!scr || read_out(ctx, scr, st))
		return 0;
	if (python_on && scr->r.nr_user && bpf_map_lookup_elem(&py_procs, &scr->r.tgid))
		python_append_offcpu(&scr->r, python__own_tid(cur));
	if (make_key(scr, st))
		return 0;
	start->waker.hash = scr->start.key.hash;
	start->wake_flags = XSPROF_WAKE_STACK;
	return 0;
}

/* The kernel wants a GPL-compatible licence for the GPL-only helpers: the SPDX line's GPL-2.0. */
char LICENSE[] SEC("license") = "GPL";
