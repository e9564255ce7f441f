/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One recording: its own BPF sampler (frequency, pid filter), the raw stacks it counted, and the
 * processes it saw, driven by an sd-event loop. One-shot mode runs one; the service runs its
 * always-on one and one per recording request.
 */
#ifndef XSPROF_DAEMON_SESSION_RECORDING_H
#define XSPROF_DAEMON_SESSION_RECORDING_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/xsprof_events.h"
#include "daemon/probes/proc_events.h"

typedef struct sd_event sd_event;
struct calltree;
struct profile_sample;
struct cuda_probes;
struct fold_stats;
struct sampler;
struct stack_table;
struct symbolizer;
struct unwinder;

struct recording_opts {
	unsigned int freq_hz;
	bool include_idle;
	uint32_t ring_bytes; /* 0: sized from the CPU count */
	unsigned int max_stacks;
	const pid_t *pids; /* NULL/0: whole machine */
	int nr_pids;
	bool proc_events;    /* feed exec/exit to the symbolizer (one recording per symbolizer) */
	size_t max_timeline; /* keep each sample (time, thread, stack id) up to this many; 0: none */
	uint32_t unwind_mode; /* enum xsprof_unwind_mode: fp (0) unless asked */
	uint32_t unwind_mb;   /* table memory (--unwind-mb); 0: the unwinder's default */
	/* Not fp: the unwinder to share (the service's, one for all its recordings), or NULL for
	 * one of the recording's own. Must outlive the recording. */
	struct unwinder *unwinder;
	/* Loaded already (sampler__new on another thread, with recording__sampler_opts of these
	 * opts): taken over, not loaded again. NULL: loaded here. */
	struct sampler *sampler;
	bool python; /* interpreter frames of CPython processes (daemon/python) */
	/* With python: PyTorch's backward work under its forward line (daemon/python/autograd.h). */
	bool autograd;

	/* GPU path (cuda_probes): CUDA API uprobes and the xsprof:launch USDT. */
	bool cuda;	   /* CUDA probes on the libraries of pids (and of recording__add_pid's) */
	bool follow_forks; /* children of filtered processes join the filter (launch) */
	const char *const *cuda_libs; /* system-wide, by path */
	int nr_cuda_libs;
	size_t max_launch_stacks; /* distinct launch stacks kept; 0: default */
	bool keep_launch_uprobes; /* see struct cuda_probes_opts */

	/* Off-CPU time (daemon/probes/offcpu.c) of the same processes, in a stack table of its own. */
	bool offcpu;
	uint64_t offcpu_min_ns;
	bool wakers; /* with offcpu: each stretch under who woke it (daemon/probes/offcpu.h) */

	/* In-kernel filters besides pids: process name, cgroup v2 directory (fd; 0: none). */
	const char *comm;
	int cgroup_fd;
	const pid_t *tids; /* threads only (--tid); NULL/0: all */
	int nr_tids;
	/* Wall mode: a thread's time inside a timed CUDA wait goes to the wait alone. */
	bool gpu_wait_exclusive;
	/* A user's recording: only threads whose visible uid is uid (a setuid program that its
	 * processes run is root's), samples, waits and launches alike; the rest are counted. */
	bool only_uid;
	uint32_t uid;
	/* Called for each process the first time it is seen (a sample, an off-CPU stack, a CUDA
	 * record), while it still runs; may be NULL. --group-by reads its cgroup then. */
	void (*on_new_process)(void *ctx, uint32_t tgid);
	void *on_new_process_ctx;
	/* Called at each exec of a process (with the process events), its new image's
	 * environment readable; may be NULL. A forked child sampled before its exec was seen
	 * with its parent's: the job report's ranks are read again then. Same ctx. */
	void (*on_exec)(void *ctx, uint32_t tgid);
	/* Called at each exit of a process (with the process events): the signal that killed
	 * it, 0 for none; may be NULL. Same ctx. */
	void (*on_exit)(void *ctx, uint32_t tgid, uint64_t time_ns, int signal);
	/* Called at the entry (return_ns 0) and the return of each CUDA call that waits for the
	 * GPU (enum xsprof_cuda_api); may be NULL. Same ctx. */
	void (*on_cuda_wait)(void *ctx, uint32_t tgid, uint32_t tid, unsigned int api,
			     uint64_t entry_ns, uint64_t return_ns);
	/* Called with each xsprof scope that ended; may be NULL. Same ctx. */
	void (*on_scope)(void *ctx, uint32_t tgid, uint32_t tid, const char *name,
			 uint64_t start_ns, uint64_t end_ns);
};

struct recording_stats {
	double wall_s;		       /* between start and stop */
	double cpu_s;		       /* our CPU while sampling */
	uint64_t records;	       /* read from the ring buffer */
	uint64_t bad_records;	       /* malformed, skipped */
	uint64_t store_failures;       /* samples that could not be stored (out of memory) */
	uint64_t snapshot_failed;      /* processes gone before their mappings were read */
	uint64_t descendants;	       /* running descendants of the given pids, joined at start */
	uint64_t descendants_capped;   /* ... left out past 4096 */
	struct proc_events_stats proc; /* zero without proc_events */
	size_t processes;	       /* distinct processes seen */
	struct xsprof_cpu_stats bpf;   /* BPF counters summed over CPUs */
	struct xsprof_owner_stats owner; /* left out with only_uid: another user's threads */
	uint64_t stalls;		 /* times the daemon's loop did not run for over a second */
	uint64_t stalled_ns; /* ... and how long in all (samples past the ring buffer lost) */
};

struct recording;
struct unwinder_stats;
struct offcpu_stats;

/*
 * Load the sampler and hook it to the loop. sym is shared (not owned) and must outlive the
 * recording. NULL with errno set; *ret_what names the step that failed.
 */
struct recording *recording__new(sd_event *ev, const struct recording_opts *opts,
				 struct symbolizer *sym, const char **ret_what);
/* The sampler recording__new would load for opts (um: opts->unwinder's maps, or NULL), so that
 * it can be loaded elsewhere first (opts.sampler). */
struct sampler_opts;
struct unwinder_maps;
void recording__sampler_opts(const struct recording_opts *opts, const struct unwinder_maps *um,
			     struct sampler_opts *ret);
void recording__free(struct recording *r);

int recording__start(struct recording *r);
/* Stop sampling and read what is still queued. Idempotent. */
void recording__stop(struct recording *r);

/*
 * The samples kept with opts.max_timeline, in arrival order (per CPU in time order); stack_id
 * is the stack table entry's id. ret_dropped: samples past the cap or not stored.
 */
/*
 * With opts.offcpu: the off-CPU stacks, counts in microseconds (read from the kernel at
 * recording__stop), and their counters; NULL / -ENOENT without.
 */
const struct stack_table *recording__offcpu_stacks(const struct recording *r);
int recording__offcpu_stats(const struct recording *r, struct offcpu_stats *ret_stats);

/*
 * With opts.wakers and opts.max_timeline: the woken stretches recording__stop charged to their
 * chains (at most RECORDING_MAX_WOKEN; past it offcpu counts them), and their hops; stack ids
 * are the stack table's (entries counted 0 times).
 */
#define RECORDING_MAX_WOKEN (1u << 18)
struct profile_hop;
struct profile_woken;
const struct profile_woken *recording__woken(const struct recording *r, size_t *ret_n,
					     const struct profile_hop **ret_hops,
					     size_t *ret_nr_hops);

/* With opts.autograd and opts.max_timeline: PyTorch's backward passes, as they ended (at most
 * RECORDING_MAX_PASSES; past it autograd counts them). */
#define RECORDING_MAX_PASSES (1u << 18)
struct profile_pass;
const struct profile_pass *recording__passes(const struct recording *r, size_t *ret_n);
/* ... and its backward launches' links to their forward ops (at most RECORDING_MAX_FWDS). */
#define RECORDING_MAX_FWDS (1u << 20)
struct profile_fwd;
const struct profile_fwd *recording__fwds(const struct recording *r, size_t *ret_n);

/* When recording__stop stopped it (CLOCK_MONOTONIC ns); 0 while it runs or never ran. */
uint64_t recording__end_ns(const struct recording *r);

const struct profile_sample *recording__timeline(const struct recording *r, size_t *ret_n,
						 uint64_t *ret_dropped);

void recording__stats(const struct recording *r, struct recording_stats *ret);
/* Per-CPU BPF counters into ret[nr_cpus]; nr_cpus from recording__nr_cpus(). */
int recording__cpu_stats(const struct recording *r, struct xsprof_cpu_stats *ret);
int recording__nr_cpus(const struct recording *r);
int recording__nr_attached(const struct recording *r);
uint32_t recording__ring_bytes(const struct recording *r);
const struct stack_table *recording__stacks(const struct recording *r);
struct sampler *recording__sampler(struct recording *r);
/* The GPU path's probes and launches; NULL unless opts.cuda. */
struct cuda_probes *recording__cuda(struct recording *r);
/*
 * The table walk's counters: the BPF side (summed over CPUs) and the tables loaded. -ENOENT in
 * fp mode (nothing was loaded).
 */
/* The unwind table memory in MiB (--unwind-mb); 0 in fp mode. */
uint32_t recording__unwind_mb(const struct recording *r);
int recording__unwind_stats(const struct recording *r, struct xsprof_unwind_stats *ret_bpf,
			    struct unwinder_stats *ret_tables);
/*
 * Interpreter frames: the BPF walk's counters (summed over CPUs) and the daemon side's.
 * -ENOENT without opts.python.
 */
struct pyprof_stats;
/* The autograd probes' counters (BPF's, summed over CPUs, and the daemon's); -ENOENT without
 * them. The reason the last libtorch found got no probes, or NULL. */
struct autograd_stats;
int recording__autograd_stats(const struct recording *r, struct xsprof_autograd_stats *ret_bpf,
			      struct autograd_stats *ret);
const char *recording__autograd_error(const struct recording *r);
int recording__python_stats(const struct recording *r, struct xsprof_py_stats *ret_bpf,
			    struct pyprof_stats *ret);
/* Add a process to the pid filter (and the CUDA probes to it) after the recording was made,
 * e.g. a command before it execs. */
int recording__add_pid(struct recording *r, pid_t pid);

/*
 * Start a new slice: hand over the stacks counted so far and the processes seen (to forget
 * their mappings once named), and count on into a fresh table. The caller frees both
 * (stack_table__free, free). -ENOMEM leaves the recording as it was.
 */
int recording__rotate(struct recording *r, struct stack_table **ret_stacks, uint32_t **ret_pids,
		      size_t *ret_nr_pids);
/*
 * Right after recording__rotate: hand over the samples kept on the timeline since the last
 * rotation (their stack ids are the handed-over table's; the caller frees them) and how many
 * missed it (past opts.max_timeline), and start an empty one.
 */
void recording__take_timeline(struct recording *r, struct profile_sample **ret_samples,
			      size_t *ret_n, uint64_t *ret_dropped);

/*
 * --max-cpu (daemon/session/ceiling.h): what the recording sheds from now on. A sample taken at
 * the lowered rate stands for rate_div; a launch walked 1 in launch_stack_every (a power of two)
 * for that many, the others counted in the kernel.
 */
struct recording_shed {
	unsigned int rate_div;	     /* 1: the asked rate */
	bool python;		     /* no interpreter frames */
	uint32_t launch_stack_every; /* 0 or 1: every launch's stack */
	bool offcpu;		     /* no off-CPU stacks */
	bool exec;		     /* no exec snapshots (mappings read at a first sample) */
	bool cuda_calls;	     /* CUDA calls counted only, not recorded */
};
void recording__shed(struct recording *r, const struct recording_shed *sh);
/* What it has to shed beyond the rate: RECORDING_SHED_* bits. */
#define RECORDING_SHED_RATE	     0x1
#define RECORDING_SHED_PYTHON	     0x2
#define RECORDING_SHED_LAUNCH_STACKS 0x4
#define RECORDING_SHED_OFFCPU	     0x8
#define RECORDING_SHED_CUDA_CALLS    0x10
#define RECORDING_SHED_EXEC	     0x20
uint32_t recording__sheddable(const struct recording *r);
/* The ceiling governing r (ceiling__add, ceiling__remove): recording__free leaves it. */
struct ceiling;
void recording__set_ceiling(struct recording *r, struct ceiling *c);
/* Its BPF programs' run time so far (sampler and CUDA probes), counted while the kernel's BPF
 * statistics are on (bpf_enable_stats); 0 otherwise. */
uint64_t recording__bpf_run_ns(struct recording *r);

#endif
