/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * Interpreter frames of CPython processes, for every program that walks user stacks (the CPU
 * sampler, the CUDA uprobes, the USDT probe). The daemon (daemon/python) puts each CPython
 * process it finds in py_procs with the structure offsets of its version; for those, the walk
 * finds the sampled thread's thread state (cached per thread in py_threads, checked on each
 * use), then follows its frame chain from the current frame outward, one read per frame, and
 * records each frame's code object and instruction offset (struct xsprof_py_frame). Names,
 * files and lines are read by the daemon from the code objects. Every early stop is counted
 * in py_stats; a process whose interpreter cannot be read keeps its native stack.
 */
#ifndef XSPROF_BPF_PYTHON_BPF_H
#define XSPROF_BPF_PYTHON_BPF_H

#include <bpf/bpf_core_read.h>
#include "xsprof_events.h"

#ifdef XSPROF_SAMPLER_MAPS_OWNER
#define XSPROF_PYTHON_LINKAGE
#else
#define XSPROF_PYTHON_LINKAGE __weak
#endif

/* The largest frame read at once: every field the walk uses lies inside. */
#define PY_FRAME_READ 128

/*
 * A thread's thread states, one per interpreter it runs in (subinterpreters), in interpreter
 * list order (newest interpreter first: the one entered last, innermost), as the last scan
 * found them. Each is checked against native_thread_id on use; the list is scanned again when
 * one fails or every PY_RESCAN_NS (a thread may enter a new subinterpreter).
 */
#define PY_MAX_TSTATES 4
#define PY_RESCAN_NS   (100 * 1000 * 1000)

struct py_thread {
	__u64 ts[PY_MAX_TSTATES];
	__u64 scanned_ns;
};

/* The thread search's state (python.bpf.c): interpreters (next) and their thread states
 * (next), those of tid in list order. */
struct py_tsearch_state {
	__u64 interp, ts;
	__u64 tid;
	__u32 err, n;
	struct py_thread found;
};

/* The frame walk's state: frames from the current one outward. */
struct py_fwalk_state {
	__u64 frame;
	__u32 n, err, full, pad;
};

struct py_scratch {
	struct xsprof_py_frame f[XSPROF_PY_MAX_FRAMES];
	__u8 chunk[PY_FRAME_READ];
	__u64 key_words[XSPROF_PY_KEY_BYTES / 8];
	/* The walks' state, off the BPF stack (a call chain has 512 bytes for all its frames). */
	struct py_tsearch_state q;
	struct py_thread th;
	struct py_fwalk_state fw;
	__u64 thread_key; /* py_threads' key for the thread searched */
	/* A walk is using this CPU's scratch: a program that runs inside another (the CPU
	 * sampler's timer interrupt during a launch probe, which does not stop it) or on this
	 * CPU while the other is preempted (launch probes can be) leaves it alone. */
	__u64 busy;	    /* taken with a compare-and-swap: a preempted program may be between */
	__u64 last_wake_ns; /* this CPU last woke the reader for interpreter frames */
};

/* How long interpreter frames may wait for the reader: it reads their code objects while the
 * process still runs, so a short script is named before it exits. */
#define PY_WAKE_NS (10 * 1000 * 1000)

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096); /* resized by the daemon before load */
	__type(key, __u32);	   /* tgid */
	__type(value, struct xsprof_py_proc);
} py_procs SEC(".maps") XSPROF_PYTHON_LINKAGE;

/* (tgid << 32 | tid) -> struct py_thread. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct py_thread);
} py_threads SEC(".maps") XSPROF_PYTHON_LINKAGE;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xsprof_py_stats);
} py_stats SEC(".maps") XSPROF_PYTHON_LINKAGE;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_scratch);
} py_scratch SEC(".maps") XSPROF_PYTHON_LINKAGE;

/*
 * The walk appended to each kind of record after its used ips[], nr_python set: global
 * functions, each verified once on its own rather than in every state of its caller.
 * tid: as the process sees it (python__own_tid). Return nr_python.
 */
__noinline int python_append_sample(struct xsprof_sample *s, __u32 tid);
__noinline int python_append_call(struct xsprof_cuda_call *r, __u32 tid);
__noinline int python_append_usdt(struct xsprof_usdt_launch *r, __u32 tid);
__noinline int python_append_offcpu(struct xsprof_offcpu_stack *r, __u32 tid);

/*
 * A fingerprint of thread tid's innermost interpreter frames (addresses and instructions of the
 * current one and two callers), for a launch's key; 0 when tgid is not a known CPython process
 * (one map lookup: no more for the others), odd otherwise.
 */
__noinline __u64 python_key(__u32 tgid, __u32 tid);

/*
 * The thread's id as its own process sees it (gettid() in its pid namespace), which is what
 * CPython keeps in native_thread_id: a process in a container's namespace, below ours, has
 * other ids there than the ones we report.
 */
static __always_inline __u32 python__own_tid(struct task_struct *task)
{
	struct pid *p = BPF_CORE_READ(task, thread_pid);
	struct upid up;
	unsigned int level;

	if (!p)
		return 0;
	level = BPF_CORE_READ(p, level);
	if (bpf_core_read(&up, sizeof(up), &p->numbers[level & 31]))
		return 0;
	return (__u32)up.nr;
}

/* Whether a record with interpreter frames should wake the reader now (at most every
 * PY_WAKE_NS per CPU). */
static __always_inline bool python__wake(void)
{
	__u32 zero = 0;
	struct py_scratch *ps = bpf_map_lookup_elem(&py_scratch, &zero);
	__u64 now = bpf_ktime_get_ns();

	if (!ps || now - ps->last_wake_ns < PY_WAKE_NS)
		return false;
	ps->last_wake_ns = now;
	return true;
}

#endif
