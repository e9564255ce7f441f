// SPDX-License-Identifier: Apache-2.0
/*
 * "auto": per process, the most exact strategy its data supports. A USDT launch record means id;
 * else a CUPTI runtime/driver API record means timestamp; else GPU work is matched by stream.
 * A process only moves up that order, and on_strategy says so each time. GPU records go to the
 * one strategy the process is on when they arrive, so each is joined or reported once. Uprobe
 * records go to both timestamp and stream until the process shows API records, because those
 * arrive later than the uprobes; the copy that the chosen strategy did not use is not reported.
 * Once a process is on stream (GPU work came without API records), its uprobes go there only.
 */
#include <errno.h>
#include <stdlib.h>

#include "correlate/strategy.h"

enum pick { PICK_NONE, PICK_STREAM, PICK_TS, PICK_ID, NR_PICKS }; /* in order of exactness */

static const struct correlate_ops *const sub_ops[NR_PICKS] = {
	[PICK_STREAM] = &correlate_stream_ops,
	[PICK_TS] = &correlate_timestamp_ops,
	[PICK_ID] = &correlate_id_ops,
};

struct auto_state;

struct auto_sub {
	struct auto_state *a;
	enum pick which;
};

struct auto_state {
	struct corr_base b;
	void *sub[NR_PICKS];
	struct auto_sub subctx[NR_PICKS];
	struct idmap pids; /* pid -> enum pick */
};

/* Processes beyond max_pids get the exact join only: it needs no per-process state. */
static enum pick effective(const struct auto_state *a, uint32_t pid)
{
	const struct idmap_ent *e = idmap_get(&a->pids, pid, 0);

	if (!e)
		return PICK_ID;
	return e->val == PICK_NONE ? PICK_STREAM : (enum pick)e->val;
}

static void on_join(void *ctx, const struct corr_cpu_rec *cpu, const struct corr_gpu_rec *gpu)
{
	struct auto_sub *s = ctx;

	/* A GPU record goes to one strategy only, so its join always counts. */
	corr_join(&s->a->b, cpu, gpu);
}

static void on_unmatched_cpu(void *ctx, const struct corr_cpu_rec *cpu, enum corr_why why)
{
	struct auto_sub *s = ctx;

	/* Uprobes are held twice; the copy of the strategy not chosen is no news. */
	if (s->which == PICK_ID || effective(s->a, cpu->pid) == s->which)
		corr_drop_cpu(&s->a->b, cpu, why);
}

static void on_unmatched_gpu(void *ctx, const struct corr_gpu_rec *gpu, enum corr_why why)
{
	struct auto_sub *s = ctx;

	corr_drop_gpu(&s->a->b, gpu, why);
}

static void auto_free(void *state)
{
	struct auto_state *a = state;
	int i;

	if (!a)
		return;
	for (i = 0; i < NR_PICKS; i++) {
		if (a->sub[i])
			sub_ops[i]->free(a->sub[i]);
	}
	idmap_fini(&a->pids);
	free(a);
}

static void *auto_new(const struct correlate_config *cfg, const struct correlate_cb *cb)
{
	struct auto_state *a = calloc(1, sizeof(*a));
	int i, err;

	if (!a)
		return NULL;
	err = corr_base_init(&a->b, cfg, cb);
	if (!err)
		err = idmap_init(&a->pids, cfg->max_pids);
	if (err) {
		free(a);
		errno = -err;
		return NULL;
	}
	for (i = PICK_STREAM; i < NR_PICKS; i++) {
		struct correlate_cb scb = {
			.on_join = on_join,
			.on_unmatched_cpu = on_unmatched_cpu,
			.on_unmatched_gpu = on_unmatched_gpu,
			.ctx = &a->subctx[i],
		};

		a->subctx[i] = (struct auto_sub){.a = a, .which = i};
		a->sub[i] = sub_ops[i]->new (cfg, &scb);
		if (!a->sub[i]) {
			err = errno;
			auto_free(a);
			errno = err;
			return NULL;
		}
	}
	return a;
}

static void choose(struct auto_state *a, struct idmap_ent *e, enum pick p)
{
	if (e->val >= (uint64_t)p)
		return;
	e->val = p;
	if (a->b.cb.on_strategy)
		a->b.cb.on_strategy(a->b.cb.ctx, (uint32_t)e->a, sub_ops[p]->name);
}

static struct idmap_ent *pid_entry(struct auto_state *a, uint32_t pid)
{
	struct idmap_ent *e = idmap_put(&a->pids, pid, 0, NULL);

	if (e)
		e->stamp = a->b.now;
	return e;
}

static int auto_feed_cpu(void *state, const struct corr_cpu_rec *rec)
{
	struct auto_state *a = state;
	struct idmap_ent *e;
	int err = corr_check_cpu(rec);

	if (err)
		return err;
	a->b.st.cpu_in++;
	corr_tick(&a->b, rec->time_ns);
	e = pid_entry(a, rec->pid);
	if (rec->kind == CORR_CPU_USDT) {
		if (e)
			choose(a, e, PICK_ID);
		return sub_ops[PICK_ID]->feed_cpu(a->sub[PICK_ID], rec);
	}
	if (!e || e->val == PICK_ID) {
		a->b.st.ignored++;
		return 0;
	}
	/*
	 * Until the process shows GPU records, both may need it. A process on stream has shown
	 * GPU work without any API record before it (a call's API record completes before its
	 * work), so timestamp would only hold its uprobes until they age out.
	 */
	if (e->val != PICK_STREAM)
		err = sub_ops[PICK_TS]->feed_cpu(a->sub[PICK_TS], rec);
	if (!err && e->val != PICK_TS)
		err = sub_ops[PICK_STREAM]->feed_cpu(a->sub[PICK_STREAM], rec);
	return err;
}

static int auto_feed_gpu(void *state, const struct corr_gpu_rec *rec)
{
	struct auto_state *a = state;
	struct idmap_ent *e;
	enum pick p;
	int err = corr_check_gpu(rec);

	if (err)
		return err;
	a->b.st.gpu_in++;
	e = pid_entry(a, rec->pid);
	if (rec->kind == CORR_GPU_RUNTIME_API || rec->kind == CORR_GPU_DRIVER_API) {
		if (!e || e->val == PICK_ID) {
			a->b.st.ignored++;
			return 0;
		}
		choose(a, e, PICK_TS);
		return sub_ops[PICK_TS]->feed_gpu(a->sub[PICK_TS], rec);
	}
	if (!corr_gpu_kind__is_activity(rec->kind)) {
		a->b.st.ignored++;
		return 0;
	}
	if (e && e->val == PICK_NONE)
		choose(a, e, PICK_STREAM);
	p = e ? (enum pick)e->val : PICK_ID;
	return sub_ops[p]->feed_gpu(a->sub[p], rec);
}

static int auto_flush(void *state, uint64_t until_ns)
{
	struct auto_state *a = state;
	int i, err = 0;

	for (i = PICK_STREAM; i < NR_PICKS && !err; i++)
		err = sub_ops[i]->flush(a->sub[i], until_ns);
	if (until_ns != CORR_FLUSH_ALL) {
		corr_tick(&a->b, until_ns);
		/* The strategies forgot these processes' state at the same horizon. */
		idmap_purge(&a->pids, corr_horizon(&a->b), NULL, NULL);
	}
	return err;
}

static void auto_stats(void *state, struct correlate_stats *ret)
{
	struct auto_state *a = state;
	int i;

	*ret = a->b.st;
	ret->mem_bytes = ret->mem_limit = idmap_mem(a->b.cfg.max_pids);
	for (i = PICK_STREAM; i < NR_PICKS; i++) {
		struct correlate_stats s;

		sub_ops[i]->stats(a->sub[i], &s);
		ret->pending_cpu += s.pending_cpu;
		ret->pending_gpu += s.pending_gpu;
		ret->mem_bytes += s.mem_bytes;
		ret->mem_limit += s.mem_limit;
	}
}

static const char *auto_pid_strategy(void *state, uint32_t pid)
{
	struct auto_state *a = state;

	if (!idmap_get(&a->pids, pid, 0) && a->pids.n < a->pids.cap)
		return NULL; /* never seen */
	return sub_ops[effective(a, pid)]->name;
}

const struct correlate_ops correlate_auto_ops = {
	.name = "auto",
	.new = auto_new,
	.feed_cpu = auto_feed_cpu,
	.feed_gpu = auto_feed_gpu,
	.flush = auto_flush,
	.stats = auto_stats,
	.free = auto_free,
	.pid_strategy = auto_pid_strategy,
};
