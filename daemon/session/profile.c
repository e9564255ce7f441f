// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/sort.h"
#include "daemon/cuda/cuda_probes.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/session/gpu_join.h"
#include "daemon/session/gpu_waits.h"
#include "daemon/session/group_by.h"
#include "daemon/session/pid_uids.h"
#include "daemon/session/profile.h"
#include "daemon/session/ranges.h"
#include "daemon/session/session_tree.h"
#include "daemon/session/source.h"
#include "daemon/session/stack_names.h"
#include "daemon/symbolize/symbolizer.h"
#include "output/model/calltree.h"

/* The CPU call tree the view weighs, under its group's roots, and the weights' unit. */
static int fold_cpu(struct session_profile *sp, const struct session_source *src,
		    struct symbolizer *sym, const struct session_view *view,
		    struct group_by **ret_groups)
{
	struct profile_data *pd = &sp->pd;
	struct group_by *groups;
	static const char *const label_set[] = {PROFILE_LABEL_SET, "process"};
	struct fold_procs procs;
	fold_root_fn root;
	void *root_ctx;
	int err;

	sp->failed = "naming the stacks";
	sp->tree = calltree__new();
	if (!sp->tree)
		return -ENOMEM;
	if (view->group_by && !session_group__is_range(view->group_by) && !view->groups &&
	    !(sp->groups = group_by__new(view->group_by)))
		return -ENOMEM;
	groups = view->groups ? view->groups : sp->groups;
	root = view->labels ? view->labels : groups ? group_by__root : NULL;
	root_ctx = view->labels ? view->labels_ctx : groups;
	procs = (struct fold_procs){root, root_ctx, view->keep, view->keep_ctx};
	err = view->skip_fold ? 0
			      : session_tree__build(src, sym, view->cpu_mode, view->freq_hz,
						    view->uid_root, &procs, sp->tree, &sp->fold);
	if (err)
		return err;
	pd->cpu_tree = sp->tree;
	pd->sites = symbolizer__sites(sym);
	pd->root = root;
	pd->root_ctx = root_ctx;
	/* In pprof the group and the process are labels (container, unit), not frames. */
	if (view->labels) {
		pd->root_labels = label_set;
		pd->nr_root_labels = 2;
	} else if (groups)
		pd->root_labels = group_by__labels(groups, &pd->nr_root_labels);
	pd->sample_period_ns = 1000000000ull / (view->freq_hz ? view->freq_hz : 1);
	pd->unit = view->unit;
	pd->cpu_type = view->cpu_mode == SESSION_MODE_OFFCPU ? "off_cpu"
		       : view->cpu_mode == SESSION_MODE_WALL ? "wall"
							     : "cpu";
	if (view->cpu_mode != SESSION_MODE_CPU) {
		/* Off-CPU and wall trees are in microseconds already. */
		pd->sample_period_ns = 1000;
		pd->unit = WEIGHT_US;
	}
	*ret_groups = groups;
	return 0;
}

/* The processes that launched in pd (sorted, once each). */
static int launching_pids(const struct profile_data *pd, uint32_t **ret, size_t *ret_n)
{
	uint32_t *v = malloc((pd->nr_launches ? pd->nr_launches : 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < pd->nr_launches; i++)
		v[i] = pd->launches[i].pid;
	qsort(v, pd->nr_launches, sizeof(*v), cmp_u32);
	for (size_t i = 0; i < pd->nr_launches; i++)
		if (!n || v[n - 1] != v[i])
			v[n++] = v[i];
	*ret = v;
	*ret_n = n;
	return 0;
}

/* The stacks named once for the writers that resolve them one by one: all of them, or (the
 * view's launchers_only) the launches' and the launching processes' samples'. */
static int name_stacks(struct session_profile *sp, const struct session_source *src,
		       struct symbolizer *sym, const struct session_view *view)
{
	struct profile_data *pd = &sp->pd;
	const struct launch_store *ls = src->ls;
	uint32_t *pids = NULL;
	size_t nr_pids = 0;
	int err;

	if (!view->timeline && !pd->nr_samples && !pd->nr_launches && !pd->nr_gpu &&
	    !(ls && launch_store__nr_waits(ls)))
		return 0;
	sp->failed = "naming the stacks of the timeline";
	if (view->launchers_only) {
		err = launching_pids(pd, &pids, &nr_pids);
		if (err)
			return err;
		sp->names =
			stack_names__new_of(nr_pids ? src->stacks : NULL, ls, sym, pids, nr_pids);
		free(pids);
	} else {
		sp->names = stack_names__new(src->stacks, ls, sym);
	}
	if (!sp->names)
		return -errno;
	pd->stack = stack_names__resolve;
	pd->name = stack_names__comm;
	pd->ctx = sp->names;
	if (view->uid_root) {
		pid_uids__set_names(sp->uids, sp->names);
		pd->name = pid_uids__comm;
		pd->ctx = sp->uids;
		pd->stack = pid_uids__resolve;
	}
	return 0;
}

/*
 * The time spent in CUDA calls waiting for the GPU: as [wait gpu] frames in the wall and
 * merged views (not off-CPU: a wait's blocked part is there already), as slices on a timeline.
 */
static int add_waits(struct session_profile *sp, const struct launch_store *ls,
		     const struct session_view *view, struct group_by *groups)
{
	struct profile_data *pd = &sp->pd;
	int err;

	if (ls && (view->cpu_mode == SESSION_MODE_WALL ||
		   (view->cpu_mode == SESSION_MODE_CPU && pd->mode == GPU_MODE_MERGED))) {
		struct fold_procs procs = {pd->root, pd->root_ctx, view->keep, view->keep_ctx};

		sp->failed = "adding the GPU waits";
		err = gpu_waits__add(ls, pd, sp->tree, pd->sample_period_ns, &procs, &sp->waits);
		if (err)
			return err;
		sp->waits_added = true;
	}
	if (view->timeline || pd->nr_samples) {
		sp->failed = "building the timeline";
		err = gpu_waits__timeline(ls, &sp->waits_timeline, &pd->nr_waits);
		if (err)
			return err;
		pd->waits = sp->waits_timeline;
		err = gpu_waits__memory(ls, &sp->mem_timeline, &pd->nr_mem);
		if (err)
			return err;
		pd->mem = sp->mem_timeline;
	}
	return 0;
}

/* view->keep: pd's records of the processes it keeps (the CPU tree and waits were folded so). */
static int keep_processes(struct session_profile *sp, const struct session_view *view)
{
	int err;

	sp->failed = "leaving out the processes of other jobs and ranks";
	err = profile__take(&sp->pd, view->keep, view->keep_ctx, &sp->kept);
	if (!err)
		sp->pd = sp->kept.pd;
	return err;
}

/*
 * group_by range: the samples again, each under the NVTX range its thread was in, and the GPU
 * work under its launch's (the merged view's waits are left to the trace).
 */
static int by_range(struct session_profile *sp, const struct session_view *view)
{
	struct profile_data *pd = &sp->pd;

	sp->failed = "matching samples to NVTX ranges";
	if (!view->ranges) {
		sp->ranges = ranges__new(pd->gpu, pd->nr_gpu,
					 view->group_by == SESSION_GROUP_OUTER_RANGE,
					 view->range_domain);
		if (!sp->ranges)
			return -ENOMEM;
	}
	if (pd->nr_samples)
		pd->cpu_tree = NULL;
	pd->root_at = ranges__root_at;
	pd->root_at_ctx = view->ranges ? (void *)view->ranges : sp->ranges;
	return 0;
}

int session_profile__build(struct session_profile *sp, const struct session_source *src,
			   struct symbolizer *sym, const struct gpu_join_scope *scope,
			   const struct session_view *view, struct correlate_stats *cs)
{
	const struct launch_store *ls = src->ls;
	const struct gpu_store *gs = src->gs;
	struct profile_data *pd = &sp->pd;
	struct gpu_join_scope sc = scope ? *scope : (struct gpu_join_scope){0};
	struct group_by *groups = NULL;
	int err = 0;

	/* NVTX ranges still open when the recording stopped end there. */
	if (!sc.until_ns)
		sc.until_ns = src->end_ns;
	memset(sp, 0, sizeof(*sp));
	pd->samples = src->samples;
	pd->nr_samples = src->nr_samples;
	pd->woken = src->woken;
	pd->nr_woken = src->nr_woken;
	pd->hops = src->hops;
	pd->nr_hops = src->nr_hops;
	pd->passes = src->passes;
	pd->nr_passes = src->nr_passes;
	pd->fwds = src->fwds;
	pd->nr_fwds = src->nr_fwds;
	pd->start_ns = src->start_ns;
	pd->end_ns = src->end_ns;
	sp->timeline_dropped = src->timeline_dropped;
	if (view->uid_root) {
		sp->failed = "naming the stacks";
		sp->uids = pid_uids__new(src->stacks);
		if (!sp->uids)
			return -errno;
	}
	/* GPU records name their sender's uid: a process gone without samples stays its owner's. */
	sc.uids = sp->uids;
	err = fold_cpu(sp, src, sym, view, &groups);
	if (!err && (ls || gs)) {
		sp->failed = "correlating GPU work with its launches";
		sp->join = gpu_join__new();
		err = sp->join ? gpu_join__run(sp->join, ls, gs, &sc, view->strategy, pd, cs)
			       : -ENOMEM;
	}
	if (err)
		return err;
	pd->mode = view->mode_set ? view->mode : pd->nr_gpu ? GPU_MODE_MERGED : GPU_MODE_CPU;
	err = name_stacks(sp, src, sym, view);
	if (!err)
		err = add_waits(sp, ls, view, groups);
	if (!err && view->keep)
		err = keep_processes(sp, view);
	if (!err && session_group__is_range(view->group_by))
		err = by_range(sp, view);
	if (!err)
		sp->failed = NULL;
	return err;
}

void session_profile__release(struct session_profile *sp)
{
	stack_names__free(sp->names);
	group_by__free(sp->groups);
	ranges__free(sp->ranges);
	free(sp->waits_timeline);
	free(sp->mem_timeline);
	gpu_join__free(sp->join);
	calltree__free(sp->tree);
	pid_uids__free(sp->uids);
	profile_taken__release(&sp->kept);
	memset(sp, 0, sizeof(*sp));
}

int session_profile__launches(const struct launch_store *ls, struct symbolizer *sym,
			      fold_accept_fn keep, void *keep_ctx, struct calltree **ret_tree,
			      struct launch_fold_stats *ret_stats)
{
	struct calltree *tree = calltree__new();
	int err = tree ? launch_fold(ls, sym, tree, keep, keep_ctx, ret_stats) : -ENOMEM;

	if (err) {
		calltree__free(tree);
		tree = NULL;
	}
	*ret_tree = tree;
	return err;
}
