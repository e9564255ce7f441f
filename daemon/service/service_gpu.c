// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/cuda/cuda_probes.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/options.h"
#include "daemon/service/service_gpu.h"
#include "daemon/session/gpu_join.h"
#include "daemon/session/gpu_waits.h"
#include "daemon/session/group_by.h"
#include "daemon/session/ranges.h"
#include "daemon/session/recording.h"
#include "daemon/session/session_tree.h"
#include "daemon/session/stack_names.h"
#include "daemon/stacks/fold.h"
#include "daemon/symbolize/symbolizer.h"
#include "output/calltree.h"
#include "output/profile.h"

int session_profile__build(struct session_profile *sp, struct recording *rec,
			   struct symbolizer *sym, const struct gpu_store *gs,
			   const struct gpu_join_scope *scope, const struct session_view *view,
			   struct correlate_stats *cs)
{
	const struct launch_store *ls =
		recording__cuda(rec) ? cuda_probes__store(recording__cuda(rec)) : NULL;
	struct profile_data *pd = &sp->pd;
	struct group_by *groups;
	struct fold_stats fs;
	uint64_t dropped = 0;
	int err;

	memset(sp, 0, sizeof(*sp));
	sp->tree = calltree__new();
	sp->join = gpu_join__new();
	if (!sp->tree || !sp->join)
		return -ENOMEM;
	if (view->group_by && !xsprofd_group_by__is_range(view->group_by) && !view->groups &&
	    !(sp->groups = group_by__new(view->group_by)))
		return -ENOMEM;
	groups = view->groups ? view->groups : sp->groups;
	err = session_tree__build(rec, sym, view->cpu_mode, view->freq_hz,
				  groups ? group_by__root : NULL, groups, sp->tree, &fs);
	if (err)
		return err;
	pd->cpu_tree = sp->tree;
	pd->sites = symbolizer__sites(sym);
	pd->root = groups ? group_by__root : NULL;
	pd->root_ctx = groups;
	/* In pprof the group and the process are labels (container, unit), not frames. */
	if (groups)
		pd->root_labels = group_by__labels(groups, &pd->nr_root_labels);
	pd->sample_period_ns = 1000000000ull / (view->freq_hz ? view->freq_hz : 1);
	pd->unit = view->unit;
	if (view->cpu_mode != XSPROFD_MODE_CPU) {
		/* Off-CPU and wall trees are in microseconds already. */
		pd->sample_period_ns = 1000;
		pd->unit = WEIGHT_US;
	}
	if (ls || gs) {
		err = gpu_join__run(sp->join, ls, gs, scope, view->strategy, pd, cs);
		if (err)
			return err;
	}
	pd->mode = view->mode_set ? view->mode : pd->nr_gpu ? GPU_MODE_MERGED : GPU_MODE_CPU;
	pd->samples = recording__timeline(rec, &pd->nr_samples, &dropped);
	if (pd->nr_samples || pd->nr_launches || (ls && launch_store__nr_waits(ls))) {
		sp->names = stack_names__new(recording__stacks(rec), ls, sym);
		if (!sp->names)
			return -errno;
		pd->stack = stack_names__resolve;
		pd->name = stack_names__comm;
		pd->ctx = sp->names;
	}
	/* The wall and merged views: the time spent waiting for the GPU. */
	if (ls && (view->cpu_mode == XSPROFD_MODE_WALL ||
		   (view->cpu_mode == XSPROFD_MODE_CPU && pd->mode == GPU_MODE_MERGED)))
		err = gpu_waits__add(ls, pd, sp->tree, pd->sample_period_ns,
				     groups ? group_by__root : NULL, groups, &sp->waits);
	if (!err && pd->nr_samples)
		err = gpu_waits__timeline(ls, &sp->waits_timeline, &pd->nr_waits);
	pd->waits = sp->waits_timeline;
	/* group_by range: the samples again, each under the NVTX range its thread was in, and the
	 * GPU work under its launch's (the merged view's waits are left to the trace). */
	if (!err && xsprofd_group_by__is_range(view->group_by)) {
		sp->ranges = ranges__new(pd->gpu, pd->nr_gpu,
					 view->group_by == XSPROFD_GROUP_OUTER_RANGE, NULL);
		if (!sp->ranges)
			return -ENOMEM;
		if (pd->nr_samples)
			pd->cpu_tree = NULL;
		pd->root_at = ranges__root_at;
		pd->root_at_ctx = sp->ranges;
	}
	return err;
}

void session_profile__release(struct session_profile *sp)
{
	stack_names__free(sp->names);
	group_by__free(sp->groups);
	ranges__free(sp->ranges);
	free(sp->waits_timeline);
	gpu_join__free(sp->join);
	calltree__free(sp->tree);
	memset(sp, 0, sizeof(*sp));
}

/* ---- window slices ---- */

/* A GPU tree's roots as "uid:N\x1fcomm", split in two frames when re-rooted. */
struct slice_names {
	struct stack_names *names;
	char buf[4][96];
	unsigned int next;
};

static const char *uid_comm(void *ctx, uint32_t pid, uint32_t tid)
{
	struct slice_names *n = ctx;
	const char *comm = stack_names__comm(n->names, pid, tid);
	char path[32], *b = n->buf[n->next++ & 3];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%u", pid);
	/* Gone already: root's alone to see. */
	unsigned int uid = stat(path, &st) ? 0u : (unsigned int)st.st_uid;

	if (comm)
		snprintf(b, sizeof(n->buf[0]), "uid:%u\x1f%s", uid, comm);
	else
		snprintf(b, sizeof(n->buf[0]), "uid:%u\x1fpid %u", uid, pid);
	return b;
}

static int slice_stack(void *ctx, uint32_t pid, uint32_t id, const char *const **ret, size_t *ret_n)
{
	struct slice_names *n = ctx;

	return stack_names__resolve(n->names, pid, id, ret, ret_n);
}

struct reroot {
	struct calltree *out;
	const char *path[512];
	uint64_t num, den; /* weights scaled by num / den, rounded; 0: re-rooted as is */
	int err;
};

static int reroot_visit(const struct calltree_frame *f, void *ctx)
{
	struct reroot *r = ctx;
	const char *frames[514];
	char root[96], *sep;
	size_t n = 0;

	if (f->depth >= 512)
		return 0;
	r->path[f->depth] = f->name;
	if (!f->self)
		return 0;
	snprintf(root, sizeof(root), "%s", r->path[0]);
	sep = strchr(root, '\x1f');
	if (sep)
		*sep = '\0';
	frames[n++] = root;
	if (sep)
		frames[n++] = sep + 1;
	for (size_t i = 1; i <= f->depth; i++)
		frames[n++] = r->path[i];
	r->err = calltree__add(r->out, frames, n, f->self);
	return r->err;
}

int gpu_slice__tree(const struct launch_store *ls, const struct gpu_store *gs,
		    const struct gpu_join_scope *scope, struct symbolizer *sym,
		    const char *strategy, unsigned int freq_hz, struct calltree **ret_tree,
		    struct correlate_stats *cs)
{
	struct slice_names sn = {};
	struct profile_data pd = {
		.mode = GPU_MODE_GPU,
		.unit = WEIGHT_US, /* short kernels add up over the window before rounding */
		.sample_period_ns = 1000000000ull / (freq_hz ? freq_hz : 1),
	};
	struct gpu_join *j = gpu_join__new();
	struct calltree *gpu = NULL;
	struct reroot r = {};
	int err;

	*ret_tree = NULL;
	if (!j)
		return -ENOMEM;
	err = gpu_join__run(j, ls, gs, scope, strategy, &pd, cs);
	if (err || !pd.nr_gpu)
		goto out;
	sn.names = stack_names__new(NULL, ls, sym);
	if (!sn.names) {
		err = -errno;
		goto out;
	}
	pd.stack = slice_stack;
	pd.name = uid_comm;
	pd.ctx = &sn;
	err = profile__build_tree(&pd, &gpu);
	r.out = err ? NULL : calltree__new();
	if (!err && !r.out)
		err = -ENOMEM;
	if (!err)
		err = calltree__walk(gpu, reroot_visit, &r);
	if (!err && calltree__total(r.out)) {
		*ret_tree = r.out;
		r.out = NULL;
	}
out:
	calltree__free(r.out);
	calltree__free(gpu);
	stack_names__free(sn.names);
	gpu_join__free(j);
	return err;
}
