// SPDX-License-Identifier: Apache-2.0
/*
 * "timestamp": an uprobe launch record has no correlation id, but CUPTI's runtime/driver API
 * record of the same thread whose [start, end] contains the uprobe's time does; through it the
 * uprobe joins the GPU records by id (idjoin). Uprobes fire a little before CUPTI reads its
 * clock, so a record's window starts api_slack_ns early. Without any API record for a process,
 * tolerance_ns > 0 allows a join by time alone: the oldest waiting launch of a compatible kind
 * at most tolerance_ns before the GPU work started.
 *
 * Uprobes wait per thread, sorted by time, with a cursor where the last API record bound, so a
 * thread's backlog left by dropped API records is not rescanned for every new API record.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "correlate/strategy.h"

struct ts_up {
	struct corr_cpu_rec rec;
	uint64_t seq; /* ties a proximity copy to its per-thread original */
};

struct ts_state {
	struct corr_base b;
	struct idjoin j;
	struct kq up;	     /* struct ts_up by (pid, tid), sorted by time */
	struct kq api;	     /* API records that bound no uprobe, by (pid, tid), sorted by start */
	struct kq prox;	     /* copies of uprobes by pid, for the proximity fallback */
	struct idmap apipid; /* processes that have shown API records */
	uint64_t seq;
};

static uint64_t pidtid(uint32_t pid, uint32_t tid)
{
	return (uint64_t)pid << 32 | tid;
}

static uint64_t up_time(const struct kq *q, uint32_t i)
{
	return ((const struct ts_up *)kq_data(q, i))->rec.time_ns;
}

static uint64_t api_time(const struct kq *q, uint32_t i)
{
	return ((const struct corr_gpu_rec *)kq_data(q, i))->start_ns;
}

/* Records of a thread arrive almost in order: look from the tail. */
static void link_sorted(struct kq *q, uint32_t idx, uint64_t key, uint64_t stamp, uint64_t t,
			uint64_t (*time_of)(const struct kq *, uint32_t))
{
	uint32_t after = kq_last(q, key), before;

	while (after != KQ_NONE && time_of(q, after) > t)
		after = kq_hdr(q, after)->kprev;
	before = after == KQ_NONE ? kq_first(q, key) : kq_hdr(q, after)->knext;
	kq_link(q, idx, key, stamp, before);
}

/* The first uprobe of key's chain at or after lo, starting at the chain's cursor. */
static uint32_t seek(const struct kq *q, uint64_t key, uint64_t lo)
{
	struct kq_slot *s = kq_find(q, key);
	uint32_t i, p;

	if (!s)
		return KQ_NONE;
	i = *kq_cursor(q, s) != KQ_NONE ? *kq_cursor(q, s) : s->tail;
	while ((p = kq_hdr(q, i)->kprev) != KQ_NONE && up_time(q, p) >= lo)
		i = p;
	while (i != KQ_NONE && up_time(q, i) < lo)
		i = kq_hdr(q, i)->knext;
	return i;
}

static void set_cursor(const struct kq *q, uint64_t key, uint32_t at)
{
	struct kq_slot *s = kq_find(q, key);

	if (s)
		*kq_cursor(q, s) = at != KQ_NONE ? at : s->tail;
}

static void evict(void *ctx, struct kq *q, uint32_t idx, enum corr_why why)
{
	struct ts_state *s = ctx;

	/* Proximity copies and unused API records are not launches or GPU work: no report. */
	if (q == &s->up)
		corr_drop_cpu(&s->b, &((struct ts_up *)kq_data(q, idx))->rec, why);
	kq_remove(q, idx);
}

static void age(struct ts_state *s, uint64_t horizon, enum corr_why why)
{
	/* Copies first, so no copy outlives the original it would join for. */
	kq_age(&s->prox, horizon, why, evict, s);
	kq_age(&s->up, horizon, why, evict, s);
	kq_age(&s->api, horizon, why, evict, s);
	idjoin_age(&s->j, horizon, why);
}

static void ts_free(void *state)
{
	struct ts_state *s = state;

	if (!s)
		return;
	idjoin_fini(&s->j);
	kq_fini(&s->up);
	kq_fini(&s->api);
	kq_fini(&s->prox);
	idmap_fini(&s->apipid);
	free(s);
}

static void *ts_new(const struct correlate_config *cfg, const struct correlate_cb *cb)
{
	struct ts_state *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return NULL;
	err = corr_base_init(&s->b, cfg, cb);
	if (!err)
		err = idjoin_init(&s->j, &s->b);
	if (!err)
		err = kq_init(&s->up, sizeof(struct ts_up), cfg->max_pending_cpu, KQ_CURSORS);
	if (!err)
		err = kq_init(&s->api, sizeof(struct corr_gpu_rec), cfg->max_pending_gpu, 0);
	if (!err)
		err = kq_init(&s->prox, sizeof(struct ts_up), cfg->max_pending_cpu, KQ_CURSORS);
	if (!err)
		err = idmap_init(&s->apipid, cfg->max_pids);
	if (err) {
		/* Every part is zeroed until made: freeing them all is safe at any step. */
		ts_free(s);
		errno = -err;
		return NULL;
	}
	return s;
}

/* A full map cannot say; then no proximity, since exact data may exist. */
static bool has_api(const struct ts_state *s, uint32_t pid)
{
	return idmap_get(&s->apipid, pid, 0) || s->apipid.n >= s->apipid.cap;
}

/* name without what only tells a call's variants apart: a leading "__" (the wrapper nvcc's
 * <<<>>> calls), "_ptsz"/"_ptds" (per-thread default stream) and "_vN" (a versioned symbol).
 * Its start in *ret_base; the length is returned. */
static size_t call_base(const char *name, const char **ret_base)
{
	size_t n, k;

	while (*name == '_')
		name++;
	n = strlen(name);
	for (;;) {
		if (n > 5 &&
		    (!memcmp(name + n - 5, "_ptsz", 5) || !memcmp(name + n - 5, "_ptds", 5))) {
			n -= 5;
			continue;
		}
		for (k = n; k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9'; k--)
			;
		if (k < n && k > 2 && name[k - 1] == 'v' && name[k - 2] == '_') {
			n = k - 2;
			continue;
		}
		break;
	}
	*ret_base = name;
	return n;
}

/* Whether an uprobe on api and an API record of name are the same function (true when either
 * name is unknown: then only the time can say). */
static bool same_call(const char *api, const char *name)
{
	const char *a, *b;
	size_t na, nb;

	if (!api || !name)
		return true;
	na = call_base(api, &a);
	nb = call_base(name, &b);
	return na == nb && !memcmp(a, b, na);
}

/* A driver API (cuLaunchKernel, ...), by its name. */
static bool is_driver_api(const char *name)
{
	return name && name[0] == 'c' && name[1] == 'u' && strncmp(name, "cuda", 4) != 0;
}

/*
 * The outermost API record of the thread, of the uprobe's call, whose (slack-widened) window
 * holds t. An uprobe on a driver launch inside a runtime launch record of another name takes
 * that record when none of its own name holds it: a CUDA runtime linked statically into a
 * library (cuBLASLt, cuDNN) calls the public driver API, where the uprobe is, from inside a
 * runtime call CUPTI records, and the GPU work carries the runtime call's correlation id.
 */
static const struct corr_gpu_rec *find_api(struct ts_state *s, uint64_t key,
					   const struct corr_cpu_rec *up)
{
	const struct corr_gpu_rec *best = NULL, *outer = NULL;
	uint64_t slack = s->b.cfg.api_slack_ns, t = up->time_ns;
	uint32_t i;

	for (i = kq_last(&s->api, key); i != KQ_NONE; i = kq_hdr(&s->api, i)->kprev) {
		const struct corr_gpu_rec *g = kq_data(&s->api, i);

		if (g->start_ns > t && g->start_ns - t > slack)
			continue;
		if (g->end_ns < t)
			break; /* returned before t; calls further back began earlier still */
		if (same_call(up->api_name, g->name) && (!best || g->start_ns < best->start_ns))
			best = g;
		if (g->kind == CORR_GPU_RUNTIME_API && g->name && g->start_ns <= t &&
		    (!outer || g->start_ns < outer->start_ns))
			outer = g;
	}
	if (!best && outer && is_driver_api(up->api_name))
		return outer;
	return best;
}

/*
 * The uprobe an API record of a known call belongs to: the thread's latest waiting uprobe on
 * the same function at or before the record's start (plus the slack, within its end). Not a
 * window of a few microseconds: the probe's own stack walk runs between the uprobe's clock
 * read and the call's (CUPTI's), 5 to 10 us with the deep stacks of PyTorch on a real GPU, and
 * a process held for its unwind tables takes far longer. Calls of a thread follow one another,
 * so the latest uprobe on that function is this call's; a driver call made inside a runtime
 * call is another function. KQ_NONE when none waits.
 */
static uint32_t uprobe_of(struct ts_state *s, uint64_t key, const struct corr_gpu_rec *rec)
{
	uint64_t hi = rec->start_ns + s->b.cfg.api_slack_ns;
	uint32_t i;

	if (hi > rec->end_ns)
		hi = rec->end_ns;
	for (i = kq_last(&s->up, key); i != KQ_NONE; i = kq_hdr(&s->up, i)->kprev) {
		const struct ts_up *u = kq_data(&s->up, i);

		if (u->rec.time_ns > hi)
			continue;
		if (same_call(u->rec.api_name, rec->name))
			return i;
	}
	return KQ_NONE;
}

static int ts_feed_cpu(void *state, const struct corr_cpu_rec *rec)
{
	struct ts_state *s = state;
	const struct corr_gpu_rec *api;
	uint64_t key = pidtid(rec ? rec->pid : 0, rec ? rec->tid : 0);
	uint32_t idx, copy;
	struct ts_up *u;
	int err = corr_check_cpu(rec);

	if (err)
		return err;
	s->b.st.cpu_in++;
	corr_tick(&s->b, rec->time_ns);
	age(s, corr_horizon(&s->b), CORR_WHY_AGED);
	if (rec->kind == CORR_CPU_USDT) {
		/* The id is right there: no need to go through an API record. */
		idjoin_cpu(&s->j, rec, rec->corr_id, 0, true);
		return 0;
	}
	api = find_api(s, key, rec);
	if (api) {
		idjoin_cpu(&s->j, rec, api->corr_id, 0, false);
		return 0;
	}
	if (rec->time_ns < corr_horizon(&s->b)) {
		corr_drop_cpu(&s->b, rec, CORR_WHY_LATE);
		return 0;
	}
	if (kq_alloc_evict(&s->up, &idx, evict, s)) {
		corr_drop_cpu(&s->b, rec, CORR_WHY_CAP);
		return 0;
	}
	u = kq_data(&s->up, idx);
	u->rec = *rec;
	u->seq = ++s->seq;
	link_sorted(&s->up, idx, key, s->b.now, rec->time_ns, up_time);

	if (s->b.cfg.tolerance_ns && !has_api(s, rec->pid) &&
	    !kq_alloc_evict(&s->prox, &copy, evict, s)) {
		*(struct ts_up *)kq_data(&s->prox, copy) = *u;
		link_sorted(&s->prox, copy, rec->pid, s->b.now, rec->time_ns, up_time);
	}
	return 0;
}

static void saw_api(struct ts_state *s, uint32_t pid)
{
	struct idmap_ent *e;
	bool is_new = false;
	uint32_t i;

	e = idmap_put(&s->apipid, pid, 0, &is_new);
	if (e)
		e->stamp = s->b.now;
	if (!is_new)
		return;
	/* Exact data from now on: this process's proximity copies are of no more use. */
	while ((i = kq_first(&s->prox, pid)) != KQ_NONE)
		kq_remove(&s->prox, i);
}

static void on_api(struct ts_state *s, const struct corr_gpu_rec *rec)
{
	uint64_t key = pidtid(rec->pid, rec->tid), slack = s->b.cfg.api_slack_ns;
	uint64_t lo = rec->start_ns > slack ? rec->start_ns - slack : 0;
	uint32_t i, next, idx;
	int bound = 0;

	saw_api(s, rec->pid);
	if (rec->name) {
		i = uprobe_of(s, key, rec);
		if (i != KQ_NONE) {
			idjoin_cpu(&s->j, &((struct ts_up *)kq_data(&s->up, i))->rec, rec->corr_id,
				   0, false);
			kq_remove(&s->up, i);
			return;
		}
		goto keep;
	}
	for (i = seek(&s->up, key, lo); i != KQ_NONE && up_time(&s->up, i) <= rec->end_ns;
	     i = next) {
		next = kq_hdr(&s->up, i)->knext;
		idjoin_cpu(&s->j, &((struct ts_up *)kq_data(&s->up, i))->rec, rec->corr_id, 0,
			   false);
		kq_remove(&s->up, i);
		bound++;
	}
	set_cursor(&s->up, key, i);
	if (bound)
		return;
keep:
	/* For an uprobe still to come (it is normally here first), within max age. */
	if (rec->end_ns < corr_horizon(&s->b) || kq_alloc_evict(&s->api, &idx, evict, s))
		return;
	*(struct corr_gpu_rec *)kq_data(&s->api, idx) = *rec;
	link_sorted(&s->api, idx, key, s->b.now, rec->start_ns, api_time);
}

/* The uprobe of the thread list that copy duplicates. */
static void remove_original(struct ts_state *s, const struct ts_up *copy)
{
	uint64_t key = pidtid(copy->rec.pid, copy->rec.tid);
	uint32_t i;

	for (i = seek(&s->up, key, copy->rec.time_ns);
	     i != KQ_NONE && up_time(&s->up, i) == copy->rec.time_ns;
	     i = kq_hdr(&s->up, i)->knext) {
		if (((struct ts_up *)kq_data(&s->up, i))->seq == copy->seq) {
			kq_remove(&s->up, i);
			return;
		}
	}
}

static bool try_proximity(struct ts_state *s, const struct corr_gpu_rec *rec)
{
	uint64_t tol = s->b.cfg.tolerance_ns, lo = rec->start_ns > tol ? rec->start_ns - tol : 0;
	uint32_t i;

	for (i = seek(&s->prox, rec->pid, lo);
	     i != KQ_NONE && up_time(&s->prox, i) <= rec->start_ns;
	     i = kq_hdr(&s->prox, i)->knext) {
		struct ts_up copy = *(struct ts_up *)kq_data(&s->prox, i);

		if (!corr_compatible(copy.rec.api_kind, rec))
			continue;
		set_cursor(&s->prox, rec->pid, kq_hdr(&s->prox, i)->knext);
		kq_remove(&s->prox, i);
		remove_original(s, &copy);
		corr_join(&s->b, &copy.rec, rec);
		/* The graph's other kernels carry this one's id. */
		if (corr_keeps(&copy.rec))
			idjoin_cpu(&s->j, &copy.rec, rec->corr_id, 1, false);
		return true;
	}
	return false;
}

static int ts_feed_gpu(void *state, const struct corr_gpu_rec *rec)
{
	struct ts_state *s = state;
	int err = corr_check_gpu(rec);

	if (err)
		return err;
	s->b.st.gpu_in++;
	if (rec->kind == CORR_GPU_RUNTIME_API || rec->kind == CORR_GPU_DRIVER_API) {
		on_api(s, rec);
		return 0;
	}
	if (!corr_gpu_kind__is_activity(rec->kind)) {
		s->b.st.ignored++;
		return 0;
	}
	if (idjoin_gpu_try(&s->j, rec))
		return 0;
	if (s->b.cfg.tolerance_ns && !has_api(s, rec->pid) && try_proximity(s, rec))
		return 0;
	idjoin_gpu_park(&s->j, rec);
	return 0;
}

static int ts_flush(void *state, uint64_t until_ns)
{
	struct ts_state *s = state;

	if (until_ns == CORR_FLUSH_ALL) {
		age(s, CORR_FLUSH_ALL, CORR_WHY_FLUSH);
		return 0;
	}
	corr_tick(&s->b, until_ns);
	age(s, corr_horizon(&s->b), CORR_WHY_AGED);
	idmap_purge(&s->apipid, corr_horizon(&s->b), NULL, NULL);
	return 0;
}

static void ts_stats(void *state, struct correlate_stats *ret)
{
	struct ts_state *s = state;
	const struct correlate_config *cfg = &s->b.cfg;

	*ret = s->b.st;
	ret->pending_cpu = s->j.cpu.nr + s->up.nr;
	ret->pending_gpu = s->j.gpu.nr + s->api.nr;
	ret->mem_bytes = idjoin_mem(&s->j) + kq_mem(&s->up) + kq_mem(&s->api) + kq_mem(&s->prox) +
			 idmap_mem(cfg->max_pids);
	ret->mem_limit = idjoin_mem_limit(cfg) +
			 2 * kq_mem_limit(sizeof(struct ts_up), cfg->max_pending_cpu, KQ_CURSORS) +
			 kq_mem_limit(sizeof(struct corr_gpu_rec), cfg->max_pending_gpu, 0) +
			 idmap_mem(cfg->max_pids);
}

const struct correlate_ops correlate_timestamp_ops = {
	.name = "timestamp",
	.new = ts_new,
	.feed_cpu = ts_feed_cpu,
	.feed_gpu = ts_feed_gpu,
	.flush = ts_flush,
	.stats = ts_stats,
	.free = ts_free,
};
