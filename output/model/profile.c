// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/vec.h"
#include "output/model/calltree.h"
#include "output/model/profile.h"

const char *profile__unit_name(enum weight_unit unit)
{
	return unit == WEIGHT_US ? "us" : "samples";
}

const char *profile__mode_name(enum gpu_mode mode)
{
	switch (mode) {
	case GPU_MODE_GPU:
		return "gpu";
	case GPU_MODE_MERGED:
		return "merged";
	case GPU_MODE_CPU:
		break;
	}
	return "cpu";
}

int profile__mode_from_name(const char *name, enum gpu_mode *ret_mode)
{
	static const enum gpu_mode all[] = {GPU_MODE_CPU, GPU_MODE_GPU, GPU_MODE_MERGED};
	size_t i;

	if (!name || !ret_mode)
		return -EINVAL;
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (!strcmp(name, profile__mode_name(all[i]))) {
			*ret_mode = all[i];
			return 0;
		}
	}
	return -EINVAL;
}

int profile__unit_from_name(const char *name, enum weight_unit *ret_unit)
{
	if (!name || !ret_unit)
		return -EINVAL;
	if (!strcmp(name, "samples"))
		*ret_unit = WEIGHT_SAMPLES;
	else if (!strcmp(name, "us"))
		*ret_unit = WEIGHT_US;
	else
		return -EINVAL;
	return 0;
}

const char *profile__gpu_leaf(const struct corr_gpu_rec *g, char *buf, size_t size)
{
	switch (g->kind) {
	case CORR_GPU_KERNEL:
		snprintf(buf, size, "[gpu] %s", g->name && g->name[0] ? g->name : "kernel");
		break;
	case CORR_GPU_MEMCPY:
		snprintf(buf, size, "[gpu] memcpy %s", corr_copy_kind__name(g->copy_kind));
		break;
	default:
		snprintf(buf, size, "[gpu] %s", corr_gpu_kind__name(g->kind));
	}
	return buf;
}

/* b, unjoined, folds where a does: the same process, and the same leaf (names are interned). */
static bool same_unjoined_leaf(const struct corr_gpu_rec *a, const struct corr_gpu_rec *b)
{
	return a->pid == b->pid && a->kind == b->kind && corr_gpu_kind__is_activity(b->kind) &&
	       (a->kind != CORR_GPU_KERNEL || a->name == b->name ||
		(a->name && b->name && strcmp(a->name, b->name) == 0)) &&
	       (a->kind != CORR_GPU_MEMCPY || a->copy_kind == b->copy_kind);
}

/* Frames of a stack, with a placeholder for one the resolver does not know. */
static void resolve(const struct profile_data *pd, uint32_t pid, uint32_t stack_id,
		    const char *const **ret_frames, size_t *ret_n)
{
	static const char *const unknown[] = {"[unknown]"};

	if (stack_id == CORR_NO_STACK || !pd->stack ||
	    pd->stack(pd->ctx, pid, stack_id, ret_frames, ret_n) || !*ret_n) {
		*ret_frames = unknown;
		*ret_n = 1;
	}
}

const char *profile__name_or(const struct profile_data *pd, uint32_t pid, uint32_t tid, char *buf,
			     size_t size)
{
	const char *n = pd->name ? pd->name(pd->ctx, pid, tid) : NULL;

	if (n && n[0])
		return n;
	snprintf(buf, size, tid ? "tid %u" : "pid %u", tid ? tid : pid);
	return buf;
}

struct job_of {
	char rank[24], job[64], host[64];
};

static void job_label(void *ctx, const char *key, size_t klen, const char *val, size_t vlen)
{
	struct job_of *j = ctx;

	if (klen == 8 && !memcmp(key, "job.rank", 8))
		snprintf(j->rank, sizeof(j->rank), "%.*s", (int)vlen, val);
	else if (klen == 6 && !memcmp(key, "job.id", 6))
		snprintf(j->job, sizeof(j->job), "%.*s", (int)vlen, val);
	else if (klen == 9 && !memcmp(key, "host.name", 9))
		snprintf(j->host, sizeof(j->host), "%.*s", (int)vlen, val);
}

const char *profile__process_title(const struct profile_data *pd, uint32_t pid, char *buf,
				   size_t size)
{
	char comm[64];
	struct job_of j = {"", "", ""};

	if (pd->process_labels)
		profile__label_set_each(pd->process_labels(pd->process_labels_ctx, pid), job_label,
					&j);
	if (!j.rank[0] && !j.job[0])
		return profile__name_or(pd, pid, 0, buf, size);
	snprintf(buf, size, "%s (%s%s%s%s%s%s%s)", profile__name_or(pd, pid, 0, comm, sizeof(comm)),
		 j.rank[0] ? "rank " : "", j.rank, j.rank[0] && j.job[0] ? ", " : "",
		 j.job[0] ? "job " : "", j.job, j.host[0] ? " on " : "", j.host);
	return buf;
}

void profile__label_set_each(const char *set,
			     void (*fn)(void *ctx, const char *key, size_t klen, const char *val,
					size_t vlen),
			     void *ctx)
{
	while (set && *set) {
		size_t n = strcspn(set, "\x1f");
		const char *eq = memchr(set, '=', n);

		if (eq && eq > set)
			fn(ctx, set, (size_t)(eq - set), eq + 1, n - (size_t)(eq - set) - 1);
		set += n + (set[n] ? 1 : 0);
	}
}

static const char *comm_of(const struct profile_data *pd, uint32_t pid, char *buf, size_t size)
{
	return profile__name_or(pd, pid, 0, buf, size);
}

struct frames {
	const char **v;
	size_t n, cap;
};

static int frames_reserve(struct frames *f, size_t n)
{
	return vec_reserve(&f->v, &f->cap, n);
}

/* comm;stack...;extra (extra may be NULL). */
static int add_stack(const struct profile_data *pd, struct calltree *t, struct frames *fr,
		     uint32_t pid, uint32_t tid, uint64_t time_ns, uint32_t stack_id,
		     const char *extra, uint64_t weight)
{
	const char *const *frames;
	char pidbuf[32];
	size_t n, k = 0, i;
	int err;

	resolve(pd, pid, stack_id, &frames, &n);
	err = frames_reserve(fr, n + 3);
	if (err)
		return err;
	if (pd->root_at)
		fr->v[k++] = pd->root_at(pd->root_at_ctx, pid, tid, time_ns);
	else if (pd->root)
		fr->v[k++] = pd->root(pd->root_ctx, pid);
	fr->v[k++] = comm_of(pd, pid, pidbuf, sizeof(pidbuf));
	for (i = 0; i < n; i++)
		fr->v[k++] = frames[i] && frames[i][0] ? frames[i] : "[unknown]";
	if (extra)
		fr->v[k++] = extra;
	return calltree__add(t, fr->v, k, weight);
}

/* Copies a tree, converting each stack's weight (num / den, rounded to nearest). */
struct scale_ctx {
	struct calltree *dst;
	const char **path;
	uint64_t num, den;
	int err;
};

static int scale_visit(const struct calltree_frame *fr, void *data)
{
	struct scale_ctx *c = data;
	unsigned __int128 w;

	c->path[fr->depth] = fr->name;
	if (!fr->self)
		return 0;
	w = ((unsigned __int128)fr->self * c->num + c->den / 2) / c->den;
	if (!w)
		return 0;
	return calltree__add(c->dst, c->path, fr->depth + 1,
			     w > UINT64_MAX ? UINT64_MAX : (uint64_t)w);
}

static int add_scaled(struct calltree *dst, const struct calltree *src, uint64_t num, uint64_t den)
{
	struct scale_ctx c = {.dst = dst, .num = num, .den = den ? den : 1};
	int err;

	if (!calltree__max_depth(src))
		return 0;
	c.path = calloc(calltree__max_depth(src), sizeof(*c.path));
	if (!c.path)
		return -ENOMEM;
	err = calltree__walk(src, scale_visit, &c);
	free(c.path);
	return err;
}

int profile__build_tree(const struct profile_data *pd, struct calltree **ret_tree)
{
	struct calltree *t = NULL, *cpu = NULL, *gpu = NULL;
	struct frames fr = {0};
	uint64_t period = pd && pd->sample_period_ns ? pd->sample_period_ns : 10000000;
	bool *joined = NULL;
	size_t i;
	int err = -ENOMEM;

	if (!pd || !ret_tree)
		return -EINVAL;
	t = calltree__new();
	if (!t)
		return -ENOMEM;

	if (pd->mode != GPU_MODE_GPU) {
		const struct calltree *src = pd->cpu_tree;

		if (!src && pd->nr_samples) {
			cpu = calltree__new();
			if (!cpu)
				goto out;
			for (i = 0; i < pd->nr_samples; i++) {
				const struct profile_sample *s = &pd->samples[i];

				err = add_stack(pd, cpu, &fr, s->pid, s->tid, s->time_ns,
						s->stack_id, NULL, 1);
				if (err)
					goto out;
			}
			src = cpu;
		}
		if (src) {
			err = pd->unit == WEIGHT_US ? add_scaled(t, src, period, 1000)
						    : add_scaled(t, src, 1, 1);
			if (err)
				goto out;
		}
	}

	if (pd->mode != GPU_MODE_CPU && pd->nr_gpu) {
		char leaf[512];

		/* Nanoseconds first, converted once per stack, so short kernels add up. */
		gpu = calltree__new();
		joined = calloc(pd->nr_gpu, sizeof(*joined));
		if (!gpu || !joined)
			goto out;
		for (i = 0; i < pd->nr_joins; i++) {
			const struct profile_join *j = &pd->joins[i];
			const struct corr_cpu_rec *l;
			const struct corr_gpu_rec *g;

			if (j->launch >= pd->nr_launches || j->gpu >= pd->nr_gpu) {
				err = -EINVAL;
				goto out;
			}
			l = &pd->launches[j->launch];
			g = &pd->gpu[j->gpu];
			if (!corr_gpu_kind__is_activity(g->kind) || joined[j->gpu])
				continue;
			joined[j->gpu] = true;
			/* Under the range the launch was made in (--group-by range). */
			err = add_stack(pd, gpu, &fr, l->pid, l->tid, l->time_ns, l->stack_id,
					profile__gpu_leaf(g, leaf, sizeof(leaf)),
					g->end_ns - g->start_ns);
			if (err)
				goto out;
		}
		for (i = 0; i < pd->nr_gpu; i++) {
			const struct corr_gpu_rec *g = &pd->gpu[i];
			char pidbuf[32];
			const char *frames[4];
			size_t k = 0;
			uint64_t w;

			if (joined[i] || !corr_gpu_kind__is_activity(g->kind))
				continue;
			/* A run of the same work of one process (a burst of one kernel) is added
			 * once, with the run's summed time: same tree, one path walk per run. */
			w = g->end_ns - g->start_ns;
			while (!pd->root_at && i + 1 < pd->nr_gpu && !joined[i + 1] &&
			       same_unjoined_leaf(g, &pd->gpu[i + 1])) {
				i++;
				w += pd->gpu[i].end_ns - pd->gpu[i].start_ns;
			}
			profile__gpu_leaf(g, leaf, sizeof(leaf));
			if (pd->root_at)
				frames[k++] =
					pd->root_at(pd->root_at_ctx, g->pid, g->tid, g->start_ns);
			else if (pd->root)
				frames[k++] = pd->root(pd->root_ctx, g->pid);
			frames[k++] = comm_of(pd, g->pid, pidbuf, sizeof(pidbuf));
			frames[k++] = "[no launch stack]";
			frames[k++] = leaf;
			err = calltree__add(gpu, frames, k, w);
			if (err)
				goto out;
		}
		err = pd->unit == WEIGHT_US ? add_scaled(t, gpu, 1, 1000)
					    : add_scaled(t, gpu, 1, period);
		if (err)
			goto out;
	}
	err = 0;
	*ret_tree = t;
	t = NULL;
out:
	free(fr.v);
	free(joined);
	calltree__free(cpu);
	calltree__free(gpu);
	calltree__free(t);
	return err;
}

/* ---- a profile's records of some processes ---- */

void profile_taken__release(struct profile_taken *t)
{
	free(t->samples);
	free(t->launches);
	free(t->gpu);
	free(t->joins);
	free(t->waits);
	free(t->mem);
	free(t->launch_ix);
	free(t->gpu_ix);
}

/* accept's answer for the latest pid asked: records come in runs of one process. */
struct accept_memo {
	bool (*fn)(void *ctx, uint32_t pid);
	void *ctx;
	uint32_t pid;
	bool known, ok;
};

static bool accepted(struct accept_memo *m, uint32_t pid)
{
	if (!m->known || m->pid != pid) {
		m->ok = m->fn(m->ctx, pid);
		m->pid = pid;
		m->known = true;
	}
	return m->ok;
}

/*
 * The records of field that m accepts, and pd index -> taken index + 1 into ix (NULL: not
 * wanted). When it accepts all of them they are shared with pd, not copied (a slice's million
 * GPU records of one user would be copied for nothing), and *ret_all says so.
 */
#define TAKE(field, nr, ix, ret_all)                                        \
	do {                                                                \
		size_t kept_ = 0;                                           \
		for (size_t i = 0; i < pd->nr; i++)                         \
			kept_ += accepted(&m, pd->field[i].pid);            \
		*(ret_all) = kept_ == pd->nr;                               \
		if (*(ret_all)) {                                           \
			t->pd.field = pd->field;                            \
			t->pd.nr = pd->nr;                                  \
			break;                                              \
		}                                                           \
		t->field = malloc((kept_ ? kept_ : 1) * sizeof(*t->field)); \
		if (!t->field)                                              \
			return -ENOMEM;                                     \
		for (size_t i = 0; i < pd->nr; i++)                         \
			if (accepted(&m, pd->field[i].pid)) {               \
				if (ix)                                     \
					((size_t *)(ix))[i] = t->pd.nr + 1; \
				t->field[t->pd.nr++] = pd->field[i];        \
			}                                                   \
		t->pd.field = t->field;                                     \
	} while (0)

static bool all(void *ctx, uint32_t pid)
{
	(void)ctx;
	(void)pid;
	return true;
}

int profile__take(const struct profile_data *pd, bool (*accept)(void *ctx, uint32_t pid), void *ctx,
		  struct profile_taken *t)
{
	struct accept_memo m = {.fn = accept ? accept : all, .ctx = ctx};
	bool all_s, all_w, all_m, all_l, all_g;

	t->pd = *pd;
	if (!accept) /* all of it, shared: no pass over the records to find out */
		return 0;
	t->pd.nr_samples = t->pd.nr_launches = t->pd.nr_gpu = t->pd.nr_joins = 0;
	t->pd.nr_waits = t->pd.nr_mem = 0;
	t->launch_ix = calloc(pd->nr_launches ? pd->nr_launches : 1, sizeof(*t->launch_ix));
	t->gpu_ix = calloc(pd->nr_gpu ? pd->nr_gpu : 1, sizeof(*t->gpu_ix));
	if (!t->launch_ix || !t->gpu_ix)
		return -ENOMEM;
	TAKE(samples, nr_samples, NULL, &all_s);
	TAKE(waits, nr_waits, NULL, &all_w);
	TAKE(mem, nr_mem, NULL, &all_m);
	TAKE(launches, nr_launches, t->launch_ix, &all_l);
	TAKE(gpu, nr_gpu, t->gpu_ix, &all_g);
	if (all_l && all_g) {
		t->pd.joins = pd->joins;
		t->pd.nr_joins = pd->nr_joins;
		return 0;
	}
	/* Shared: each index is its own. */
	for (size_t i = 0; all_l && i < pd->nr_launches; i++)
		t->launch_ix[i] = i + 1;
	for (size_t i = 0; all_g && i < pd->nr_gpu; i++)
		t->gpu_ix[i] = i + 1;
	t->joins = malloc((pd->nr_joins ? pd->nr_joins : 1) * sizeof(*t->joins));
	if (!t->joins)
		return -ENOMEM;
	for (size_t i = 0; i < pd->nr_joins; i++) {
		const struct profile_join *j = &pd->joins[i];

		if (j->launch < pd->nr_launches && j->gpu < pd->nr_gpu && t->launch_ix[j->launch] &&
		    t->gpu_ix[j->gpu])
			t->joins[t->pd.nr_joins++] = (struct profile_join){
				t->launch_ix[j->launch] - 1, t->gpu_ix[j->gpu] - 1};
	}
	t->pd.joins = t->joins;
	return 0;
}

#undef TAKE

enum profile_lane profile__gpu_lane(const struct corr_gpu_rec *g)
{
	return g->kind == CORR_GPU_SYNC	   ? PROFILE_LANE_SYNC
	       : g->kind == CORR_GPU_GRAPH ? PROFILE_LANE_GRAPH
					   : PROFILE_LANE_WORK;
}

const char *profile__lane_name(enum profile_lane lane)
{
	return lane == PROFILE_LANE_SYNC ? " syncs" : lane == PROFILE_LANE_GRAPH ? " graphs" : "";
}

#define CMP(a, b)                                  \
	do {                                       \
		if ((a) != (b))                    \
			return (a) < (b) ? -1 : 1; \
	} while (0)

int profile__cmp_gpu_track(const void *a, const void *b, void *ctx)
{
	const struct corr_gpu_rec *gpu = ctx, *x = &gpu[*(const uint32_t *)a],
				  *y = &gpu[*(const uint32_t *)b];

	CMP(x->device, y->device);
	CMP(x->pid, y->pid);
	CMP(x->stream_id, y->stream_id);
	CMP(profile__gpu_lane(x), profile__gpu_lane(y));
	CMP(x->start_ns, y->start_ns);
	CMP(x->end_ns, y->end_ns);
	return 0;
}

#undef CMP

int profile__join_chains(const struct profile_data *pd, uint32_t **ret_first, uint32_t **ret_next)
{
	uint32_t *first = malloc((pd->nr_gpu ? pd->nr_gpu : 1) * sizeof(*first));
	uint32_t *next = malloc((pd->nr_joins ? pd->nr_joins : 1) * sizeof(*next));

	*ret_first = first;
	*ret_next = next;
	if (!first || !next)
		return -ENOMEM;
	for (size_t i = 0; i < pd->nr_gpu; i++)
		first[i] = PROFILE_NO_JOIN;
	for (size_t i = pd->nr_joins; i-- > 0;) {
		const struct profile_join *j = &pd->joins[i];

		if (j->launch >= pd->nr_launches || j->gpu >= pd->nr_gpu)
			return -EINVAL;
		next[i] = first[j->gpu];
		first[j->gpu] = (uint32_t)i;
	}
	return 0;
}
