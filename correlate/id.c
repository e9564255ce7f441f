// SPDX-License-Identifier: Apache-2.0
/*
 * "id": the USDT launch record carries CUPTI's correlation id, so the join is exact: same pid,
 * same id. Uprobe records carry no id and are ignored here.
 */
#include <errno.h>
#include <stdlib.h>

#include "correlate/strategy.h"

struct id_state {
	struct corr_base b;
	struct idjoin j;
};

static void *id_new(const struct correlate_config *cfg, const struct correlate_cb *cb)
{
	struct id_state *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return NULL;
	err = corr_base_init(&s->b, cfg, cb);
	if (!err)
		err = idjoin_init(&s->j, &s->b);
	if (err) {
		free(s);
		errno = -err;
		return NULL;
	}
	return s;
}

static void id_free(void *state)
{
	struct id_state *s = state;

	if (!s)
		return;
	idjoin_fini(&s->j);
	free(s);
}

static int id_feed_cpu(void *state, const struct corr_cpu_rec *rec)
{
	struct id_state *s = state;
	int err = corr_check_cpu(rec);

	if (err)
		return err;
	s->b.st.cpu_in++;
	/* Every CPU record moves the clock, even one this strategy has no use for. */
	corr_tick(&s->b, rec->time_ns);
	idjoin_age(&s->j, corr_horizon(&s->b), CORR_WHY_AGED);
	if (rec->kind != CORR_CPU_USDT) {
		s->b.st.ignored++;
		return 0;
	}
	idjoin_cpu(&s->j, rec, rec->corr_id, 0, true);
	return 0;
}

static int id_feed_gpu(void *state, const struct corr_gpu_rec *rec)
{
	struct id_state *s = state;
	int err = corr_check_gpu(rec);

	if (err)
		return err;
	s->b.st.gpu_in++;
	if (!corr_gpu_kind__is_activity(rec->kind)) {
		s->b.st.ignored++;
		return 0;
	}
	if (!idjoin_gpu_try(&s->j, rec))
		idjoin_gpu_park(&s->j, rec);
	return 0;
}

/*
 * Batches run a two-stage prefetch: the index block of the record AHEAD places on, then the
 * entry that block points to for the record AHEAD / 2 places on, so the misses of several
 * records overlap instead of coming one after another.
 */
#define AHEAD 8

static int id_feed_cpu_batch(void *state, const struct corr_cpu_rec *recs, size_t n)
{
	struct id_state *s = state;
	size_t i;
	int err = 0;

	for (i = 0; i < n; i++) {
		int e;

		if (i + AHEAD < n)
			idjoin_prefetch_block(&s->j, recs[i + AHEAD].pid, recs[i + AHEAD].corr_id);
		e = id_feed_cpu(s, &recs[i]);
		if (e && !err)
			err = e;
	}
	return err;
}

static int id_feed_gpu_batch(void *state, const struct corr_gpu_rec *recs, size_t n)
{
	struct id_state *s = state;
	size_t i;
	int err = 0;

	for (i = 0; i < n; i++) {
		int e;

		if (i + AHEAD < n)
			idjoin_prefetch_block(&s->j, recs[i + AHEAD].pid, recs[i + AHEAD].corr_id);
		if (i + AHEAD / 2 < n)
			idjoin_prefetch_entry(&s->j, recs[i + AHEAD / 2].pid,
					      recs[i + AHEAD / 2].corr_id);
		e = id_feed_gpu(s, &recs[i]);
		if (e && !err)
			err = e;
	}
	return err;
}

static int id_flush(void *state, uint64_t until_ns)
{
	struct id_state *s = state;

	if (until_ns == CORR_FLUSH_ALL) {
		idjoin_age(&s->j, CORR_FLUSH_ALL, CORR_WHY_FLUSH);
		return 0;
	}
	corr_tick(&s->b, until_ns);
	idjoin_age(&s->j, corr_horizon(&s->b), CORR_WHY_AGED);
	return 0;
}

static void id_stats(void *state, struct correlate_stats *ret)
{
	struct id_state *s = state;

	*ret = s->b.st;
	ret->pending_cpu = s->j.cpu.nr;
	ret->pending_gpu = s->j.gpu.nr;
	ret->mem_bytes = idjoin_mem(&s->j);
	ret->mem_limit = idjoin_mem_limit(&s->b.cfg);
}

const struct correlate_ops correlate_id_ops = {
	.name = "id",
	.new = id_new,
	.feed_cpu = id_feed_cpu,
	.feed_gpu = id_feed_gpu,
	.flush = id_flush,
	.stats = id_stats,
	.free = id_free,
	.feed_cpu_batch = id_feed_cpu_batch,
	.feed_gpu_batch = id_feed_gpu_batch,
};
