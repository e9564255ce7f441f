// SPDX-License-Identifier: Apache-2.0
/*
 * "stream": without ids, the n-th launch on a stream is the n-th piece of GPU work that ran on
 * it. Launches are kept per (pid, stream handle), GPU records per (pid, CUPTI stream id), both
 * sorted by time. A GPU record is matched once it has settled: settle_ns of record clock after
 * its start, so that earlier records of its stream, arriving late, are not overtaken.
 *
 * Handles and stream ids are paired per process by order of first appearance: when a stream id
 * first needs a launch stream, it takes the process's unpaired handle that was launched on first
 * (and before the GPU work began). Handle 1 (cudaStreamLegacy) is 0; handle 2
 * (cudaStreamPerThread), or 0 from a _ptsz API, is the calling thread's own default stream.
 *
 * Drops: GPU work that started before its stream's next launch cannot be that launch's, so a
 * lost launch costs one unmatched GPU record; kinds that cannot go together (a copy for a kernel
 * launch) resynchronise too. A lost GPU record shifts the pairing; see README.md.
 */
#include <errno.h>
#include <stdlib.h>

#include "correlate/strategy.h"

#define PER_THREAD (1ull << 63) /* user-space handles never have the top bit set */

struct lstream {
	uint64_t first_time;
	uint32_t pid;
	uint32_t peer; /* paired sstream, or KQ_NONE */
};

struct sstream {
	uint32_t pid;
	uint32_t peer; /* paired lstream, or KQ_NONE */
	/* pair() failed while the launch streams were at generation fail_gen: until they change,
	 * none can pair with work starting before fail_next (a process's GPU records without
	 * launches would otherwise scan every launch stream once each). */
	uint64_t fail_gen, fail_next;
};

struct st_state {
	struct corr_base b;
	struct idjoin j;   /* graph launches, once paired with their first GPU record */
	struct kq launch;  /* struct corr_cpu_rec by lstream index, sorted by time */
	struct kq work;	   /* struct corr_gpu_rec by sstream index, sorted by start */
	struct idmap lmap; /* (pid, handle key) -> lstream index */
	struct idmap smap; /* (pid, stream id) -> sstream index */
	struct lstream *ls;
	struct sstream *ss;
	uint32_t *lfree, *sfree; /* stacks of unused indexes */
	uint32_t nlfree, nsfree;
	uint64_t lgen; /* bumped when a launch stream may newly pair: see sstream.fail_gen */
	bool flushing;
};

static uint64_t launch_time(const struct kq *q, uint32_t i)
{
	return ((const struct corr_cpu_rec *)kq_data(q, i))->time_ns;
}

static uint64_t work_time(const struct kq *q, uint32_t i)
{
	return ((const struct corr_gpu_rec *)kq_data(q, i))->start_ns;
}

static void link_sorted(struct kq *q, uint32_t idx, uint64_t key, uint64_t stamp, uint64_t t,
			uint64_t (*time_of)(const struct kq *, uint32_t))
{
	uint32_t after = kq_last(q, key), before;

	while (after != KQ_NONE && time_of(q, after) > t)
		after = kq_hdr(q, after)->kprev;
	before = after == KQ_NONE ? kq_first(q, key) : kq_hdr(q, after)->knext;
	kq_link(q, idx, key, stamp, before);
}

static uint64_t handle_key(const struct corr_cpu_rec *r)
{
	uint64_t h = r->stream == 1 ? 0 : r->stream;

	if (h == 2 || (h == 0 && (r->flags & CORR_CPU_F_PTSZ)))
		return PER_THREAD | r->tid;
	return h;
}

static bool is_stream_work(const struct corr_gpu_rec *g)
{
	return g->kind == CORR_GPU_KERNEL || g->kind == CORR_GPU_MEMCPY ||
	       g->kind == CORR_GPU_MEMSET || g->kind == CORR_GPU_GRAPH;
}

static bool in_graph(const struct corr_gpu_rec *g)
{
	return g->graph_id || g->kind == CORR_GPU_GRAPH;
}

static void give_up_gpu(struct st_state *s, const struct corr_gpu_rec *g)
{
	corr_drop_gpu(&s->b, g,
		      g->start_ns < corr_horizon(&s->b) ? CORR_WHY_LATE : CORR_WHY_NO_PARTNER);
}

/* Pair stream id ssi with the process's earliest-launched unpaired handle. */
static void pair(struct st_state *s, uint32_t ssi, uint64_t start)
{
	struct sstream *ss = &s->ss[ssi];
	uint32_t i, best = KQ_NONE;
	uint64_t next = UINT64_MAX;

	if (ss->fail_gen == s->lgen && start < ss->fail_next)
		return;
	for (i = 0; i < s->b.cfg.max_streams; i++) {
		const struct lstream *l = &s->ls[i];

		/* first_time 0: an unused slot */
		if (l->pid != ss->pid || l->peer != KQ_NONE || l->first_time == 0)
			continue;
		if (l->first_time > start) {
			next = l->first_time < next ? l->first_time : next;
			continue;
		}
		if (best == KQ_NONE || l->first_time < s->ls[best].first_time)
			best = i;
	}
	if (best == KQ_NONE) {
		ss->fail_gen = s->lgen;
		ss->fail_next = next;
		return;
	}
	ss->fail_gen = 0;
	s->ls[best].peer = ssi;
	ss->peer = best;
}

static void match_stream(struct st_state *s, uint32_t ssi, bool all)
{
	uint64_t settle = s->b.cfg.settle_ns;
	uint32_t e, l, l2;

	while ((e = kq_first(&s->work, ssi)) != KQ_NONE) {
		struct corr_gpu_rec g = *(struct corr_gpu_rec *)kq_data(&s->work, e);
		struct corr_cpu_rec c;

		if (!all && !(g.start_ns < s->b.now && s->b.now - g.start_ns > settle))
			break;
		if (in_graph(&g) && idjoin_gpu_try(&s->j, &g)) {
			kq_remove(&s->work, e);
			continue;
		}
		if (s->ss[ssi].peer == KQ_NONE)
			pair(s, ssi, g.start_ns);
		l = s->ss[ssi].peer == KQ_NONE ? KQ_NONE : kq_first(&s->launch, s->ss[ssi].peer);
		if (l == KQ_NONE || g.start_ns < launch_time(&s->launch, l)) {
			/* Settled, so its launch would be here: it was lost, or ran elsewhere. */
			kq_remove(&s->work, e);
			give_up_gpu(s, &g);
			continue;
		}
		c = *(struct corr_cpu_rec *)kq_data(&s->launch, l);
		if (!corr_compatible(c.api_kind, &g)) {
			l2 = kq_hdr(&s->launch, l)->knext;
			if (l2 != KQ_NONE && launch_time(&s->launch, l2) <= g.start_ns &&
			    corr_compatible(
				    ((struct corr_cpu_rec *)kq_data(&s->launch, l2))->api_kind,
				    &g)) {
				/* This launch's work was lost; the next one is g's. */
				kq_remove(&s->launch, l);
				corr_drop_cpu(&s->b, &c, CORR_WHY_NO_PARTNER);
			} else {
				kq_remove(&s->work, e);
				give_up_gpu(s, &g);
			}
			continue;
		}
		kq_remove(&s->launch, l);
		kq_remove(&s->work, e);
		corr_join(&s->b, &c, &g);
		if (corr_keeps(&c) && in_graph(&g))
			idjoin_cpu(&s->j, &c, g.corr_id, 1, false);
	}
}

static void evict(void *ctx, struct kq *q, uint32_t idx, enum corr_why why)
{
	struct st_state *s = ctx;

	if (q == &s->launch) {
		corr_drop_cpu(&s->b, kq_data(q, idx), why);
		kq_remove(q, idx);
		return;
	}
	/* It may have settled without anything on its stream arriving since: match first. */
	if (why == CORR_WHY_AGED && !s->flushing) {
		uint32_t gen = q->gens[idx];

		match_stream(s, (uint32_t)kq_hdr(q, idx)->key, false);
		if (q->gens[idx] != gen)
			return; /* matched */
	}
	corr_drop_gpu(&s->b, kq_data(q, idx), why);
	kq_remove(q, idx);
}

static void age(struct st_state *s, uint64_t horizon, enum corr_why why)
{
	kq_age(&s->work, horizon, why, evict, s);
	kq_age(&s->launch, horizon, why, evict, s);
	idjoin_age(&s->j, horizon, why);
}

static void st_free(void *state)
{
	struct st_state *s = state;

	if (!s)
		return;
	idjoin_fini(&s->j);
	kq_fini(&s->launch);
	kq_fini(&s->work);
	idmap_fini(&s->lmap);
	idmap_fini(&s->smap);
	free(s->ls);
	free(s->ss);
	free(s->lfree);
	free(s->sfree);
	free(s);
}

static void *st_new(const struct correlate_config *cfg, const struct correlate_cb *cb)
{
	struct st_state *s = calloc(1, sizeof(*s));
	uint32_t i;
	int err;

	if (!s)
		return NULL;
	err = corr_base_init(&s->b, cfg, cb);
	if (!err)
		err = idjoin_init(&s->j, &s->b);
	if (!err)
		err = kq_init(&s->launch, sizeof(struct corr_cpu_rec), cfg->max_pending_cpu, 0);
	if (!err)
		err = kq_init(&s->work, sizeof(struct corr_gpu_rec), cfg->max_pending_gpu, 0);
	if (!err)
		err = idmap_init(&s->lmap, cfg->max_streams);
	if (!err)
		err = idmap_init(&s->smap, cfg->max_streams);
	if (!err) {
		s->ls = calloc(cfg->max_streams, sizeof(*s->ls));
		s->ss = calloc(cfg->max_streams, sizeof(*s->ss));
		s->lfree = calloc(cfg->max_streams, sizeof(*s->lfree));
		s->sfree = calloc(cfg->max_streams, sizeof(*s->sfree));
		if (!s->ls || !s->ss || !s->lfree || !s->sfree)
			err = -ENOMEM;
	}
	if (err) {
		/* Every part is zeroed until made: freeing them all is safe at any step. */
		st_free(s);
		errno = -err;
		return NULL;
	}
	for (i = 0; i < cfg->max_streams; i++) {
		s->lfree[i] = s->sfree[i] = cfg->max_streams - 1 - i;
		s->ls[i].peer = s->ss[i].peer = KQ_NONE;
	}
	s->nlfree = s->nsfree = cfg->max_streams;
	s->lgen = 1; /* a new sstream's fail_gen, 0, never matches */
	return s;
}

static int st_feed_cpu(void *state, const struct corr_cpu_rec *rec)
{
	struct st_state *s = state;
	struct idmap_ent *ent;
	struct lstream *l;
	uint32_t li, idx;
	bool is_new;
	int err = corr_check_cpu(rec);

	if (err)
		return err;
	s->b.st.cpu_in++;
	corr_tick(&s->b, rec->time_ns);
	age(s, corr_horizon(&s->b), CORR_WHY_AGED);
	if (rec->api_kind != CORR_API_KERNEL && rec->api_kind != CORR_API_GRAPH &&
	    rec->api_kind != CORR_API_MEMCPY && rec->api_kind != CORR_API_MEMSET) {
		s->b.st.ignored++; /* syncs and others queue no work on the stream */
		return 0;
	}
	if (rec->time_ns < corr_horizon(&s->b)) {
		corr_drop_cpu(&s->b, rec, CORR_WHY_LATE);
		return 0;
	}
	ent = idmap_put(&s->lmap, rec->pid, handle_key(rec), &is_new);
	if (!ent) {
		corr_drop_cpu(&s->b, rec, CORR_WHY_CAP); /* raise max_streams */
		return 0;
	}
	if (is_new) {
		li = s->lfree[--s->nlfree];
		s->ls[li] = (struct lstream){.pid = rec->pid, .peer = KQ_NONE};
		ent->val = li;
	}
	ent->stamp = s->b.now;
	li = ent->val;
	l = &s->ls[li];
	/* 0 means unset; a launch at time 0 only happens in tests and then pairs as 1. */
	if (!l->first_time || rec->time_ns < l->first_time) {
		l->first_time = rec->time_ns ? rec->time_ns : 1;
		s->lgen++;
	}
	if (kq_alloc_evict(&s->launch, &idx, evict, s)) {
		corr_drop_cpu(&s->b, rec, CORR_WHY_CAP);
		return 0;
	}
	*(struct corr_cpu_rec *)kq_data(&s->launch, idx) = *rec;
	link_sorted(&s->launch, idx, li, s->b.now, rec->time_ns, launch_time);
	return 0;
}

static int st_feed_gpu(void *state, const struct corr_gpu_rec *rec)
{
	struct st_state *s = state;
	struct idmap_ent *ent;
	uint32_t si, idx;
	bool is_new;
	int err = corr_check_gpu(rec);

	if (err)
		return err;
	s->b.st.gpu_in++;
	if (!is_stream_work(rec)) {
		s->b.st.ignored++;
		return 0;
	}
	age(s, corr_horizon(&s->b), CORR_WHY_AGED);
	if (in_graph(rec) && idjoin_gpu_try(&s->j, rec))
		return 0;
	ent = idmap_put(&s->smap, rec->pid, rec->stream_id, &is_new);
	if (!ent) {
		corr_drop_gpu(&s->b, rec, CORR_WHY_CAP);
		return 0;
	}
	if (is_new) {
		si = s->sfree[--s->nsfree];
		s->ss[si] = (struct sstream){.pid = rec->pid, .peer = KQ_NONE};
		ent->val = si;
	}
	ent->stamp = s->b.now;
	si = ent->val;
	if (kq_alloc_evict(&s->work, &idx, evict, s)) {
		corr_drop_gpu(&s->b, rec, CORR_WHY_CAP);
		return 0;
	}
	*(struct corr_gpu_rec *)kq_data(&s->work, idx) = *rec;
	link_sorted(&s->work, idx, si, s->b.now, rec->start_ns, work_time);
	match_stream(s, si, false);
	return 0;
}

/* Forgets a stream nobody used for max age; a side effect of the purge walk. */
static bool keep_lstream(void *ctx, struct idmap_ent *e)
{
	struct st_state *s = ctx;
	uint32_t li = e->val;

	if (kq_first(&s->launch, li) != KQ_NONE)
		return true;
	if (s->ls[li].peer != KQ_NONE)
		s->ss[s->ls[li].peer].peer = KQ_NONE;
	s->ls[li] = (struct lstream){.peer = KQ_NONE};
	s->lfree[s->nlfree++] = li;
	return false;
}

static bool keep_sstream(void *ctx, struct idmap_ent *e)
{
	struct st_state *s = ctx;
	uint32_t si = e->val;

	if (kq_first(&s->work, si) != KQ_NONE)
		return true;
	if (s->ss[si].peer != KQ_NONE) {
		s->ls[s->ss[si].peer].peer = KQ_NONE;
		s->lgen++; /* that launch stream may pair again */
	}
	s->ss[si] = (struct sstream){.peer = KQ_NONE};
	s->sfree[s->nsfree++] = si;
	return false;
}

static void match_all(struct st_state *s, bool all)
{
	uint32_t i;

	for (i = 0; i <= s->smap.mask; i++) {
		if (s->smap.e[i].used)
			match_stream(s, s->smap.e[i].val, all);
	}
}

static int st_flush(void *state, uint64_t until_ns)
{
	struct st_state *s = state;

	if (until_ns == CORR_FLUSH_ALL) {
		match_all(s, true);
		s->flushing = true;
		age(s, CORR_FLUSH_ALL, CORR_WHY_FLUSH);
		s->flushing = false;
		return 0;
	}
	corr_tick(&s->b, until_ns);
	match_all(s, false);
	age(s, corr_horizon(&s->b), CORR_WHY_AGED);
	idmap_purge(&s->smap, corr_horizon(&s->b), keep_sstream, s);
	idmap_purge(&s->lmap, corr_horizon(&s->b), keep_lstream, s);
	return 0;
}

static void st_stats(void *state, struct correlate_stats *ret)
{
	struct st_state *s = state;
	const struct correlate_config *cfg = &s->b.cfg;
	size_t fixed = 2 * idmap_mem(cfg->max_streams) +
		       (size_t)cfg->max_streams * (sizeof(struct lstream) + sizeof(struct sstream) +
						   2 * sizeof(uint32_t));

	*ret = s->b.st;
	ret->pending_cpu = s->j.cpu.nr + s->launch.nr;
	ret->pending_gpu = s->j.gpu.nr + s->work.nr;
	ret->mem_bytes = idjoin_mem(&s->j) + kq_mem(&s->launch) + kq_mem(&s->work) + fixed;
	ret->mem_limit = idjoin_mem_limit(cfg) +
			 kq_mem_limit(sizeof(struct corr_cpu_rec), cfg->max_pending_cpu, 0) +
			 kq_mem_limit(sizeof(struct corr_gpu_rec), cfg->max_pending_gpu, 0) + fixed;
}

const struct correlate_ops correlate_stream_ops = {
	.name = "stream",
	.new = st_new,
	.feed_cpu = st_feed_cpu,
	.feed_gpu = st_feed_gpu,
	.flush = st_flush,
	.stats = st_stats,
	.free = st_free,
};
