// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/sort.h"
#include "daemon/base/vec.h"
#include "daemon/session/pid_uids.h"
#include "daemon/session/slice.h"
#include "daemon/session/source.h"
#include "output/model/calltree.h"
#include "output/gpu_report/gpu_report.h"
#include "output/model/profile.h"

struct reroot {
	struct calltree *out;
	const char *path[512];
	bool ranged; /* path[0] is a range, path[1] "uid:N\x1fcomm" */
	int err;
};

/* "uid:N\x1fcomm;..." as "uid:N;comm;...", and "range;uid:N\x1fcomm;..." as
 * "uid:N;range;comm;...": the window's stacks start with their uid. */
static int reroot_visit(const struct calltree_frame *f, void *ctx)
{
	struct reroot *r = ctx;
	const char *frames[515];
	size_t n = 0, first = r->ranged ? 1 : 0;
	char root[96], *sep;

	if (f->depth >= 512)
		return 0;
	r->path[f->depth] = f->name;
	if (!f->self || f->depth < first)
		return 0;
	snprintf(root, sizeof(root), "%s", r->path[first]);
	sep = strchr(root, '\x1f');
	if (sep)
		*sep = '\0';
	frames[n++] = root;
	if (r->ranged)
		frames[n++] = r->path[0];
	if (sep)
		frames[n++] = sep + 1;
	for (size_t i = first + 1; i <= f->depth; i++)
		frames[n++] = r->path[i];
	r->err = calltree__add(r->out, frames, n, f->self);
	return r->err;
}

/* pd's tree, its stacks rerooted under their uid; *ret_tree NULL when it weighs nothing. */
static int build_rerooted(const struct profile_data *pd, struct calltree **ret_tree)
{
	struct calltree *t = NULL;
	struct reroot r = {.ranged = pd->root_at != NULL};
	int err = profile__build_tree(pd, &t);

	r.out = err ? NULL : calltree__new();
	if (!err && !r.out)
		err = -ENOMEM;
	if (!err)
		err = calltree__walk(t, reroot_visit, &r);
	if (!err && calltree__total(r.out)) {
		*ret_tree = r.out;
		r.out = NULL;
	}
	calltree__free(r.out);
	calltree__free(t);
	return err;
}

/* The uids of the processes in a slice's GPU report, by pid. */
struct report_uids {
	uint32_t *pids; /* sorted, one each */
	size_t n, cap;
	struct pid_uids *uids;
	uint32_t want; /* accept_uid's */
};

static int add_pid(struct report_uids *u, uint32_t pid)
{
	if (u->n && u->pids[u->n - 1] == pid)
		return 0;
	if (vec_reserve(&u->pids, &u->cap, u->n + 1))
		return -ENOMEM;
	u->pids[u->n++] = pid;
	return 0;
}

/* The processes with GPU work or memory calls in pd. */
static int report_pids(const struct profile_data *pd, struct report_uids *u)
{
	size_t k = 0;
	int err = 0;

	for (size_t i = 0; !err && i < pd->nr_launches; i++)
		err = add_pid(u, pd->launches[i].pid);
	for (size_t i = 0; !err && i < pd->nr_gpu; i++)
		err = add_pid(u, pd->gpu[i].pid);
	for (size_t i = 0; !err && i < pd->nr_mem; i++)
		err = add_pid(u, pd->mem[i].pid);
	if (err)
		return err;
	qsort(u->pids, u->n, sizeof(*u->pids), cmp_u32);
	for (size_t i = 0; i < u->n; i++)
		if (!k || u->pids[k - 1] != u->pids[i])
			u->pids[k++] = u->pids[i];
	u->n = k;
	return 0;
}

static bool accept_uid(void *ctx, uint32_t pid)
{
	const struct report_uids *u = ctx;

	return bsearch(&pid, u->pids, u->n, sizeof(pid), cmp_u32) &&
	       pid_uids__get(u->uids, pid) == u->want;
}

void uid_reports__free(struct uid_report *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		gpu_report__free(v[i].report);
	free(v);
}

/* One report of pd's processes that accept takes (NULL: all) into v, unless empty. */
static int add_report(const struct profile_data *pd, bool (*accept)(void *ctx, uint32_t pid),
		      struct report_uids *u, uint32_t uid, struct uid_report **v, size_t *n,
		      size_t *cap)
{
	struct gpu_report *r = NULL;
	int err = gpu_report__collect(pd, accept, u, &r);

	if (!err && gpu_report__empty(r)) {
		gpu_report__free(r);
		return 0;
	}
	if (!err && vec_reserve(v, cap, *n + 1))
		err = -ENOMEM;
	if (err) {
		gpu_report__free(r);
		return err;
	}
	(*v)[(*n)++] = (struct uid_report){.uid = uid, .report = r};
	return 0;
}

/*
 * The report of u->want, the one user of every launch, GPU record and memory call in pd: those
 * taken whole (a flood's slice, no look at each record's process), its samples and waits only
 * picked out of pd's.
 */
static int sole_report(const struct profile_data *pd, struct report_uids *u, struct uid_report **v,
		       size_t *n, size_t *cap)
{
	struct profile_data one = *pd;
	struct profile_sample *samples =
		malloc((pd->nr_samples ? pd->nr_samples : 1) * sizeof(*samples));
	struct profile_wait *waits = malloc((pd->nr_waits ? pd->nr_waits : 1) * sizeof(*waits));
	int err = samples && waits ? 0 : -ENOMEM;

	one.samples = samples;
	one.waits = waits;
	one.nr_samples = one.nr_waits = 0;
	for (size_t i = 0; !err && i < pd->nr_samples; i++)
		if (accept_uid(u, pd->samples[i].pid))
			samples[one.nr_samples++] = pd->samples[i];
	for (size_t i = 0; !err && i < pd->nr_waits; i++)
		if (accept_uid(u, pd->waits[i].pid))
			waits[one.nr_waits++] = pd->waits[i];
	if (!err)
		err = add_report(&one, NULL, u, u->want, v, n, cap);
	free(samples);
	free(waits);
	return err;
}

/* pd's GPU reports, one per uid of its processes, empty ones left out; of them all too when
 * there are several, else the one is sole. */
static int slice_reports(const struct profile_data *pd, struct report_uids *u,
			 struct uid_report **ret, size_t *ret_nr)
{
	struct uid_report *v = NULL;
	uint32_t *seen = malloc((u->n ? u->n : 1) * sizeof(*seen));
	size_t n = 0, cap = 0, nr_seen = 0;
	int err = seen ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < u->n; i++) {
		uint32_t uid = pid_uids__get(u->uids, u->pids[i]);
		bool again = false;

		/* A user's processes are few, users fewer: once per user. */
		for (size_t j = 0; j < nr_seen && !again; j++)
			again = seen[j] == uid;
		if (!again)
			seen[nr_seen++] = uid;
	}
	if (!err && nr_seen == 1) {
		u->want = seen[0];
		err = sole_report(pd, u, &v, &n, &cap);
	}
	for (size_t i = 0; !err && nr_seen > 1 && i < nr_seen; i++) {
		u->want = seen[i];
		err = add_report(pd, accept_uid, u, seen[i], &v, &n, &cap);
	}
	if (!err && n > 1)
		err = add_report(pd, NULL, u, UID_REPORT_ALL, &v, &n, &cap);
	else if (n == 1)
		v[0].sole = true;
	free(seen);
	if (err) {
		uid_reports__free(v, n);
		return err;
	}
	*ret = v;
	*ret_nr = n;
	return 0;
}

static bool accept_one(void *ctx, uint32_t pid)
{
	return pid == *(const uint32_t *)ctx;
}

static int cmp_mem_time(const void *a, const void *b)
{
	const struct profile_mem *x = a, *y = b;

	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

/*
 * The slice's report of the user of u->pids[i] when that process is all the report holds (the
 * figures are then the report's: no second pass over its records); NULL otherwise.
 */
static const struct gpu_report *alone_in_report(const struct report_uids *u, size_t i,
						const struct slice_out *out)
{
	uint32_t uid = pid_uids__get(u->uids, u->pids[i]);

	for (size_t j = 0; j < u->n; j++)
		if (j != i && pid_uids__get(u->uids, u->pids[j]) == uid)
			return NULL;
	for (size_t j = 0; j < out->nr_reports; j++)
		if (out->reports[j].uid == uid)
			return out->reports[j].report;
	return NULL;
}

/* Each process's GPU figures by device, and the memory calls in time order, into out. */
static int slice_figures(const struct profile_data *pd, const struct report_uids *u,
			 struct slice_out *out)
{
	struct gpu_device_figures dev[SLICE_FIGURE_DEVICES];
	size_t cap = 0;
	int err = 0;

	if (u->n && !(out->procs = calloc(u->n, sizeof(*out->procs))))
		err = -ENOMEM;
	for (size_t i = 0; !err && i < u->n; i++) {
		const char *comm = pd->name ? pd->name(pd->ctx, u->pids[i], 0) : NULL;
		const char *sep = comm ? strchr(comm, '\x1f') : NULL;
		struct slice_proc *p = &out->procs[out->nr_procs++];
		const struct gpu_report *rep;
		size_t n = 0;

		/* Under uid roots the name is "uid:N" US comm (pid_uids__comm). */
		if (sep)
			comm = sep + 1;
		p->pid = u->pids[i];
		p->uid = pid_uids__get(u->uids, u->pids[i]);
		if (comm)
			snprintf(p->comm, sizeof(p->comm), "%s", comm);
		if (i >= SLICE_FIGURE_PIDS) {
			out->figures_left_out++;
			continue;
		}
		rep = alone_in_report(u, i, out);
		if (rep)
			gpu_report__device_figures(rep, dev, SLICE_FIGURE_DEVICES, &n);
		else
			err = gpu_report__figures(pd, accept_one, &u->pids[i], dev,
						  SLICE_FIGURE_DEVICES, &n);
		n = n < SLICE_FIGURE_DEVICES ? n : SLICE_FIGURE_DEVICES;
		if (!err && vec_reserve(&out->figures, &cap, out->nr_figures + n))
			err = -ENOMEM;
		for (size_t d = 0; !err && d < n; d++)
			out->figures[out->nr_figures++] =
				(struct slice_gpu_figure){.pid = u->pids[i], .f = dev[d]};
	}
	if (!err && pd->nr_mem) {
		out->mem = malloc(pd->nr_mem * sizeof(*out->mem));
		if (!out->mem)
			return -ENOMEM;
		memcpy(out->mem, pd->mem, pd->nr_mem * sizeof(*out->mem));
		for (size_t i = 0; i < pd->nr_mem; i++)
			out->mem[i].api = NULL; /* the slice's strings go with it */
		qsort(out->mem, pd->nr_mem, sizeof(*out->mem), cmp_mem_time);
		out->nr_mem = pd->nr_mem;
	}
	return err;
}

/* GPU work (not only NVTX ranges or API records) or memory calls: something to report. */
static bool slice_has_work(const struct profile_data *pd)
{
	for (size_t i = 0; i < pd->nr_gpu; i++)
		if (pd->gpu[i].kind == CORR_GPU_KERNEL || pd->gpu[i].kind == CORR_GPU_MEMCPY ||
		    pd->gpu[i].kind == CORR_GPU_MEMSET)
			return true;
	return pd->nr_mem > 0;
}

void slice_out__release(struct slice_out *out)
{
	calltree__free(out->cpu);
	calltree__free(out->gpu);
	uid_reports__free(out->reports, out->nr_reports);
	free(out->procs);
	free(out->figures);
	free(out->mem);
	memset(out, 0, sizeof(*out));
}

/*
 * The slice's CPU tree: folded under uid roots as a recording's is, or, grouped by range, its
 * samples one by one under the range each was in (as a recording's), re-rooted.
 */
static int cpu_tree(struct session_profile *sp, const struct session_slice *in,
		    struct calltree **ret)
{
	struct profile_data pd = sp->pd;

	if (in->ranges) {
		pd.mode = GPU_MODE_CPU;
		return build_rerooted(&pd, ret);
	}
	if (calltree__total(sp->tree)) {
		*ret = sp->tree;
		sp->tree = NULL;
		sp->pd.cpu_tree = NULL;
	}
	return 0;
}

int session_slice__build(const struct session_slice *in, struct slice_out *out,
			 struct correlate_stats *cs)
{
	bool samples = in->reports || (in->cpu && in->ranges);
	struct session_source src = {
		.stacks = in->cpu || in->reports ? in->st : NULL,
		.samples = samples ? in->samples : NULL,
		.nr_samples = samples ? in->nr_samples : 0,
		.ls = in->gpu ? in->ls : NULL,
		.gs = in->gpu ? in->gs : NULL,
		.start_ns = in->start_ns,
		.end_ns = in->end_ns,
	};
	struct session_view view = {
		.mode = in->gpu ? GPU_MODE_GPU : GPU_MODE_CPU,
		.mode_set = true,
		.unit = WEIGHT_SAMPLES,
		.freq_hz = in->freq_hz,
		.strategy = in->strategy ? in->strategy : "auto",
		.cpu_mode = SESSION_MODE_CPU,
		.group_by = in->ranges ? SESSION_GROUP_RANGE : SESSION_GROUP_NONE,
		.ranges = in->ranges,
		.uid_root = true,
		.skip_fold = !in->cpu || in->ranges,
		.launchers_only = !(in->cpu && in->ranges),
	};
	struct session_profile sp;
	struct report_uids u = {0};
	struct profile_data pd;
	bool work, keep;
	int err;

	memset(out, 0, sizeof(*out));
	err = session_profile__build(&sp, &src, in->sym, in->scope, &view, cs);
	if (!err && in->cpu)
		err = cpu_tree(&sp, in, &out->cpu);
	pd = sp.pd;
	pd.unit = WEIGHT_US; /* short kernels add up over the window before rounding */
	work = !err && (in->reports || in->figures) && slice_has_work(&pd);
	keep = !err && in->keep && in->reports && (pd.nr_launches || pd.nr_gpu || pd.nr_mem);
	/* The reports' processes, the figures' and the flight recorder's are the same: one pass
	 * for all. */
	u.uids = sp.uids;
	if (work || keep)
		err = report_pids(&pd, &u);
	if (!err && work && in->reports) {
		/* The reports name the samples of the launching processes too (the host's stacks
		 * in the GPU's idle gaps), each under no range. */
		pd.root_at = NULL;
		err = slice_reports(&pd, &u, &out->reports, &out->nr_reports);
		pd.root_at = sp.pd.root_at;
	}
	if (!err && keep)
		in->keep(in->keep_ctx, &pd, sp.uids, u.pids, u.n);
	if (!err && work && in->figures)
		err = slice_figures(&pd, &u, out);
	free(u.pids);
	if (!err && in->gpu && pd.nr_gpu) {
		pd.mode = GPU_MODE_GPU;
		err = build_rerooted(&pd, &out->gpu);
	}
	session_profile__release(&sp);
	if (err)
		slice_out__release(out);
	return err;
}

int gpu_slice__tree(const struct launch_store *ls, const struct gpu_store *gs,
		    const struct gpu_join_scope *scope, struct symbolizer *sym,
		    const char *strategy, unsigned int freq_hz, const struct ranges *ranges,
		    struct calltree **ret_tree, struct correlate_stats *cs)
{
	struct session_slice in = {.ls = ls,
				   .gs = gs,
				   .scope = scope,
				   .sym = sym,
				   .strategy = strategy,
				   .freq_hz = freq_hz,
				   .ranges = ranges,
				   .gpu = true};
	struct slice_out out;
	int err = session_slice__build(&in, &out, cs);

	*ret_tree = NULL;
	if (!err) {
		*ret_tree = out.gpu;
		out.gpu = NULL;
	}
	slice_out__release(&out);
	return err;
}
