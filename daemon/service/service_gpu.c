// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/service/service_gpu.h"
#include "daemon/session/gpu_join.h"
#include "daemon/session/stack_names.h"
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
