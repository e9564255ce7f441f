/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * Records that cross the BPF -> daemon boundary. Included by BPF programs (after vmlinux.h) and by
 * the daemon (after <linux/types.h>); the one definition both sides compile against.
 */
#ifndef XSPROF_BPF_XSPROF_EVENTS_H
#define XSPROF_BPF_XSPROF_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* The kernel caps callchains at sysctl kernel.perf_event_max_stack (default 127). */
#define XSPROF_MAX_STACK_DEPTH 127
#define XSPROF_COMM_LEN	       16

/*
 * ---- Interpreter frames (CPython): bpf/python.bpf.h -> daemon/python ----
 * Records that walk stacks (samples, CUDA calls, USDT launches) carry, right after their used
 * ips[], nr_python struct xsprof_py_frame, innermost first: the code object each frame runs
 * and where in it. The daemon names them and puts each run of frames in place of the
 * _PyEval_EvalFrameDefault native frame that runs it.
 */
#define XSPROF_PY_MAX_FRAMES 64
/* The words a record's ips[] holds past its native frames: the frames, and one slot of slack
 * so the copy's offset can be bounded with a mask. */
#define XSPROF_PY_AREA_WORDS (2 + 3 * XSPROF_PY_MAX_FRAMES)

struct xsprof_py_frame {
	__u64 code;  /* PyCodeObject address in the process */
	__u32 instr; /* code units from the code's first instruction; XSPROF_PY_INSTR_NONE: none */
	__u32 flags; /* XSPROF_PY_F_* */
	/* A hash of the code object's first line and name pointers: an address freed and reused
	 * by another code object gets another key, so names cached by address stay right. */
	__u64 key;
};

_Static_assert(sizeof(struct xsprof_py_frame) == 24, "xsprof_py_frame layout");
/* The bytes of a code object hashed into key, from xsprof_py_proc.code_key. */
#define XSPROF_PY_KEY_BYTES 64

#define XSPROF_PY_INSTR_NONE 0xffffffffu
/* The first frame of an interpreter activation (_PyEval_EvalFrameDefault call): the frames
 * from the one before it (inner) up to it run in one native frame. */
#define XSPROF_PY_F_ENTRY 0x1

/*
 * Why a user stack walk ended (the records' walk_end): at the root, or before it, which the
 * daemon marks in the stack with one frame, "[truncated: ...]" (daemon/stacks/fold.c). 0: not
 * said (no walk, or a record that does not carry it): no mark.
 */
enum xsprof_walk_end {
	XSPROF_END_NONE = 0,
	XSPROF_END_ROOT = 1,	   /* a table's outermost frame, a zero frame pointer or address */
	XSPROF_END_FP_BROKEN = 2,  /* a frame-pointer chain that breaks off (not rising, unaligned,
				     * unreadable) */
	XSPROF_END_NO_TABLE = 3,   /* --unwind cfi: a frame in no table */
	XSPROF_END_NO_RULE = 4,	   /* a row with no rule the walk applies */
	XSPROF_END_UNREADABLE = 5, /* the stack could not be read where a rule pointed */
	XSPROF_END_BAD_CFA = 6,	   /* a rule gave a frame below the one before */
	XSPROF_END_DEPTH = 7,	   /* XSPROF_MAX_STACK_DEPTH frames */
	XSPROF_END_COPY = 8,	   /* a held walk ran off the end of its stack copy */
	XSPROF_END_JIT = 9,	   /* JIT code that keeps no frame pointer (the JVM by default): its
			     * caller cannot be proven */
	XSPROF_END_EXITING = 10,   /* a process in exit(): its memory gone (past exit_mm) or its
				     * tables dropped at its exit record */
	XSPROF_END_REASONS,
};

/*
 * Every record on the ring buffer starts with a __u32 type. Each record type's struct is defined
 * in this file, next to its enumerator's owner's section below.
 */
enum xsprof_record_type {
	XSPROF_REC_SAMPLE = 1,	      /* struct xsprof_sample: CPU sampler */
	XSPROF_REC_CUDA_CALL = 2,     /* CUDA API entry caught by a uprobe (GPU path) */
	XSPROF_REC_USDT_LAUNCH = 3,   /* xsprof:launch USDT from libxsprof_cupti.so (GPU path) */
	XSPROF_REC_PROC_EXEC = 4,     /* process lifetime: exec */
	XSPROF_REC_PROC_EXIT = 5,     /* process lifetime: exit */
	XSPROF_REC_OFFCPU = 6,	      /* off-CPU: a blocked stack seen for the first time */
	XSPROF_REC_CUDA_WAIT = 7,     /* a CUDA call that waits for the GPU returned (GPU path) */
	XSPROF_REC_UNWIND_WANT = 8,   /* a walk asks for a file's unwind table */
	XSPROF_REC_SAMPLE_HELD = 9,   /* a sample whose walk the daemon finishes */
	XSPROF_REC_OFFCPU_HELD = 10,  /* an off-CPU stack whose walk the daemon finishes */
	XSPROF_REC_LAUNCH_REUSE = 11, /* a CUDA call with the stack of its thread's last one */
	XSPROF_REC_SCOPE = 12,	      /* xsprof:scope_begin / scope_end (xsprof/scope.h) */
	XSPROF_REC_CUDA_ALLOC = 13,   /* a CUDA call that allocates GPU memory returned */
	XSPROF_REC_AUTOGRAD = 14, /* a PyTorch autograd event (struct xsprof_cuda_call's layout) */
	XSPROF_REC_WAIT = 15, /* a watched thread's off-CPU stretch and who woke it (--wakers) */
	XSPROF_REC_MAX,
};

/*
 * One CPU sample. Variable length on the wire: ips[] holds nr_kernel kernel frames (innermost
 * first) followed by nr_user user frames (innermost first); only those are sent.
 */
struct xsprof_sample {
	__u32 type; /* XSPROF_REC_SAMPLE */
	__u32 tgid;
	__u32 tid;
	__u32 cpu;
	__u64 time_ns; /* CLOCK_MONOTONIC */
	char comm[XSPROF_COMM_LEN];
	__u16 nr_kernel;
	__u16 nr_user;
	__s16 kernel_err; /* bpf_get_stack error for the kernel stack, 0 if none */
	__s16 user_err;	  /* same for the user stack */
	__u32 flags;	  /* XSPROF_SAMPLE_F_* */
	__u32 uid;	  /* who may see this sample: the thread's uid, 0 when real != effective */
	__u16 nr_python;  /* struct xsprof_py_frame after the nr_kernel + nr_user ips */
	__u8 walk_end;	  /* enum xsprof_walk_end of the user walk */
	__u8 pad8;
	__u32 pad;
	__u64 ips[2 * XSPROF_MAX_STACK_DEPTH + XSPROF_PY_AREA_WORDS];
};

#define XSPROF_SAMPLE_HDR_SIZE	64
#define XSPROF_SAMPLE_F_KTHREAD 0x1 /* kernel thread: no user stack by nature */
/* Outside the daemon's pid namespace: tgid/tid are host ids, not to be looked up in its /proc. */
#define XSPROF_SAMPLE_F_FOREIGN 0x2
/* In the kernel half of an exec, after the old image was dropped and before the new one ran:
 * the user registers belong to neither, so no user stack was taken. */
#define XSPROF_SAMPLE_F_EXEC 0x4

_Static_assert(sizeof(struct xsprof_sample) == XSPROF_SAMPLE_HDR_SIZE +
						       2 * 8 * XSPROF_MAX_STACK_DEPTH +
						       8 * XSPROF_PY_AREA_WORDS,
	       "xsprof_sample layout");

/* Per-CPU counters; index of each field is fixed for user space. */
struct xsprof_cpu_stats {
	__u64 samples;	    /* perf events that ran the program */
	__u64 emitted;	    /* records written to the ring buffer */
	__u64 filtered;	    /* samples outside the pid filter */
	__u64 idle;	    /* samples of the idle task (not emitted unless include_idle) */
	__u64 drop_ringbuf; /* ring buffer full: sample lost */
	__u64 kstack_err;   /* kernel stack could not be read (sample kept without it) */
	__u64 ustack_err;   /* user stack could not be read (sample kept without it) */
	__u64 in_exec;	    /* samples inside an exec, between images (no user stack) */
	__u64 timed;	    /* samples timed (one in XSPROF_TIMED_EVERY) */
	__u64 timed_ns;	    /* ... and the program's run time over them */
};

_Static_assert(sizeof(struct xsprof_cpu_stats) == 80, "xsprof_cpu_stats layout");

/* Records a user's recording left out: their thread was another user's (bpf/filters.bpf.h). */
enum xsprof_owner_kind {
	XSPROF_OWNER_SAMPLE = 0, /* CPU samples */
	XSPROF_OWNER_OFFCPU,	 /* off-CPU stretches */
	XSPROF_OWNER_CUDA_CALL,	 /* CUDA API calls (launches, copies, waits) */
	XSPROF_OWNER_USDT,	 /* xsprof:launch firings */
	XSPROF_OWNER_KINDS,
};

struct xsprof_owner_stats {
	__u64 dropped[XSPROF_OWNER_KINDS];
};

_Static_assert(sizeof(struct xsprof_owner_stats) == 32, "xsprof_owner_stats layout");

/* The probes time one run in this many (a power of two): what profiling costs, said by the
 * daemon, for two clock reads per 16 runs. */
#define XSPROF_TIMED_EVERY 16

/* Return-address slots a reuse of xsprof:launch's stack checks (bpf/launch_reuse.bpf.h); the
 * daemon says when the CUDA libraries' own frames above the application's call are that many. */
#define XSPROF_LAUNCH_SLOTS_USDT 32

/*
 * Process lifetime (bpf/task_events.bpf.c -> daemon/probes/proc_events.c). The daemon snapshots a process's
 * mappings when these arrive, before a short-lived process is gone: exec and the loader's
 * library events wake the reader at once; exit does not need to (ring buffer order keeps it after
 * the process's samples and before those of a later process with the same pid).
 */
/* Not an exec: the dynamic loader mapped (or unmapped) libraries: start-up, dlopen. */
#define XSPROF_PROC_EXEC_F_LIBS 0x1

struct xsprof_proc_exec {
	__u32 type; /* XSPROF_REC_PROC_EXEC */
	__u32 tgid;
	__u32 tid;     /* the thread that called exec (or the loader) */
	__u32 flags;   /* XSPROF_PROC_EXEC_F_* */
	__u64 time_ns; /* CLOCK_MONOTONIC */
	char comm[XSPROF_COMM_LEN];
};

_Static_assert(sizeof(struct xsprof_proc_exec) == 40, "xsprof_proc_exec layout");

struct xsprof_proc_exit {
	__u32 type; /* XSPROF_REC_PROC_EXIT */
	__u32 tgid;
	__u64 time_ns; /* CLOCK_MONOTONIC */
	/* The last thread's exit code as wait(2) sees it: the signal that killed the process in
	 * its low 7 bits (0x80: it dumped core), else the exit status << 8. */
	__u32 exit_code;
	__u32 pad;
};

_Static_assert(sizeof(struct xsprof_proc_exit) == 24, "xsprof_proc_exit layout");

/* Per-CPU counters of bpf/task_events.bpf.c. */
struct xsprof_proc_stats {
	__u64 execs;
	__u64 exits;
	__u64 libs;	    /* loader library events reported */
	__u64 drop_ringbuf; /* records lost: ring buffer full */
	__u64 over_budget;  /* exec and library records not sent: their user's budget was spent */
};

_Static_assert(sizeof(struct xsprof_proc_stats) == 40, "xsprof_proc_stats layout");

/*
 * Exec and library records each user (real uid) but root may send in a second: past it, that
 * user's new processes are read at their first sample instead, so one user's exec storm can
 * neither fill the ring buffer everyone's samples share nor the daemon's loop. Exit records
 * are always sent (they free what an exec took).
 */
#define XSPROF_PROC_RECORDS_PER_USER_S 500
/* Users whose budget is tracked at once (least recently seen forgotten). */
#define XSPROF_PROC_BUDGET_USERS 4096

struct xsprof_proc_budget {
	__u64 window_ns; /* start of the current second */
	__u64 sent;	 /* records taken in it */
};

/*
 * ---- Off-CPU (bpf/offcpu.bpf.c -> daemon/probes/offcpu.c) ----
 * A thread switched out (sched_switch) and back in (finish_task_switch) after at least the
 * minimum block time: the time is summed in the kernel per (tgid, tid, stack hash) in offcpu_agg;
 * the first time a key is made, its stack goes to the ring buffer in this record, so the cost
 * does not grow with the switch rate.
 */
struct xsprof_offcpu_key {
	__u32 tgid;
	__u32 tid;
	__u64 hash; /* of the kernel and user stacks */
};

struct xsprof_offcpu_val {
	__u64 ns;    /* off-CPU time summed */
	__u64 count; /* blocks summed */
};

struct xsprof_offcpu_stack {
	__u32 type; /* XSPROF_REC_OFFCPU */
	__u32 tgid;
	__u32 tid;
	__u32 uid;
	__u64 hash;
	char comm[XSPROF_COMM_LEN];
	__u16 nr_kernel;
	__u16 nr_user;
	__s16 kernel_err;
	__s16 user_err;
	__u32 flags;	 /* XSPROF_SAMPLE_F_* */
	__u16 nr_python; /* struct xsprof_py_frame in uips[] after the nr_user frames */
	__u8 walk_end;	 /* enum xsprof_walk_end of the user walk */
	__u8 pad;
	__u64 kips[XSPROF_MAX_STACK_DEPTH];
	__u64 uips[XSPROF_MAX_STACK_DEPTH + XSPROF_PY_AREA_WORDS];
};

_Static_assert(sizeof(struct xsprof_offcpu_stack) ==
		       56 + 8 * (2 * XSPROF_MAX_STACK_DEPTH + XSPROF_PY_AREA_WORDS),
	       "xsprof_offcpu_stack layout");

/*
 * A new off-CPU stack whose walk stopped where a table was missing (a process the daemon had
 * not loaded yet: the first blocks of a new program's threads; a file whose table is being
 * built): stack.uips ends with the frame at pc, and the daemon walks the rest over the copy of
 * the stack at sp, with the tables (as for struct xsprof_sample_held). The key's hash is of
 * what stack holds.
 */
struct xsprof_offcpu_held {
	__u32 type; /* XSPROF_REC_OFFCPU_HELD */
	__u32 copy_len;
	__u64 pc, sp, bp;
	__u32 exact; /* pc is where the thread is, not a return address */
	__u32 pad;
	struct xsprof_offcpu_stack stack;
	__u8 copy[16384];
};

_Static_assert(sizeof(struct xsprof_offcpu_held) == 40 + sizeof(struct xsprof_offcpu_stack) + 16384,
	       "xsprof_offcpu_held layout");

struct xsprof_offcpu_stats {
	__u64 switches;	    /* switch-outs of watched threads */
	__u64 blocks;	    /* switch-ins of watched threads */
	__u64 below_min;    /* blocks shorter than the minimum, ignored */
	__u64 new_stacks;   /* keys made (records sent) */
	__u64 agg_full;	    /* blocks lost: the aggregation map is full */
	__u64 drop_ringbuf; /* new stacks lost: ring buffer full (their time too) */
	__u64 start_full;   /* switch-outs not timed: the start map evicted them */
	__u64 ustack_err;   /* user stacks that could not be read (kept without) */
	/* --wakers (bpf/offcpu.bpf.c's xsprof_waking): */
	__u64 wakeups;	 /* watched threads off the CPU woken */
	__u64 waits;	 /* wait records sent (a stretch and its waker) */
	__u64 wait_lost; /* ... lost: ring buffer full */
	__u64 pad_wakers;
};

_Static_assert(sizeof(struct xsprof_offcpu_stats) == 96, "xsprof_offcpu_stats layout");

/*
 * A watched thread's off-CPU stretch that something woke (--wakers): the stretch (its key, as
 * the off-CPU stack records name it), when it was woken and when it ran again, and the waker.
 * With XSPROF_WAKE_STACK the waker's stack at the wakeup is the off-CPU key (waker_tgid,
 * waker_tid, waker_hash), sent as an XSPROF_REC_OFFCPU record like any key.
 */
struct xsprof_wait {
	__u32 type; /* XSPROF_REC_WAIT */
	__u32 tgid;
	__u32 tid;
	__u32 flags; /* XSPROF_WAKE_* */
	__u64 hash;  /* the stretch's key */
	__u64 start_ns, wake_ns, end_ns;
	__u32 waker_tgid, waker_tid; /* in the daemon's namespace; 0 when no thread woke it */
	__u64 waker_hash;
	/* CPU time (the scheduler's sum_exec_runtime, ns): the thread's when it came back, the
	 * waker's when it woke it (as of its last update: a tick late at most). Their difference
	 * is what a waker ran between its own wakeup and this one, preemption left out. */
	__u64 cpu_ns, waker_cpu_ns;
};

_Static_assert(sizeof(struct xsprof_wait) == 80, "xsprof_wait layout");

#define XSPROF_WAKE_IRQ	      0x1 /* (the daemon's) woken from an interrupt: no waker */
#define XSPROF_WAKE_KERNEL    0x2 /* woken by a kernel thread (or the idle task) */
#define XSPROF_WAKE_UNWATCHED 0x4 /* by a thread outside the session: its ids only */
#define XSPROF_WAKE_STACK     0x8 /* the waker's stack is the key (waker_tgid, _tid, _hash) */

/*
 * ---- GPU path: CUDA API entry uprobes and the xsprof:launch USDT (bpf/uprobe_cuda.bpf.c,
 * bpf/usdt_launch.bpf.c, bpf/watch.bpf.c; daemon/cuda/cuda_probes.c) ----
 */

/*
 * The CUDA entry points the uprobes catch: a record's api field and the low 16 bits of the
 * attach cookie. The numbers are part of the record format: append, never renumber. Symbol
 * names, stream arguments and the libraries they live in are in daemon/cuda/cuda_probes.c.
 */
enum xsprof_cuda_api {
	XSPROF_CUDA_LIB_MAPPED = 0, /* not a call: struct xsprof_cuda_lib_event */

	/* Runtime (libcudart). */
	XSPROF_CUDA_cudaLaunchKernel = 1,
	XSPROF_CUDA_cudaLaunchKernel_ptsz = 2,
	XSPROF_CUDA_cudaLaunchKernelExC = 3,
	XSPROF_CUDA_cudaLaunchKernelExC_ptsz = 4,
	XSPROF_CUDA___cudaLaunchKernel = 5, /* what <<<>>> compiles to since CUDA 13 */
	XSPROF_CUDA___cudaLaunchKernel_ptsz = 6,
	XSPROF_CUDA_cudaLaunchCooperativeKernel = 7,
	XSPROF_CUDA_cudaLaunchCooperativeKernel_ptsz = 8,
	XSPROF_CUDA_cudaLaunchHostFunc = 9,
	XSPROF_CUDA_cudaLaunchHostFunc_ptsz = 10,
	XSPROF_CUDA_cudaGraphLaunch = 11,
	XSPROF_CUDA_cudaGraphLaunch_ptsz = 12,
	XSPROF_CUDA_cudaMemcpyAsync = 13,
	XSPROF_CUDA_cudaMemcpyAsync_ptsz = 14,
	XSPROF_CUDA_cudaMemcpy2DAsync = 15,
	XSPROF_CUDA_cudaMemcpy2DAsync_ptsz = 16,
	XSPROF_CUDA_cudaMemcpy3DAsync = 17,
	XSPROF_CUDA_cudaMemcpy3DAsync_ptsz = 18,
	XSPROF_CUDA_cudaMemcpyPeerAsync = 19,
	XSPROF_CUDA_cudaMemcpy3DPeerAsync = 20,
	XSPROF_CUDA_cudaMemcpy3DPeerAsync_ptsz = 21,
	XSPROF_CUDA_cudaMemcpyToSymbolAsync = 22,
	XSPROF_CUDA_cudaMemcpyToSymbolAsync_ptsz = 23,
	XSPROF_CUDA_cudaMemcpyFromSymbolAsync = 24,
	XSPROF_CUDA_cudaMemcpyFromSymbolAsync_ptsz = 25,
	XSPROF_CUDA_cudaMemcpyToArrayAsync = 26,
	XSPROF_CUDA_cudaMemcpyToArrayAsync_ptsz = 27,
	XSPROF_CUDA_cudaMemcpyFromArrayAsync = 28,
	XSPROF_CUDA_cudaMemcpyFromArrayAsync_ptsz = 29,
	XSPROF_CUDA_cudaMemcpy2DToArrayAsync = 30,
	XSPROF_CUDA_cudaMemcpy2DToArrayAsync_ptsz = 31,
	XSPROF_CUDA_cudaMemcpy2DFromArrayAsync = 32,
	XSPROF_CUDA_cudaMemcpy2DFromArrayAsync_ptsz = 33,
	XSPROF_CUDA_cudaMemcpyBatchAsync = 34,
	XSPROF_CUDA_cudaMemcpyBatchAsync_ptsz = 35,
	XSPROF_CUDA_cudaMemcpy3DBatchAsync = 36,
	XSPROF_CUDA_cudaMemcpy3DBatchAsync_ptsz = 37,
	XSPROF_CUDA_cudaMemsetAsync = 38,
	XSPROF_CUDA_cudaMemsetAsync_ptsz = 39,
	XSPROF_CUDA_cudaMemset2DAsync = 40,
	XSPROF_CUDA_cudaMemset2DAsync_ptsz = 41,
	XSPROF_CUDA_cudaMemset3DAsync = 42,
	XSPROF_CUDA_cudaMemset3DAsync_ptsz = 43,
	XSPROF_CUDA_cudaStreamSynchronize = 44,
	XSPROF_CUDA_cudaStreamSynchronize_ptsz = 45,
	XSPROF_CUDA_cudaEventSynchronize = 46,
	XSPROF_CUDA_cudaDeviceSynchronize = 47,
	/* Blocking copies: the calling thread waits for the copy (and the stream before it). */
	XSPROF_CUDA_cudaMemcpy = 48,
	XSPROF_CUDA_cudaMemcpy_ptds = 49,
	XSPROF_CUDA_cudaMemcpy2D = 50,
	XSPROF_CUDA_cudaMemcpy2D_ptds = 51,
	XSPROF_CUDA_cudaMemcpy3D = 52,
	XSPROF_CUDA_cudaMemcpy3D_ptds = 53,
	XSPROF_CUDA_cudaMemcpyPeer = 54,
	XSPROF_CUDA_cudaMemcpy3DPeer = 55,
	XSPROF_CUDA_cudaMemcpy3DPeer_ptds = 56,
	XSPROF_CUDA_cudaMemcpyToSymbol = 57,
	XSPROF_CUDA_cudaMemcpyToSymbol_ptds = 58,
	XSPROF_CUDA_cudaMemcpyFromSymbol = 59,
	XSPROF_CUDA_cudaMemcpyFromSymbol_ptds = 60,
	XSPROF_CUDA_cudaMemcpy2DToArray = 61,
	XSPROF_CUDA_cudaMemcpy2DFromArray = 62,
	XSPROF_CUDA_cudaMemcpyToArray = 63,

	/* Driver (libcuda). */
	XSPROF_CUDA_cuLaunchKernel = 64,
	XSPROF_CUDA_cuLaunchKernel_ptsz = 65,
	XSPROF_CUDA_cuLaunchKernelEx = 66,
	XSPROF_CUDA_cuLaunchKernelEx_ptsz = 67,
	XSPROF_CUDA_cuLaunchCooperativeKernel = 68,
	XSPROF_CUDA_cuLaunchCooperativeKernel_ptsz = 69,
	XSPROF_CUDA_cuLaunchHostFunc = 70,
	XSPROF_CUDA_cuLaunchHostFunc_ptsz = 71,
	XSPROF_CUDA_cuGraphLaunch = 72,
	XSPROF_CUDA_cuGraphLaunch_ptsz = 73,
	XSPROF_CUDA_cuMemcpyAsync = 74,
	XSPROF_CUDA_cuMemcpyAsync_ptsz = 75,
	XSPROF_CUDA_cuMemcpyHtoDAsync_v2 = 76,
	XSPROF_CUDA_cuMemcpyHtoDAsync_v2_ptsz = 77,
	XSPROF_CUDA_cuMemcpyDtoHAsync_v2 = 78,
	XSPROF_CUDA_cuMemcpyDtoHAsync_v2_ptsz = 79,
	XSPROF_CUDA_cuMemcpyDtoDAsync_v2 = 80,
	XSPROF_CUDA_cuMemcpyDtoDAsync_v2_ptsz = 81,
	XSPROF_CUDA_cuMemsetD8Async = 82,
	XSPROF_CUDA_cuMemsetD8Async_ptsz = 83,
	XSPROF_CUDA_cuMemsetD32Async = 84,
	XSPROF_CUDA_cuMemsetD32Async_ptsz = 85,
	XSPROF_CUDA_cuStreamSynchronize = 86,
	XSPROF_CUDA_cuStreamSynchronize_ptsz = 87,
	XSPROF_CUDA_cuEventSynchronize = 88,
	XSPROF_CUDA_cuCtxSynchronize = 89,
	/* Blocking copies. */
	XSPROF_CUDA_cuMemcpy = 90,
	XSPROF_CUDA_cuMemcpy_ptds = 91,
	XSPROF_CUDA_cuMemcpyHtoD_v2 = 92,
	XSPROF_CUDA_cuMemcpyHtoD_v2_ptds = 93,
	XSPROF_CUDA_cuMemcpyDtoH_v2 = 94,
	XSPROF_CUDA_cuMemcpyDtoH_v2_ptds = 95,
	XSPROF_CUDA_cuMemcpyDtoD_v2 = 96,
	XSPROF_CUDA_cuMemcpyDtoD_v2_ptds = 97,
	XSPROF_CUDA_cuMemcpyPeer = 98,
	XSPROF_CUDA_cuMemcpy2D_v2 = 99,
	XSPROF_CUDA_cuMemcpy3D_v2 = 100,

	/* GPU memory (uprobe_cuda_ret.bpf.c times the allocations and reads what they return).
	 * At entry an allocation's record carries the size, a free's the address or handle. */
	XSPROF_CUDA_cudaMalloc = 101,
	XSPROF_CUDA_cudaMallocAsync = 102,
	XSPROF_CUDA_cudaMallocAsync_ptsz = 103,
	XSPROF_CUDA_cudaMallocManaged = 104,
	XSPROF_CUDA_cudaMallocFromPoolAsync = 105,
	XSPROF_CUDA_cudaMallocFromPoolAsync_ptsz = 106,
	XSPROF_CUDA_cudaFree = 107,
	XSPROF_CUDA_cudaFreeAsync = 108,
	XSPROF_CUDA_cudaFreeAsync_ptsz = 109,
	XSPROF_CUDA_cuMemAlloc_v2 = 110,
	XSPROF_CUDA_cuMemAllocAsync = 111,
	XSPROF_CUDA_cuMemAllocAsync_ptsz = 112,
	XSPROF_CUDA_cuMemAllocManaged = 113,
	XSPROF_CUDA_cuMemAllocFromPoolAsync = 114,
	XSPROF_CUDA_cuMemAllocFromPoolAsync_ptsz = 115,
	XSPROF_CUDA_cuMemFree_v2 = 116,
	XSPROF_CUDA_cuMemFreeAsync = 117,
	XSPROF_CUDA_cuMemFreeAsync_ptsz = 118,
	XSPROF_CUDA_cuMemCreate = 119, /* VMM: physical memory, by handle */
	XSPROF_CUDA_cuMemRelease = 120,
	/* The thread's current device (uprobe_cuda.bpf.c keeps it; it sends no record). */
	XSPROF_CUDA_cudaSetDevice = 121,

	XSPROF_CUDA_API_MAX = 128,
};

/*
 * The attach cookie of a CUDA uprobe: the API (bits 0-15), where its stream argument is at
 * function entry (loc bits 16-23, idx bits 24-31, off bits 32-47; x86-64 SysV ABI), and flags.
 */
enum xsprof_cuda_stream_loc {
	XSPROF_CUDA_STREAM_NONE = 0,  /* the API takes no stream */
	XSPROF_CUDA_STREAM_REG = 1,   /* integer argument register idx: 0 rdi, ... 5 r9 */
	XSPROF_CUDA_STREAM_STACK = 2, /* 8-byte stack slot idx at entry: 0 is the return address */
	XSPROF_CUDA_STREAM_PTR = 3,   /* *(register idx + off): a field of a struct pointed to */
};

#define XSPROF_CUDA_COOKIE(api, loc, idx, off) \
	((__u64)(api) | (__u64)(loc) << 16 | (__u64)(idx) << 24 | (__u64)(off) << 32)
#define XSPROF_CUDA_COOKIE_API(c) ((__u32)(c)&0xffff)
#define XSPROF_CUDA_COOKIE_LOC(c) ((__u32)((c) >> 16) & 0xff)
#define XSPROF_CUDA_COOKIE_IDX(c) ((__u32)((c) >> 24) & 0xff)
#define XSPROF_CUDA_COOKIE_OFF(c) ((__u32)((c) >> 32) & 0xffff)
/* The API tail-jumps to another probed API (__cudaLaunchKernel -> cudaLaunchKernel): the
 * probe on that one must not count the same call again. */
#define XSPROF_CUDA_COOKIE_WRAPPER (1ull << 48)
/* Attached for one process: the kernel filters already, the pid filter need not be looked up. */
#define XSPROF_CUDA_COOKIE_ONE_PROCESS (1ull << 49)
/* The API waits for the GPU (synchronize, blocking copy) and a return probe times it: the
 * entry marks the thread as waiting until that probe sees the call return. */
#define XSPROF_CUDA_COOKIE_WAIT (1ull << 50)
/* The API allocates GPU memory (a pointer or handle written through its first argument, the
 * size in its second) and its return probe is attached: the entry marks it for the return. */
#define XSPROF_CUDA_COOKIE_ALLOC (1ull << 51)
/* cudaSetDevice(int device): the entry keeps the device (its first argument) in the thread's
 * call mark for the allocations that follow, and returns; no record. */
#define XSPROF_CUDA_COOKIE_SET_DEVICE (1ull << 52)

/*
 * One CUDA API call, caught at its entry. Variable length on the wire: only nr_user frames of
 * ips[] are sent. ips[0] is the caller's return address (read at the stack pointer, so it is
 * right even where the caller keeps no frame pointer), then the frame-pointer chain outward.
 */
struct xsprof_cuda_call {
	__u32 type; /* XSPROF_REC_CUDA_CALL */
	__u32 tgid;
	__u32 tid;
	__u16 api;     /* enum xsprof_cuda_api, never XSPROF_CUDA_LIB_MAPPED here */
	__u16 flags;   /* XSPROF_CUDA_F_* */
	__u64 time_ns; /* CLOCK_MONOTONIC at entry */
	__u64 stream;  /* the stream argument (0 is the legacy default stream) */
	char comm[XSPROF_COMM_LEN];
	__u16 nr_user;
	__s16 user_err;	 /* the return address could not be read */
	__u16 nr_python; /* struct xsprof_py_frame after the nr_user ips */
	__u16 pad;
	__u64 ips[XSPROF_MAX_STACK_DEPTH + XSPROF_PY_AREA_WORDS];
};

#define XSPROF_CUDA_CALL_HDR_SIZE 56
/* Bits 12-15 of a call's or USDT launch's flags: how its stack's walk ended (enum
 * xsprof_walk_end; 0 when it was not walked with the tables). */
#define XSPROF_CUDA_F_END_SHIFT	 12
#define XSPROF_CUDA_F_NO_STREAM	 0x1 /* the API takes no stream: stream is 0 */
#define XSPROF_CUDA_F_STREAM_ERR 0x2 /* the stream argument could not be read: stream is 0 */
/* The thread's first record: its process's mappings are complete enough to read now. */
#define XSPROF_CUDA_F_FIRST 0x8
/* A launch whose stack was walked while launch stacks were walked 1 in N (--max-cpu): it stands
 * for N launches (on call, USDT and reuse records). */
#define XSPROF_CUDA_F_SAMPLED 0x40
/* XSPROF_CUDA_F_STOPPED (0x4, below) on a call or USDT record: the profiled process's first
 * record; the process waits (SIGSTOP) for the daemon to read its mappings and send SIGCONT. */
/* With XSPROF_CUDA_F_STOPPED: the record's walk asked for a file's unwind table (and took the
 * frame-pointer step there); the process waits for the daemon to build the tables asked for
 * (within a deadline) before SIGCONT, so that its next launches are walked whole. */
#define XSPROF_CUDA_F_TABLES 0x10

_Static_assert(sizeof(struct xsprof_cuda_call) ==
		       XSPROF_CUDA_CALL_HDR_SIZE +
			       8 * (XSPROF_MAX_STACK_DEPTH + XSPROF_PY_AREA_WORDS),
	       "xsprof_cuda_call layout");

/*
 * A call that waits for the GPU (XSPROF_CUDA_COOKIE_WAIT) returned: sent by the return probe
 * when the outermost probed call of the thread returns. entry_ns is the time_ns of that call's
 * struct xsprof_cuda_call (same tid), which carries its stack.
 */
struct xsprof_cuda_wait {
	__u32 type; /* XSPROF_REC_CUDA_WAIT */
	__u32 tgid;
	__u32 tid;
	__u16 api; /* enum xsprof_cuda_api */
	__u16 flags;
	__u64 entry_ns;	 /* CLOCK_MONOTONIC at entry */
	__u64 return_ns; /* CLOCK_MONOTONIC at return */
	__u64 stream;	 /* the stream argument (0: none, or the legacy default stream) */
	__s32 device;	 /* the thread's current device (below) */
	__u32 pad;
};

_Static_assert(sizeof(struct xsprof_cuda_wait) == 48, "xsprof_cuda_wait layout");

/*
 * An allocating call (XSPROF_CUDA_COOKIE_ALLOC) returned: the same layout as a wait, type
 * XSPROF_REC_CUDA_ALLOC; stream is the address (or handle) the call wrote through its first
 * argument, and the size is in the stream field of its entry's struct xsprof_cuda_call.
 */
#define XSPROF_CUDA_F_FAILED   0x10 /* the call returned an error: nothing was allocated */
#define XSPROF_CUDA_F_READ_ERR 0x20 /* the address could not be read back */

/*
 * device of a wait or an allocation: the device the thread's last cudaSetDevice named (the
 * CUDA runtime's current device; since CUDA 12 it also makes that device's primary context
 * current, so driver allocations follow it), or XSPROF_CUDA_DEVICE_UNSET when the probe saw
 * none on the thread. CUDA puts such a thread's work on device 0, unless it made another
 * context current through the driver (cuCtxSetCurrent, not probed) or set its device before
 * the probe was attached: the daemon takes device 0 (GPU_REPORT.md says so).
 */
#define XSPROF_CUDA_DEVICE_UNSET (-1)

/* Per-CPU counters of the GPU waits; index of each field is fixed for user space. */
struct xsprof_wait_stats {
	__u64 entries;	       /* outermost calls of waiting APIs entered */
	__u64 returns;	       /* ... whose return was timed and sent */
	__u64 drop_ringbuf;    /* ... whose record was lost: ring buffer full */
	__u64 stray_returns;   /* returns of no timed entry (a nested call, or entry missed) */
	__u64 samples_in_wait; /* wall mode: CPU samples left to the wait's own frame */
	__u64 offcpu_in_wait;  /* wall mode: off-CPU stretches left to the wait's own frame */
	__u64 pad[2];
};

_Static_assert(sizeof(struct xsprof_wait_stats) == 64, "xsprof_wait_stats layout");

/*
 * A process in the pid filter mapped a CUDA library (or libxsprof_cupti) executable, or
 * exec'd a new executable (XSPROF_CUDA_F_EXEC, fd -1: /proc/TGID/exe is the file): sent with
 * type XSPROF_REC_CUDA_CALL and api XSPROF_CUDA_LIB_MAPPED so the daemon attaches its probes
 * (CUDA APIs, xsprof:launch, xsprof scopes) to that process before it runs on. With
 * XSPROF_CUDA_F_STOPPED the process was sent SIGSTOP on its way out of mmap() or exec() and
 * waits for the daemon's SIGCONT.
 */
struct xsprof_cuda_lib_event {
	__u32 type; /* XSPROF_REC_CUDA_CALL */
	__u32 tgid;
	__u32 tid;
	__u16 api;   /* XSPROF_CUDA_LIB_MAPPED */
	__u16 flags; /* XSPROF_CUDA_F_STOPPED, XSPROF_CUDA_F_EXEC */
	__u64 time_ns;
	__s32 fd;      /* the mmap() fd: /proc/TGID/fd/FD is the library while it is stopped */
	__u32 prot;    /* PROT_* of the mapping */
	char name[32]; /* the file's name without its directory, NUL-terminated */
};

#define XSPROF_CUDA_F_STOPPED 0x4
/* Not a library: the process exec'd; its executable is /proc/TGID/exe (name: its comm). */
#define XSPROF_CUDA_F_EXEC 0x20

_Static_assert(sizeof(struct xsprof_cuda_lib_event) == 64, "xsprof_cuda_lib_event layout");

/*
 * USDT xsprof:launch(corr_id, api), fired by libxsprof_cupti.so at launch API entry. Variable
 * length like struct xsprof_cuda_call, but ips[0] is the probe site itself, then the
 * frame-pointer chain (the firing function keeps a frame).
 */
struct xsprof_usdt_launch {
	__u32 type; /* XSPROF_REC_USDT_LAUNCH */
	__u32 tgid;
	__u32 tid;
	__u32 api;     /* CUPTI domain << 16 | callback id, as cupti_inject packs it */
	__u64 time_ns; /* CLOCK_MONOTONIC */
	__u64 corr_id; /* CUPTI correlation id */
	char comm[XSPROF_COMM_LEN];
	__u16 nr_user;
	__s16 user_err;
	__u16 flags;	 /* XSPROF_CUDA_F_FIRST, XSPROF_CUDA_F_STOPPED */
	__u16 nr_python; /* struct xsprof_py_frame after the nr_user ips */
	__u64 ips[XSPROF_MAX_STACK_DEPTH + XSPROF_PY_AREA_WORDS];
};

#define XSPROF_USDT_LAUNCH_HDR_SIZE 56

_Static_assert(sizeof(struct xsprof_usdt_launch) ==
		       XSPROF_USDT_LAUNCH_HDR_SIZE +
			       8 * (XSPROF_MAX_STACK_DEPTH + XSPROF_PY_AREA_WORDS),
	       "xsprof_usdt_launch layout");

/* Per-CPU counters of the GPU-path programs; index of each field is fixed for user space. */
struct xsprof_cuda_stats {
	__u64 calls;		/* CUDA uprobe hits */
	__u64 emitted;		/* struct xsprof_cuda_call records sent */
	__u64 filtered;		/* hits of processes outside the pid filter (system-wide probes) */
	__u64 nested;		/* calls inside a probed call (runtime -> driver, a wrapper's tail
			       * call): the outer call is the one counted */
	__u64 drop_ringbuf;	/* ring buffer full: call lost */
	__u64 ustack_err;	/* caller's return address unreadable (record kept) */
	__u64 stream_err;	/* stream argument unreadable (record kept) */
	__u64 mark_err;		/* no per-thread storage: nesting could not be checked */
	__u64 usdt_fired;	/* xsprof:launch hits */
	__u64 usdt_emitted;	/* struct xsprof_usdt_launch records sent */
	__u64 usdt_drop;	/* ring buffer full, or the arguments could not be read */
	__u64 forks_followed;	/* children added to the pid filter */
	__u64 fork_drop;	/* children not added: pid filter full */
	__u64 lib_maps;		/* CUDA libraries mapped by filtered processes, reported */
	__u64 lib_map_drop;	/* such mappings not reported (ring buffer full, signal failed) */
	__u64 exits_unfollowed; /* followed children removed from the pid filter at exit */
	__u64 scratch_busy;	/* calls and firings lost: both of the CPU's scratch slots were
				 * held by probes preempted on it (launch probes can be) */
	__u64 scope_fired;	/* xsprof:scope_begin and scope_end hits */
	__u64 scope_drop;	/* of them, not sent: ring buffer full or argument unreadable */
	__u64 execs_watched;	/* execs of filtered processes reported (their new executable) */
	__u64 exec_drop;	/* such execs not reported (ring buffer full) */
	/* --max-cpu's shedding (daemon/session/ceiling.h): */
	__u64 stacks_shed; /* launches counted without a stack (walked 1 in N, at random) */
	__u64 calls_shed;  /* calls and firings counted only, not recorded (nested ones too) */
};

_Static_assert(sizeof(struct xsprof_cuda_stats) == 184, "xsprof_cuda_stats layout");

/*
 * xsprof:scope_begin(name) or xsprof:scope_end(name) fired (cupti_inject/include/xsprof/
 * scope.h): the thread, the time and the name's address in the process; the daemon reads the
 * name once per address and pairs begins with ends per thread into ranges.
 */
struct xsprof_scope {
	__u32 type; /* XSPROF_REC_SCOPE */
	__u32 tgid;
	__u32 tid;
	__u32 end;     /* 0: scope_begin, 1: scope_end */
	__u64 time_ns; /* CLOCK_MONOTONIC */
	__u64 name;    /* the name's address in tgid */
};

_Static_assert(sizeof(struct xsprof_scope) == 32, "xsprof_scope layout");

/*
 * A CUDA call or xsprof:launch firing whose stack is the one of the last full record of its
 * thread and kind (struct xsprof_cuda_call or xsprof_usdt_launch before it on the ring, the
 * same tid): the probe proved it cheaply instead of walking it again (bpf/launch_reuse.bpf.h
 * says how, and when the proof can be wrong). Its counts are exact; its stack is that one.
 */
enum xsprof_launch_kind {
	XSPROF_LAUNCH_CALL = 1, /* an entry uprobe: arg is the stream */
	XSPROF_LAUNCH_USDT = 2, /* xsprof:launch: arg is the correlation id */
};

struct xsprof_launch_reuse {
	__u32 type; /* XSPROF_REC_LAUNCH_REUSE */
	__u32 tgid;
	__u32 tid;
	__u16 kind;  /* enum xsprof_launch_kind */
	__u16 flags; /* the full record's XSPROF_CUDA_F_* (stream ones) */
	__u64 time_ns;
	__u64 arg;
	__u32 api; /* as the full record's api */
	__u32 pad;
};

_Static_assert(sizeof(struct xsprof_launch_reuse) == 40, "xsprof_launch_reuse layout");

/* Per-CPU counters of the reuse; index of each field is fixed for user space. */
struct xsprof_launch_reuse_stats {
	__u64 walked;	   /* stacks walked (the full record sent) */
	__u64 reused;	   /* stacks proved unchanged and reused */
	__u64 miss_key;	   /* walked: another site, stack pointer, rbp or Python frame */
	__u64 miss_slots;  /* walked: a return address on the stack changed */
	__u64 miss_age;	   /* walked: the last walk of the thread was too long ago */
	__u64 reuse_drops; /* reuse records lost (ring buffer full): the next call walks */
	__u64 timed;	   /* launch probe runs timed (one in XSPROF_TIMED_EVERY) */
	__u64 timed_ns;	   /* ... and their run time */
};

_Static_assert(sizeof(struct xsprof_launch_reuse_stats) == 64, "xsprof_launch_reuse_stats layout");

/*
 * ---- User stacks without frame pointers: unwind tables (daemon/unwind -> bpf/unwind.bpf.h) ----
 *
 * The daemon compiles a file's .eh_frame into rows sorted by pc (an ELF virtual address of that
 * file): from row.pc up to the next row's pc, the CFA (the caller's stack pointer after the
 * return) is computed as the row's type says, the return address is at CFA - 8 (the x86-64 ABI;
 * other rules make the row XSPROF_CFA_INVALID), and the caller's rbp is at CFA + 8 * rbp_off
 * when rbp_off is not 0 (0: rbp still holds it).
 *
 * Layout in BPF (one array each, shared by every file and process):
 *   unwind_procs[tgid]     -> the process's executable mappings: unwind_maps[first, first + count)
 *   unwind_maps[i]         -> [start, end), bias, and the file's id
 *   unwind_files[id]       -> its state and its pages: unwind_pages[page_first, + nr_pages)
 *   unwind_pages[j]        -> the rows of one 4 KiB page of the file: unwind_rows[first, + count),
 *                             the first of them at or below the page's start
 * so a frame costs one lookup per level and a bisection over the rows of one page. A file gets
 * its table when a walk first lands in it (XSPROF_FILE_NONE -> WANTED, and a request record),
 * not when a process maps it.
 */
enum xsprof_cfa_type {
	XSPROF_CFA_INVALID = 0,	  /* no rule we can apply here (or outside every FDE) */
	XSPROF_CFA_RSP = 1,	  /* CFA = rsp + cfa_off */
	XSPROF_CFA_RBP = 2,	  /* CFA = rbp + cfa_off */
	XSPROF_CFA_PLT = 3,	  /* CFA = rsp + 8 + ((rip & 15) >= cfa_off ? 8 : 0): a PLT stub */
	XSPROF_CFA_DEREF_RBP = 4, /* CFA = *(rbp + cfa_off): stack realigned (DW_OP_breg6; deref) */
	XSPROF_CFA_OUTERMOST = 5, /* return address undefined: _start, clone: the walk ends here */
	XSPROF_CFA_SIGNAL = 6,	  /* __restore_rt: the interrupted registers are in the ucontext
				   * at rsp */
};

/* 8 bytes: an array rounds its elements up to 8. Rules that do not fit (a CFA offset past
 * +-32 KiB, an rbp slot not 8-aligned or past +-1 KiB) are INVALID. */
struct xsprof_unwind_row {
	__u32 pc;
	__s16 cfa_off;
	__s8 rbp_off; /* in 8-byte words */
	__u8 type;    /* enum xsprof_cfa_type, with XSPROF_ROW_RBP_AT_RBP */
};

/* In type: the caller's rbp is at rbp + 8 * rbp_off, not CFA + 8 * rbp_off (GCC's frames that
 * realign the stack, where the CFA is read through rbp). */
#define XSPROF_ROW_RBP_AT_RBP 0x80
#define XSPROF_ROW_TYPE(t)    ((t)&0x7f)

_Static_assert(sizeof(struct xsprof_unwind_row) == 8, "xsprof_unwind_row layout");

#define XSPROF_UNWIND_PAGE_SHIFT 12
/* Most rows one page holds (one per byte, and the row carried in from before the page). */
#define XSPROF_UNWIND_PAGE_ROWS ((1u << XSPROF_UNWIND_PAGE_SHIFT) + 1)

/* The rows of one page of a file: unwind_rows[first, first + count), count >= 1, sorted, the
 * first one at or below the page's first address (carried in from the page before). */
struct xsprof_unwind_page {
	__u32 first;
	__u32 count;
};

_Static_assert(sizeof(struct xsprof_unwind_page) == 8, "xsprof_unwind_page layout");

enum xsprof_unwind_file_state {
	XSPROF_FILE_NONE = 0,	     /* no table, none asked for */
	XSPROF_FILE_WANTED = 1,	     /* a walk asked for it (XSPROF_REC_UNWIND_WANT): being built */
	XSPROF_FILE_READY = 2,	     /* nr_pages pages loaded */
	XSPROF_FILE_UNAVAILABLE = 3, /* no usable .eh_frame, or no room: frame pointers there */
};

/* unwind_files[id]: one file (id 0 is none). The daemon writes page_first and page0 before it
 * makes the file READY, and nr_pages 0 before it takes a table away. */
struct xsprof_unwind_file {
	__u64 page0;	  /* the first page: ELF vaddr >> XSPROF_UNWIND_PAGE_SHIFT */
	__u32 page_first; /* unwind_pages[page_first, page_first + nr_pages) */
	__u32 nr_pages;
	__u64 state; /* enum xsprof_unwind_file_state; BPF moves NONE -> WANTED (a 64-bit cmpxchg:
		      * clang's BPF target has no 32-bit one before -mcpu=v3) */
	__u32 used;  /* set by walks that used the table; the daemon clears it (recent use) */
	__u32 pad;
};

_Static_assert(sizeof(struct xsprof_unwind_file) == 32, "xsprof_unwind_file layout");

/* One executable mapping of a process (unwind_maps[]). */
struct xsprof_unwind_map {
	__u64 start, end; /* [start, end) in the process */
	__u64 bias;	  /* process address - bias = ELF virtual address in the file */
	__u32 file;	  /* unwind_files[] id; 0: no file (anonymous, or no id left): fp */
	__u32 pad;
};

_Static_assert(sizeof(struct xsprof_unwind_map) == 32, "xsprof_unwind_map layout");

/* Executable mappings per process with a table walk (the rest: frame pointers, counted). */
#define XSPROF_UNWIND_MAX_MAPS 1024

/* unwind_procs[tgid]: unwind_maps[first, first + count), sorted by start, not overlapping. */
struct xsprof_unwind_proc {
	__u32 first;
	__u32 count;
	/* A walk met a pc outside every mapping (code mapped since: JIT) and asked for the list
	 * to be read again (0 -> 1, and an XSPROF_REC_UNWIND_WANT with file 0); the daemon
	 * writes the entry anew. */
	__u64 stale;
	/* Changes whenever the list is written anew (never back to an earlier value while the
	 * entry lives): rows the sampler cached for this process hold while it is the same. */
	__u32 gen;
	/* Set by walks that used the entry; cleared by the daemon as it looks for one to evict
	 * (a process not walked since is evicted first when its user's share or the table is
	 * full). */
	__u32 used;
	__u32 flags; /* XSPROF_UNWIND_PROC_* */
	__u32 pad;
};

/* Its JIT code (anonymous executable memory) keeps no frame pointer (HotSpot without
 * -XX:+PreserveFramePointer): a walk that reaches it ends there (XSPROF_END_JIT) rather than
 * take a caller it cannot prove. */
#define XSPROF_UNWIND_PROC_JIT_NOFP 0x1

_Static_assert(sizeof(struct xsprof_unwind_proc) == 32, "xsprof_unwind_proc layout");

/* The sampler's unwind mode (rodata unwind_mode): --unwind fp|auto|cfi. */
enum xsprof_unwind_mode {
	XSPROF_UNWIND_FP = 0,	/* frame pointers only (the tables are not even looked up) */
	XSPROF_UNWIND_AUTO = 1, /* tables where present, frame pointers elsewhere */
	XSPROF_UNWIND_CFI = 2,	/* tables only: a frame without one ends the walk */
};

/* A walk landed in a file without a table (NONE -> WANTED): build it. With file 0: tgid ran
 * outside every mapping it was known to have: read its mappings again. Wakes the reader. */
struct xsprof_unwind_want {
	__u32 type; /* XSPROF_REC_UNWIND_WANT */
	__u32 tgid;
	__u32 file;
	__u32 pad;
	__u64 start; /* the mapping of tgid that holds it (the pc, with file 0) */
};

_Static_assert(sizeof(struct xsprof_unwind_want) == 24, "xsprof_unwind_want layout");

/*
 * A CPU sample whose walk stopped where a table was missing (a process the daemon had not
 * loaded yet, or a file whose table is being built): the registers there and a copy of the
 * stack above them, so the daemon finishes the walk with the tables once they are in, instead
 * of frame pointers (the first samples of a process). The sample follows as the sampler made
 * it: its nr_user frames end with the frame at pc; the daemon adds the callers.
 */
#define XSPROF_HOLD_STACK_BYTES 16384

enum xsprof_hold_reason {
	XSPROF_HOLD_NO_PROCESS = 1, /* the process has no mappings in unwind_procs yet */
	XSPROF_HOLD_NO_TABLE = 2,   /* pc is in a file whose table is WANTED */
	XSPROF_HOLD_STALE_MAPS = 3, /* pc is in a file mapped since the mappings were read */
};

/* xsprof_sample_held.file of a STALE_MAPS hold: no file of the list holds pc. */
#define XSPROF_HOLD_FILE_STALE 0xffffffffu

struct xsprof_sample_held {
	__u32 type; /* XSPROF_REC_SAMPLE_HELD */
	__u32 reason;
	__u64 pc, sp, bp;
	__u32 exact;	/* pc is where the thread is, not a return address */
	__u32 copy_len; /* stack bytes from sp in stack[] (0 when nothing could be read) */
	__u32 file;	/* the file waited for (NO_TABLE), XSPROF_HOLD_FILE_STALE (STALE_MAPS) */
	__u32 pad;
	struct xsprof_sample sample;
	__u8 stack[XSPROF_HOLD_STACK_BYTES];
};

#define XSPROF_SAMPLE_HELD_HDR_SIZE 48

_Static_assert(sizeof(struct xsprof_sample_held) == XSPROF_SAMPLE_HELD_HDR_SIZE +
							    sizeof(struct xsprof_sample) +
							    XSPROF_HOLD_STACK_BYTES,
	       "xsprof_sample_held layout");

/* Per-CPU counters of the table walk; index of each field is fixed for user space. */
struct xsprof_unwind_stats {
	__u64 walks_cfi;      /* stacks with at least one frame from a table */
	__u64 walks_fp;	      /* stacks walked by frame pointers alone */
	__u64 frames_cfi;     /* frames found through a table */
	__u64 frames_fp;      /* frames found through the frame-pointer chain */
	__u64 no_process;     /* stacks of a process without tables loaded (yet): fp */
	__u64 end_outermost;  /* clean ends: a table said the outermost frame (_start, clone) */
	__u64 end_fp_chain;   /* ends of a frame-pointer chain (0, misaligned, not increasing) */
	__u64 end_no_table;   /* cfi mode: a frame outside every table */
	__u64 end_invalid;    /* a row with no rule we apply, or a pc between FDEs */
	__u64 end_unreadable; /* the stack could not be read where a rule pointed */
	__u64 end_bad_cfa;    /* the CFA or return address made no sense (0, below sp) */
	__u64 end_depth;      /* stopped at XSPROF_MAX_STACK_DEPTH frames */
	__u64 signal_frames;  /* frames crossed through a signal frame */
	__u64 wants;	      /* tables asked for (XSPROF_REC_UNWIND_WANT sent) */
	__u64 want_drops;     /* ... whose record was lost (ring buffer full): asked again later */
	__u64 pending_fp;     /* frames in a file whose table was not in yet: frame pointers */
	__u64 held;	   /* samples held for the daemon to finish (struct xsprof_sample_held) */
	__u64 hold_drops;  /* ... that could not be sent (ring buffer full): sent partial */
	__u64 hold_budget; /* walks that would have been held past the budget (or with the ring
			    * buffer half full): fp instead */
	__u64 jit_fp;	   /* callers of JIT code (anonymous mappings) found by its frame pointer */
	__u64 held_stale;  /* walks held at a pc in a file mapped since the list was read */
	__u64 scanned;	   /* ... found by a scan, where the frame pointer was not plausible */
	__u64 scan_failed; /* ... found by neither: frame pointers from there (auto mode) */
	__u64 stale_maps;  /* mapping lists asked to be read again (a pc outside them) */
};

_Static_assert(sizeof(struct xsprof_unwind_stats) == 192, "xsprof_unwind_stats layout");

/*
 * ---- Interpreter frames: what the daemon tells BPF of a CPython process (py_procs[tgid]) ----
 * Where its interpreter list starts and the structure offsets of its version (daemon/python
 * says where they come from). The walk: interpreters (next) -> their thread states (next) to
 * the one whose native_thread_id is the sampled thread (before 3.11: whose thread_id is the
 * thread's pthread_t, its TLS base; cached per thread), its current frame (the thread state's
 * frame before 3.11, through the _PyCFrame in 3.11 and 3.12, directly from 3.13), then the
 * frames' previous links (f_back before 3.11).
 */
#define XSPROF_PY_NO_OFFSET 0xffff /* cframe: the thread state holds current_frame itself */

/* xsprof_py_proc.frame_kind: what a frame is, and what its instruction field holds. */
enum {
	XSPROF_PY_FRAME_INTERP =
		0, /* _PyInterpreterFrame (3.11 on): a pointer to the instruction */
	XSPROF_PY_FRAME_OBJECT_BYTES = 1, /* PyFrameObject, f_lasti in bytes (3.8, 3.9) */
	XSPROF_PY_FRAME_OBJECT_UNITS = 2, /* PyFrameObject, f_lasti in code units (3.10) */
};

/* xsprof_py_proc.thread_kind: what the thread state's tstate_native_tid field holds. */
enum {
	XSPROF_PY_THREAD_NATIVE_TID = 0, /* the thread's id in its pid namespace (3.11 on) */
	XSPROF_PY_THREAD_PTHREAD = 1,	 /* pthread_self(): the thread's TLS base (x86-64 fsbase) */
};

struct xsprof_py_proc {
	__u64 interp_head; /* address of _PyRuntime.interpreters.head */
	__u32 version;	   /* PY_VERSION_HEX >> 16: 0x030b for 3.11 */
	__u16 interp_next;
	__u16 interp_threads_head;
	__u16 tstate_next;
	__u16 tstate_native_tid;
	__u16 tstate_cframe; /* XSPROF_PY_NO_OFFSET from 3.13 */
	__u16 current_frame; /* in the _PyCFrame, or in the thread state from 3.13 */
	__u16 frame_code;
	__u16 frame_previous;
	__u16 frame_instr;    /* prev_instr (3.11, 3.12) or instr_ptr (3.13) */
	__u16 frame_is_entry; /* XSPROF_PY_NO_OFFSET from 3.12: shim frames mark entries */
	__u16 frame_owner;
	__u16 code_adaptive; /* offset of the first instruction in the code object */
	__u8 owner_cstack;   /* owner value of an entry's shim frame; 0xff: none (3.11) */
	__u8 frame_size;     /* bytes of a frame read (every field above is inside), <= 128 */
	__u16 code_key;	     /* XSPROF_PY_KEY_BYTES of the code object hashed from here */
	__u8 frame_kind;     /* XSPROF_PY_FRAME_* */
	__u8 thread_kind;    /* XSPROF_PY_THREAD_* */
	__u8 code_tag_bits;  /* low bits of frame_code that are tags, not address (3.14) */
	__u8 pad[5];
};

_Static_assert(sizeof(struct xsprof_py_proc) == 48, "xsprof_py_proc layout");

/* Per-CPU counters of the interpreter walk; index of each field is fixed for user space. */
struct xsprof_py_stats {
	__u64 walks;	    /* stacks of a known CPython process walked */
	__u64 frames;	    /* interpreter frames sent */
	__u64 no_thread;    /* the thread has no thread state (not a Python thread, or gone) */
	__u64 thread_scans; /* thread lists walked (the per-thread cache missed) */
	__u64 unreadable;   /* interpreter memory that could not be read: walk ended there */
	__u64 truncated;    /* walks that stopped at XSPROF_PY_MAX_FRAMES */
	__u64 no_frame;	    /* the thread runs no Python code right now */
	__u64 copy_err;	    /* frames that did not fit the record */
	__u64 nested;	    /* walks not made: another walk on this CPU was using the scratch
			     * space (a sample taken inside a launch probe): native stack only */
};

_Static_assert(sizeof(struct xsprof_py_stats) == 72, "xsprof_py_stats layout");

/*
 * ---- PyTorch autograd (bpf/autograd.bpf.c; daemon/python/autograd.c) ----
 *
 * Backward work is joined to the forward line that made its node. A record has the layout of
 * struct xsprof_cuda_call, type XSPROF_REC_AUTOGRAD, api one of these, stream the node's
 * sequence number (per thread in PyTorch: at::sequence_number is thread-local), nr_user 0 and
 * the thread's Python frames after ips (NODE and EXEC only).
 */
enum xsprof_autograd_event {
	XSPROF_AG_NODE = 1,	/* at::sequence_number::get_and_increment returned: a node made */
	XSPROF_AG_EVAL = 2,	/* Engine::evaluate_function: the engine runs a node */
	XSPROF_AG_EXEC = 3,	/* Engine::execute began on this thread: backward() was called */
	XSPROF_AG_EXEC_END = 4, /* ... and returned */
};

/* The node's sequence number could not be read (EVAL): stream is 0. */
#define XSPROF_AG_F_SEQ_ERR 0x2

/* Per-CPU counters of the autograd probes. */
struct xsprof_autograd_stats {
	__u64 nodes, evals, execs, exec_ends; /* records sent, by kind */
	__u64 filtered;			      /* outside the session's processes */
	__u64 scratch_busy;		      /* a probe ran inside another on this CPU: not sent */
	__u64 drop_ringbuf;		      /* ring buffer full: lost */
	__u64 seq_err;			      /* a node's sequence number unreadable */
};

_Static_assert(sizeof(struct xsprof_autograd_stats) == 64, "xsprof_autograd_stats layout");

#endif
