// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cuda/cuda_probes.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/log.h"
#include "daemon/service/lasting.h"
#include "daemon/service/service_gpu.h"
#include "daemon/service/window.h"
#include "daemon/session/gpu_join.h"
#include "daemon/session/recording.h"
#include "daemon/stacks/fold.h"
#include "daemon/stacks/stack_table.h"
#include "daemon/symbolize/symbolizer.h"
#include "output/calltree.h"
#include "output/profile.h"

struct launchers {
	uint32_t *pids;
	size_t n;
};

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static bool is_launcher(void *ctx, uint32_t pid)
{
	const struct launchers *l = ctx;

	return bsearch(&pid, l->pids, l->n, sizeof(pid), cmp_u32);
}

/* root and the processes that launched in ls: whose GPU records belong to the slice. */
static int launchers_of(const struct launch_store *ls, pid_t root, struct launchers *ret)
{
	const struct launch_event *ev = ls ? launch_store__events(ls) : NULL;
	size_t n = ls ? launch_store__nr_events(ls) : 0;

	ret->n = 0;
	ret->pids = malloc((n + 1) * sizeof(uint32_t));
	if (!ret->pids)
		return -ENOMEM;
	ret->pids[ret->n++] = (uint32_t)root;
	for (size_t i = 0; i < n; i++)
		if (ret->pids[ret->n - 1] != ev[i].tgid)
			ret->pids[ret->n++] = ev[i].tgid;
	qsort(ret->pids, ret->n, sizeof(uint32_t), cmp_u32);
	return 0;
}

/* The slice's GPU work: its launches (which go with the slice, so their store never fills)
 * joined to the GPU records that scope accepts. */
static void close_gpu_slice(struct lasting *l, struct symbolizer *sym, const struct gpu_store *gs,
			    const struct gpu_join_scope *scope, struct correlate_stats *cs,
			    uint64_t end)
{
	struct cuda_probes *cp = l->recording ? recording__cuda(l->recording) : NULL;
	struct gpu_join_scope sc = scope ? *scope : (struct gpu_join_scope){0};
	struct launchers who = {0};
	struct launch_store *ls = NULL;
	struct calltree *tree = NULL;
	int err = 0;

	if (cp && cuda_probes__rotate_store(cp, &ls))
		log_warn("%s: could not start a new launch slice (out of memory); launches go on "
			 "into the current one",
			 l->name);
	sc.since_ns = l->slice_start_ns;
	if (l->root_pid > 0) {
		err = launchers_of(ls, l->root_pid, &who);
		sc.accept_pid = is_launcher;
		sc.ctx = &who;
	}
	if (!err && (ls || gs))
		err = gpu_slice__tree(ls, gs, &sc, sym, "auto", l->freq_hz, &tree, cs);
	if (!err && tree) {
		err = window__add(l->gpu, l->slice_start_ns, end, tree);
		tree = NULL;
	}
	if (err && err != -E2BIG)
		log_warn("%s: joining the slice's GPU work failed: %s", l->name, strerror(-err));
	calltree__free(tree);
	launch_store__free(ls);
	free(who.pids);
}

void lasting__close_slice(struct lasting *l, struct symbolizer *sym, const struct gpu_store *gs,
			  const struct gpu_join_scope *scope, struct correlate_stats *cs,
			  uint64_t end)
{
	struct stack_table *st = NULL;
	struct calltree *tree;
	uint32_t *pids = NULL;
	size_t n = 0;
	int err;

	if (!l->recording) {
		window__expire(l->cpu, end);
		window__expire(l->gpu, end);
		return;
	}
	if (recording__rotate(l->recording, &st, &pids, &n)) {
		log_warn("%s: could not start a new slice (out of memory); the current one goes on",
			 l->name);
		return;
	}
	tree = calltree__new();
	err = tree ? fold_stacks_by_uid(st, sym, tree, NULL) : -ENOMEM;
	if (!err) {
		err = window__add(l->cpu, l->slice_start_ns, end, tree);
		if (err == -E2BIG)
			log_warn("%s: a %llu s slice is larger than its memory cap on its own: "
				 "dropped",
				 l->name,
				 (unsigned long long)((end - l->slice_start_ns) / 1000000000ull));
	} else {
		log_err("%s: naming a slice failed: %s; its samples are lost", l->name,
			strerror(-err));
		calltree__free(tree);
	}
	close_gpu_slice(l, sym, gs, scope, cs, end);
	/*
	 * Named: their mappings can go; a process still running is snapshotted again. Not an
	 * attachment's: its next slice may name launches of a process that has exited by then
	 * (the tree is bounded; the attachment forgets its root when it goes).
	 */
	for (size_t i = 0; !l->root_pid && !l->keep_names && i < n; i++)
		symbolizer__forget_process(sym, (pid_t)pids[i]);
	free(pids);
	stack_table__free(st);
	window__expire(l->cpu, end);
	window__expire(l->gpu, end);
	l->slice_start_ns = end;
}

int lasting__query(const struct lasting *l, uint64_t since_ns, uint64_t until_ns,
		   enum gpu_mode mode, enum weight_unit unit, bool all_uids, uid_t uid,
		   struct calltree *tree, uint64_t *ret_from)
{
	uint64_t from = 0, gfrom = 0, hz = l->freq_hz ? l->freq_hz : 1;
	struct calltree *part = calltree__new();
	int err = part ? 0 : -ENOMEM;

	/* The CPU window counts samples, the GPU window microseconds: one unit for both. */
	if (!err && mode != GPU_MODE_GPU) {
		err = window__query(l->cpu, since_ns, until_ns, all_uids, uid, part, &from);
		if (!err)
			err = unit == WEIGHT_US ? calltree__add_scaled(tree, part, 1000000, hz)
						: calltree__add_scaled(tree, part, 1, 1);
	}
	calltree__free(part);
	part = err ? NULL : calltree__new();
	if (!err && !part)
		err = -ENOMEM;
	if (!err && mode != GPU_MODE_CPU) {
		err = window__query(l->gpu, since_ns, until_ns, all_uids, uid, part, &gfrom);
		if (!err)
			err = unit == WEIGHT_US ? calltree__add_scaled(tree, part, 1, 1)
						: calltree__add_scaled(tree, part, hz, 1000000);
		if (!from || (gfrom && gfrom < from))
			from = gfrom;
	}
	calltree__free(part);
	*ret_from = from;
	return err;
}

void lasting__left_out(const struct lasting *l, struct xsprof_owner_stats *ret)
{
	struct recording_stats rs;

	if (!l->recording) {
		*ret = l->left_out;
		return;
	}
	recording__stats(l->recording, &rs);
	*ret = rs.owner;
}

void lasting__stop(struct lasting *l)
{
	if (l->recording)
		lasting__left_out(l, &l->left_out);
	recording__free(l->recording);
	l->recording = NULL;
}

void lasting__release(struct lasting *l)
{
	lasting__stop(l);
	window__free(l->cpu);
	window__free(l->gpu);
	l->cpu = l->gpu = NULL;
}
