// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * The return of a CUDA call that waits for the GPU (stream, event and device synchronize,
 * blocking copies) or allocates GPU memory: attached with the entry probe (uprobe_cuda.bpf.c)
 * on those APIs only; an allocation's record carries the address the call wrote. The entry left the call's stack pointer and time in the thread's call mark; the return
 * of that very call is the one that comes back with the stack pointer just above its return
 * address (entry sp + 8), so the return of a call nested in it (runtime -> driver) is told
 * apart. One small record per wait: the daemon finds the stack in the entry's record.
 *
 * Sorts after uprobe_cuda.bpf.c and sampler.bpf.c, which define the maps it uses.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "xsprof_events.h"
#include "shared_maps.bpf.h"
#include "pidns.bpf.h"

extern const volatile __u64 wakeup_bytes;

SEC("uprobe")
int xsprof_cuda_ret(struct pt_regs *ctx)
{
	struct xsprof_call_mark *m;
	struct xsprof_wait_stats *ws;
	struct xsprof_cuda_wait w = {};
	__u64 pid_tgid = xsprof_ids();
	__u32 zero = 0;

	ws = bpf_map_lookup_elem(&wait_stats, &zero);
	if (!ws || !pid_tgid)
		return 0;
	m = bpf_task_storage_get(&call_marks, bpf_get_current_task_btf(), 0, 0);
	if (!m || !(m->wait_ns || m->alloc_ns) || PT_REGS_SP(ctx) != m->sp + 8) {
		ws->stray_returns++;
		return 0;
	}
	w.tgid = pid_tgid >> 32;
	w.tid = (__u32)pid_tgid;
	w.return_ns = bpf_ktime_get_ns();
	w.device = m->device_set ? m->device : XSPROF_CUDA_DEVICE_UNSET;
	if (m->alloc_ns) {
		w.type = XSPROF_REC_CUDA_ALLOC;
		w.api = m->alloc_api;
		w.entry_ns = m->alloc_ns;
		/* CUresult and cudaError_t are ints: 0 is success. */
		if ((int)PT_REGS_RC(ctx))
			w.flags |= XSPROF_CUDA_F_FAILED;
		else if (bpf_probe_read_user(&w.stream, sizeof(w.stream), (void *)m->alloc_out))
			w.flags |= XSPROF_CUDA_F_READ_ERR;
		m->alloc_ns = 0;
	} else {
		w.type = XSPROF_REC_CUDA_WAIT;
		w.api = m->wait_api;
		w.entry_ns = m->wait_ns;
		w.stream = m->wait_stream;
		m->wait_ns = 0;
	}
	/* The call is over: a new one at the same sp is not the tail of this one. */
	m->sp = 0;
	if (bpf_ringbuf_output(&samples, &w, sizeof(w), BPF_RB_NO_WAKEUP)) {
		ws->drop_ringbuf++;
		return 0;
	}
	ws->returns++;
	return 0;
}
