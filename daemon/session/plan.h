/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A session's plan: from what it shows (its view), what it is given (the base: the daemon's
 * flags, whom it records, its caps) and the outputs asked for, the recording it runs and what
 * it reads while that runs (samples one by one, labels, groups, frame sites). One-shot runs,
 * the service's recordings, attachments and the window plan here, and only here.
 */
#ifndef XSPROF_DAEMON_SESSION_PLAN_H
#define XSPROF_DAEMON_SESSION_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/session/recording.h"
#include "output/output.h"

struct session_view;
struct unwinder;
struct xsprofd_opts;

/* What a session's recording is given besides its view. */
struct session_plan_base {
	/* The daemon's flags, every recording's (session_plan_base__of_flags). */
	unsigned int max_stacks;
	uint32_t unwind_mode; /* enum xsprof_unwind_mode */
	uint32_t unwind_mb;
	struct unwinder *unwinder; /* the service's, shared; NULL: the recording's own */
	bool python;
	bool autograd; /* PyTorch backward under its forward line (with python) */
	bool cuda;
	/* Flags that only the recording they describe takes (one-shot's, the window's); the
	 * others leave them 0, the recording's defaults. */
	uint32_t ring_bytes;
	bool include_idle;
	bool proc_events; /* the one recording that tells its symbolizer of exec and exit */
	const char *const *cuda_libs;
	int nr_cuda_libs;
	uint64_t offcpu_min_ns; /* shorter off-CPU blocks are not counted */
	bool wakers;		/* off-CPU stretches under who woke them (--wakers) */
	bool check_joins;	/* --correlate-check: every strategy joins, the uprobes' ones too */
	/* Whom it records. */
	const pid_t *pids; /* NULL/0: the whole machine */
	int nr_pids;
	bool command;  /* a command's pid joins later (recording__add_pid) */
	bool children; /* the descendants of the pids (and of the command) join them */
	const pid_t *tids;
	int nr_tids;
	const char *comm;
	int cgroup_fd;
	bool only_uid; /* a user's session: only their threads */
	uint32_t uid;
	/* The samples kept one by one, when the plan keeps them (a cap per kind of session). */
	size_t max_timeline;
};

struct session_plan {
	/* All but what only the caller knows: callbacks (on_new_process and its kin, and their
	 * ctx) and a sampler loaded already. */
	struct recording_opts ro;
	bool samples;	  /* each sample kept (ro.max_timeline): session_view.timeline */
	bool labels;	  /* each process's host-side labels read while it runs (host_labels) */
	bool groups;	  /* each process's --group-by group read while it runs (group_by) */
	bool frame_sites; /* where each frame came from (pprof's addresses: frame_sites) */
};

/*
 * The plan of a session that shows view, given base, writing fmts[nr_fmts] (the GPU report a
 * lasting profile keeps per slice counts as OUTPUT_GPU_REPORT). view->keep set (its ctx may
 * come later) asks for the labels it keeps processes by.
 */
void session_plan__of(const struct session_view *view, const struct session_plan_base *base,
		      const enum output_format *fmts, size_t nr_fmts, struct session_plan *ret);

/* A base with the flags of o that every recording takes, the rest 0. */
void session_plan_base__of_flags(const struct xsprofd_opts *o, struct unwinder *unwinder,
				 struct session_plan_base *ret);

#endif
