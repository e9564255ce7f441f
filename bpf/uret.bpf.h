/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * Return addresses a pending return probe replaced. While a call with a uretprobe on it runs
 * (ours on the CUDA calls that wait or allocate: cudaStreamSynchronize, cudaMalloc; or any
 * other tool's), the kernel keeps that call's return address on the stack swapped for its
 * trampoline in the [uprobes] page; the original is in the task's struct return_instance, with
 * the address of the slot it came from (stack). A walk that reads the trampoline there takes it
 * for a caller: "[unknown]", then a garbage frame or the end of the walk. And a probed call
 * made inside that one (the runtime's cudaMalloc calling the driver's cuMemAlloc_v2) would not
 * find its caller's return address in its slot, and pass for an outermost call: the same
 * allocation or wait twice, the inner one with a broken stack. Seen on every PyTorch
 * allocation and .item() on a real GPU (tests/gpu/RESULTS.md). The table walk, the bpf_loop
 * frame-pointer walk and the held copy are fixed up; the unrolled frame-pointer walk
 * (ustack__walk_fp: --unwind fp, a process whose tables are not loaded, kernels without
 * bpf_loop) is not: a check in each of its 126 unrolled steps doubled the sampler's
 * verification, xsprofd's start-up from 0.5 to 1.0 s.
 */
#ifndef XSPROF_BPF_URET_BPF_H
#define XSPROF_BPF_URET_BPF_H

#include <bpf/bpf_core_read.h>

/* Return instances looked through: one per pending probed call of the thread. */
#define URET_MAX 8

/* The trampoline's address in task's mm while a return probe is pending on it, else 0. */
static __always_inline __u64 uret__tramp(struct task_struct *task)
{
	struct uprobe_task *ut = BPF_CORE_READ(task, utask);

	if (!ut || !BPF_CORE_READ(ut, return_instances))
		return 0;
	return BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
}

/* The return address the trampoline stands for in the slot at address slot of the current
 * thread's stack, or tramp when none is known (defined once, in unwind.bpf.c). */
__noinline __u64 unwind_uret_orig(__u64 slot, __u64 tramp);

#endif
