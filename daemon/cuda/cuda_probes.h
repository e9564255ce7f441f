/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU path's CPU side: entry uprobes on the CUDA launch, copy and synchronize APIs and the
 * xsprof:launch USDT of libxsprof_cupti.so, attached per process to the files that process
 * maps (found in /proc/PID/maps, opened through /proc/PID/root, so containers work), or
 * system-wide by path. A process that never maps a CUDA library gets no probe and pays nothing.
 *
 * Which files: the runtime (libcudart.so*), the driver (libcuda.so*), libxsprof_cupti*, and an
 * executable that has the runtime linked in statically (nvcc's default, -cudart static) when
 * its symbol table still names the APIs (a stripped one cannot be probed: link with
 * -cudart shared, or keep .symtab). Runtime calls that reach the driver API count once, as
 * the runtime call: the BPF side drops calls nested in a probed call.
 *
 * With watch_maps, a profiled process (one in the pid filter) is stopped (SIGSTOP, then the
 * daemon's SIGCONT) twice at most: on its way out of the mmap() that maps a CUDA library, until
 * the probes are attached, so no call made right after the library loads goes uncounted; and at
 * its first recorded call, until its mappings are read, so a process that makes a few calls and
 * exits still has named stacks; and, once per file, at a launch whose walk asked for the file's
 * unwind table, until it is built (within a deadline), so its next launches are walked whole.
 * Its parent may see the stops (waitpid WUNTRACED). If xsprofd is killed in between (SIGKILL),
 * the process stays stopped until sent SIGCONT.
 *
 * Probes are uprobe_multi links where the kernel has them (6.6): a perf-event uprobe takes
 * ~0.1 s to detach, one multi link for all of a file's APIs the same.
 *
 * The records arrive on the sampler's ring buffer and are kept in a launch store.
 */
#ifndef XSPROF_DAEMON_CUDA_CUDA_PROBES_H
#define XSPROF_DAEMON_CUDA_CUDA_PROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#include "bpf/xsprof_events.h"
#include "daemon/cuda/cuda_scopes.h"

struct cuda_probes;
struct launch_range;
struct launch_store;
struct sampler;

struct cuda_probes_opts {
	bool follow_forks; /* children of processes in the pid filter join it (command mode) */
	/* Attach to the CUDA libraries filtered processes map later, holding them as above. */
	bool watch_maps;
	/*
	 * Probe each file found for every process, the pid filter deciding (command mode): a
	 * forked child inherits its parent's libraries without mapping them, and per-process
	 * probes would not fire in it. Other processes using the same file then pay an uprobe
	 * hit per call (and are not recorded) while the probes are on.
	 */
	bool by_file;
	uint32_t max_links;  /* uprobes attached at once (one fd each); 0: 16384 */
	size_t max_stacks;   /* distinct launch stacks kept; 0: the launch store's default */
	size_t max_launches; /* launches kept one by one; 0: the launch store's default */
	/*
	 * Keep the entry uprobes on the launch APIs that xsprof:launch reports even in processes
	 * where it fires (the timestamp and stream strategies join uprobe records). Otherwise
	 * they are removed there at its first firing, so a launch is probed once.
	 */
	bool keep_launch_uprobes;
	/* Called when pid's mappings are worth reading (it mapped a CUDA library, or a thread
	 * of it sent its first record); may be NULL. */
	void (*on_process)(void *ctx, pid_t pid);
	/* Called while pid waits (stopped) because a launch walk asked for a file's unwind table
	 * (XSPROF_CUDA_F_TABLES): build the tables asked for, within a deadline; may be NULL. */
	void (*on_tables)(void *ctx, pid_t pid);
	/* Called at the entry (return_ns 0) and the return of each call that waits for the GPU
	 * (cuda_api__waits); may be NULL. */
	void (*on_wait)(void *ctx, uint32_t tgid, uint32_t tid, unsigned int api, uint64_t entry_ns,
			uint64_t return_ns);
	/* Called with each xsprof scope that ended, once stored; may be NULL. */
	void (*on_scope)(void *ctx, const struct launch_range *r);
	void *ctx;
};

struct cuda_probes_stats {
	uint64_t targets;	   /* (process or system-wide, file) pairs attached now */
	uint64_t links;		   /* uprobes attached now (USDT sites included) */
	uint64_t attach_failed;	   /* files that could not be attached */
	uint64_t links_capped;	   /* files refused because max_links was reached */
	uint64_t lib_events;	   /* CUDA libraries mapped by filtered processes, handled */
	uint64_t execs;		   /* execs of filtered processes: their executables probed */
	uint64_t stopped;	   /* processes that waited (stopped) for the daemon */
	uint64_t table_waits;	   /* ... of which for a table a launch walk asked for */
	uint64_t bad_records;	   /* malformed GPU-path records */
	uint64_t store_failures;   /* records the launch store could not keep */
	uint64_t uprobes_trimmed;  /* launch uprobes removed where xsprof:launch fired */
	uint32_t programs_refused; /* SAMPLER_PROG_BITs of CUDA programs this kernel refused */
	uint64_t carry_failures;   /* new launch stores that could not keep the threads' last
				   * stacks (out of memory): their reuse records are orphans */
	/* Processes whose xsprof:launch site was last seen as the kernel's optimised call, as an
	 * int3 trap, or intact (read at its 1st, 64th and 4096th firing). */
	uint64_t usdt_site_call, usdt_site_trap, usdt_site_nop;
	uint64_t usdt_site_trap_nop5;	/* trapped although the site is a 5-byte nop: the kernel
				       * does not optimise uprobes */
	uint64_t usdt_site_unread;	/* processes gone before their site could be read */
	uint64_t usdt_inner_max;	/* most frames of the CUDA libraries above the application's
					 * call in an xsprof:launch stack */
	uint64_t usdt_inner_deep;	/* ... records with XSPROF_LAUNCH_SLOTS_USDT or more */
	struct xsprof_cuda_stats bpf;	/* BPF counters summed over CPUs */
	struct xsprof_wait_stats waits; /* the GPU waits' BPF counters (cuda_waits), summed */
	struct xsprof_launch_reuse_stats reuse; /* launch stack reuse's BPF counters, summed */
	struct cuda_scopes_stats scopes;	/* xsprof scopes paired into ranges */
};

/*
 * Hook the GPU-path programs of s's skeleton to its ring buffer. Nothing is attached yet.
 * NULL with errno set.
 */
struct cuda_probes *cuda_probes__new(struct sampler *s, const struct cuda_probes_opts *opts);
/* Detaches everything and continues any process still waiting for it. */
void cuda_probes__free(struct cuda_probes *cp);

/*
 * Attach system-wide (every process, filtered by the pid filter when it is on) to the file at
 * path: the CUDA APIs it defines and its xsprof:launch USDT. -ENOENT when it has neither,
 * -ENOSPC past max_links, else 0 or another -errno.
 */
int cuda_probes__attach_path(struct cuda_probes *cp, const char *path);
/*
 * Attach to pid: every CUDA library (and libxsprof_cupti) it maps now, and its executable when
 * the runtime is linked into it; any other library it maps only for its xsprof scopes. Returns
 * how many of the former were attached (0: it uses no CUDA yet), or -errno (-ESRCH: no such
 * process).
 */
int cuda_probes__attach_pid(struct cuda_probes *cp, pid_t pid);
/*
 * Attach to the executable at path for pid (for everyone with by_file), before pid execs it
 * (command mode: the runtime linked statically into the command). 1 when attached, 0 when it
 * has no CUDA API, -errno.
 */
int cuda_probes__attach_exe(struct cuda_probes *cp, pid_t pid, const char *path);

/* Process tgid exited at time_ns: its xsprof scopes still open end then. */
void cuda_probes__process_exited(struct cuda_probes *cp, uint32_t tgid, uint64_t time_ns);
/* The recording ended at time_ns: every xsprof scope still open ends then (after the last
 * records were read). */
void cuda_probes__end_scopes(struct cuda_probes *cp, uint64_t time_ns);

/* Start following forks and watching mappings as opts ask. 0 or -errno (nothing started). */
int cuda_probes__start(struct cuda_probes *cp);
/* Stop both; records already queued can still be read. Idempotent. */
void cuda_probes__stop(struct cuda_probes *cp);

const struct launch_store *cuda_probes__store(const struct cuda_probes *cp);
/*
 * Hand over the launches stored so far and keep storing into an empty store (a service slice):
 * the caller frees *ret_old (launch_store__free). -ENOMEM leaves cp as it was.
 */
int cuda_probes__rotate_store(struct cuda_probes *cp, struct launch_store **ret_old);
/* The second skeleton instance the uprobe_multi links run (NULL until the first attach, or
 * where the kernel lacks them), for bpf_cost. */
/* The i-th skeleton instance holding the CUDA programs (loaded at the first attach), NULL past
 * the last: their BPF statistics are reported beside the sampler's. */
const struct bpf_object *cuda_probes__obj(const struct cuda_probes *cp, int i);
int cuda_probes__stats(const struct cuda_probes *cp, struct cuda_probes_stats *ret_stats);
/* --max-cpu walks launch stacks 1 in every (sampler__set_shed): a walked launch stands for every
 * from now on (0 or 1: for one). */
void cuda_probes__set_stack_every(struct cuda_probes *cp, uint32_t every);
/* What the last failed attach was ("attaching /usr/.../libcudart.so.13 for pid 12: ..."),
 * or NULL; valid until the next call into cp. */
const char *cuda_probes__last_error(const struct cuda_probes *cp);

#endif
