/* SPDX-License-Identifier: Apache-2.0 */
/* The BPF CPU sampler: skeleton lifecycle, perf events per CPU, ring buffer, drop counters. */
#ifndef XSPROF_DAEMON_PROBES_SAMPLER_H
#define XSPROF_DAEMON_PROBES_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#include "bpf/xsprof_events.h"

struct sampler;
struct unwinder_maps;
struct xsprof_bpf;

/*
 * The optional BPF programs, one switch each: left out of the load when not wanted, and when
 * the kernel refuses one the rest are loaded without it (sampler__refused says which).
 */
enum sampler_prog {
	SAMPLER_PROG_OFFCPU,	  /* off-CPU time (sched_switch) */
	SAMPLER_PROG_EXEC_WINDOW, /* samples inside an exec (sched_prepare_exec) */
	SAMPLER_PROG_PROC_EXEC,	  /* exec events: maps snapshots of short-lived processes */
	SAMPLER_PROG_PROC_EXIT,	  /* exit events */
	SAMPLER_PROG_PROC_LIBS,	  /* the loader's library events: unwind tables of dlopen'd code */
	SAMPLER_PROG_CUDA_CALL,	  /* CUDA API entry uprobes */
	SAMPLER_PROG_USDT_LAUNCH, /* the xsprof:launch USDT */
	SAMPLER_PROG_FOLLOW_FORK, /* children join the pid filter at fork */
	SAMPLER_PROG_UNFOLLOW_EXIT, /* and leave it at exit */
	SAMPLER_PROG_WATCH_MMAP,    /* CUDA libraries mapped later get their probes */
	SAMPLER_PROG_CUDA_RET,	    /* CUDA wait return probes: GPU waits timed */
	SAMPLER_PROG_USDT_SCOPE,    /* xsprof:scope_begin / scope_end (xsprof/scope.h) */
	SAMPLER_PROG_WATCH_EXEC,    /* executables exec'd later get their probes */
	SAMPLER_PROG_AUTOGRAD,	    /* PyTorch autograd probes (the four xsprof_ag_* as one) */
	SAMPLER_PROG_WAKING,	    /* who woke each off-CPU stretch (sched_waking, --wakers) */
	SAMPLER_PROG_MAX,
};
#define SAMPLER_PROG_BIT(p) (1u << (p))

struct sampler_opts {
	unsigned int freq_hz;
	/* SAMPLER_PROG_BITs of the programs not to load (0: every one this kernel has). */
	uint32_t skip_programs;
	bool include_idle;
	uint32_t ring_bytes;  /* power of two; 0: sized from the CPU count */
	uint32_t max_pids;    /* pid filter capacity; 0: 4096 */
	uint32_t unwind_mode; /* enum xsprof_unwind_mode; XSPROF_UNWIND_FP (0) by default */
	/* Not fp: the unwinder's maps (daemon/unwind), reused by the walks. */
	const struct unwinder_maps *unwind_maps;
	/* Off-CPU programs (daemon/probes/offcpu.c) loaded too; otherwise left out of the load. */
	bool offcpu;
	uint64_t offcpu_min_ns;	    /* blocks shorter than this are ignored */
	uint32_t offcpu_max_stacks; /* distinct (thread, stack) keys summed in the kernel */
	bool wakers;		    /* with offcpu: each stretch's waker (XSPROF_REC_WAIT) */
	/* In-kernel filters besides the pid set: a process name, a cgroup v2 directory (fd). */
	const char *comm;
	int cgroup_fd;	   /* -1 or 0: none */
	const pid_t *tids; /* threads (--tid), at most SAMPLER_MAX_TIDS; NULL/0: every thread */
	int nr_tids;
	/* Wall mode: threads inside a timed CUDA wait are left to the wait's frame. */
	bool gpu_wait_exclusive;
	/* Only threads whose visible uid (bpf/filters.bpf.h) is uid: a user's recording. The
	 * records left out are counted (sampler__owner_stats). */
	bool only_uid;
	uint32_t uid;
};

#define SAMPLER_MAX_TIDS 1024

/* Called for each well-formed sample record. */
typedef void (*sampler_sample_fn)(void *ctx, const struct xsprof_sample *s);
/*
 * Called for each record of another type (enum xsprof_record_type) on the shared ring buffer.
 * size is what the ring buffer holds; the handler validates it and returns 0, or -EBADMSG for
 * a malformed record (counted in bad_records).
 */
typedef int (*sampler_record_fn)(void *ctx, const void *data, size_t size);

/* User-space side counters (the BPF side ones are in struct xsprof_cpu_stats). */
struct sampler_stats {
	uint64_t records;	   /* records read from the ring buffer */
	uint64_t bad_records;	   /* records of an unknown type or inconsistent length: skipped */
	bool exec_window;	   /* exec samples between two images are told apart (Linux 6.10) */
	uint64_t restarts;	   /* events restarted off the grid (sampler__dither) */
	uint64_t restart_failures; /* refused by the kernel: that CPU keeps its grid */
};

/* Open, configure and load the BPF programs. NULL with errno set on failure. */
struct sampler *sampler__new(const struct sampler_opts *opts, sampler_sample_fn fn, void *ctx);
void sampler__free(struct sampler *s);

/*
 * Called first for every record: returns the record to handle instead (data itself, or a copy
 * it owns until its next call) and its size in *ret_size. Interpreter frames (daemon/python).
 */
typedef const void *(*sampler_rewrite_fn)(void *ctx, const void *data, size_t size,
					  size_t *ret_size);
void sampler__set_rewrite(struct sampler *s, sampler_rewrite_fn fn, void *ctx);
/* The rewrite applied to a record that comes back later (a held sample, finished). */
const void *sampler__rewrite(struct sampler *s, const void *data, size_t size, size_t *ret_size);
/* Samples whose walk met a missing table are held for the daemon (XSPROF_REC_SAMPLE_HELD,
 * which must have a handler) instead of walked by frame pointers from there. */
void sampler__set_hold(struct sampler *s, bool on);

/* Interpreter frames (bpf/python.bpf.h): the py_procs map and its size, the walk on or off,
 * and its per-CPU counters summed. */
int sampler__python_map(const struct sampler *s, int *ret_procs_fd, uint32_t *ret_max_procs);
void sampler__set_python(struct sampler *s, bool on);
int sampler__python_stats(const struct sampler *s, struct xsprof_py_stats *ret_total);
/* The autograd probes' counters (bpf/autograd.bpf.c), summed over CPUs. */
int sampler__autograd_stats(const struct sampler *s, struct xsprof_autograd_stats *ret);

/* Route records of type (not XSPROF_REC_SAMPLE) to fn. -EINVAL for an unknown type. */
int sampler__set_handler(struct sampler *s, unsigned int type, sampler_record_fn fn, void *ctx);

/*
 * The loaded skeleton, for modules that attach its other programs (uprobes, USDT, tracepoints)
 * and share its ring buffer. Owned by the sampler.
 */
struct xsprof_bpf *sampler__skel(struct sampler *s);
/* SAMPLER_PROG_BITs of the wanted programs the kernel refused (loaded without them). */
uint32_t sampler__refused(const struct sampler *s);
/* Whether an optional program is loaded (wanted, and accepted by the kernel). */
bool sampler__has_program(const struct sampler *s, enum sampler_prog p);
/* "off-CPU time (sched_switch)": what program p gives. */
const char *sampler__program_feature(enum sampler_prog p);
/*
 * The CUDA programs (CUDA_CALL, USDT_LAUNCH, CUDA_RET) are loaded by cuda_probes in an instance
 * of their own at its first attach, not with the sampler: a machine without CUDA never pays
 * for their verification. Recordings leave them out of the sampler's load.
 */
#define SAMPLER_PROGS_CUDA                                                                       \
	(SAMPLER_PROG_BIT(SAMPLER_PROG_CUDA_CALL) | SAMPLER_PROG_BIT(SAMPLER_PROG_USDT_LAUNCH) | \
	 SAMPLER_PROG_BIT(SAMPLER_PROG_CUDA_RET) | SAMPLER_PROG_BIT(SAMPLER_PROG_USDT_SCOPE))
/* For tests: XSPROF_TEST_REFUSE_PROGRAM=NAME makes that program of skel (not loaded yet) one
 * this kernel refuses, as a kernel without its feature would. */
void sampler__test_refusal(struct xsprof_bpf *skel);

/* Restrict sampling to these processes (tgids). -ENOSPC when the filter is full. */
int sampler__add_pid(struct sampler *s, pid_t tgid);

/* Open a cpu-clock perf event on every online CPU and attach the program to it. */
int sampler__start(struct sampler *s);
/* Stop sampling (closes the perf events); records already queued can still be drained. */
void sampler__stop(struct sampler *s);
/*
 * Restart the events whose time has come (now_ns, CLOCK_MONOTONIC) at a random moment with a
 * period a few percent off (daemon/probes/dither.h: the samples off a fixed grid, their rate
 * kept). Returns when to call it next; UINT64_MAX: never (not started, or refused).
 */
uint64_t sampler__dither(struct sampler *s, uint64_t now_ns);

/*
 * --max-cpu (daemon/session/ceiling.h): sample at the asked rate divided by div (1: as asked),
 * from now on every CPU; each sample then stands for div. -errno if a CPU refused (it keeps
 * its old period).
 */
int sampler__set_rate_divisor(struct sampler *s, unsigned int div);
unsigned int sampler__rate_divisor(const struct sampler *s);
/* And the BPF side's shedding: a launch's stack walked 1 in launch_stack_every (a power of two;
 * 0 or 1: every one), CUDA calls counted only, off-CPU stacks not taken, exec and library-load
 * records not sent (new processes' mappings are read at their first sample instead). */
void sampler__set_shed(struct sampler *s, uint32_t launch_stack_every, bool cuda_calls, bool offcpu,
		       bool exec);

/* An fd that becomes readable when the ring buffer asks to be drained. */
int sampler__fd(const struct sampler *s);
/* Hand every queued record to the callback; number handled or -errno. */
int sampler__drain(struct sampler *s);

int sampler__nr_cpus(const struct sampler *s);	   /* possible CPUs: size of per-CPU stats */
int sampler__nr_attached(const struct sampler *s); /* CPUs with a perf event */
uint32_t sampler__ring_bytes(const struct sampler *s);
/* Per-CPU counters into ret_per_cpu[nr_cpus] (may be NULL) and their sum into ret_total. */
int sampler__read_stats(const struct sampler *s, struct xsprof_cpu_stats *ret_per_cpu,
			struct xsprof_cpu_stats *ret_total);
void sampler__user_stats(const struct sampler *s, struct sampler_stats *ret_stats);
/* dst += src, counter by counter. */
void xsprof_cpu_stats__add(struct xsprof_cpu_stats *dst, const struct xsprof_cpu_stats *src);
/* The table walk's per-CPU counters summed (bpf/unwind.bpf.h). */
int sampler__owner_stats(const struct sampler *s, struct xsprof_owner_stats *ret);
/* Who gets the samples of a sampler made without (sampler__new with fn NULL: loaded on another
 * thread, then taken over on the loop's). */
void sampler__set_sample_fn(struct sampler *s, sampler_sample_fn fn, void *ctx);
int sampler__unwind_stats(const struct sampler *s, struct xsprof_unwind_stats *ret_total);

/* Parse a CPU list like "0-3,8,10-11" into a bitmap of nbits; -EINVAL on junk. */
int parse_cpu_list(const char *s, bool *ret_mask, int nbits);

#endif
