/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The end of every session: a source's CPU stacks, its timeline, its CUDA launches and the GPU
 * records of its processes joined (gpu_join) into one profile_data for every writer, shown as a
 * view asks (weights, GPU mode, group, waits, NVTX ranges). One-shot runs, the service's
 * recordings and each slice of a lasting profile (the window, an attachment: slice.h) make their
 * profile here, and only here; what they log about it is their own.
 */
#ifndef XSPROF_DAEMON_SESSION_PROFILE_H
#define XSPROF_DAEMON_SESSION_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "correlate/correlate.h"
#include "daemon/cuda/launch_fold.h"
#include "daemon/session/gpu_waits.h"
#include "daemon/session/session_mode.h"
#include "daemon/stacks/fold.h"
#include "output/model/profile.h"

struct calltree;
struct gpu_join;
struct gpu_join_scope;
struct gpu_store;
struct group_by;
struct ranges;
struct pid_uids;
struct session_source;
struct stack_names;
struct symbolizer;

/* How a session's profile is shown. */
struct session_view {
	enum gpu_mode mode;
	bool mode_set; /* else merged when GPU work was joined, cpu otherwise */
	enum weight_unit unit;
	unsigned int freq_hz;
	const char *strategy;	     /* correlation strategy name */
	enum session_mode cpu_mode;  /* on-CPU samples, off-CPU time or wall time */
	enum session_group group_by; /* a root level above the process, or none */
	struct group_by *groups;     /* its names, noted while the processes ran (may be NULL) */
	const char *range_domain; /* group_by range: this NVTX domain's ranges only (NULL: all) */
	/* The recording kept its samples for a trace: the trace's stack names and GPU wait
	 * slices are made even when no sample came (one-shot; a recording makes them with
	 * samples only). */
	bool timeline;
	/*
	 * A window slice's: every stack under a "uid:N" frame (the uid the process's samples had,
	 * else its uid now, else 0), the CPU tree's first and, for the stacks of the timeline,
	 * launches and GPU work, the process name as "uid:N\x1fcomm" (slice.c re-roots them).
	 */
	bool uid_root;
	/* No CPU tree folded from the counted stacks: the samples one by one make it (grouped by
	 * range), or none is wanted (a slice whose samples wait for their ranges). */
	bool skip_fold;
	/* Name only the stacks of the processes that launched (and the launches'): a whole
	 * machine's table is costly to name, and a slice's GPU report wants no more. */
	bool launchers_only;
	/* Instead of group_by: a label set above each process (the export sinks':
	 * host_labels__of), pprof's and OTLP's PROFILE_LABEL_SET root label. */
	fold_root_fn labels;
	void *labels_ctx;
	/* group_by range under these ranges (a slice's: those known when it closes), not the
	 * NVTX records the join took. */
	const struct ranges *ranges;
	/*
	 * Only the processes this keeps (--job, --rank: job_keep__accepts; NULL: all): their CPU
	 * stacks, GPU waits, samples, launches, GPU records, joins, waits and memory calls.
	 */
	fold_accept_fn keep;
	void *keep_ctx;
};

/* A profile and what it points at. */
struct session_profile {
	struct profile_data pd;
	struct calltree *tree;
	struct stack_names *names;
	struct gpu_join *join;
	struct fold_stats fold;		     /* what naming the CPU stacks came to */
	uint64_t timeline_dropped;	     /* samples the recording left off its timeline */
	bool waits_added;		     /* the view's waits are in tree (wall, merged) */
	struct gpu_waits_stats waits;	     /* what the GPU waits came to */
	struct group_by *groups;	     /* view->group_by's names, when the view had none */
	struct ranges *ranges;		     /* view->group_by range's NVTX ranges */
	struct profile_wait *waits_timeline; /* pd.waits */
	struct profile_mem *mem_timeline;    /* pd.mem */
	struct pid_uids *uids;		     /* view->uid_root's */
	struct profile_taken kept;	     /* pd's records of view->keep's processes */
	const char *failed;		     /* on failure, the step: "naming the stacks", ... */
};

/*
 * Fill sp from src: its stacks, its timeline if it has one, its launches joined to its GPU
 * records in scope (scope may be NULL; NVTX ranges still open end at src->end_ns). Adds the
 * join's counters to *cs. 0 or -errno (sp->failed says at which step);
 * session_profile__release in any case.
 */
int session_profile__build(struct session_profile *sp, const struct session_source *src,
			   struct symbolizer *sym, const struct gpu_join_scope *scope,
			   const struct session_view *view, struct correlate_stats *cs);
void session_profile__release(struct session_profile *sp);

/*
 * The launches of ls as a tree (--launch-output): comm;launch stack;[cuda] API, weighted by
 * calls (launch_fold), of the processes keep keeps (NULL: all). *ret_tree is the caller's; 0
 * or -errno (*ret_tree NULL).
 */
int session_profile__launches(const struct launch_store *ls, struct symbolizer *sym,
			      fold_accept_fn keep, void *keep_ctx, struct calltree **ret_tree,
			      struct launch_fold_stats *ret_stats);

#endif
