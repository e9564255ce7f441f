/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Records that cross the BPF -> daemon boundary. Included by BPF programs (after vmlinux.h) and by
 * the daemon (after <linux/types.h>); the one definition both sides compile against.
 */
#ifndef XSPROF_EVENTS_H
#define XSPROF_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* The kernel caps callchains at sysctl kernel.perf_event_max_stack (default 127). */
#define XSPROF_MAX_STACK_DEPTH 127
#define XSPROF_COMM_LEN	       16

/*
 * Every record on the ring buffer starts with a __u32 type. Each record type's struct is defined
 * in this file, next to its enumerator's owner's section below.
 */
enum xsprof_record_type {
	XSPROF_REC_SAMPLE = 1,	    /* struct xsprof_sample: CPU sampler */
	XSPROF_REC_CUDA_CALL = 2,   /* CUDA API entry caught by a uprobe (GPU path) */
	XSPROF_REC_USDT_LAUNCH = 3, /* xsprof:launch USDT from libxsprof_cupti.so (GPU path) */
	XSPROF_REC_PROC_EXEC = 4,   /* process lifetime: exec */
	XSPROF_REC_PROC_EXIT = 5,   /* process lifetime: exit */
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
	__u32 uid;	  /* the thread's real uid (who may see this sample) */
	__u64 ips[2 * XSPROF_MAX_STACK_DEPTH];
};

#define XSPROF_SAMPLE_HDR_SIZE	56
#define XSPROF_SAMPLE_F_KTHREAD 0x1 /* kernel thread: no user stack by nature */

_Static_assert(sizeof(struct xsprof_sample) ==
		       XSPROF_SAMPLE_HDR_SIZE + 2 * 8 * XSPROF_MAX_STACK_DEPTH,
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
	__u64 pad;
};

_Static_assert(sizeof(struct xsprof_cpu_stats) == 64, "xsprof_cpu_stats layout");

#endif
