// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * What the GPU path watches besides the API calls: children of profiled processes joining the
 * pid filter (command mode), and profiled processes mapping a CUDA library or exec'ing a new
 * executable, which the daemon must attach to before the first call or scope. Sorts after sampler.bpf.c and uprobe_cuda.bpf.c,
 * whose maps it shares (see uprobe_cuda.bpf.c why).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "xsprof_events.h"
#include "shared_maps.bpf.h"
#include "cuda_maps.bpf.h"
#include "pidns.bpf.h"

#define PROT_EXEC 0x4
#define NR_MMAP	  9 /* x86-64 */
/* pid_filter values: the daemon puts 1; a child added here gets this, and leaves at exit. */
#define FILTER_FOLLOWED 2

extern bool pid_filter_on;

/* Defined in uprobe_cuda.bpf.c (flipped by the daemon at run time). */
extern bool cuda_stop_processes;

static __always_inline struct xsprof_cuda_stats *stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&cuda_stats, &zero);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(xsprof_follow_fork, struct task_struct *parent, struct task_struct *child)
{
	/* In the daemon's pid namespace, as the filter holds them (bpf/pidns.bpf.h). */
	__u32 ptgid = xsprof_task_tgid(parent), ctgid = xsprof_task_tgid(child);
	struct xsprof_cuda_stats *st;
	__u8 followed = FILTER_FOLLOWED;
	long err;

	/* A new thread is already in (or out of) the filter with its process. */
	if (!ptgid || !ctgid || ptgid == ctgid || !bpf_map_lookup_elem(&pid_filter, &ptgid))
		return 0;
	st = stats();
	err = bpf_map_update_elem(&pid_filter, &ctgid, &followed, BPF_NOEXIST);
	/* A pid seen before belonged to another process: this one's first call is held too. */
	bpf_map_delete_elem(&cuda_seen, &ctgid);
	if (st) {
		if (!err)
			st->forks_followed++;
		else if (err != -17) /* -EEXIST: a stale entry of a reused pid, now right */
			st->fork_drop++;
	}
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(xsprof_unfollow_exit, struct task_struct *p)
{
	__u32 tgid = xsprof_task_tgid(p);
	struct xsprof_cuda_stats *st;
	__u8 *v;

	if (!tgid)
		return 0;
	/* Only when the last thread goes: signal->live counts the threads still running. */
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	v = bpf_map_lookup_elem(&pid_filter, &tgid);
	if (!v || *v != FILTER_FOLLOWED)
		return 0;
	bpf_map_delete_elem(&cuda_seen, &tgid);
	/* Free the slot, and keep a later process that reuses the pid out of the profile. */
	if (!bpf_map_delete_elem(&pid_filter, &tgid)) {
		st = stats();
		if (st)
			st->exits_unfollowed++;
	}
	return 0;
}

static __always_inline bool has_prefix(const char *s, const char *prefix, int n)
{
	for (int i = 0; i < n; i++)
		if (s[i] != prefix[i])
			return false;
	return true;
}

/* libcuda.so*, libcudart.so* (also a statically renamed libcudart-HASH.so), libxsprof_cupti*. */
static __always_inline bool is_gpu_library(const char *name)
{
	return has_prefix(name, "libcuda", 7) || has_prefix(name, "libxsprof_cupti", 15);
}

/*
 * An mmap() by a profiled process is done (the write lock on its address space is released):
 * ld.so maps a library's code PROT_EXEC from an open fd, at start-up or in dlopen(), before any
 * code of it runs. This tracepoint fires only where the lock is taken (mmap, munmap, mprotect,
 * brk), unlike syscall tracepoints, which tax every system call of every process while enabled,
 * and needs neither kprobes nor BPF trampolines (kernels without CONFIG_KPROBES, or that refuse
 * fentry, are common). The fd and protection are mmap's arguments, read from the user
 * registers saved at system call entry.
 */
SEC("tp_btf/mmap_lock_released")
int BPF_PROG(xsprof_watch_mmap, struct mm_struct *mm, bool write)
{
	__u64 pid_tgid = xsprof_ids();
	__u32 tgid = pid_tgid >> 32;
	struct xsprof_cuda_lib_event *e;
	struct xsprof_cuda_stats *st;
	struct task_struct *task;
	struct pt_regs *regs;
	struct fdtable *fdt;
	struct file **fds, *file = NULL;
	const unsigned char *dname;
	unsigned long fd, prot;
	char name[32];

	if (!write || !pid_tgid || !pid_filter_on || !bpf_map_lookup_elem(&pid_filter, &tgid))
		return 0;
	task = bpf_get_current_task_btf();
	if (BPF_CORE_READ(task, mm) != mm)
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	/* x86-64 system call registers: nr in orig_ax; prot, fd in rdx, r8. */
	if (BPF_CORE_READ(regs, orig_ax) != NR_MMAP)
		return 0;
	prot = BPF_CORE_READ(regs, dx);
	fd = BPF_CORE_READ(regs, r8);
	if (!(prot & PROT_EXEC) || (long)fd < 0)
		return 0;
	fdt = BPF_CORE_READ(task, files, fdt);
	if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]) || !file)
		return 0;
	dname = BPF_CORE_READ(file, f_path.dentry, d_name.name);
	if (bpf_probe_read_kernel_str(name, sizeof(name), dname) < 0 || !is_gpu_library(name))
		return 0;

	st = stats();
	if (!st)
		return 0;
	/* Reserve first: a process is stopped only when the daemon is sure to hear of it. */
	e = bpf_ringbuf_reserve(&samples, sizeof(*e), 0);
	if (!e) {
		st->lib_map_drop++;
		return 0;
	}
	e->type = XSPROF_REC_CUDA_CALL;
	e->tgid = tgid;
	e->tid = (__u32)pid_tgid;
	e->api = XSPROF_CUDA_LIB_MAPPED;
	e->flags = 0;
	e->time_ns = bpf_ktime_get_ns();
	e->fd = (__s32)fd;
	e->prot = (__u32)prot;
	__builtin_memcpy(e->name, name, sizeof(e->name));
	/* Stopped on its way back to user space, before any code of the library can run; the
	 * daemon attaches the probes (the mapping is in place) and sends SIGCONT. */
	if (cuda_stop_processes && !xsprof_stop_self(tgid))
		e->flags |= XSPROF_CUDA_F_STOPPED;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	st->lib_maps++;
	return 0;
}

/*
 * A profiled process exec'd: its new executable may hold xsprof scopes, xsprof:launch or a
 * CUDA runtime linked in statically, whose probes are per file. Stopped before the new image
 * runs, as a library mapping is; the daemon attaches to /proc/TGID/exe and sends SIGCONT.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(xsprof_watch_exec, struct task_struct *p, pid_t old_pid)
{
	__u64 pid_tgid = xsprof_ids();
	__u32 tgid = pid_tgid >> 32;
	struct xsprof_cuda_lib_event *e;
	struct xsprof_cuda_stats *st;

	if (!pid_tgid || !pid_filter_on || !bpf_map_lookup_elem(&pid_filter, &tgid))
		return 0;
	st = stats();
	if (!st)
		return 0;
	e = bpf_ringbuf_reserve(&samples, sizeof(*e), 0);
	if (!e) {
		st->exec_drop++;
		return 0;
	}
	e->type = XSPROF_REC_CUDA_CALL;
	e->tgid = tgid;
	e->tid = (__u32)pid_tgid;
	e->api = XSPROF_CUDA_LIB_MAPPED;
	e->flags = XSPROF_CUDA_F_EXEC;
	e->time_ns = bpf_ktime_get_ns();
	e->fd = -1;
	e->prot = 0;
	__builtin_memset(e->name, 0, sizeof(e->name));
	bpf_get_current_comm(e->name, sizeof(e->name) < 16 ? sizeof(e->name) : 16);
	if (cuda_stop_processes && !xsprof_stop_self(tgid))
		e->flags |= XSPROF_CUDA_F_STOPPED;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	st->execs_watched++;
	return 0;
}
