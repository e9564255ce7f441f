// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/base/hashmap.h"
#include "daemon/base/sort.h"
#include "daemon/base/strset.h"
#include "daemon/base/vec.h"
#include "daemon/session/frozen.h"

struct fz_stack {
	uint32_t pid, n;
	size_t at; /* its first frame in frames */
};

struct fz_name {
	uint32_t pid, tid; /* tid 0: the process */
	const char *name;
	const char *labels; /* a process's label set, or NULL */
};

struct frozen {
	atomic_uint refs;
	uint32_t uid;
	uint64_t start_ns, end_ns, period_ns;
	int64_t realtime_offset_ns;
	struct strset *strs;
	struct profile_sample *samples;
	struct corr_cpu_rec *launches;
	struct corr_gpu_rec *gpu;
	struct profile_join *joins;
	struct profile_wait *waits;
	struct profile_mem *mem;
	struct fz_stack *stacks;
	const char **frames;
	struct fz_name *names; /* sorted by pid, then tid */
	uint32_t *pids;	       /* sorted, once each */
	size_t nr_samples, nr_launches, nr_gpu, nr_joins, nr_waits, nr_mem, nr_stacks, nr_frames,
		nr_names, nr_pids;
	size_t cap_stacks, cap_frames, cap_names;
	size_t samples_unnamed;
	size_t bytes;
};

#define INTERN_CACHE 256

/* What freezing one profile needs on the way. */
struct freezer {
	struct frozen *f;
	const struct profile_data *pd;
	const struct frozen_opts *o;
	struct hashmap *stack_ids; /* (pid, stack id) -> frozen index + 1 */
	/* The profile's strings are interned where it was made: the same name is the same
	 * pointer, so a copy found once is found again by its address (most records repeat a
	 * few kernel and API names). */
	const char *cache_from[INTERN_CACHE], *cache_to[INTERN_CACHE];
	uint32_t last_pid, last_tid; /* the thread named last (most records repeat it) */
	bool named_last;
};

static const char *intern(struct freezer *z, const char *s)
{
	size_t h;

	if (!s)
		return NULL;
	h = ((uintptr_t)s >> 3) % INTERN_CACHE;
	if (z->cache_from[h] != s) {
		const char *copy = strset__intern(z->f->strs, s);

		if (!copy)
			return NULL;
		z->cache_from[h] = s;
		z->cache_to[h] = copy;
	}
	return z->cache_to[h];
}

/* pd's stack_id of pid as a frozen stack: *ret its index, CORR_NO_STACK for none. -ENOENT:
 * pd cannot name it; -ENOMEM. */
static int freeze_stack(struct freezer *z, uint32_t pid, uint32_t stack_id, uint32_t *ret)
{
	struct frozen *f = z->f;
	const char *const *frames;
	size_t n;
	uintptr_t v;
	int err;

	*ret = CORR_NO_STACK;
	if (stack_id == CORR_NO_STACK || !z->pd->stack)
		return 0;
	v = (uintptr_t)hashmap__get(z->stack_ids, pid, stack_id);
	if (v) {
		*ret = (uint32_t)(v - 1);
		return 0;
	}
	err = z->pd->stack(z->pd->ctx, pid, stack_id, &frames, &n);
	if (err)
		return err == -ENOMEM ? err : -ENOENT;
	if (f->nr_stacks >= UINT32_MAX - 1 ||
	    vec_reserve(&f->stacks, &f->cap_stacks, f->nr_stacks + 1) ||
	    vec_reserve(&f->frames, &f->cap_frames, f->nr_frames + n))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *s = intern(z, frames[i]);

		if (!s)
			return -ENOMEM;
		f->frames[f->nr_frames + i] = s;
	}
	f->stacks[f->nr_stacks] =
		(struct fz_stack){.pid = pid, .n = (uint32_t)n, .at = f->nr_frames};
	f->nr_frames += n;
	if (hashmap__put(z->stack_ids, pid, stack_id, (void *)(uintptr_t)(f->nr_stacks + 1)))
		return -ENOMEM;
	*ret = (uint32_t)f->nr_stacks++;
	return 0;
}

/* A stack that pd cannot name becomes none (a launch still counts without it). */
static int stack_or_none(struct freezer *z, uint32_t pid, uint32_t stack_id, uint32_t *ret)
{
	int err = freeze_stack(z, pid, stack_id, ret);

	return err == -ENOENT ? 0 : err;
}

/* "uid:N\x1fcomm" (a window slice's names) as comm. */
static const char *plain_name(const char *s)
{
	const char *sep = s ? strchr(s, '\x1f') : NULL;

	return sep ? sep + 1 : s;
}

static int note_name(struct freezer *z, uint32_t pid, uint32_t tid)
{
	struct frozen *f = z->f;
	const char *name, *labels = NULL;

	if (!z->pd->name || (z->named_last && z->last_pid == pid && z->last_tid == tid))
		return 0;
	z->named_last = true;
	z->last_pid = pid;
	z->last_tid = tid;
	if (hashmap__get(z->stack_ids, (uint64_t)1 << 40 | pid, tid))
		return 0;
	name = plain_name(z->pd->name(z->pd->ctx, pid, tid));
	if (!tid && z->o->labels)
		labels = z->o->labels(z->o->labels_ctx, pid);
	if (vec_reserve(&f->names, &f->cap_names, f->nr_names + 1))
		return -ENOMEM;
	f->names[f->nr_names] = (struct fz_name){.pid = pid, .tid = tid};
	/* Not through intern's cache: a name may be made in a buffer the next call reuses. */
	if ((name && !(f->names[f->nr_names].name = strset__intern(f->strs, name))) ||
	    (labels && !(f->names[f->nr_names].labels = strset__intern(f->strs, labels))))
		return -ENOMEM;
	f->nr_names++;
	return hashmap__put(z->stack_ids, (uint64_t)1 << 40 | pid, tid, (void *)1);
}

static int freeze_samples(struct freezer *z)
{
	const struct profile_data *pd = z->pd;
	struct frozen *f = z->f;
	int err = 0;

	f->samples = malloc((pd->nr_samples ? pd->nr_samples : 1) * sizeof(*f->samples));
	if (!f->samples)
		return -ENOMEM;
	for (size_t i = 0; !err && i < pd->nr_samples; i++) {
		struct profile_sample s = pd->samples[i];

		err = freeze_stack(z, s.pid, s.stack_id, &s.stack_id);
		if (err == -ENOENT || (!err && s.stack_id == CORR_NO_STACK)) {
			f->samples_unnamed++;
			err = 0;
			continue;
		}
		if (!err)
			err = note_name(z, s.pid, s.tid);
		if (!err)
			f->samples[f->nr_samples++] = s;
	}
	return err;
}

/* Launches and GPU records, and the joins between them (their indexes stay: every launch and
 * GPU record of pd is kept). */
static int freeze_gpu(struct freezer *z)
{
	const struct profile_data *pd = z->pd;
	struct frozen *f = z->f;
	int err = 0;

	f->launches = malloc((pd->nr_launches ? pd->nr_launches : 1) * sizeof(*f->launches));
	f->gpu = malloc((pd->nr_gpu ? pd->nr_gpu : 1) * sizeof(*f->gpu));
	f->joins = malloc((pd->nr_joins ? pd->nr_joins : 1) * sizeof(*f->joins));
	if (!f->launches || !f->gpu || !f->joins)
		return -ENOMEM;
	for (size_t i = 0; !err && i < pd->nr_launches; i++) {
		struct corr_cpu_rec c = pd->launches[i];

		err = stack_or_none(z, c.pid, c.stack_id, &c.stack_id);
		if (!err && c.api_name && !(c.api_name = intern(z, c.api_name)))
			err = -ENOMEM;
		if (!err)
			err = note_name(z, c.pid, c.tid);
		c.user = 0;
		f->launches[f->nr_launches++] = c;
	}
	for (size_t i = 0; !err && i < pd->nr_gpu; i++) {
		struct corr_gpu_rec g = pd->gpu[i];

		if ((g.name && !(g.name = intern(z, g.name))) ||
		    (g.domain && !(g.domain = intern(z, g.domain))))
			err = -ENOMEM;
		if (!err)
			err = note_name(z, g.pid, g.tid);
		g.user = 0;
		f->gpu[f->nr_gpu++] = g;
	}
	if (!err && pd->nr_joins) {
		memcpy(f->joins, pd->joins, pd->nr_joins * sizeof(*f->joins));
		f->nr_joins = pd->nr_joins;
	}
	return err;
}

static int freeze_waits(struct freezer *z)
{
	const struct profile_data *pd = z->pd;
	struct frozen *f = z->f;
	int err = 0;

	f->waits = malloc((pd->nr_waits ? pd->nr_waits : 1) * sizeof(*f->waits));
	f->mem = malloc((pd->nr_mem ? pd->nr_mem : 1) * sizeof(*f->mem));
	if (!f->waits || !f->mem)
		return -ENOMEM;
	for (size_t i = 0; !err && i < pd->nr_waits; i++) {
		struct profile_wait w = pd->waits[i];

		err = stack_or_none(z, w.pid, w.stack_id, &w.stack_id);
		if (!err && w.api && !(w.api = intern(z, w.api)))
			err = -ENOMEM;
		if (!err)
			err = note_name(z, w.pid, w.tid);
		if (!err)
			f->waits[f->nr_waits++] = w;
	}
	for (size_t i = 0; !err && i < pd->nr_mem; i++) {
		struct profile_mem m = pd->mem[i];

		err = stack_or_none(z, m.pid, m.stack_id, &m.stack_id);
		if (!err && m.api && !(m.api = intern(z, m.api)))
			err = -ENOMEM;
		if (!err)
			err = note_name(z, m.pid, 0);
		if (!err)
			f->mem[f->nr_mem++] = m;
	}
	return err;
}

static int cmp_name(const void *a, const void *b)
{
	const struct fz_name *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Every process named gets its own name too; the names sorted, the pids listed. */
static int finish_names(struct freezer *z)
{
	struct frozen *f = z->f;
	size_t n = f->nr_names;
	int err = 0;

	for (size_t i = 0; !err && i < n; i++)
		err = note_name(z, f->names[i].pid, 0);
	if (err)
		return err;
	if (f->nr_names) /* none: no array (qsort wants one) */
		qsort(f->names, f->nr_names, sizeof(*f->names), cmp_name);
	f->pids = malloc((f->nr_names ? f->nr_names : 1) * sizeof(*f->pids));
	if (!f->pids)
		return -ENOMEM;
	for (size_t i = 0; i < f->nr_names; i++)
		if (!f->nr_pids || f->pids[f->nr_pids - 1] != f->names[i].pid)
			f->pids[f->nr_pids++] = f->names[i].pid;
	return 0;
}

/* The arrays shrunk to what they hold, and what it all takes. */
static void settle(struct frozen *f)
{
#define SHRINK(p, n)                                                     \
	do {                                                             \
		void *q = (n) ? realloc((p), (n) * sizeof(*(p))) : NULL; \
		if (q || !(n)) {                                         \
			if (!(n))                                        \
				free(p);                                 \
			(p) = q;                                         \
		}                                                        \
		f->bytes += (n) * sizeof(*(p));                          \
	} while (0)
	f->bytes =
		sizeof(*f) + strset__bytes(f->strs) + strset__count(f->strs) * 2 * sizeof(void *);
	SHRINK(f->samples, f->nr_samples);
	SHRINK(f->launches, f->nr_launches);
	SHRINK(f->gpu, f->nr_gpu);
	SHRINK(f->joins, f->nr_joins);
	SHRINK(f->waits, f->nr_waits);
	SHRINK(f->mem, f->nr_mem);
	SHRINK(f->stacks, f->nr_stacks);
	SHRINK(f->frames, f->nr_frames);
	SHRINK(f->names, f->nr_names);
	SHRINK(f->pids, f->nr_pids);
#undef SHRINK
}

static void frozen_free(struct frozen *f)
{
	free(f->samples);
	free(f->launches);
	free(f->gpu);
	free(f->joins);
	free(f->waits);
	free(f->mem);
	free(f->stacks);
	free(f->frames);
	free(f->names);
	free(f->pids);
	strset__free(f->strs);
	free(f);
}

int frozen__make(const struct profile_data *pd, const struct frozen_opts *o, struct frozen **ret)
{
	struct frozen *f = calloc(1, sizeof(*f));
	struct profile_taken taken = {0};
	struct freezer z = {.f = f, .o = o, .stack_ids = hashmap__new()};
	int err = f && z.stack_ids ? 0 : -ENOMEM;

	*ret = NULL;
	/* The accepted processes' records, the joins' indexes made theirs. */
	if (!err)
		err = profile__take(pd, o->accept_pid, o->ctx, &taken);
	z.pd = &taken.pd;
	if (!err) {
		atomic_init(&f->refs, 1);
		f->uid = o->uid;
		f->start_ns = o->start_ns;
		f->end_ns = o->end_ns;
		f->period_ns = pd->sample_period_ns;
		f->realtime_offset_ns = pd->realtime_offset_ns;
		f->strs = strset__new(0);
		if (!f->strs)
			err = -ENOMEM;
	}
	if (!err)
		err = freeze_samples(&z);
	if (!err)
		err = freeze_gpu(&z);
	if (!err)
		err = freeze_waits(&z);
	if (!err)
		err = finish_names(&z);
	hashmap__free(z.stack_ids);
	profile_taken__release(&taken);
	if (err) {
		if (f)
			frozen_free(f);
		return err;
	}
	settle(f);
	*ret = f;
	return 0;
}

struct frozen *frozen__get(struct frozen *f)
{
	atomic_fetch_add(&f->refs, 1);
	return f;
}

void frozen__put(struct frozen *f)
{
	if (f && atomic_fetch_sub(&f->refs, 1) == 1)
		frozen_free(f);
}

size_t frozen__bytes(const struct frozen *f)
{
	return f->bytes;
}

bool frozen__empty(const struct frozen *f)
{
	return !f->nr_samples && !f->nr_launches && !f->nr_gpu && !f->nr_waits && !f->nr_mem;
}

uint32_t frozen__uid(const struct frozen *f)
{
	return f->uid;
}

uint64_t frozen__start_ns(const struct frozen *f)
{
	return f->start_ns;
}

uint64_t frozen__end_ns(const struct frozen *f)
{
	return f->end_ns;
}

void frozen__counts(const struct frozen *f, struct frozen_counts *ret)
{
	*ret = (struct frozen_counts){.samples = f->nr_samples,
				      .launches = f->nr_launches,
				      .gpu = f->nr_gpu,
				      .joins = f->nr_joins,
				      .waits = f->nr_waits,
				      .mem = f->nr_mem,
				      .stacks = f->nr_stacks,
				      .pids = f->nr_pids,
				      .samples_unnamed = f->samples_unnamed};
	for (size_t i = 0; i < f->nr_gpu; i++) {
		ret->kernels += f->gpu[i].kind == CORR_GPU_KERNEL;
		ret->ranges += f->gpu[i].kind == CORR_GPU_NVTX;
	}
}

const uint32_t *frozen__pids(const struct frozen *f, size_t *ret_n)
{
	*ret_n = f->nr_pids;
	return f->pids;
}

static const struct fz_name *name_of(const struct frozen *f, uint32_t pid, uint32_t tid)
{
	struct fz_name key = {.pid = pid, .tid = tid};

	return f->nr_names ? bsearch(&key, f->names, f->nr_names, sizeof(key), cmp_name) : NULL;
}

const char *frozen__comm(const struct frozen *f, uint32_t pid)
{
	const struct fz_name *n = name_of(f, pid, 0);

	return n && n->name ? n->name : "";
}

const char *frozen__labels(const struct frozen *f, uint32_t pid)
{
	const struct fz_name *n = name_of(f, pid, 0);

	return n ? n->labels : NULL;
}

/* ---- several as one ---- */

struct frozen_join {
	struct profile_data pd;
	struct frozen **v;
	size_t n;
	uint32_t *stack_base; /* the first joined stack id of each */
	struct profile_sample *samples;
	struct corr_cpu_rec *launches;
	struct corr_gpu_rec *gpu;
	struct profile_join *joins;
	struct profile_wait *waits;
	struct profile_mem *mem;
};

/* The frozen profile whose stacks hold joined id *id (made local to it). */
static const struct frozen *of_stack(const struct frozen_join *j, uint32_t *id)
{
	size_t lo = 0, hi = j->n;

	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (j->stack_base[mid] <= *id)
			lo = mid;
		else
			hi = mid;
	}
	*id -= j->stack_base[lo];
	return j->v[lo];
}

static int join_stack(void *ctx, uint32_t pid, uint32_t stack_id, const char *const **ret_frames,
		      size_t *ret_n)
{
	const struct frozen_join *j = ctx;
	const struct frozen *f;
	uint32_t id = stack_id;

	(void)pid;
	if (!j->n || stack_id == CORR_NO_STACK)
		return -ENOENT;
	f = of_stack(j, &id);
	if (id >= f->nr_stacks)
		return -ENOENT;
	*ret_frames = f->frames + f->stacks[id].at;
	*ret_n = f->stacks[id].n;
	return 0;
}

/* The newest name known of a process or thread. */
static const char *join_name(void *ctx, uint32_t pid, uint32_t tid)
{
	const struct frozen_join *j = ctx;

	for (size_t i = j->n; i-- > 0;) {
		const struct fz_name *n = name_of(j->v[i], pid, tid);

		if (n && n->name)
			return n->name;
	}
	return NULL;
}

static const char *join_labels(void *ctx, uint32_t pid)
{
	const struct frozen_join *j = ctx;

	for (size_t i = j->n; i-- > 0;) {
		const char *l = frozen__labels(j->v[i], pid);

		if (l)
			return l;
	}
	return NULL;
}

static bool in_span(uint64_t t, uint64_t from, uint64_t to)
{
	return t >= from && t < to;
}

static uint32_t shift_stack(uint32_t id, uint32_t base)
{
	return id == CORR_NO_STACK ? id : id + base;
}

/* Every array's room for the sum of theirs. */
static int join_alloc(struct frozen_join *j)
{
	size_t ns = 1, nl = 1, ng = 1, nj = 1, nw = 1, nm = 1;

	for (size_t i = 0; i < j->n; i++) {
		ns += j->v[i]->nr_samples;
		nl += j->v[i]->nr_launches;
		ng += j->v[i]->nr_gpu;
		nj += j->v[i]->nr_joins;
		nw += j->v[i]->nr_waits;
		nm += j->v[i]->nr_mem;
	}
	j->samples = malloc(ns * sizeof(*j->samples));
	j->launches = malloc(nl * sizeof(*j->launches));
	j->gpu = malloc(ng * sizeof(*j->gpu));
	j->joins = malloc(nj * sizeof(*j->joins));
	j->waits = malloc(nw * sizeof(*j->waits));
	j->mem = malloc(nm * sizeof(*j->mem));
	return j->samples && j->launches && j->gpu && j->joins && j->waits && j->mem ? 0 : -ENOMEM;
}

/* f's records in [from, to) appended to j's (its stacks from base on). */
static int join_one(struct frozen_join *j, const struct frozen *f, uint32_t base, uint64_t from,
		    uint64_t to)
{
	struct profile_data *pd = &j->pd;
	size_t *launch_at = malloc((f->nr_launches + 1) * sizeof(size_t));
	size_t *gpu_at = malloc((f->nr_gpu + 1) * sizeof(size_t));

	if (!launch_at || !gpu_at) {
		free(launch_at);
		free(gpu_at);
		return -ENOMEM;
	}
	for (size_t i = 0; i < f->nr_samples; i++)
		if (in_span(f->samples[i].time_ns, from, to)) {
			struct profile_sample s = f->samples[i];

			s.stack_id = shift_stack(s.stack_id, base);
			j->samples[pd->nr_samples++] = s;
		}
	for (size_t i = 0; i < f->nr_launches; i++) {
		launch_at[i] = SIZE_MAX;
		if (in_span(f->launches[i].time_ns, from, to)) {
			struct corr_cpu_rec c = f->launches[i];

			c.stack_id = shift_stack(c.stack_id, base);
			launch_at[i] = pd->nr_launches;
			j->launches[pd->nr_launches++] = c;
		}
	}
	for (size_t i = 0; i < f->nr_gpu; i++) {
		gpu_at[i] = SIZE_MAX;
		if (in_span(f->gpu[i].start_ns, from, to)) {
			gpu_at[i] = pd->nr_gpu;
			j->gpu[pd->nr_gpu++] = f->gpu[i];
		}
	}
	for (size_t i = 0; i < f->nr_joins; i++) {
		size_t l = launch_at[f->joins[i].launch], g = gpu_at[f->joins[i].gpu];

		if (l != SIZE_MAX && g != SIZE_MAX)
			j->joins[pd->nr_joins++] = (struct profile_join){.launch = l, .gpu = g};
	}
	for (size_t i = 0; i < f->nr_waits; i++)
		if (in_span(f->waits[i].start_ns, from, to)) {
			struct profile_wait w = f->waits[i];

			w.stack_id = shift_stack(w.stack_id, base);
			j->waits[pd->nr_waits++] = w;
		}
	for (size_t i = 0; i < f->nr_mem; i++)
		if (in_span(f->mem[i].time_ns, from, to)) {
			struct profile_mem m = f->mem[i];

			m.stack_id = shift_stack(m.stack_id, base);
			j->mem[pd->nr_mem++] = m;
		}
	free(launch_at);
	free(gpu_at);
	return 0;
}

int frozen_join__new(struct frozen *const *v, size_t n, uint64_t from_ns, uint64_t to_ns,
		     struct frozen_join **ret)
{
	struct frozen_join *j = calloc(1, sizeof(*j));
	uint64_t base = 0, start = UINT64_MAX, end = 0;
	int err = j ? 0 : -ENOMEM;

	*ret = NULL;
	if (!err) {
		j->v = calloc(n ? n : 1, sizeof(*j->v));
		j->stack_base = calloc(n ? n : 1, sizeof(*j->stack_base));
		if (!j->v || !j->stack_base)
			err = -ENOMEM;
	}
	for (size_t i = 0; !err && i < n; i++) {
		j->v[j->n++] = frozen__get(v[i]);
		if (base + v[i]->nr_stacks >= UINT32_MAX)
			err = -EOVERFLOW;
		j->stack_base[i] = (uint32_t)base;
		base += v[i]->nr_stacks;
	}
	if (!err)
		err = join_alloc(j);
	for (size_t i = 0; !err && i < n; i++) {
		err = join_one(j, v[i], j->stack_base[i], from_ns, to_ns);
		if (v[i]->start_ns < start)
			start = v[i]->start_ns;
		if (v[i]->end_ns > end)
			end = v[i]->end_ns;
	}
	if (err) {
		frozen_join__free(j);
		return err;
	}
	j->pd.samples = j->samples;
	j->pd.launches = j->launches;
	j->pd.gpu = j->gpu;
	j->pd.joins = j->joins;
	j->pd.waits = j->waits;
	j->pd.mem = j->mem;
	j->pd.stack = join_stack;
	j->pd.name = join_name;
	j->pd.ctx = j;
	j->pd.process_labels = join_labels;
	j->pd.process_labels_ctx = j;
	j->pd.sample_period_ns = n ? v[n - 1]->period_ns : 1000000;
	j->pd.realtime_offset_ns = n ? v[n - 1]->realtime_offset_ns : 0;
	if (!j->pd.realtime_offset_ns) {
		struct timespec rt, mono;

		clock_gettime(CLOCK_REALTIME, &rt);
		clock_gettime(CLOCK_MONOTONIC, &mono);
		j->pd.realtime_offset_ns = ((int64_t)rt.tv_sec - mono.tv_sec) * 1000000000 +
					   (rt.tv_nsec - mono.tv_nsec);
	}
	j->pd.mode = GPU_MODE_MERGED;
	j->pd.unit = WEIGHT_US;
	/* The span asked for: parts are kept only where processes had GPU work, so where the
	 * data starts and ends says less than what was looked at. */
	(void)start;
	(void)end;
	j->pd.start_ns = from_ns;
	j->pd.end_ns = to_ns;
	*ret = j;
	return 0;
}

const struct profile_data *frozen_join__profile(const struct frozen_join *j)
{
	return &j->pd;
}

void frozen_join__free(struct frozen_join *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->n; i++)
		frozen__put(j->v[i]);
	free(j->v);
	free(j->stack_base);
	free(j->samples);
	free(j->launches);
	free(j->gpu);
	free(j->joins);
	free(j->waits);
	free(j->mem);
	free(j);
}
