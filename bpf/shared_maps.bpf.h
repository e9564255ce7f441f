/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * Maps of the CPU sampler that other programs share: the ring buffer every record goes
 * through and the pid filter. sampler.bpf.c defines them (XSPROF_SAMPLER_MAPS_OWNER); the others
 * include the same definitions __weak, which bpftool gen object merges into the strong ones.
 * libbpf 1.1's linker mis-relocates a __weak map it meets before the strong one ("map relo
 * failed"), so bpf/CMakeLists.txt links sampler.bpf.c first.
 */
#ifndef XSPROF_BPF_SHARED_MAPS_BPF_H
#define XSPROF_BPF_SHARED_MAPS_BPF_H

#ifdef XSPROF_SAMPLER_MAPS_OWNER
#define XSPROF_SAMPLER_LINKAGE
#else
#define XSPROF_SAMPLER_LINKAGE __weak
#endif

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by the daemon before load */
} samples SEC(".maps") XSPROF_SAMPLER_LINKAGE;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* resized by the daemon before load */
	__type(key, __u32);	   /* tgid */
	__type(value, __u8);
} pid_filter SEC(".maps") XSPROF_SAMPLER_LINKAGE;

/*
 * The stop ledger: the processes stopped (SIGSTOP) for their probes and not continued yet,
 * tgid -> when. The daemon shares one map between all its samplers (daemon/probes/
 * stop_ledger.c), takes a process off when it sends SIGCONT, and a watchdog process that holds
 * the map continues whatever is left when the daemon dies. A process is stopped only once it
 * is on the ledger.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);   /* tgid */
	__type(value, __u64); /* bpf_ktime_get_ns() of the stop */
} stopped SEC(".maps") XSPROF_SAMPLER_LINKAGE;

/* Stop the current process (on its way back to user space) for the daemon's probes, once it
 * is on the ledger: 0, or nonzero when it was not stopped. */
static __always_inline int xsprof_stop_self(__u32 tgid)
{
	__u64 now = bpf_ktime_get_ns();

	if (bpf_map_update_elem(&stopped, &tgid, &now, BPF_ANY))
		return -1;
	if (bpf_send_signal(19 /* SIGSTOP */)) {
		bpf_map_delete_elem(&stopped, &tgid);
		return -1;
	}
	return 0;
}

/*
 * Threads in an exec, from sched_prepare_exec (before the old image is dropped) to
 * sched_process_exec (the new one is in place): tid -> the mm they had before. A sample finding
 * a different mm is between images (task_events.bpf.c). A hash, not task storage: creating task
 * storage cost 10-40 us per exec here, a preallocated hash update well under 1 us; an exec that
 * dies half-way leaves an entry the LRU recycles.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} exec_window SEC(".maps") XSPROF_SAMPLER_LINKAGE;

/*
 * The outermost probed CUDA call in progress on a thread (uprobe_cuda.bpf.c), to tell nested
 * calls from new ones; and, while that call waits for the GPU, since when: the return probe
 * (uprobe_cuda_ret.bpf.c) times it, and in wall mode the sampler and the off-CPU program leave
 * the thread's time to the wait. Also the thread's current device, as the CUDA runtime keeps
 * it: the one its last cudaSetDevice named (an allocation's record carries it).
 */
struct xsprof_call_mark {
	__u64 sp;      /* stack pointer at its entry */
	__u64 ret;     /* its return address, found at sp while it runs */
	__u32 pending; /* set by a wrapper: the next probe at the same sp is its tail call */
	__u32 sent;    /* records this thread sent: its first one wakes the reader */
	__u64 wait_ns; /* entry time of the waiting call in progress, 0 when none */
	__u64 wait_stream;
	__u32 wait_api;
	__u32 alloc_api;
	__u64 alloc_ns;	 /* entry time of the allocating call in progress, 0 when none */
	__u64 alloc_out; /* where it writes the address (its first argument) */
	__s32 device;	 /* the device of the thread's last cudaSetDevice, if device_set */
	__u32 device_set;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct xsprof_call_mark);
} call_marks SEC(".maps") XSPROF_SAMPLER_LINKAGE;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xsprof_wait_stats);
} wait_stats SEC(".maps") XSPROF_SAMPLER_LINKAGE;

/* Whether task is inside a call that waits for the GPU (its wait has a frame of its own). */
static __always_inline bool xsprof_in_gpu_wait(struct task_struct *task)
{
	struct xsprof_call_mark *m = bpf_task_storage_get(&call_marks, task, 0, 0);

	return m && m->wait_ns;
}

#endif
