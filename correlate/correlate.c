// SPDX-License-Identifier: Apache-2.0
/* The registry, the correlator wrapper, and the helpers every strategy uses. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "correlate/strategy.h"

#define MAX_STRATEGIES 16

static const struct correlate_ops *registry[MAX_STRATEGIES] = {
	&correlate_id_ops,
	&correlate_timestamp_ops,
	&correlate_stream_ops,
	&correlate_auto_ops,
};
static size_t nr_registered = 4;

void correlate_config__default(struct correlate_config *cfg)
{
	*cfg = (struct correlate_config){
		.max_age_ns = 10ull * 1000 * 1000 * 1000,
		.max_pending_cpu = 262144,
		.max_pending_gpu = 262144,
		.max_streams = 4096,
		.max_pids = 4096,
		.api_slack_ns = 5000,
		.tolerance_ns = 0,
		.settle_ns = 0,
	};
}

const struct correlate_ops *correlate__find(const char *name)
{
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; i < nr_registered; i++) {
		if (!strcmp(registry[i]->name, name))
			return registry[i];
	}
	return NULL;
}

int correlate__register(const struct correlate_ops *ops)
{
	if (!ops || !ops->name || !ops->name[0] || !ops->new || !ops->feed_cpu || !ops->feed_gpu ||
	    !ops->flush || !ops->stats || !ops->free)
		return -EINVAL;
	if (correlate__find(ops->name))
		return -EEXIST;
	if (nr_registered == MAX_STRATEGIES)
		return -ENOSPC;
	registry[nr_registered++] = ops;
	return 0;
}

size_t correlate__names(const char **ret_names, size_t max)
{
	size_t i;

	for (i = 0; ret_names && i < nr_registered && i < max; i++)
		ret_names[i] = registry[i]->name;
	return nr_registered;
}

struct correlator {
	const struct correlate_ops *ops;
	void *state;
};

struct correlator *correlator__new(const char *name, const struct correlate_config *cfg,
				   const struct correlate_cb *cb)
{
	const struct correlate_ops *ops = correlate__find(name);
	struct correlate_config def;
	struct correlator *c;

	if (!ops) {
		errno = name ? ENOENT : EINVAL;
		return NULL;
	}
	if (!cfg) {
		correlate_config__default(&def);
		cfg = &def;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->ops = ops;
	c->state = ops->new (cfg, cb);
	if (!c->state) {
		int err = errno;

		free(c);
		errno = err;
		return NULL;
	}
	return c;
}

void correlator__free(struct correlator *c)
{
	if (!c)
		return;
	c->ops->free(c->state);
	free(c);
}

const char *correlator__name(const struct correlator *c)
{
	return c ? c->ops->name : NULL;
}

int correlator__feed_cpu(struct correlator *c, const struct corr_cpu_rec *rec)
{
	if (!c)
		return -EINVAL;
	return c->ops->feed_cpu(c->state, rec);
}

int correlator__feed_gpu(struct correlator *c, const struct corr_gpu_rec *rec)
{
	if (!c)
		return -EINVAL;
	return c->ops->feed_gpu(c->state, rec);
}

int correlator__feed_cpu_batch(struct correlator *c, const struct corr_cpu_rec *recs, size_t n)
{
	size_t i;
	int err = 0;

	if (!c || (!recs && n))
		return -EINVAL;
	if (c->ops->feed_cpu_batch)
		return c->ops->feed_cpu_batch(c->state, recs, n);
	for (i = 0; i < n; i++) {
		int e = c->ops->feed_cpu(c->state, &recs[i]);

		if (e && !err)
			err = e;
	}
	return err;
}

int correlator__feed_gpu_batch(struct correlator *c, const struct corr_gpu_rec *recs, size_t n)
{
	size_t i;
	int err = 0;

	if (!c || (!recs && n))
		return -EINVAL;
	if (c->ops->feed_gpu_batch)
		return c->ops->feed_gpu_batch(c->state, recs, n);
	for (i = 0; i < n; i++) {
		int e = c->ops->feed_gpu(c->state, &recs[i]);

		if (e && !err)
			err = e;
	}
	return err;
}

int correlator__flush(struct correlator *c, uint64_t until_ns)
{
	if (!c)
		return -EINVAL;
	return c->ops->flush(c->state, until_ns);
}

void correlator__stats(struct correlator *c, struct correlate_stats *ret_stats)
{
	if (!c || !ret_stats)
		return;
	c->ops->stats(c->state, ret_stats);
}

const char *correlator__pid_strategy(struct correlator *c, uint32_t pid)
{
	if (!c)
		return NULL;
	return c->ops->pid_strategy ? c->ops->pid_strategy(c->state, pid) : c->ops->name;
}

int corr_base_init(struct corr_base *b, const struct correlate_config *cfg,
		   const struct correlate_cb *cb)
{
	memset(b, 0, sizeof(*b));
	if (!cfg || !cfg->max_age_ns || !cfg->max_pending_cpu || !cfg->max_pending_gpu ||
	    !cfg->max_streams || !cfg->max_pids)
		return -EINVAL;
	b->cfg = *cfg;
	if (cb)
		b->cb = *cb;
	return 0;
}

void corr_join(struct corr_base *b, const struct corr_cpu_rec *cpu, const struct corr_gpu_rec *gpu)
{
	b->st.matched++;
	if (b->cb.on_join)
		b->cb.on_join(b->cb.ctx, cpu, gpu);
}

void corr_drop_cpu(struct corr_base *b, const struct corr_cpu_rec *cpu, enum corr_why why)
{
	if (why == CORR_WHY_LATE) {
		b->st.late_cpu++;
	} else if (why == CORR_WHY_DUPLICATE) {
		b->st.duplicates++;
	} else {
		b->st.unmatched_cpu++;
		if (why == CORR_WHY_CAP)
			b->st.cap_cpu++;
	}
	if (b->cb.on_unmatched_cpu)
		b->cb.on_unmatched_cpu(b->cb.ctx, cpu, why);
}

void corr_drop_gpu(struct corr_base *b, const struct corr_gpu_rec *gpu, enum corr_why why)
{
	if (why == CORR_WHY_LATE) {
		b->st.late_gpu++;
	} else {
		b->st.unmatched_gpu++;
		if (why == CORR_WHY_CAP)
			b->st.cap_gpu++;
	}
	if (b->cb.on_unmatched_gpu)
		b->cb.on_unmatched_gpu(b->cb.ctx, gpu, why);
}

int corr_check_cpu(const struct corr_cpu_rec *r)
{
	if (!r || (r->kind != CORR_CPU_USDT && r->kind != CORR_CPU_UPROBE) ||
	    r->api_kind > CORR_API_SYNC)
		return -EINVAL;
	return 0;
}

int corr_check_gpu(const struct corr_gpu_rec *r)
{
	if (!r || r->kind < CORR_GPU_KERNEL || r->kind > CORR_GPU_NVTX || r->end_ns < r->start_ns)
		return -EINVAL;
	return 0;
}

bool corr_compatible(uint8_t api_kind, const struct corr_gpu_rec *g)
{
	switch (api_kind) {
	case CORR_API_KERNEL:
		return g->kind == CORR_GPU_KERNEL && !g->graph_id;
	case CORR_API_GRAPH:
		return g->kind == CORR_GPU_GRAPH || (g->kind == CORR_GPU_KERNEL && g->graph_id) ||
		       g->kind == CORR_GPU_MEMCPY || g->kind == CORR_GPU_MEMSET;
	case CORR_API_MEMCPY:
		return g->kind == CORR_GPU_MEMCPY;
	case CORR_API_MEMSET:
		return g->kind == CORR_GPU_MEMSET;
	case CORR_API_SYNC:
		return g->kind == CORR_GPU_SYNC;
	}
	return true;
}

int kq_alloc_evict(struct kq *q, uint32_t *ret_idx, kq_evict_fn evict, void *ctx)
{
	int err = kq_alloc(q, ret_idx);
	uint32_t idx;
	uint64_t stamp;

	if (err != -ENOSPC || !kq_oldest(q, &idx, &stamp))
		return err;
	evict(ctx, q, idx, CORR_WHY_CAP);
	return kq_alloc(q, ret_idx);
}

void kq_age(struct kq *q, uint64_t horizon, enum corr_why why, kq_evict_fn evict, void *ctx)
{
	uint32_t idx;

	while (kq_older_than(q, horizon, &idx))
		evict(ctx, q, idx, why);
}

static uint64_t idmap_hash(uint64_t a, uint64_t b)
{
	return hash_combine(hash_u64(a), b);
}

static uint32_t idmap_slots(uint32_t cap)
{
	uint64_t n = 16;

	while (n < (uint64_t)cap * 2)
		n <<= 1;
	return (uint32_t)n;
}

int idmap_init(struct idmap *m, uint32_t cap)
{
	uint32_t n = idmap_slots(cap);

	m->e = calloc(n, sizeof(*m->e));
	if (!m->e)
		return -ENOMEM;
	m->mask = n - 1;
	m->n = 0;
	m->cap = cap;
	return 0;
}

void idmap_fini(struct idmap *m)
{
	free(m->e);
	m->e = NULL;
}

size_t idmap_mem(uint32_t cap)
{
	return (size_t)idmap_slots(cap) * sizeof(struct idmap_ent);
}

struct idmap_ent *idmap_get(const struct idmap *m, uint64_t a, uint64_t b)
{
	uint32_t i;

	for (i = idmap_hash(a, b) & m->mask; m->e[i].used; i = (i + 1) & m->mask) {
		if (m->e[i].a == a && m->e[i].b == b)
			return &m->e[i];
	}
	return NULL;
}

struct idmap_ent *idmap_put(struct idmap *m, uint64_t a, uint64_t b, bool *ret_new)
{
	uint32_t i;

	for (i = idmap_hash(a, b) & m->mask; m->e[i].used; i = (i + 1) & m->mask) {
		if (m->e[i].a == a && m->e[i].b == b) {
			if (ret_new)
				*ret_new = false;
			return &m->e[i];
		}
	}
	if (m->n >= m->cap)
		return NULL;
	m->e[i] = (struct idmap_ent){.a = a, .b = b, .used = 1};
	m->n++;
	if (ret_new)
		*ret_new = true;
	return &m->e[i];
}

void idmap_del(struct idmap *m, struct idmap_ent *e)
{
	uint32_t i = e - m->e, j = i, mask = m->mask;

	for (;;) {
		uint32_t k;

		j = (j + 1) & mask;
		if (!m->e[j].used)
			break;
		k = idmap_hash(m->e[j].a, m->e[j].b) & mask;
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		m->e[i] = m->e[j];
		i = j;
	}
	m->e[i].used = 0;
	m->n--;
}

void idmap_purge(struct idmap *m, uint64_t horizon, bool (*keep)(void *ctx, struct idmap_ent *e),
		 void *ctx)
{
	uint32_t i = 0;

	/* Deleting shifts later entries back into i, so i is looked at again. */
	while (i <= m->mask) {
		struct idmap_ent *e = &m->e[i];

		if (e->used && e->stamp < horizon && !(keep && keep(ctx, e)))
			idmap_del(m, e);
		else
			i++;
	}
}
