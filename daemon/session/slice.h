/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A slice of a lasting profile (lasting.h: the service's window, an attachment) made into what
 * its windows keep: its CPU samples and its GPU work as call trees under "uid:N" roots, and a
 * GPU report per user. Each is a session profile (profile.h) of the slice's source, built there
 * as a recording's is, then re-rooted under its uid.
 */
#ifndef XSPROF_DAEMON_SESSION_SLICE_H
#define XSPROF_DAEMON_SESSION_SLICE_H

#include <stdbool.h>
#include <stdint.h>

#include "correlate/correlate.h"
#include "daemon/session/profile.h"
#include "output/gpu_report/gpu_report.h"
#include "output/model/profile.h"

struct calltree;
struct gpu_join_scope;
struct gpu_report;
struct gpu_store;
struct launch_store;
struct pid_uids;
struct profile_sample;
struct ranges;
struct stack_table;
struct symbolizer;

/* uid_report.uid of a report of every user's processes. */
#define UID_REPORT_ALL UINT32_MAX

/*
 * One user's GPU report of a slice: the facts of the processes of uid (no findings). Two
 * users' reports of one device cannot be merged into the device's (their work overlaps in
 * time): a slice with GPU work of several users has a report of them all too (UID_REPORT_ALL);
 * one with a single user's has only theirs, sole (it stands for all).
 */
struct uid_report {
	uint32_t uid;
	bool sole;
	struct gpu_report *report;
};

void uid_reports__free(struct uid_report *v, size_t n);

/* What a slice is made from, and what of it is wanted. */
struct session_slice {
	const struct stack_table *st; /* the slice's samples, counted (may be NULL) */
	/* The samples one by one (stack ids of st; may be none): for the reports (the host's
	 * stacks in the GPU's idle gaps) and for the CPU tree grouped by range. */
	const struct profile_sample *samples;
	size_t nr_samples;
	const struct launch_store *ls; /* the slice's launches, waits and memory calls */
	const struct gpu_store *gs;
	const struct gpu_join_scope *scope;
	struct symbolizer *sym;
	const char *strategy;
	unsigned int freq_hz;
	const struct ranges *ranges; /* grouped by range: the ranges known; NULL: not grouped */
	uint64_t start_ns, end_ns;
	bool cpu;     /* fold st into out->cpu (grouped by range: the samples, under ranges) */
	bool gpu;     /* join ls to gs into out->gpu */
	bool reports; /* and the GPU reports into out->reports */
	bool figures; /* and each process's GPU figures and memory calls (out->figures, mem) */
	/* With reports: called with the slice's profile (its samples in time, launches, GPU
	 * records, joins, waits, names; uids: its processes' uids; pids: the processes of its
	 * launches, GPU records and memory calls, sorted, once each) before it goes, for the
	 * flight recorder to freeze (frozen.h); NULL: none. */
	void (*keep)(void *ctx, const struct profile_data *pd, struct pid_uids *uids,
		     const uint32_t *pids, size_t nr_pids);
	void *keep_ctx;
};

/* The most processes a slice gives GPU figures of; the rest are counted (figures_left_out). */
#define SLICE_FIGURE_PIDS 64
/* The most devices one process's figures cover in a slice. */
#define SLICE_FIGURE_DEVICES 16

/* A process with GPU work or memory calls in a slice (the service's GPU metrics). */
struct slice_proc {
	uint32_t pid, uid;
	char comm[16]; /* its name as the slice's stacks have it ("" when not known) */
};

/* One process's GPU figures on one device in a slice. */
struct slice_gpu_figure {
	uint32_t pid;
	struct gpu_device_figures f;
};

struct slice_out {
	struct calltree *cpu; /* "uid:N;comm;stack", or "uid:N;range;comm;stack"; NULL: none */
	struct calltree *gpu; /* "uid:N;comm;launch stack;[gpu] name" in us; NULL: none */
	struct uid_report *reports; /* one per user with GPU work or memory calls, and of all */
	size_t nr_reports;
	struct slice_proc *procs; /* the processes of the figures and memory calls */
	size_t nr_procs;
	struct slice_gpu_figure *figures; /* by process, then device */
	size_t nr_figures;
	size_t figures_left_out; /* processes past SLICE_FIGURE_PIDS */
	struct profile_mem *mem; /* the GPU memory calls (api NULL), in time order */
	size_t nr_mem;
};

/*
 * Make what in asks for into *out (all NULL when there was nothing of it). The GPU reports'
 * uid is the one a process's samples had in st, else its uid now, else 0 (gone). 0 or -errno
 * (nothing returned).
 */
int session_slice__build(const struct session_slice *in, struct slice_out *out,
			 struct correlate_stats *cs);
void slice_out__release(struct slice_out *out);

/*
 * The GPU work of one window slice: ls's launches joined to gs's records in scope, each as a
 * "uid:N;comm;launch stack;[gpu] name" stack weighted in microseconds (GPU work nothing
 * launched goes under "[no launch stack]"); with ranges, "uid:N;range;comm;..." (the range
 * its launch was made in). *ret_tree is NULL when there was none.
 */
int gpu_slice__tree(const struct launch_store *ls, const struct gpu_store *gs,
		    const struct gpu_join_scope *scope, struct symbolizer *sym,
		    const char *strategy, unsigned int freq_hz, const struct ranges *ranges,
		    struct calltree **ret_tree, struct correlate_stats *cs);

#endif
