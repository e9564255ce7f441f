/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A lasting profile: a recording that runs on and is folded, every slice, into a window of
 * named call trees, CPU samples in one and the GPU work its CUDA launches joined in another.
 * The service's rolling window (the whole machine) and each attachment (one process tree) are
 * lasting profiles; a recording on request is the same session, ended once.
 */
#ifndef XSPROF_DAEMON_SESSION_LASTING_H
#define XSPROF_DAEMON_SESSION_LASTING_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/session/session_mode.h"
#include "output/model/profile.h"

struct calltree;
struct correlate_stats;
struct gpu_join_scope;
struct gpu_store;
struct lasting_late;
struct pid_uids;
struct gpu_report;
struct recording;
struct report_window;
struct slice_out;
struct symbolizer;
struct window;

struct lasting {
	struct recording *recording; /* NULL once it has stopped for good (the windows stay) */
	struct window *cpu;	     /* samples, under "uid:N" roots */
	struct window *gpu;	     /* GPU work in microseconds, under the same roots */
	/* A GPU report per slice and user (its recording keeps a sample timeline for the
	 * host's stacks in the GPU's idle gaps); NULL: none kept. */
	struct report_window *reports;
	uint64_t report_samples_dropped; /* missed the timeline (its cap): not in the reports */
	uint64_t slice_start_ns;
	/* The GPU records taken so far: a slice joins those that arrived after (gpu_store's
	 * seq), so one that arrives a slice late still counts, once. Set at the start. */
	uint64_t seen_seq;
	unsigned int freq_hz;
	/* > 0: only the GPU work of this process and of those that launched in the slice (an
	 * attachment's tree); 0: whatever the scope accepts. */
	pid_t root_pid;
	const char *name; /* in log lines: "the window", "pid 12's attachment" */
	/* The processes named in a slice are forgotten after it (the window's), unless this is
	 * set: a recording still running may name them later (by the image it sampled). */
	bool keep_names;
	/* Another user's threads left out of a user's lasting profile, as of its stop. */
	struct xsprof_owner_stats left_out;
	/*
	 * Grouped by NVTX range (an attachment made with group_by range or outer-range, or the
	 * window with --window-group-by; its recording keeps a timeline): both windows' stacks
	 * are "uid:N;range;comm;...". A range is known once it ends, so a slice's samples wait
	 * (late) for the ranges they were in, then fold; GPU work folds at its slice's close
	 * under the ranges known then.
	 */
	enum session_group group_by;
	char range_domain[64];	   /* only this NVTX domain's ranges; "": all */
	struct lasting_late *late; /* the slices waiting, oldest first */
	/* A waiting slice folds at the first slice close this long after its end (0: the next);
	 * the newest always waits for the next close. */
	uint64_t late_ns;
	uint64_t range_dropped; /* samples that missed the timeline (its cap): not in the window */
	/* Called with each slice's GPU figures per process and its GPU memory calls (the
	 * window's: the service's GPU metrics), which it may take (NULLing them); NULL: none made. */
	void (*on_gpu_figures)(void *ctx, struct slice_out *out);
	void *figures_ctx;
	/* Each slice's profile, for the flight recorder (slice.h: session_slice.keep); NULL:
	 * none kept. */
	void (*keep)(void *ctx, const struct profile_data *pd, struct pid_uids *uids,
		     const uint32_t *pids, size_t nr_pids);
	void *keep_ctx;
	/*
	 * Each slice that closes (not grouped by range) made once more into one profile for the
	 * export sinks, every stack under its process's label set from labels (a fold root: the
	 * sinks' host_labels__of), CPU samples and GPU work; on_slice takes it before it goes.
	 * NULL: nothing exported.
	 */
	void (*on_slice)(void *ctx, const struct profile_data *pd);
	void *on_slice_ctx;
	const char *(*labels)(void *ctx, uint32_t tgid);
	void *labels_ctx;
};

/* What l left out as another user's (live while it runs). */
void lasting__left_out(const struct lasting *l, struct xsprof_owner_stats *ret);

/*
 * Fold what l->recording counted since the last slice into l->cpu, and join its CUDA launches to the
 * GPU records of gs (may be NULL) that scope accepts into l->gpu; then expire both windows at
 * end. Failures are logged and counted by the windows; the slice's samples are then lost.
 */
void lasting__close_slice(struct lasting *l, struct symbolizer *sym, const struct gpu_store *gs,
			  const struct gpu_join_scope *scope, struct correlate_stats *cs,
			  uint64_t end_ns);

/*
 * The slices since since_ns (and before until_ns, UINT64_MAX: no bound) into tree, by mode (CPU samples, GPU work, or both), the uid's only
 * unless all_uids, weighted in unit: samples (GPU time as the samples it would have been worth
 * at l->freq_hz) or microseconds (a sample as its period). *ret_from: the start of the oldest
 * slice used (0: none). 0 or -errno.
 */
int lasting__query(const struct lasting *l, uint64_t since_ns, uint64_t until_ns,
		   enum gpu_mode mode, enum weight_unit unit, bool all_uids, uid_t uid,
		   struct calltree *tree, uint64_t *ret_from);

/*
 * The GPU reports of the slices since since_ns (and before until_ns, UINT64_MAX: no bound),
 * the uid's only unless all_uids, merged oldest first into a new report, finished (findings
 * made): *ret (free it), with no GPU work when none was kept. *ret_from: the start of the
 * oldest slice used (0: none). 0 or -errno.
 */
int lasting__report(const struct lasting *l, uint64_t since_ns, uint64_t until_ns, bool all_uids,
		    uid_t uid, struct gpu_report **ret, uint64_t *ret_from);

/* tree's stacks without their outermost frame (a range: the plain view of a grouped profile).
 * 0 or -errno. */
int lasting__drop_root(struct calltree **tree);

/*
 * The last slice of a recording that has stopped (recording__stop: every range it will see has
 * ended): closed at end, and a late slice folded now.
 */
void lasting__close_last(struct lasting *l, struct symbolizer *sym, const struct gpu_store *gs,
			 const struct gpu_join_scope *scope, struct correlate_stats *cs,
			 uint64_t end_ns);

/* The start of the oldest slice l has not folded yet (its late one, or the open one): GPU
 * records and ended images it may still want are kept from then on. */
uint64_t lasting__oldest_ns(const struct lasting *l);
/* The slices waiting for their ranges, and the samples they hold. */
void lasting__waiting(const struct lasting *l, size_t *ret_slices, uint64_t *ret_samples);

/* Stop and free the recording, keeping the windows (a process that exited). */
void lasting__stop(struct lasting *l);
/* Everything, windows included. */
void lasting__release(struct lasting *l);

#endif
