// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * USDT xsprof:scope_begin(name) / xsprof:scope_end(name), xsprof/scope.h's probes in a profiled
 * program: the thread, the time and the name's address, for the daemon to pair into ranges.
 * No stack: the samples taken inside a scope carry theirs. Shares the sampler's maps.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#define BPF_USDT_MAX_SPEC_CNT 1024
#include <bpf/usdt.bpf.h>
#include "xsprof_events.h"
#include "shared_maps.bpf.h"
#include "cuda_maps.bpf.h"
#include "pidns.bpf.h"
#include "filters.bpf.h"

extern bool pid_filter_on;
extern const volatile __u64 wakeup_bytes;

static __always_inline int scope(struct pt_regs *ctx, __u32 end)
{
	__u64 pid_tgid = xsprof_ids();
	__u32 zero = 0, tgid = pid_tgid >> 32;
	struct xsprof_cuda_stats *st = bpf_map_lookup_elem(&cuda_stats, &zero);
	struct xsprof_scope *e;
	long name = 0;
	__u64 flags;

	if (!st || !pid_tgid) /* 0: outside the daemon's pid namespace */
		return 0;
	st->scope_fired++;
	if (pid_filter_on && !bpf_map_lookup_elem(&pid_filter, &tgid))
		return 0;
	if (!xsprof_owner_pass(bpf_get_current_task_btf(), XSPROF_OWNER_USDT))
		return 0;
	if (bpf_usdt_arg(ctx, 0, &name)) {
		st->scope_drop++;
		return 0;
	}
	e = bpf_ringbuf_reserve(&samples, sizeof(*e), 0);
	if (!e) {
		st->scope_drop++;
		return 0;
	}
	e->type = XSPROF_REC_SCOPE;
	e->tgid = tgid;
	e->tid = (__u32)pid_tgid;
	e->end = end;
	e->time_ns = bpf_ktime_get_ns();
	e->name = (__u64)name;
	/* Small and many: the reader is woken by the ring's fill, not by each one. */
	flags = bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
									       : BPF_RB_NO_WAKEUP;
	bpf_ringbuf_submit(e, flags);
	return 0;
}

/* Attached to both probes: the cookie says which (0 scope_begin, 1 scope_end). */
SEC("usdt")
int xsprof_usdt_scope(struct pt_regs *ctx)
{
	return scope(ctx, bpf_usdt_cookie(ctx) ? 1 : 0);
}
