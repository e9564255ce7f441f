// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/* CPU sampler: runs on a software cpu-clock perf event on every online CPU. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "xsprof_events.h"
#define XSPROF_SAMPLER_MAPS_OWNER
#include "shared_maps.bpf.h"
#define XSPROF_PIDNS_OWNER
#include "pidns.bpf.h"
#include "ustack.bpf.h"
#define XSPROF_FILTERS_OWNER
#include "filters.bpf.h"
#include "unwind.bpf.h"
#include "python.bpf.h"

#define PF_EXITING 0x00000004 /* include/linux/sched.h */
#define PF_KTHREAD 0x00200000

/* Set between open and load. */
const volatile bool include_idle = false;

/* Flipped at run time by the daemon (mmapped .bss), so attaching a pid needs no reload. */
bool pid_filter_on = false;
/* Interpreter frames of the processes in py_procs (python.bpf.h); off with --no-python. */
bool python_on = false;
/* Samples may be held for the daemon to finish their walk (it handles XSPROF_REC_SAMPLE_HELD). */
bool hold_on = false;
/* --max-cpu's shedding (daemon/session/ceiling.h), flipped at run time: a launch's stack is
 * walked 1 in (launch_stack_mask + 1), at random (the others are counted); CUDA calls are
 * counted only; off-CPU stacks are not taken; exec and library-load records are not sent
 * (exits still are). */
__u32 launch_stack_mask = 0;
bool cuda_calls_shed = false;
bool offcpu_shed = false;
bool exec_shed = false;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xsprof_cpu_stats);
} cpu_stats SEC(".maps");

/* A sample is far over the 512-byte BPF stack; build it in per-CPU scratch space. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xsprof_sample);
} scratch SEC(".maps");

/* enum xsprof_unwind_mode (--unwind); set between open and load. */
const volatile __u32 unwind_mode = XSPROF_UNWIND_FP;

/* Wake the reader only when the buffer is this full; otherwise it drains on its own timer. */
const volatile __u64 wakeup_bytes = 1 << 20;
/* Wall mode: a thread waiting for the GPU in a timed CUDA call is counted by the wait's own
 * frame (its duration), not by samples or off-CPU time as well. */
const volatile bool gpu_wait_exclusive = false;

static __always_inline bool interrupted_user_mode(struct bpf_perf_event_data *ctx)
{
#if defined(__TARGET_ARCH_x86)
	/* The context is the uapi struct pt_regs (arch/x86/include/uapi/asm/ptrace.h), read in
	 * whole words only: cs is word 17 (after r15..r8, ax, cx, dx, si, di, orig_ax, ip). */
	const __u64 *regs = (const __u64 *)&ctx->regs;

	return (regs[17] & 3) == 3;
#else
	return false; /* unknown: always ask for the kernel stack */
#endif
}

/* Where a walk stopped for the daemon to finish it (struct xsprof_sample_held). */
struct hold_info {
	struct unwind_regs regs;
	__u32 may;    /* in: the walk may be held */
	__u32 reason; /* enum xsprof_hold_reason; 0: not held */
	__u32 file;
	__u32 pad;
};

/* A sample's hold and its walk's state: per CPU, off the BPF stack (nothing of ours runs
 * nested inside the sampler on its CPU). */
struct sampler_work {
	struct hold_info hold;
	struct xs_unwind_state walk;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sampler_work);
} sampler_work SEC(".maps");

#if defined(__TARGET_ARCH_x86)
/*
 * The frame-pointer walk from the pc's slot, and why it ended in s->walk_end. A function of its
 * own: its walk state then sits beside the table walk's frames, not on top of them (the
 * deepest chain's stack, bpf_margins). nk is at most XSPROF_MAX_STACK_DEPTH, and the walk
 * stores below XSPROF_MAX_STACK_DEPTH past it: within ips[].
 */
static __noinline long sample_walk_fp(struct xsprof_sample *s, long nk, __u64 fp, __u64 sp)
{
	if (!s)
		return 0;
	return ustack__walk_fp_loop(&s->ips[nk & 127], 1, fp, sp, NULL, &s->walk_end);
}

/*
 * The table walk of unwind.bpf.h for a process whose mappings the daemon loaded. One it has not
 * loaded yet is held at its first frame (the daemon loads it and walks the copy), or, past the
 * hold budget, walked by frame pointers (as in fp mode: -1, the caller walks); in cfi mode
 * nothing more.
 */
static __noinline long unwind_user(struct xsprof_sample *s, long nk, __u64 ip, __u64 sp,
				   struct sampler_work *wk)
{
	struct hold_info *h = &wk->hold;
	const struct xsprof_unwind_proc *proc = bpf_map_lookup_elem(&unwind_procs, &s->tgid);
	struct xsprof_unwind_stats *ust;
	__u32 zero = 0;
	long n = 0;
	__u32 first;

	if (nk < 0 || nk >= XSPROF_MAX_STACK_DEPTH)
		return 0;
	/* Through the map value, not a register: the verifier then knows a range, not a
	 * constant, and checks the walk's step a few times instead of once per frame. */
	s->nr_kernel = nk;
	first = *(volatile __u16 *)&s->nr_kernel + 1;
	if (first > XSPROF_MAX_STACK_DEPTH)
		return 0;
	if (proc) {
		struct unwind_win *win = bpf_map_lookup_elem(&sample_window, &zero);

		unwind__proc_used(proc);
		/* The stack above sp, copied once per sample: frames inside it cost no read of
		 * user memory. Near the top of the stack it may not be readable: an empty window
		 * then (no address is at or above ~0). */
		if (win)
			win->lo =
				bpf_probe_read_user(win->w, UNWIND_WINDOW, (void *)sp) ? ~0ull : sp;
		n = unwind__walk(&wk->walk, s->ips, first, first + XSPROF_MAX_STACK_DEPTH - 1, proc,
				 s->tgid, unwind_mode, ip, sp, h->regs.bp, 1, h->may, win != NULL,
				 UNWIND_CACHE_SAMPLER);
		if (wk->walk.held) {
			h->regs = wk->walk.regs;
			h->file = wk->walk.cur.file;
		}
		if (h->file)
			h->reason = h->file == XSPROF_HOLD_FILE_STALE ? XSPROF_HOLD_STALE_MAPS
								      : XSPROF_HOLD_NO_TABLE;
		return n;
	}
	ust = bpf_map_lookup_elem(&unwind_stats, &zero);
	if (h->may && unwind_hold_take()) {
		h->reason = XSPROF_HOLD_NO_PROCESS;
		h->regs.pc = ip;
		h->regs.sp = sp;
		h->regs.exact = 1;
		return 0;
	}
	if (ust && h->may)
		ust->hold_budget++;
	if (ust) {
		ust->no_process++;
		ust->walks_fp += unwind_mode != XSPROF_UNWIND_CFI;
	}
	if (unwind_mode != XSPROF_UNWIND_CFI)
		return -1;
	wk->walk.regs.flags |= UNWIND_END(XSPROF_END_NO_TABLE); /* cfi: nothing to walk */
	return 0;
}
#endif

/*
 * A thread stepping over a probed instruction runs its copy in the uprobe's out-of-line slot
 * ([uprobes] page): the pc there belongs to the probed function, at the same offset.
 */
#define UPROBE_XOL_SLOT_BYTES 128 /* include/linux/uprobes.h */

static __always_inline __u64 pc_of_probed(struct task_struct *task, __u64 ip)
{
	struct uprobe_task *ut = BPF_CORE_READ(task, utask);
	__u64 xol;

	if (!ut)
		return ip;
	xol = BPF_CORE_READ(ut, xol_vaddr);
	if (!xol || ip < xol || ip - xol >= UPROBE_XOL_SLOT_BYTES)
		return ip;
	return BPF_CORE_READ(ut, vaddr) + (ip - xol);
}

/* Between the old image and the new one in an exec (see exec_window). */
static __always_inline bool between_images(struct task_struct *task, __u32 tid)
{
	__u64 *mm = bpf_map_lookup_elem(&exec_window, &tid);

	return mm && *mm != (__u64)BPF_CORE_READ(task, mm);
}

/*
 * User stack: the interrupted pc, then the frame-pointer walk of ustack.bpf.h (which says why
 * not bpf_get_stack: its fault at the end of every chain was most of a sample's cost).
 */
static __always_inline long user_stack(struct bpf_perf_event_data *ctx, struct task_struct *task,
				       struct xsprof_sample *s, long nk, struct sampler_work *wk)
{
#if defined(__TARGET_ARCH_x86)
	struct hold_info *h = &wk->hold;
	const __u64 *uregs = (const __u64 *)&ctx->regs;
	struct xsprof_unwind_stats *ust;
	__u64 ip, fp, sp;
	bool in_kernel = false;
	__u32 zero = 0;
	long n;

	if (interrupted_user_mode(ctx)) {
		ip = uregs[16]; /* ip, bp, sp: words 16, 4, 19 of the uapi pt_regs */
		fp = uregs[4];
		sp = uregs[19];
	} else if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs)) {
		struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(task);

		ip = BPF_CORE_READ(r, ip);
		fp = BPF_CORE_READ(r, bp);
		sp = BPF_CORE_READ(r, sp);
		in_kernel = true;
	} else {
		n = bpf_get_stack(ctx, &s->ips[nk & 127], XSPROF_MAX_STACK_DEPTH * 8,
				  BPF_F_USER_STACK);
		return n < 0 ? n : n >> 3; /* no signed division in BPF */
	}

	/* The table walk needs the probed function's pc too, not the slot's. */
	ip = pc_of_probed(task, ip);
	s->ips[nk & 127] = ip;
	/* A process in exit(): past exit_mm() (its memory torn down in exit_mmap) it has no mm
	 * to read the stack from, and from its exit record on the daemon has dropped its tables.
	 * Its pc, and the mark that says why nothing above it. */
	if (in_kernel && (BPF_CORE_READ(task, flags) & PF_EXITING) &&
	    (!BPF_CORE_READ(task, mm) ||
	     (unwind_mode != XSPROF_UNWIND_FP && !bpf_map_lookup_elem(&unwind_procs, &s->tgid)))) {
		s->walk_end = XSPROF_END_EXITING;
		return 1;
	}
	if (unwind_mode != XSPROF_UNWIND_FP &&
	    bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_loop)) {
		/* The frame pointer through h: a BPF call takes five arguments. */
		h->regs.bp = fp;
		/* How the walk ended, in the sample (none when unwind_user walked no table). */
		wk->walk.regs.flags = 0;
		n = unwind_user(s, nk, ip, sp, wk);
		if (n >= 0) {
			s->walk_end = UNWIND_END_OF(wk->walk.regs.flags);
			return 1 + n;
		}
		/* No tables for the process yet, and not held: by frame pointers, counted. */
		n = sample_walk_fp(s, nk, fp, sp);
		ust = bpf_map_lookup_elem(&unwind_stats, &zero);
		if (ust)
			ust->frames_fp += n;
		return 1 + n;
	}
	return 1 + sample_walk_fp(s, nk, fp, sp);
#else
	long n =
		bpf_get_stack(ctx, &s->ips[nk & 127], XSPROF_MAX_STACK_DEPTH * 8, BPF_F_USER_STACK);

	return n < 0 ? n : n >> 3; /* no signed division in BPF */
#endif
}

#define HOLD_PAGE 4096

/* The copy as the walk would read it: each return address a pending return probe swapped for
 * its trampoline (uret.bpf.h) put back, so the daemon's walk over it goes on past that call. */
static __always_inline void uret_patch_copy(struct xsprof_sample_held *rec, __u64 sp, __u32 len)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 tramp = uret__tramp(task), at;
	struct return_instance *ri;

	if (!tramp)
		return;
	ri = BPF_CORE_READ(task, utask, return_instances);
	for (int i = 0; i < URET_MAX && ri; i++) {
		at = BPF_CORE_READ(ri, stack) - sp;
		if (at < len && at < XSPROF_HOLD_STACK_BYTES - 8 && !(at & 7)) {
			__u64 k = at >> 3;

			asm volatile("%0 &= %1" : "+r"(k) : "i"(XSPROF_HOLD_STACK_BYTES / 8 - 1));
			((__u64 *)rec->stack)[k] = BPF_CORE_READ(ri, orig_ret_vaddr);
		}
		ri = BPF_CORE_READ(ri, next);
	}
}

/*
 * A held sample (struct xsprof_sample_held): the sample as made, the registers where its walk
 * stopped, and the stack above them, in as large a piece as can be read (the stack's mapping
 * may end sooner). 0, or -1 when it could not be sent (the caller sends the sample as it is).
 */
static __always_inline int emit_held(struct xsprof_sample *s, struct hold_info *h)
{
	struct xsprof_unwind_stats *ust;
	struct xsprof_sample_held *rec;
	__u32 zero = 0, len = 0, head;
	void *sp;

	ust = bpf_map_lookup_elem(&unwind_stats, &zero);
	if (!ust)
		return -1;
	rec = bpf_ringbuf_reserve(&samples, sizeof(*rec), 0);
	if (!rec) {
		ust->hold_drops++;
		return -1;
	}
	rec->type = XSPROF_REC_SAMPLE_HELD;
	rec->reason = h->reason;
	rec->pc = h->regs.pc;
	rec->sp = h->regs.sp;
	rec->bp = h->regs.bp;
	rec->exact = h->regs.exact;
	rec->file = h->file;
	rec->pad = 0;
	bpf_probe_read_kernel(&rec->sample, sizeof(rec->sample), s);
	/* Up to the end of sp's page, then whole pages while they can be read: the stack's
	 * mapping may end a few KiB above the outermost frame. */
	sp = (void *)h->regs.sp;
	head = HOLD_PAGE - (h->regs.sp & (HOLD_PAGE - 1));
	if (head > HOLD_PAGE)
		head = HOLD_PAGE;
	if (!bpf_probe_read_user(rec->stack, head, sp)) {
		len = head;
		for (int k = 0; k < XSPROF_HOLD_STACK_BYTES / HOLD_PAGE - 1; k++) {
			__u32 at = len;

			/* Checked on the register that is used: clang would otherwise fold the
			 * check into len and the verifier would not see it. */
			barrier_var(at);
			if (at > XSPROF_HOLD_STACK_BYTES - HOLD_PAGE)
				break;
			if (bpf_probe_read_user(rec->stack + at, HOLD_PAGE, sp + at))
				break;
			len = at + HOLD_PAGE;
		}
	}
	rec->copy_len = len;
	uret_patch_copy(rec, h->regs.sp, len);
	/* The daemon finishes it with tables it may have to build: it should not wait. */
	bpf_ringbuf_submit(rec, BPF_RB_FORCE_WAKEUP);
	ust->held++;
	return 0;
}

/*
 * The record's interpreter frames (py_tid: the thread's id in its own namespace; 0: none) and
 * its trip to the ring buffer, held (h->reason) or not. A global function: the verifier checks
 * it once, not in each of the many states the stack walks leave the caller in.
 */
__noinline int sample_emit(struct xsprof_sample *s, struct xsprof_cpu_stats *st, __u32 py_tid,
			   struct hold_info *h)
{
	long size, npy = 0;
	__u64 flags;

	if (!s || !st || !h)
		return 0;
	s->nr_python = 0;
	s->pad8 = 0;
	s->pad = 0;
	if (py_tid)
		npy = python_append_sample(s, py_tid);
	if (npy < 0 || npy > XSPROF_PY_MAX_FRAMES)
		npy = 0;
	if (h->reason && !emit_held(s, h)) {
		st->emitted++;
		return 0;
	}
	size = XSPROF_SAMPLE_HDR_SIZE + ((long)(s->nr_kernel & 0xff) + (s->nr_user & 0xff)) * 8 +
	       npy * (long)sizeof(struct xsprof_py_frame);
	barrier_var(size);
	if (size > sizeof(*s))
		size = sizeof(*s);
	barrier_var(size);
	/* Reading the fill level touches the consumer's cache line: do it every 16th record. */
	flags = BPF_RB_NO_WAKEUP;
	if ((st->emitted & 15) == 0 &&
	    bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	else if (npy && python__wake())
		flags = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&samples, s, size, flags)) {
		st->drop_ringbuf++;
		return 0;
	}
	st->emitted++;
	return 0;
}

static __always_inline int sample_cpu(struct bpf_perf_event_data *ctx, struct xsprof_cpu_stats *st)
{
	__u32 zero = 0;
	struct xsprof_sample *s;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid, tid = (__u32)pid_tgid;
	struct task_struct *task;
	struct sampler_work *wk;
	bool in_ns;
	long nk, nu;
	bool user_mode;

	if (tid == 0) {
		st->idle++;
		if (!include_idle)
			return 0;
	}
	in_ns = xsprof_current_ids(&pid_tgid);
	tgid = pid_tgid >> 32;
	tid = (__u32)pid_tgid;
	task = (struct task_struct *)bpf_get_current_task_btf();
	if ((pid_filter_on && (!in_ns || !bpf_map_lookup_elem(&pid_filter, &tgid))) ||
	    !xsprof_filters_pass(task)) {
		st->filtered++;
		return 0;
	}
	if (!xsprof_owner_pass(task, XSPROF_OWNER_SAMPLE))
		return 0;

	if (gpu_wait_exclusive && xsprof_in_gpu_wait(task)) {
		struct xsprof_wait_stats *ws = bpf_map_lookup_elem(&wait_stats, &zero);

		if (ws)
			ws->samples_in_wait++;
		return 0;
	}

	s = bpf_map_lookup_elem(&scratch, &zero);
	wk = bpf_map_lookup_elem(&sampler_work, &zero);
	if (!s || !wk)
		return 0;
	__builtin_memset(&wk->hold, 0, sizeof(wk->hold));
	s->type = XSPROF_REC_SAMPLE;
	s->tgid = tgid;
	s->tid = tid;
	s->cpu = bpf_get_smp_processor_id();
	s->time_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	s->flags = in_ns ? 0 : XSPROF_SAMPLE_F_FOREIGN;
	s->uid = visible_uid(task);
	s->kernel_err = 0;
	s->user_err = 0;
	s->walk_end = XSPROF_END_NONE;

	/* Interrupted in user mode: there is no kernel stack, skip the helper's fixed cost. */
	user_mode = interrupted_user_mode(ctx);
	nk = 0;
	if (!user_mode) {
		nk = bpf_get_stack(ctx, s->ips, XSPROF_MAX_STACK_DEPTH * 8, 0);
		if (nk < 0) {
			st->kstack_err++;
			s->kernel_err = nk;
			nk = 0;
		}
		nk /= 8;
		if (nk > XSPROF_MAX_STACK_DEPTH)
			nk = XSPROF_MAX_STACK_DEPTH;
	}

	nu = 0;
	if (BPF_CORE_READ(task, flags) & PF_KTHREAD) {
		s->flags |= XSPROF_SAMPLE_F_KTHREAD;
	} else if (!user_mode && between_images(task, (__u32)bpf_get_current_pid_tgid())) {
		s->flags |= XSPROF_SAMPLE_F_EXEC;
		st->in_exec++;
	} else {
		/* Held only where the daemon can read the process: in its pid namespace. */
		wk->hold.may = hold_on && in_ns;
		nu = user_stack(ctx, task, s, nk, wk);
		if (nu < 0) {
			st->ustack_err++;
			s->user_err = nu;
			nu = 0;
		}
	}
	s->nr_kernel = nk;
	s->nr_user = nu;
	/* Interpreter frames after the native ones, for a process in our namespace. */
	return sample_emit(s, st, python_on && nu > 0 && in_ns ? python__own_tid(task) : 0,
			   &wk->hold);
}

/* One sample in XSPROF_TIMED_EVERY is timed, so that the daemon can say what a sample costs
 * without the kernel's BPF statistics (which tax every program on the machine). */
SEC("perf_event")
int xsprof_sample_cpu(struct bpf_perf_event_data *ctx)
{
	__u32 zero = 0;
	struct xsprof_cpu_stats *st = bpf_map_lookup_elem(&cpu_stats, &zero);
	bool timed;
	__u64 t0 = 0;

	if (!st)
		return 0;
	timed = !(st->samples++ & (XSPROF_TIMED_EVERY - 1));
	if (timed)
		t0 = bpf_ktime_get_ns();
	sample_cpu(ctx, st);
	if (timed) {
		st->timed++;
		st->timed_ns += bpf_ktime_get_ns() - t0;
	}
	return 0;
}

/* The kernel wants a GPL-compatible licence for the GPL-only helpers: the SPDX line's GPL-2.0. */
char LICENSE[] SEC("license") = "GPL";
