// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/base/vec.h"
#include "daemon/service/service_gpu.h"
#include "daemon/session/gpu_join.h"
#include "daemon/session/gpu_waits.h"
#include "daemon/session/ranges.h"
#include "daemon/session/stack_names.h"
#include "daemon/stacks/stack_table.h"
#include "output/calltree.h"
#include "output/gpu_report.h"
#include "output/profile.h"

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

/* A process's uid, as its samples' stack table entries say. */
struct pid_uid {
	uint32_t pid, uid;
};

static int cmp_pid_uid(const void *a, const void *b)
{
	const struct pid_uid *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The uids of the processes in a slice's GPU report, by pid. */
struct report_uids {
	struct pid_uid *v; /* sorted by pid, one each */
	size_t n, cap;
	uint32_t want; /* accept_uid's */
};

static int note_entry_uid(void *ctx, const struct stack_entry *e)
{
	struct report_uids *u = ctx;

	u->v[u->n++] = (struct pid_uid){e->tgid, e->uid};
	return 0;
}

static int add_pid(struct report_uids *u, uint32_t pid)
{
	if (u->n && u->v[u->n - 1].pid == pid)
		return 0;
	if (vec_reserve(&u->v, &u->cap, u->n + 1))
		return -ENOMEM;
	u->v[u->n++] = (struct pid_uid){pid, 0};
	return 0;
}

static void unique_pids(struct report_uids *u)
{
	size_t k = 0;

	qsort(u->v, u->n, sizeof(*u->v), cmp_pid_uid);
	for (size_t i = 0; i < u->n; i++)
		if (!k || u->v[k - 1].pid != u->v[i].pid)
			u->v[k++] = u->v[i];
	u->n = k;
}

/* The processes with GPU work or memory calls in pd, each with the uid its samples in st
 * had, else its uid now, else 0 (gone: root's alone to see, as in the GPU window). */
static int report_uids(const struct profile_data *pd, const struct stack_table *st,
		       struct report_uids *u)
{
	struct report_uids sampled = {0};
	int err = 0;

	for (size_t i = 0; !err && i < pd->nr_launches; i++)
		err = add_pid(u, pd->launches[i].pid);
	for (size_t i = 0; !err && i < pd->nr_gpu; i++)
		err = add_pid(u, pd->gpu[i].pid);
	for (size_t i = 0; !err && i < pd->nr_mem; i++)
		err = add_pid(u, pd->mem[i].pid);
	if (err)
		return err;
	unique_pids(u);
	if (st && stack_table__nr_entries(st)) {
		sampled.v = malloc(stack_table__nr_entries(st) * sizeof(*sampled.v));
		if (!sampled.v)
			return -ENOMEM;
		stack_table__for_each(st, note_entry_uid, &sampled);
		unique_pids(&sampled);
	}
	for (size_t i = 0; i < u->n; i++) {
		const struct pid_uid *p = sampled.n ? bsearch(&u->v[i], sampled.v, sampled.n,
							      sizeof(*sampled.v), cmp_pid_uid)
						    : NULL;
		char path[32];
		struct stat sb;

		snprintf(path, sizeof(path), "/proc/%u", u->v[i].pid);
		u->v[i].uid = p ? p->uid : stat(path, &sb) ? 0u : (uint32_t)sb.st_uid;
	}
	free(sampled.v);
	return 0;
}

static bool accept_uid(void *ctx, uint32_t pid)
{
	const struct report_uids *u = ctx;
	struct pid_uid key = {.pid = pid};
	const struct pid_uid *p = bsearch(&key, u->v, u->n, sizeof(key), cmp_pid_uid);

	return p && p->uid == u->want;
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

/* pd's GPU reports, one per uid of its processes, empty ones left out; of them all too when
 * there are several, else the one is sole. */
static int slice_reports(const struct profile_data *pd, const struct stack_table *st,
			 struct uid_report **ret, size_t *ret_nr)
{
	struct report_uids u = {0};
	struct uid_report *v = NULL;
	size_t n = 0, cap = 0;
	int err = report_uids(pd, st, &u);

	for (size_t i = 0; !err && i < u.n; i++) {
		bool seen = false;

		/* A user's processes are few, users fewer: once per user. */
		for (size_t j = 0; j < i && !seen; j++)
			seen = u.v[j].uid == u.v[i].uid;
		if (seen)
			continue;
		u.want = u.v[i].uid;
		err = add_report(pd, accept_uid, &u, u.want, &v, &n, &cap);
	}
	if (!err && n > 1)
		err = add_report(pd, NULL, &u, UID_REPORT_ALL, &v, &n, &cap);
	else if (n == 1)
		v[0].sole = true;
	free(u.v);
	if (err) {
		uid_reports__free(v, n);
		return err;
	}
	*ret = v;
	*ret_nr = n;
	return 0;
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

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The processes that launched in pd (sorted, once each): whose samples a report blames. */
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

/* The slice's waits and memory calls, for the reports. */
struct slice_calls {
	struct profile_wait *waits;
	struct profile_mem *mem;
};

int gpu_slice__build(const struct gpu_slice *in, struct calltree **ret_tree,
		     struct uid_report **ret_reports, size_t *ret_nr, struct correlate_stats *cs)
{
	struct slice_names sn = {};
	struct slice_calls calls = {};
	struct profile_data pd = {
		.mode = GPU_MODE_GPU,
		.unit = WEIGHT_US, /* short kernels add up over the window before rounding */
		.sample_period_ns = 1000000000ull / (in->freq_hz ? in->freq_hz : 1),
		.start_ns = in->start_ns,
		.end_ns = in->end_ns,
	};
	struct gpu_join *j = gpu_join__new();
	bool reports = ret_reports != NULL;
	uint32_t *pids = NULL;
	size_t nr_pids = 0;
	int err;

	*ret_tree = NULL;
	if (reports) {
		*ret_reports = NULL;
		*ret_nr = 0;
	}
	if (!j)
		return -ENOMEM;
	err = gpu_join__run(j, in->ls, in->gs, in->scope, in->strategy, &pd, cs);
	if (!err && reports && in->ls) {
		err = gpu_waits__timeline(in->ls, &calls.waits, &pd.nr_waits);
		if (!err)
			err = gpu_waits__memory(in->ls, &calls.mem, &pd.nr_mem);
		pd.waits = calls.waits;
		pd.mem = calls.mem;
	}
	if (err || !(pd.nr_gpu || pd.nr_mem))
		goto out;
	/* The reports name the samples of the launching processes too (the host's stacks in the
	 * GPU's idle gaps), and only theirs: a whole machine's table is costly to name. */
	reports = reports && slice_has_work(&pd);
	if (reports)
		err = launching_pids(&pd, &pids, &nr_pids);
	sn.names =
		err ? NULL
		    : stack_names__new_of(nr_pids ? in->st : NULL, in->ls, in->sym, pids, nr_pids);
	if (!sn.names) {
		err = err ? err : -errno;
		goto out;
	}
	pd.stack = slice_stack;
	pd.name = uid_comm;
	pd.ctx = &sn;
	if (reports) {
		pd.samples = in->samples;
		pd.nr_samples = in->nr_samples;
		err = slice_reports(&pd, in->st, ret_reports, ret_nr);
		pd.samples = NULL;
		pd.nr_samples = 0;
	}
	if (!err && in->ranges) {
		pd.root_at = ranges__root_at;
		pd.root_at_ctx = (void *)in->ranges;
	}
	if (!err && pd.nr_gpu)
		err = build_rerooted(&pd, ret_tree);
	if (err && reports) {
		uid_reports__free(*ret_reports, *ret_nr);
		*ret_reports = NULL;
		*ret_nr = 0;
	}
out:
	stack_names__free(sn.names);
	free(pids);
	free(calls.waits);
	free(calls.mem);
	gpu_join__free(j);
	return err;
}

int gpu_slice__tree(const struct launch_store *ls, const struct gpu_store *gs,
		    const struct gpu_join_scope *scope, struct symbolizer *sym,
		    const char *strategy, unsigned int freq_hz, const struct ranges *ranges,
		    struct calltree **ret_tree, struct correlate_stats *cs)
{
	struct gpu_slice in = {.ls = ls,
			       .gs = gs,
			       .scope = scope,
			       .sym = sym,
			       .strategy = strategy,
			       .freq_hz = freq_hz,
			       .ranges = ranges};

	return gpu_slice__build(&in, ret_tree, NULL, NULL, cs);
}

struct sample_names {
	struct stack_names *names;
	struct pid_uid *uids; /* by pid */
	size_t nr_uids;
	char buf[4][96];
	unsigned int next;
};

static int note_uid(void *ctx, const struct stack_entry *e)
{
	struct sample_names *n = ctx;

	n->uids[n->nr_uids++] = (struct pid_uid){e->tgid, e->uid};
	return 0;
}

static const char *sample_uid_comm(void *ctx, uint32_t pid, uint32_t tid)
{
	struct sample_names *n = ctx;
	struct pid_uid key = {.pid = pid}, *u;
	const char *comm = stack_names__comm(n->names, pid, tid);
	char *b = n->buf[n->next++ & 3];

	u = bsearch(&key, n->uids, n->nr_uids, sizeof(key), cmp_pid_uid);
	if (comm)
		snprintf(b, sizeof(n->buf[0]), "uid:%u\x1f%s", u ? u->uid : 0, comm);
	else
		snprintf(b, sizeof(n->buf[0]), "uid:%u\x1fpid %u", u ? u->uid : 0, pid);
	return b;
}

static int sample_stack(void *ctx, uint32_t pid, uint32_t id, const char *const **ret,
			size_t *ret_n)
{
	struct sample_names *n = ctx;

	return stack_names__resolve(n->names, pid, id, ret, ret_n);
}

int cpu_slice__tree_by_range(const struct stack_table *st, const struct profile_sample *samples,
			     size_t n, struct symbolizer *sym, const struct ranges *ranges,
			     struct calltree **ret_tree)
{
	struct sample_names sn = {};
	struct profile_data pd = {
		.mode = GPU_MODE_CPU,
		.unit = WEIGHT_SAMPLES,
		.samples = samples,
		.nr_samples = n,
		.stack = sample_stack,
		.name = sample_uid_comm,
		.ctx = &sn,
		.root_at = ranges__root_at,
		.root_at_ctx = (void *)ranges,
	};
	int err = 0;

	*ret_tree = NULL;
	if (!n)
		return 0;
	sn.uids = malloc((stack_table__nr_entries(st) + 1) * sizeof(*sn.uids));
	sn.names = stack_names__new(st, NULL, sym);
	if (!sn.uids || !sn.names) {
		err = sn.names ? -ENOMEM : -errno;
		goto out;
	}
	stack_table__for_each(st, note_uid, &sn);
	qsort(sn.uids, sn.nr_uids, sizeof(*sn.uids), cmp_pid_uid);
	err = build_rerooted(&pd, ret_tree);
out:
	stack_names__free(sn.names);
	free(sn.uids);
	return err;
}
