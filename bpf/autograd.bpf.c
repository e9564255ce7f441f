// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * PyTorch autograd probes: what joins backward work to the forward line that caused it.
 *
 * - xsprof_ag_node, a return probe on at::sequence_number::get_and_increment: every autograd
 *   node takes its sequence number there while the forward op that makes it runs, so the
 *   return value and the thread's Python frames say which line made which node.
 * - xsprof_ag_eval, an entry probe on Engine::evaluate_function(graph_task, Node *, ...): the
 *   engine runs that node now on this thread; its sequence number is read from the node at
 *   ag_seq_off (the first member after the vtable and enable_shared_from_this's weak pointer).
 * - xsprof_ag_exec and xsprof_ag_exec_end on Engine::execute: the backward() call and the
 *   Python frames that made it, and its end.
 *
 * Small records, one per event; the daemon (daemon/python/autograd.c) keeps the state. The
 * daemon attaches them per process, only to the processes a session watches.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "xsprof_events.h"
#include "shared_maps.bpf.h"
#include "pidns.bpf.h"
#include "filters.bpf.h"
#include "python.bpf.h"

extern bool pid_filter_on;
extern bool python_on;

/* Where a node keeps its sequence number (set by the daemon before load). */
const volatile __u32 ag_seq_off = 24;

struct ag_scratch {
	struct xsprof_cuda_call rec;
	__u64 busy; /* held by a run (compare-and-swap) */
};

/* Two per CPU, as the launch probes' (a uprobe can be preempted, and another run there). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct ag_scratch);
} ag_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xsprof_autograd_stats);
} ag_stats SEC(".maps");

static __always_inline struct ag_scratch *ag_take(void)
{
	for (__u32 i = 0; i < 2; i++) {
		__u32 k = i;
		struct ag_scratch *s = bpf_map_lookup_elem(&ag_scratch, &k);

		if (s && __sync_val_compare_and_swap(&s->busy, 0, 1) == 0)
			return s;
	}
	return NULL;
}

/* The record of an event begun in a scratch taken, or NULL (outside the session, or no
 * scratch: counted). */
static __always_inline struct ag_scratch *ag_begin(struct xsprof_autograd_stats *st,
						   struct task_struct *task, __u32 kind, __u64 seq,
						   __u16 flags)
{
	__u64 pid_tgid = xsprof_ids();
	__u32 tgid = pid_tgid >> 32;
	struct xsprof_cuda_call *r;
	struct ag_scratch *scr;

	if (!pid_tgid) /* 0: outside the daemon's pid namespace */
		return NULL;
	if ((pid_filter_on && !bpf_map_lookup_elem(&pid_filter, &tgid)) ||
	    !xsprof_filters_pass(task)) {
		st->filtered++;
		return NULL;
	}
	scr = ag_take();
	if (!scr) {
		st->scratch_busy++;
		return NULL;
	}
	r = &scr->rec;
	r->type = XSPROF_REC_AUTOGRAD;
	r->tgid = tgid;
	r->tid = (__u32)pid_tgid;
	r->api = (__u16)kind;
	r->flags = flags;
	r->time_ns = bpf_ktime_get_ns();
	r->stream = seq;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	r->nr_user = 0;
	r->user_err = 0;
	r->nr_python = 0;
	r->pad = 0;
	return scr;
}

/* The record out (its header and Python frames), counted; the scratch let go. */
static __always_inline void ag_end(struct xsprof_autograd_stats *st, struct ag_scratch *scr,
				   __u32 kind)
{
	struct xsprof_cuda_call *r = &scr->rec;
	long size = XSPROF_CUDA_CALL_HDR_SIZE + (long)r->nr_python * sizeof(struct xsprof_py_frame);

	barrier_var(size);
	if (size > sizeof(*r))
		size = sizeof(*r);
	barrier_var(size);
	if (bpf_ringbuf_output(&samples, r, size, BPF_RB_NO_WAKEUP))
		st->drop_ringbuf++;
	else if (kind == XSPROF_AG_NODE)
		st->nodes++;
	else if (kind == XSPROF_AG_EVAL)
		st->evals++;
	else if (kind == XSPROF_AG_EXEC)
		st->execs++;
	else
		st->exec_ends++;
	scr->busy = 0;
}

/* An event without Python frames (a node run, backward's end). */
static __noinline int ag_plain(__u32 kind, __u64 seq, __u16 flags)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 zero = 0;
	struct xsprof_autograd_stats *st = bpf_map_lookup_elem(&ag_stats, &zero);
	struct ag_scratch *scr;

	if (!st)
		return 0;
	scr = ag_begin(st, task, kind, seq, flags);
	if (scr)
		ag_end(st, scr, kind);
	return 0;
}

/* An event with the thread's Python frames (a node made, backward() called). */
static __noinline int ag_frames(__u32 kind, __u64 seq)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 zero = 0;
	struct xsprof_autograd_stats *st = bpf_map_lookup_elem(&ag_stats, &zero);
	struct ag_scratch *scr;

	if (!st)
		return 0;
	scr = ag_begin(st, task, kind, seq, 0);
	if (!scr)
		return 0;
	if (python_on)
		python_append_call(&scr->rec, python__own_tid(task));
	ag_end(st, scr, kind);
	return 0;
}

SEC("uprobe")
int xsprof_ag_node(struct pt_regs *ctx)
{
	return ag_frames(XSPROF_AG_NODE, PT_REGS_RC(ctx));
}

SEC("uprobe")
int xsprof_ag_eval(struct pt_regs *ctx)
{
	__u64 node = PT_REGS_PARM3(ctx), seq = 0;
	__u16 flags = 0;

	if (!node || bpf_probe_read_user(&seq, sizeof(seq), (void *)(node + ag_seq_off))) {
		__u32 zero = 0;
		struct xsprof_autograd_stats *st = bpf_map_lookup_elem(&ag_stats, &zero);

		if (st)
			st->seq_err++;
		flags = XSPROF_AG_F_SEQ_ERR;
		seq = 0;
	}
	return ag_plain(XSPROF_AG_EVAL, seq, flags);
}

SEC("uprobe")
int xsprof_ag_exec(struct pt_regs *ctx)
{
	return ag_frames(XSPROF_AG_EXEC, 0);
}

SEC("uprobe")
int xsprof_ag_exec_end(struct pt_regs *ctx)
{
	return ag_plain(XSPROF_AG_EXEC_END, 0, 0);
}
