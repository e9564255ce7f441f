// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/sort.h"
#include "daemon/base/vec.h"
#include "daemon/cuda/cuda_probes.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/gpu/gpu_records.h"
#include "daemon/log.h"
#include "daemon/session/lasting.h"
#include "daemon/session/report_window.h"
#include "daemon/session/slice.h"
#include "daemon/session/window.h"
#include "daemon/session/gpu_join.h"
#include "daemon/session/profile.h"
#include "daemon/session/source.h"
#include "daemon/session/ranges.h"
#include "daemon/session/recording.h"
#include "daemon/stacks/fold.h"
#include "daemon/stacks/stack_table.h"
#include "daemon/symbolize/symbolizer.h"
#include "output/model/calltree.h"
#include "output/gpu_report/gpu_report.h"
#include "output/model/profile.h"

struct launchers {
	uint32_t *pids;
	size_t n;
};

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

/* A slice waiting for its ranges to end; l->late is the oldest, each next a later one. */
struct lasting_late {
	struct stack_table *st;
	struct profile_sample *samples;
	size_t n;
	struct launch_store *ls; /* its xsprof scopes (its launches were joined already) */
	uint64_t start_ns, end_ns;
	uint32_t *pids; /* the processes it named, sorted (forgotten once no slice waits on them) */
	size_t nr_pids;
	struct lasting_late *next;
};

static void late_free(struct lasting_late *late)
{
	if (!late)
		return;
	stack_table__free(late->st);
	free(late->samples);
	launch_store__free(late->ls);
	free(late->pids);
	free(late);
}

/* The ranges a slice's samples or launches may have been made in. */
struct range_recs {
	struct corr_gpu_rec *v;
	size_t n, cap;
	uint64_t since_ns; /* ranges that ended before are of no use */
};

static int add_range(struct range_recs *rr, uint32_t pid, uint32_t tid, uint64_t start,
		     uint64_t end, const char *name, const char *domain)
{
	if (end < rr->since_ns)
		return 0;
	if (vec_reserve(&rr->v, &rr->cap, rr->n + 1))
		return -ENOMEM;
	rr->v[rr->n++] = (struct corr_gpu_rec){.kind = CORR_GPU_NVTX,
					       .pid = pid,
					       .tid = tid,
					       .start_ns = start,
					       .end_ns = end,
					       .name = name,
					       .domain = domain};
	return 0;
}

static int add_nvtx(void *ctx, const struct gpu_activity *a)
{
	return a->kind == GPU_ACT_NVTX
		       ? add_range(ctx, a->pid, a->tid, a->start_ns, a->end_ns, a->name, a->domain)
		       : 0;
}

static int add_scopes(struct range_recs *rr, const struct launch_store *ls)
{
	const struct launch_range *r = ls ? launch_store__ranges(ls) : NULL;
	size_t n = ls ? launch_store__nr_ranges(ls) : 0;
	int err = 0;

	for (size_t i = 0; !err && i < n; i++)
		err = add_range(rr, r[i].tgid, r[i].tid, r[i].start_ns, r[i].end_ns, r[i].name,
				GPU_JOIN_SCOPE_DOMAIN);
	return err;
}

/*
 * The ranges known now that ended since since_ns: the NVTX ranges of pids (n of them, sorted;
 * pids NULL: every process) in gs, and the xsprof scopes of the waiting slices from late on
 * and of ls (both may be NULL).
 */
static struct ranges *ranges_known(const struct lasting *l, const struct gpu_store *gs,
				   const uint32_t *pids, size_t n, uint64_t since_ns,
				   const struct lasting_late *late, const struct launch_store *ls)
{
	struct range_recs rr = {.since_ns = since_ns};
	struct ranges *r = NULL;
	int err = 0;

	for (size_t i = 0; gs && !err && i < (pids ? n : 1); i++)
		if (!pids || !i || pids[i] != pids[i - 1])
			err = gpu_store__for_each(gs, pids ? pids[i] : 0, add_nvtx, &rr);
	for (; !err && late; late = late->next)
		err = add_scopes(&rr, late->ls);
	if (!err)
		err = add_scopes(&rr, ls);
	if (!err)
		r = ranges__new(rr.v, rr.n, l->group_by == SESSION_GROUP_OUTER_RANGE,
				l->range_domain[0] ? l->range_domain : NULL);
	free(rr.v);
	if (!r)
		errno = err ? -err : ENOMEM;
	return r;
}

_Static_assert(UID_REPORT_ALL == REPORT_WINDOW_ALL, "one uid for every user's report");

/* The slice's reports into l->reports, one per user with GPU work (and all of them). */
static void keep_reports(struct lasting *l, uint64_t end, struct uid_report *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int err = report_window__add(l->reports, l->slice_start_ns, end, v[i].uid,
					     v[i].sole, v[i].report);

		v[i].report = NULL;
		if (err == -E2BIG)
			log_warn("%s: a slice's GPU report is larger than its memory cap on its "
				 "own: dropped",
				 l->name);
	}
	uid_reports__free(v, n);
}

/*
 * The slice's session made into its windows' parts: its launches (which go with the slice, so
 * their store never fills) joined to the GPU records that scope accepts, grouped by range under
 * the ranges known now; its GPU reports, with the samples of in; and, when in->cpu, its CPU
 * tree. The launches go to *ret_ls when asked (their scopes are wanted later), else are freed.
 */
/*
 * The slice once more for l->on_slice (the export sinks): every stack under its process's label
 * set, CPU samples and the GPU work its launches were joined to, in one profile.
 */
static void export_slice(struct lasting *l, const struct session_slice *in,
			 const struct launch_store *ls, const struct gpu_join_scope *sc)
{
	struct session_source src = {
		.stacks = in->st,
		.ls = ls,
		.gs = in->gs,
		.start_ns = l->slice_start_ns,
		.end_ns = in->end_ns,
	};
	struct session_view view = {
		.mode = GPU_MODE_MERGED,
		.mode_set = true,
		.unit = WEIGHT_SAMPLES,
		.freq_hz = l->freq_hz,
		.strategy = "auto",
		.cpu_mode = SESSION_MODE_CPU,
		.labels = l->labels,
		.labels_ctx = l->labels_ctx,
	};
	struct correlate_stats cs = {0}; /* counted once, by the window's own join */
	struct session_profile sp;
	int err;

	err = session_profile__build(&sp, &src, in->sym, sc, &view, &cs);
	if (err)
		log_warn("%s: making the slice for export failed (%s): %s", l->name,
			 sp.failed ? sp.failed : "?", strerror(-err));
	else
		l->on_slice(l->on_slice_ctx, &sp.pd);
	session_profile__release(&sp);
}

static void close_session_slice(struct lasting *l, const struct gpu_store *gs,
				const struct gpu_join_scope *scope, struct correlate_stats *cs,
				struct session_slice *in, struct launch_store **ret_ls)
{
	struct cuda_probes *cp = l->recording ? recording__cuda(l->recording) : NULL;
	struct gpu_join_scope sc = scope ? *scope : (struct gpu_join_scope){0};
	struct launchers who = {0};
	struct launch_store *ls = NULL;
	struct ranges *ranges = NULL;
	struct slice_out out = {0};
	int err = 0;

	if (cp && cuda_probes__rotate_store(cp, &ls))
		log_warn("%s: could not start a new launch slice (out of memory); launches go on "
			 "into the current one",
			 l->name);
	/* The records that arrived since the last slice's join, each once however late. */
	sc.by_arrival = true;
	sc.after_seq = l->seen_seq;
	if (gs)
		l->seen_seq = gpu_store__last_seq(gs);
	if (l->root_pid > 0) {
		err = launchers_of(ls, l->root_pid, &who);
		sc.accept_pid = is_launcher;
		sc.ctx = &who;
	}
	if (!err && session_group__is_range(l->group_by) &&
	    !(ranges = ranges_known(l, gs, who.pids, who.n, l->slice_start_ns, l->late, ls)))
		err = -errno;
	in->ls = ls;
	in->gs = gs;
	in->scope = &sc;
	in->strategy = "auto";
	in->freq_hz = l->freq_hz;
	in->ranges = ranges;
	in->start_ns = l->slice_start_ns;
	in->gpu = ls || gs;
	in->reports = in->gpu && l->reports;
	in->figures = in->gpu && l->on_gpu_figures;
	in->keep = l->keep;
	in->keep_ctx = l->keep_ctx;
	if (!err && (in->gpu || in->cpu))
		err = session_slice__build(in, &out, cs);
	if (!err && l->on_gpu_figures && (out.nr_figures || out.nr_mem || out.figures_left_out))
		l->on_gpu_figures(l->figures_ctx, &out);
	if (!err && out.cpu) {
		err = window__add(l->cpu, l->slice_start_ns, in->end_ns, out.cpu);
		out.cpu = NULL;
		if (err == -E2BIG)
			log_warn("%s: a %llu s slice is larger than its memory cap on its own: "
				 "dropped",
				 l->name,
				 (unsigned long long)((in->end_ns - l->slice_start_ns) /
						      1000000000ull));
		err = err == -E2BIG ? 0 : err;
	}
	if (!err && out.gpu) {
		err = window__add(l->gpu, l->slice_start_ns, in->end_ns, out.gpu);
		out.gpu = NULL;
	}
	if (err && err != -E2BIG)
		log_warn("%s: making the slice failed: %s; its samples and GPU work are lost",
			 l->name, strerror(-err));
	keep_reports(l, in->end_ns, out.reports, out.nr_reports);
	out.reports = NULL;
	out.nr_reports = 0;
	slice_out__release(&out);
	if (l->on_slice && !ranges)
		export_slice(l, in, ls, &sc);
	ranges__free(ranges);
	if (ret_ls)
		*ret_ls = ls;
	else
		launch_store__free(ls);
	free(who.pids);
}

/*
 * The rolling window's: the processes the oldest waiting slice named go from the symbolizer
 * (their mappings; one still running is snapshotted again), but those a later one still waits on.
 */
static void forget_late(struct lasting *l, struct symbolizer *sym)
{
	const struct lasting_late *late = l->late;

	if (l->root_pid || l->keep_names)
		return;
	for (size_t i = 0; i < late->nr_pids; i++) {
		bool wanted = false;

		for (const struct lasting_late *o = late->next; o && !wanted; o = o->next)
			wanted = bsearch(&late->pids[i], o->pids, o->nr_pids, sizeof(uint32_t),
					 cmp_u32);
		if (!wanted)
			symbolizer__forget_process(sym, (pid_t)late->pids[i]);
	}
}

/* The oldest waiting slice's samples under the ranges known now (those of the slices after
 * it included), into the CPU window. */
static void fold_late(struct lasting *l, struct symbolizer *sym, const struct gpu_store *gs)
{
	struct lasting_late *late = l->late;
	uint32_t *pids = malloc((late->n ? late->n : 1) * sizeof(*pids));
	struct calltree *tree = NULL;
	struct ranges *ranges = NULL;
	int err = pids ? 0 : -ENOMEM;

	for (size_t i = 0; pids && i < late->n; i++)
		pids[i] = late->samples[i].pid;
	if (pids)
		qsort(pids, late->n, sizeof(*pids), cmp_u32);
	if (!err && late->n &&
	    !(ranges = ranges_known(l, gs, pids, late->n, late->start_ns, late, NULL)))
		err = -errno;
	if (!err && late->n) {
		struct session_slice in = {.st = late->st,
					   .samples = late->samples,
					   .nr_samples = late->n,
					   .sym = sym,
					   .freq_hz = l->freq_hz,
					   .ranges = ranges,
					   .start_ns = late->start_ns,
					   .end_ns = late->end_ns,
					   .cpu = true};
		struct slice_out out;

		err = session_slice__build(&in, &out, NULL);
		tree = out.cpu;
		out.cpu = NULL;
		slice_out__release(&out);
	}
	if (!err && tree) {
		err = window__add(l->cpu, late->start_ns, late->end_ns, tree);
		tree = NULL;
		if (err == -E2BIG)
			log_warn("%s: a slice is larger than its memory cap on its own: dropped",
				 l->name);
	} else if (err) {
		log_err("%s: naming a slice by range failed: %s; its samples are lost", l->name,
			strerror(-err));
	}
	calltree__free(tree);
	ranges__free(ranges);
	free(pids);
	forget_late(l, sym);
	l->late = late->next;
	late_free(late);
}

/* Grouped by range: the slice waits (late) for the ranges its samples were in to end; the
 * waiting ones that have waited long enough fold, the newest always waits. */
static void close_ranged_slice(struct lasting *l, struct symbolizer *sym,
			       const struct gpu_store *gs, const struct gpu_join_scope *scope,
			       struct correlate_stats *cs, struct stack_table *st, uint32_t *pids,
			       size_t nr_pids, uint64_t end)
{
	struct lasting_late *late = calloc(1, sizeof(*late)), **tail = &l->late;
	uint64_t dropped = 0;

	if (late) {
		late->st = st;
		late->start_ns = l->slice_start_ns;
		late->end_ns = end;
		qsort(pids, nr_pids, sizeof(*pids), cmp_u32);
		late->pids = pids;
		late->nr_pids = nr_pids;
		recording__take_timeline(l->recording, &late->samples, &late->n, &dropped);
		l->range_dropped += dropped;
		l->report_samples_dropped += dropped;
	} else {
		struct profile_sample *samples;
		size_t n;

		log_err("%s: keeping a slice failed (out of memory): its samples are lost",
			l->name);
		recording__take_timeline(l->recording, &samples, &n, &dropped);
		l->range_dropped += dropped + n;
		free(samples);
		free(pids);
		stack_table__free(st);
	}
	if (late) {
		struct session_slice in = {.st = late->st,
					   .samples = late->samples,
					   .nr_samples = late->n,
					   .sym = sym,
					   .end_ns = end};

		close_session_slice(l, gs, scope, cs, &in, &late->ls);
	} else {
		struct session_slice in = {.sym = sym, .end_ns = end};

		close_session_slice(l, gs, scope, cs, &in, NULL);
	}
	while (*tail)
		tail = &(*tail)->next;
	*tail = late;
	while (l->late && l->late->next && end - l->late->end_ns >= l->late_ns)
		fold_late(l, sym, gs);
}

void lasting__close_slice(struct lasting *l, struct symbolizer *sym, const struct gpu_store *gs,
			  const struct gpu_join_scope *scope, struct correlate_stats *cs,
			  uint64_t end)
{
	struct stack_table *st = NULL;
	struct profile_sample *samples = NULL;
	uint32_t *pids = NULL;
	size_t n = 0, nr_samples = 0;
	uint64_t dropped = 0;

	if (!l->recording) {
		window__expire(l->cpu, end);
		window__expire(l->gpu, end);
		if (l->reports)
			report_window__expire(l->reports, end);
		return;
	}
	if (recording__rotate(l->recording, &st, &pids, &n)) {
		log_warn("%s: could not start a new slice (out of memory); the current one goes on",
			 l->name);
		return;
	}
	if (session_group__is_range(l->group_by)) {
		close_ranged_slice(l, sym, gs, scope, cs, st, pids, n, end);
		st = NULL;
		pids = NULL;
		goto expire;
	}
	/* The samples one by one, for the GPU reports only: they go with the slice. */
	recording__take_timeline(l->recording, &samples, &nr_samples, &dropped);
	l->report_samples_dropped += dropped;
	close_session_slice(l, gs, scope, cs,
			    &(struct session_slice){.st = st,
						    .samples = samples,
						    .nr_samples = nr_samples,
						    .sym = sym,
						    .end_ns = end,
						    .cpu = true},
			    NULL);
	free(samples);
	/*
	 * Named: their mappings can go; a process still running is snapshotted again. Not an
	 * attachment's: its next slice may name launches of a process that has exited by then
	 * (the tree is bounded; the attachment forgets its root when it goes).
	 */
	for (size_t i = 0; !l->root_pid && !l->keep_names && i < n; i++)
		symbolizer__forget_process(sym, (pid_t)pids[i]);
expire:
	free(pids);
	stack_table__free(st);
	window__expire(l->cpu, end);
	window__expire(l->gpu, end);
	if (l->reports)
		report_window__expire(l->reports, end);
	l->slice_start_ns = end;
}

uint64_t lasting__oldest_ns(const struct lasting *l)
{
	return l->late && l->late->start_ns < l->slice_start_ns ? l->late->start_ns
								: l->slice_start_ns;
}

void lasting__waiting(const struct lasting *l, size_t *ret_slices, uint64_t *ret_samples)
{
	*ret_slices = 0;
	*ret_samples = 0;
	for (const struct lasting_late *late = l->late; late; late = late->next) {
		(*ret_slices)++;
		*ret_samples += late->n;
	}
}

void lasting__close_last(struct lasting *l, struct symbolizer *sym, const struct gpu_store *gs,
			 const struct gpu_join_scope *scope, struct correlate_stats *cs,
			 uint64_t end)
{
	lasting__close_slice(l, sym, gs, scope, cs, end);
	while (l->late)
		fold_late(l, sym, gs);
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

int lasting__report(const struct lasting *l, uint64_t since_ns, uint64_t until_ns, bool all_uids,
		    uid_t uid, struct gpu_report **ret, uint64_t *ret_from)
{
	struct gpu_report *r = gpu_report__new();
	uint64_t from = 0;
	int err = r ? 0 : -ENOMEM;

	if (!err && l->reports)
		err = report_window__query(l->reports, since_ns, until_ns, all_uids, uid, r, &from);
	if (!r)
		return err;
	err = gpu_report__finished(r, err, ret);
	if (!err)
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

struct drop_root {
	struct calltree *out;
	const char *path[512];
	int err;
};

static int drop_root_visit(const struct calltree_frame *f, void *ctx)
{
	struct drop_root *d = ctx;

	if (f->depth >= 512)
		return 0;
	d->path[f->depth] = f->name;
	if (!f->self || !f->depth)
		return 0;
	d->err = calltree__add(d->out, d->path + 1, f->depth, f->self);
	return d->err;
}

int lasting__drop_root(struct calltree **tree)
{
	struct drop_root d = {.out = calltree__new()};
	int err = d.out ? calltree__walk(*tree, drop_root_visit, &d) : -ENOMEM;

	if (err) {
		calltree__free(d.out);
		return err;
	}
	calltree__free(*tree);
	*tree = d.out;
	return 0;
}

void lasting__stop(struct lasting *l)
{
	if (l->recording)
		lasting__left_out(l, &l->left_out);
	/* A late slice still waiting (lasting__close_last was not called) names with the
	 * recording's scopes: it goes first. */
	while (l->late) {
		struct lasting_late *next = l->late->next;

		late_free(l->late);
		l->late = next;
	}
	recording__free(l->recording);
	l->recording = NULL;
}

void lasting__release(struct lasting *l)
{
	lasting__stop(l);
	window__free(l->cpu);
	window__free(l->gpu);
	report_window__free(l->reports);
	l->cpu = l->gpu = NULL;
	l->reports = NULL;
}
