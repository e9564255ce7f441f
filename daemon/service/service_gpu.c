// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/service/service_gpu.h"
#include "daemon/session/gpu_join.h"
#include "daemon/session/ranges.h"
#include "daemon/session/stack_names.h"
#include "daemon/stacks/stack_table.h"
#include "output/calltree.h"
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

int gpu_slice__tree(const struct launch_store *ls, const struct gpu_store *gs,
		    const struct gpu_join_scope *scope, struct symbolizer *sym,
		    const char *strategy, unsigned int freq_hz, const struct ranges *ranges,
		    struct calltree **ret_tree, struct correlate_stats *cs)
{
	struct slice_names sn = {};
	struct profile_data pd = {
		.mode = GPU_MODE_GPU,
		.unit = WEIGHT_US, /* short kernels add up over the window before rounding */
		.sample_period_ns = 1000000000ull / (freq_hz ? freq_hz : 1),
	};
	struct gpu_join *j = gpu_join__new();
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
	if (ranges) {
		pd.root_at = ranges__root_at;
		pd.root_at_ctx = (void *)ranges;
	}
	err = build_rerooted(&pd, ret_tree);
out:
	stack_names__free(sn.names);
	gpu_join__free(j);
	return err;
}

/* A process's uid, as its samples' stack table entries say. */
struct pid_uid {
	uint32_t pid, uid;
};

struct sample_names {
	struct stack_names *names;
	struct pid_uid *uids; /* by pid */
	size_t nr_uids;
	char buf[4][96];
	unsigned int next;
};

static int cmp_pid_uid(const void *a, const void *b)
{
	const struct pid_uid *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

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
