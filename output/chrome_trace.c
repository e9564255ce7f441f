// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/hashmap.h"
#include "daemon/base/sort.h"
#include "daemon/base/vec.h"
#include "output/chrome_trace.h"
#include "output/gpu_report/gpu_activity.h"
#include "output/gpu_report/gpu_memory.h"
#include "output/model/json_string.h"
#include "output/model/profile.h"
#include "output/output_meta.h"

struct chrome_trace {
	FILE *f;
	int err;
	bool any; /* an event was written: the next one needs a comma */
	uint64_t next_id;
};

static int write_error(void)
{
	return errno ? -errno : -EIO;
}

static void out(struct chrome_trace *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void out(struct chrome_trace *t, const char *fmt, ...)
{
	va_list ap;

	if (t->err)
		return;
	va_start(ap, fmt);
	if (vfprintf(t->f, fmt, ap) < 0)
		t->err = write_error();
	va_end(ap);
}

static void put_str(struct chrome_trace *t, const char *s)
{
	if (!t->err)
		t->err = json__put_string(t->f, s);
}

struct chrome_trace *chrome_trace__begin(FILE *f)
{
	struct chrome_trace *t;

	if (!f) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->f = f;
	t->next_id = 1;
	errno = 0;
	out(t, "{\"traceEvents\":[");
	if (t->err) {
		errno = -t->err;
		free(t);
		return NULL;
	}
	return t;
}

int chrome_trace__error(const struct chrome_trace *t)
{
	return t ? t->err : -EINVAL;
}

void chrome_trace__free(struct chrome_trace *t)
{
	free(t);
}

int chrome_trace__end(struct chrome_trace *t, const char *const *other_kv, size_t n)
{
	size_t i;
	int err;

	if (!t)
		return -EINVAL;
	/* Nanosecond timestamps would be lost in the viewers' default millisecond display. */
	out(t, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{");
	for (i = 0; i < n; i++) {
		if (i)
			out(t, ",");
		put_str(t, other_kv[2 * i]);
		out(t, ":");
		put_str(t, other_kv[2 * i + 1]);
	}
	out(t, "}}\n");
	err = t->err;
	free(t);
	return err;
}

uint64_t chrome_trace__new_id(struct chrome_trace *t)
{
	return t->next_id++;
}

static void put_ts(struct chrome_trace *t, const char *key, uint64_t ns)
{
	/* Exact decimal microseconds: a double would round nanoseconds away at today's uptimes. */
	out(t, ",\"%s\":%" PRIu64 ".%03u", key, ns / 1000, (unsigned int)(ns % 1000));
}

static void head(struct chrome_trace *t, char ph, int64_t pid, int64_t tid, const char *name,
		 const char *cat)
{
	out(t, "%s\n{\"ph\":\"%c\",\"pid\":%" PRId64 ",\"tid\":%" PRId64, t->any ? "," : "", ph,
	    pid, tid);
	t->any = true;
	if (name) {
		out(t, ",\"name\":");
		put_str(t, name);
	}
	if (cat) {
		out(t, ",\"cat\":");
		put_str(t, cat);
	}
}

static void put_args(struct chrome_trace *t, const struct chrome_arg *args, size_t n)
{
	size_t i;

	if (!n)
		return;
	out(t, ",\"args\":{");
	for (i = 0; i < n; i++) {
		const struct chrome_arg *a = &args[i];

		if (i)
			out(t, ",");
		put_str(t, a->key);
		out(t, ":");
		switch (a->type) {
		case CHROME_ARG_STR:
			put_str(t, a->s);
			break;
		case CHROME_ARG_INT:
			out(t, "%" PRId64, a->i);
			break;
		case CHROME_ARG_UINT:
			out(t, "%" PRIu64, a->u);
			break;
		case CHROME_ARG_DOUBLE:
			/* JSON has no NaN or infinity. */
			if (isfinite(a->d))
				out(t, "%.17g", a->d);
			else
				out(t, "null");
			break;
		default:
			out(t, "null");
		}
	}
	out(t, "}");
}

static int check(struct chrome_trace *t, const char *name)
{
	if (!t)
		return -EINVAL;
	if (!name && !t->err)
		t->err = -EINVAL;
	return t->err;
}

static int meta_str(struct chrome_trace *t, const char *what, int64_t pid, int64_t tid,
		    const char *key, const char *val)
{
	if (check(t, val))
		return t ? t->err : -EINVAL;
	head(t, 'M', pid, tid, what, NULL);
	out(t, ",\"args\":{\"%s\":", key);
	put_str(t, val);
	out(t, "}}");
	return t->err;
}

static int meta_num(struct chrome_trace *t, const char *what, int64_t pid, int64_t tid, int64_t val)
{
	if (check(t, what))
		return t ? t->err : -EINVAL;
	head(t, 'M', pid, tid, what, NULL);
	out(t, ",\"args\":{\"sort_index\":%" PRId64 "}}", val);
	return t->err;
}

int chrome_trace__process_name(struct chrome_trace *t, int64_t pid, const char *name)
{
	return meta_str(t, "process_name", pid, 0, "name", name);
}

int chrome_trace__thread_name(struct chrome_trace *t, int64_t pid, int64_t tid, const char *name)
{
	return meta_str(t, "thread_name", pid, tid, "name", name);
}

int chrome_trace__process_sort_index(struct chrome_trace *t, int64_t pid, int64_t index)
{
	return meta_num(t, "process_sort_index", pid, 0, index);
}

int chrome_trace__thread_sort_index(struct chrome_trace *t, int64_t pid, int64_t tid, int64_t index)
{
	return meta_num(t, "thread_sort_index", pid, tid, index);
}

int chrome_trace__complete(struct chrome_trace *t, int64_t pid, int64_t tid, const char *name,
			   const char *cat, uint64_t ts_ns, uint64_t dur_ns,
			   const struct chrome_arg *args, size_t nargs)
{
	if (check(t, name))
		return t ? t->err : -EINVAL;
	head(t, 'X', pid, tid, name, cat);
	put_ts(t, "ts", ts_ns);
	put_ts(t, "dur", dur_ns);
	put_args(t, args, nargs);
	out(t, "}");
	return t->err;
}

int chrome_trace__slice_begin(struct chrome_trace *t, int64_t pid, int64_t tid, const char *name,
			      const char *cat, uint64_t ts_ns, const struct chrome_arg *args,
			      size_t nargs)
{
	if (check(t, name))
		return t ? t->err : -EINVAL;
	head(t, 'B', pid, tid, name, cat);
	put_ts(t, "ts", ts_ns);
	put_args(t, args, nargs);
	out(t, "}");
	return t->err;
}

int chrome_trace__slice_end(struct chrome_trace *t, int64_t pid, int64_t tid, const char *name,
			    uint64_t ts_ns)
{
	if (check(t, ""))
		return t ? t->err : -EINVAL;
	head(t, 'E', pid, tid, name, NULL);
	put_ts(t, "ts", ts_ns);
	out(t, "}");
	return t->err;
}

int chrome_trace__instant(struct chrome_trace *t, int64_t pid, int64_t tid, const char *name,
			  const char *cat, uint64_t ts_ns, const struct chrome_arg *args,
			  size_t nargs)
{
	if (check(t, name))
		return t ? t->err : -EINVAL;
	head(t, 'i', pid, tid, name, cat);
	put_ts(t, "ts", ts_ns);
	out(t, ",\"s\":\"t\"");
	put_args(t, args, nargs);
	out(t, "}");
	return t->err;
}

int chrome_trace__counter(struct chrome_trace *t, int64_t pid, const char *name, uint64_t ts_ns,
			  const struct chrome_arg *series, size_t n)
{
	size_t i;

	if (check(t, name))
		return t ? t->err : -EINVAL;
	for (i = 0; i < n; i++) {
		if (series[i].type == CHROME_ARG_STR) {
			t->err = -EINVAL; /* a counter's values are numbers */
			return t->err;
		}
	}
	head(t, 'C', pid, 0, name, NULL);
	put_ts(t, "ts", ts_ns);
	put_args(t, series, n);
	out(t, "}");
	return t->err;
}

int chrome_trace__flow(struct chrome_trace *t, enum chrome_flow_phase phase, uint64_t id,
		       int64_t pid, int64_t tid, const char *name, const char *cat, uint64_t ts_ns)
{
	if (check(t, name))
		return t ? t->err : -EINVAL;
	if (phase != CHROME_FLOW_START && phase != CHROME_FLOW_STEP && phase != CHROME_FLOW_END) {
		t->err = -EINVAL;
		return t->err;
	}
	head(t, (char)phase, pid, tid, name, cat ? cat : "flow");
	put_ts(t, "ts", ts_ns);
	out(t, ",\"id\":%" PRIu64, id);
	/* The arrow ends on the slice that encloses ts, not on the next one to begin. */
	if (phase == CHROME_FLOW_END)
		out(t, ",\"bp\":\"e\"");
	out(t, "}");
	return t->err;
}

int chrome_trace__async_begin(struct chrome_trace *t, uint64_t id, int64_t pid, int64_t tid,
			      const char *name, const char *cat, uint64_t ts_ns,
			      const struct chrome_arg *args, size_t nargs)
{
	if (check(t, name))
		return t ? t->err : -EINVAL;
	head(t, 'b', pid, tid, name, cat ? cat : "async");
	put_ts(t, "ts", ts_ns);
	out(t, ",\"id\":%" PRIu64, id);
	put_args(t, args, nargs);
	out(t, "}");
	return t->err;
}

int chrome_trace__async_end(struct chrome_trace *t, uint64_t id, int64_t pid, int64_t tid,
			    const char *name, const char *cat, uint64_t ts_ns)
{
	if (check(t, name))
		return t ? t->err : -EINVAL;
	head(t, 'e', pid, tid, name, cat ? cat : "async");
	put_ts(t, "ts", ts_ns);
	out(t, ",\"id\":%" PRIu64 "}", id);
	return t->err;
}

/* ------------------------------------------------------------------ a whole profile */

/* A set of u64 keys (threads as pid << 32 | tid), for the metadata. */
struct keyset {
	struct hashmap *index; /* key -> index in v + 1 */
	uint64_t *v;	       /* the keys, in the order first met */
	size_t n, cap;
};

static int keyset_add(struct keyset *s, uint64_t key)
{
	int err;

	if (!s->index && !(s->index = hashmap__new()))
		return -ENOMEM;
	if (hashmap__get(s->index, key, 0))
		return 0;
	err = vec_reserve(&s->v, &s->cap, s->n + 1);
	if (!err)
		err = hashmap__put(s->index, key, 0, (void *)(uintptr_t)(s->n + 1));
	if (!err)
		s->v[s->n++] = key;
	return err;
}

static void keyset_free(struct keyset *s)
{
	hashmap__free(s->index);
	free(s->v);
}

/* The set's keys, sorted. */
static void keyset_sort(struct keyset *s)
{
	qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
}

static bool is_api(const struct corr_gpu_rec *g)
{
	return g->kind == CORR_GPU_RUNTIME_API || g->kind == CORR_GPU_DRIVER_API;
}

struct writer {
	const struct profile_data *pd;
	struct chrome_trace *t;
	uint32_t *api; /* API records, by (pid, tid, start, outer first) */
	size_t nr_api;
	uint32_t *launch;  /* launches, by (pid, tid, time) */
	uint64_t *flow_ts; /* per launch: where its flows start (inside a slice of its thread) */
	uint32_t *first_join, *next_join; /* joins of each GPU record */
	int64_t *gpu_track; /* per GPU record: its track (tid) on its device (pd->flows only) */
	uint32_t *fwd_of;   /* per launch: 1 + its pd->fwds index (0: none; pd->fwds only) */
};

#define CMP(a, b)                                  \
	do {                                       \
		if ((a) != (b))                    \
			return (a) < (b) ? -1 : 1; \
	} while (0)

static int cmp_api(const void *a, const void *b, void *ctx)
{
	const struct corr_gpu_rec *gpu = ctx, *x = &gpu[*(const uint32_t *)a],
				  *y = &gpu[*(const uint32_t *)b];

	CMP(x->pid, y->pid);
	CMP(x->tid, y->tid);
	CMP(x->start_ns, y->start_ns);
	CMP(y->end_ns, x->end_ns);
	return 0;
}

static int cmp_launch(const void *a, const void *b, void *ctx)
{
	const struct corr_cpu_rec *l = ctx, *x = &l[*(const uint32_t *)a],
				  *y = &l[*(const uint32_t *)b];

	CMP(x->pid, y->pid);
	CMP(x->tid, y->tid);
	CMP(x->time_ns, y->time_ns);
	return 0;
}

static int cmp_sample(const void *a, const void *b, void *ctx)
{
	const struct profile_sample *s = ctx, *x = &s[*(const uint32_t *)a],
				    *y = &s[*(const uint32_t *)b];

	CMP(x->pid, y->pid);
	CMP(x->tid, y->tid);
	CMP(x->time_ns, y->time_ns);
	return 0;
}

static uint32_t *sorted_indexes(size_t n, bool (*want)(const struct profile_data *, size_t),
				const struct profile_data *pd,
				int (*cmp)(const void *, const void *, void *), void *ctx,
				size_t *ret_n)
{
	uint32_t *v = malloc((n ? n : 1) * sizeof(*v));
	size_t i, k = 0;

	if (!v)
		return NULL;
	for (i = 0; i < n; i++) {
		if (!want || want(pd, i))
			v[k++] = (uint32_t)i;
	}
	qsort_r(v, k, sizeof(*v), cmp, ctx);
	*ret_n = k;
	return v;
}

static bool want_api(const struct profile_data *pd, size_t i)
{
	return is_api(&pd->gpu[i]);
}

static bool want_work(const struct profile_data *pd, size_t i)
{
	return corr_gpu_kind__is_activity(pd->gpu[i].kind);
}

static int write_names(struct writer *w)
{
	const struct profile_data *pd = w->pd;
	struct keyset procs = {0}, threads = {0}, sampled = {0};
	char buf[300], nbuf[64];
	size_t i;
	int err = 0;

	for (i = 0; i < pd->nr_samples && !err; i++) {
		err = keyset_add(&threads, (uint64_t)pd->samples[i].pid << 32 | pd->samples[i].tid);
		if (!err)
			err = keyset_add(&sampled,
					 (uint64_t)pd->samples[i].pid << 32 | pd->samples[i].tid);
	}
	for (i = 0; i < pd->nr_launches && !err; i++)
		err = keyset_add(&threads,
				 (uint64_t)pd->launches[i].pid << 32 | pd->launches[i].tid);
	for (i = 0; i < pd->nr_gpu && !err; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];

		if (is_api(g) || g->kind == CORR_GPU_NVTX)
			err = keyset_add(&threads, (uint64_t)g->pid << 32 | g->tid);
	}
	for (i = 0; i < threads.n && !err; i++)
		err = keyset_add(&procs, threads.v[i] >> 32);
	if (err)
		goto out;
	keyset_sort(&procs);
	keyset_sort(&threads);
	for (i = 0; i < procs.n; i++) {
		uint32_t pid = (uint32_t)procs.v[i];

		chrome_trace__process_name(w->t, pid,
					   profile__process_title(pd, pid, nbuf, sizeof(nbuf)));
	}
	for (i = 0; i < threads.n; i++) {
		uint32_t pid = threads.v[i] >> 32, tid = (uint32_t)threads.v[i];
		const char *n = profile__name_or(pd, pid, tid, nbuf, sizeof(nbuf));

		snprintf(buf, sizeof(buf), "%s (%u)", n, tid);
		chrome_trace__thread_name(w->t, pid, tid, buf);
		/* The API track first, then its samples. */
		chrome_trace__thread_sort_index(w->t, pid, tid, (int64_t)tid * 2);
	}
	keyset_sort(&sampled);
	for (i = 0; i < sampled.n; i++) {
		uint32_t pid = sampled.v[i] >> 32, tid = (uint32_t)sampled.v[i];

		snprintf(buf, sizeof(buf), "%s (%u) samples",
			 profile__name_or(pd, pid, tid, nbuf, sizeof(nbuf)), tid);
		chrome_trace__thread_name(w->t, pid, chrome_trace__samples_tid(tid), buf);
		chrome_trace__thread_sort_index(w->t, pid, chrome_trace__samples_tid(tid),
						(int64_t)tid * 2 + 1);
	}
	err = chrome_trace__error(w->t);
out:
	keyset_free(&procs);
	keyset_free(&threads);
	keyset_free(&sampled);
	return err;
}

/* CUDA API calls, and where each launch's flows start. */
#define LAUNCH_DUR_NS 1000
#define API_SLACK_NS  5000 /* uprobes fire this much before CUPTI starts the API record */

static int write_api_tracks(struct writer *w)
{
	const struct profile_data *pd = w->pd;
	size_t i, n, a = 0;

	w->api = sorted_indexes(pd->nr_gpu, want_api, pd, cmp_api, (void *)pd->gpu, &w->nr_api);
	w->launch = sorted_indexes(pd->nr_launches, NULL, pd, cmp_launch, (void *)pd->launches, &n);
	w->flow_ts = calloc(pd->nr_launches ? pd->nr_launches : 1, sizeof(*w->flow_ts));
	if (!w->api || !w->launch || !w->flow_ts)
		return -ENOMEM;

	for (i = 0; i < w->nr_api; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[w->api[i]];
		struct chrome_arg args[] = {
			{.key = "correlation_id", .type = CHROME_ARG_UINT, .u = g->corr_id},
			{.key = "cbid", .type = CHROME_ARG_UINT, .u = g->cbid},
		};

		chrome_trace__complete(w->t, g->pid, g->tid, g->name ? g->name : "cuda api",
				       g->kind == CORR_GPU_RUNTIME_API ? "cuda_runtime"
								       : "cuda_driver",
				       g->start_ns, g->end_ns - g->start_ns, args, 2);
	}

	/* Launches and API records are both sorted by thread and time: walk them together. */
	for (i = 0; i < n; i++) {
		const struct corr_cpu_rec *l = &pd->launches[w->launch[i]];
		const struct corr_gpu_rec *in = NULL;
		uint64_t t = l->time_ns, dur = LAUNCH_DUR_NS;
		size_t k;

		/* First API record of the thread starting after t + slack. */
		while (a < w->nr_api) {
			const struct corr_gpu_rec *g = &pd->gpu[w->api[a]];

			if (g->pid > l->pid || (g->pid == l->pid && g->tid > l->tid) ||
			    (g->pid == l->pid && g->tid == l->tid &&
			     g->start_ns > t + API_SLACK_NS))
				break;
			a++;
		}
		/* The calls that began before it, nearest first: one of them holds t. */
		for (k = a; k-- > 0 && a - k <= 64;) {
			const struct corr_gpu_rec *g = &pd->gpu[w->api[k]];

			if (g->pid != l->pid || g->tid != l->tid)
				break;
			if (g->end_ns >= t) {
				in = g;
				if (l->kind == CORR_CPU_USDT && g->corr_id == l->corr_id)
					break;
			}
		}
		if (in) {
			w->flow_ts[w->launch[i]] = t < in->start_ns ? in->start_ns
						   : t > in->end_ns ? in->end_ns
								    : t;
			continue;
		}
		/* No API record: the launch is its own short slice, clear of its neighbours. */
		if (a < w->nr_api) {
			const struct corr_gpu_rec *g = &pd->gpu[w->api[a]];

			if (g->pid == l->pid && g->tid == l->tid && g->start_ns > t &&
			    g->start_ns - t < dur)
				dur = g->start_ns - t;
		}
		if (i + 1 < n) {
			const struct corr_cpu_rec *nx = &pd->launches[w->launch[i + 1]];

			if (nx->pid == l->pid && nx->tid == l->tid && nx->time_ns - t < dur)
				dur = nx->time_ns - t;
		}
		if (!dur)
			dur = 1;
		w->flow_ts[w->launch[i]] = t;
		{
			struct chrome_arg args[] = {
				{.key = "correlation_id", .type = CHROME_ARG_UINT, .u = l->corr_id},
				{.key = "stream", .type = CHROME_ARG_UINT, .u = l->stream},
				{.key = "probe",
				 .type = CHROME_ARG_STR,
				 .s = l->kind == CORR_CPU_USDT ? "usdt" : "uprobe"},
			};

			chrome_trace__complete(
				w->t, l->pid, l->tid, l->api_name ? l->api_name : "cuda launch",
				"cuda_launch", t, dur, args, l->kind == CORR_CPU_USDT ? 3 : 2);
		}
	}
	return chrome_trace__error(w->t);
}

/* Calls that waited for the GPU, on their thread's track, around the call's own slice. */
static int write_waits(struct writer *w)
{
	const struct profile_data *pd = w->pd;
	char name[160];

	for (size_t i = 0; i < pd->nr_waits; i++) {
		const struct profile_wait *x = &pd->waits[i];

		snprintf(name, sizeof(name), "[wait gpu] %s", x->api ? x->api : "cuda");
		chrome_trace__complete(w->t, x->pid, x->tid, name, "gpu_wait", x->start_ns,
				       x->end_ns > x->start_ns ? x->end_ns - x->start_ns : 1, NULL,
				       0);
	}
	return chrome_trace__error(w->t);
}

/* Sampled stacks as nested slices: frames shared with the previous sample stay open. */
static int write_samples(struct writer *w)
{
	const struct profile_data *pd = w->pd;
	uint64_t period = pd->sample_period_ns ? pd->sample_period_ns : 10000000;
	const char **open = NULL;
	size_t n, i, depth = 0, cap = 0;
	uint32_t *idx;
	uint64_t open_end = 0;
	int err = 0;

	if (!pd->nr_samples)
		return 0;
	idx = sorted_indexes(pd->nr_samples, NULL, pd, cmp_sample, (void *)pd->samples, &n);
	if (!idx)
		return -ENOMEM;
	for (i = 0; i <= n && !err; i++) {
		const struct profile_sample *s = i < n ? &pd->samples[idx[i]] : NULL;
		const struct profile_sample *prev = i ? &pd->samples[idx[i - 1]] : NULL;
		static const char *const unknown[] = {"[unknown]"};
		const char *const *frames = unknown;
		size_t nf = 1, k = 0;
		bool same = s && prev && s->pid == prev->pid && s->tid == prev->tid;

		/* Another thread, the end, or a gap of a period: close everything. */
		if (prev && (!same || s->time_ns > open_end)) {
			for (; depth; depth--)
				chrome_trace__slice_end(w->t, prev->pid,
							chrome_trace__samples_tid(prev->tid),
							open[depth - 1], open_end);
		}
		if (!s)
			break;
		if (s->stack_id == CORR_NO_STACK || !pd->stack ||
		    pd->stack(pd->ctx, s->pid, s->stack_id, &frames, &nf) || !nf) {
			frames = unknown;
			nf = 1;
		}
		while (k < depth && k < nf && frames[k] && !strcmp(open[k], frames[k]))
			k++;
		for (; depth > k; depth--)
			chrome_trace__slice_end(w->t, s->pid, chrome_trace__samples_tid(s->tid),
						open[depth - 1], s->time_ns);
		err = vec_reserve(&open, &cap, nf);
		if (err)
			break;
		for (; depth < nf; depth++) {
			open[depth] =
				frames[depth] && frames[depth][0] ? frames[depth] : "[unknown]";
			chrome_trace__slice_begin(w->t, s->pid, chrome_trace__samples_tid(s->tid),
						  open[depth], "sample", s->time_ns, NULL, 0);
		}
		open_end = s->time_ns + period;
		err = chrome_trace__error(w->t);
	}
	free(open);
	free(idx);
	return err ? err : chrome_trace__error(w->t);
}

/*
 * PyTorch's backward launches and the forward ops that made their nodes (pd->fwds): each op a
 * short slice on a track of its own beside its thread's ("autograd nodes"), where a flow to
 * the launch's GPU work starts (write_gpu_tracks). The track keeps the slices clear of the
 * thread's own, which they would not nest in.
 */
#define FWD_SLICE_NS 1000
#define FWD_TRACK    ((int64_t)1 << 32)

static int cmp_fwd(const void *a, const void *b, void *ctx)
{
	const struct profile_fwd *f = ctx, *x = &f[*(const uint32_t *)a],
				 *y = &f[*(const uint32_t *)b];

	CMP(x->pid, y->pid);
	CMP(x->fwd_tid, y->fwd_tid);
	CMP(x->fwd_ns, y->fwd_ns);
	return 0;
}

/* The launch of pid's thread tid at time t (w->launch is sorted so), or SIZE_MAX. */
static size_t launch_at(const struct writer *w, uint32_t pid, uint32_t tid, uint64_t t)
{
	const struct corr_cpu_rec *ls = w->pd->launches;
	size_t lo = 0, hi = w->pd->nr_launches;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct corr_cpu_rec *x = &ls[w->launch[mid]];

		if (x->pid < pid ||
		    (x->pid == pid && (x->tid < tid || (x->tid == tid && x->time_ns < t))))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < w->pd->nr_launches) {
		const struct corr_cpu_rec *x = &ls[w->launch[lo]];

		if (x->pid == pid && x->tid == tid && x->time_ns == t)
			return w->launch[lo];
	}
	return SIZE_MAX;
}

static int write_fwd_ops(struct writer *w)
{
	const struct profile_data *pd = w->pd;
	const struct profile_fwd *prev = NULL;
	uint32_t *idx;
	size_t n;
	char buf[64];

	w->fwd_of = calloc(pd->nr_launches ? pd->nr_launches : 1, sizeof(*w->fwd_of));
	idx = sorted_indexes(pd->nr_fwds, NULL, pd, cmp_fwd, (void *)pd->fwds, &n);
	if (!w->fwd_of || !idx) {
		free(idx);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const struct profile_fwd *f = &pd->fwds[idx[i]];
		size_t l = launch_at(w, f->pid, f->tid, f->launch_ns);

		if (l == SIZE_MAX)
			continue; /* its launch was not kept (the store's cap) */
		w->fwd_of[l] = idx[i] + 1;
		if (prev && prev->pid == f->pid && prev->fwd_tid == f->fwd_tid &&
		    prev->fwd_ns == f->fwd_ns)
			continue; /* one node, several launches */
		if (!prev || prev->pid != f->pid || prev->fwd_tid != f->fwd_tid) {
			snprintf(buf, sizeof(buf), "autograd nodes (thread %u)", f->fwd_tid);
			chrome_trace__thread_name(w->t, f->pid, FWD_TRACK | f->fwd_tid, buf);
		}
		chrome_trace__complete(w->t, f->pid, FWD_TRACK | f->fwd_tid, "autograd node",
				       "autograd", f->fwd_ns, FWD_SLICE_NS, NULL, 0);
		prev = f;
	}
	free(idx);
	return chrome_trace__error(w->t);
}

/* GPU work on per-(process, stream) tracks of each GPU, and the flows into it. */
static int write_gpu_tracks(struct writer *w)
{
	const struct profile_data *pd = w->pd;
	const struct corr_gpu_rec *prev = NULL;
	size_t n, i;
	uint32_t *idx = sorted_indexes(pd->nr_gpu, want_work, pd, profile__cmp_gpu_track,
				       (void *)pd->gpu, &n);
	int64_t tid = 0;
	char buf[512], nbuf[64];
	int err = 0;

	if (!idx)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[idx[i]];
		const struct corr_gpu_rec *nx = i + 1 < n ? &pd->gpu[idx[i + 1]] : NULL;
		int64_t gpid = chrome_trace__gpu_pid(g->device);
		uint64_t dur = g->end_ns - g->start_ns;
		struct chrome_arg args[8];
		size_t na = 0;
		uint32_t j;

		if (!prev || prev->device != g->device) {
			if (pd->device_name)
				pd->device_name(pd->ctx, g->device, buf, sizeof(buf));
			else
				snprintf(buf, sizeof(buf), "GPU %u", g->device);
			chrome_trace__process_name(w->t, gpid, buf);
			chrome_trace__process_sort_index(w->t, gpid, (int64_t)1 << 40 | g->device);
			tid = 0;
		}
		if (!prev || prev->device != g->device || prev->pid != g->pid ||
		    prev->stream_id != g->stream_id ||
		    profile__gpu_lane(prev) != profile__gpu_lane(g)) {
			tid++;
			snprintf(buf, sizeof(buf), "stream %u%s (%s %u)", g->stream_id,
				 profile__lane_name(profile__gpu_lane(g)),
				 profile__name_or(pd, g->pid, 0, nbuf, sizeof(nbuf)), g->pid);
			chrome_trace__thread_name(w->t, gpid, tid, buf);
			chrome_trace__thread_sort_index(w->t, gpid, tid, tid);
		}
		/* One stream runs one thing at a time: a clock blip must not make them overlap. */
		if (nx && nx->device == g->device && nx->pid == g->pid &&
		    nx->stream_id == g->stream_id &&
		    profile__gpu_lane(nx) == profile__gpu_lane(g) && nx->start_ns < g->end_ns)
			dur = nx->start_ns - g->start_ns;

		args[na++] = (struct chrome_arg){
			.key = "correlation_id", .type = CHROME_ARG_UINT, .u = g->corr_id};
		args[na++] =
			(struct chrome_arg){.key = "pid", .type = CHROME_ARG_UINT, .u = g->pid};
		args[na++] = (struct chrome_arg){
			.key = "device", .type = CHROME_ARG_UINT, .u = g->device};
		args[na++] = (struct chrome_arg){
			.key = "stream", .type = CHROME_ARG_UINT, .u = g->stream_id};
		if (g->kind == CORR_GPU_MEMCPY || g->kind == CORR_GPU_MEMSET)
			args[na++] = (struct chrome_arg){
				.key = "bytes", .type = CHROME_ARG_UINT, .u = g->bytes};
		if (g->graph_id)
			args[na++] = (struct chrome_arg){
				.key = "graph_id", .type = CHROME_ARG_UINT, .u = g->graph_id};
		/* The range its launch was made in, projected onto the GPU (--group-by range). */
		if (pd->root_at && w->first_join[idx[i]] != PROFILE_NO_JOIN) {
			const struct corr_cpu_rec *l =
				&pd->launches[pd->joins[w->first_join[idx[i]]].launch];

			args[na++] = (struct chrome_arg){
				.key = "range",
				.type = CHROME_ARG_STR,
				.s = pd->root_at(pd->root_at_ctx, l->pid, l->tid, l->time_ns)};
		}
		if (g->kind == CORR_GPU_KERNEL)
			snprintf(buf, sizeof(buf), "%s",
				 g->name && g->name[0] ? g->name : "kernel");
		else if (g->kind == CORR_GPU_MEMCPY)
			snprintf(buf, sizeof(buf), "memcpy %s", corr_copy_kind__name(g->copy_kind));
		else
			snprintf(buf, sizeof(buf), "%s", corr_gpu_kind__name(g->kind));
		chrome_trace__complete(w->t, gpid, tid, buf, "gpu", g->start_ns, dur, args, na);

		for (j = w->first_join[idx[i]]; j != PROFILE_NO_JOIN; j = w->next_join[j]) {
			const struct corr_cpu_rec *l = &pd->launches[pd->joins[j].launch];
			uint64_t id = chrome_trace__new_id(w->t);

			chrome_trace__flow(w->t, CHROME_FLOW_START, id, l->pid, l->tid, "launch",
					   "launch", w->flow_ts[pd->joins[j].launch]);
			chrome_trace__flow(w->t, CHROME_FLOW_END, id, gpid, tid, "launch", "launch",
					   g->start_ns);
			/* Backward work: from the forward op that made its node. */
			if (w->fwd_of && w->fwd_of[pd->joins[j].launch]) {
				const struct profile_fwd *f =
					&pd->fwds[w->fwd_of[pd->joins[j].launch] - 1];

				id = chrome_trace__new_id(w->t);
				chrome_trace__flow(w->t, CHROME_FLOW_START, id, f->pid,
						   FWD_TRACK | f->fwd_tid, "backward of",
						   "autograd", f->fwd_ns);
				chrome_trace__flow(w->t, CHROME_FLOW_END, id, gpid, tid,
						   "backward of", "autograd", g->start_ns);
			}
		}
		if (w->gpu_track)
			w->gpu_track[idx[i]] = tid;
		prev = g;
		err = chrome_trace__error(w->t);
		if (err)
			break;
	}
	free(idx);
	return err;
}

/* pd->flows: arrows through GPU work of several processes (a collective across ranks), each
 * at its work's start. */
static int write_flows(struct writer *w)
{
	const struct profile_data *pd = w->pd;

	for (size_t i = 0; i < pd->nr_flows; i++) {
		const struct profile_flow *fl = &pd->flows[i];
		uint64_t id = chrome_trace__new_id(w->t);

		for (size_t k = 0; k < fl->n; k++) {
			const struct corr_gpu_rec *g = &pd->gpu[fl->gpu[k]];
			enum chrome_flow_phase ph = !k		     ? CHROME_FLOW_START
						    : k + 1 == fl->n ? CHROME_FLOW_END
								     : CHROME_FLOW_STEP;

			if (fl->gpu[k] >= pd->nr_gpu || !w->gpu_track[fl->gpu[k]])
				continue;
			chrome_trace__flow(w->t, ph, id, chrome_trace__gpu_pid(g->device),
					   w->gpu_track[fl->gpu[k]], fl->name ? fl->name : "link",
					   "collective", g->start_ns);
		}
	}
	return chrome_trace__error(w->t);
}

static int write_nvtx(struct writer *w)
{
	const struct profile_data *pd = w->pd;
	size_t i;

	for (i = 0; i < pd->nr_gpu; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];
		uint64_t id;

		if (g->kind != CORR_GPU_NVTX)
			continue;
		id = chrome_trace__new_id(w->t);
		chrome_trace__async_begin(w->t, id, g->pid, g->tid, g->name ? g->name : "nvtx",
					  "nvtx", g->start_ns, NULL, 0);
		chrome_trace__async_end(w->t, id, g->pid, g->tid, g->name ? g->name : "nvtx",
					"nvtx", g->end_ns);
	}
	return chrome_trace__error(w->t);
}

static bool valid(const struct profile_data *pd)
{
	return pd && (pd->samples || !pd->nr_samples) && (pd->launches || !pd->nr_launches) &&
	       (pd->waits || !pd->nr_waits) && (pd->gpu || !pd->nr_gpu) &&
	       (pd->joins || !pd->nr_joins) && pd->nr_gpu < UINT32_MAX &&
	       pd->nr_launches < UINT32_MAX && pd->nr_samples < UINT32_MAX &&
	       pd->nr_joins < UINT32_MAX;
}

/* Each GPU's busy share and queue depth (the GPU report's activity) as counter tracks. */
static int write_gpu_activity(struct chrome_trace *t, const struct gpu_activity *a)
{
	for (size_t k = 0; k < a->nr_devices; k++) {
		const struct gpu_device_activity *da = &a->devices[k];
		int64_t pid = chrome_trace__gpu_pid(da->device);

		for (size_t i = 0; i < da->nr_busy; i++)
			chrome_trace__counter(t, pid, "busy %", da->busy[i].start_ns,
					      &(struct chrome_arg){.key = "busy",
								   .type = CHROME_ARG_DOUBLE,
								   .d = da->busy[i].busy_pct},
					      1);
		for (size_t i = 0; i < da->nr_queue; i++)
			chrome_trace__counter(t, pid, "queue depth", da->queue[i].time_ns,
					      &(struct chrome_arg){.key = "work",
								   .type = CHROME_ARG_INT,
								   .i = da->queue[i].depth},
					      1);
		if (chrome_trace__error(t))
			break;
	}
	return chrome_trace__error(t);
}

/* Counter tracks: each GPU's activity, then each process's GPU memory in use. */
static int write_counters(const struct profile_data *pd, struct chrome_trace *t)
{
	struct gpu_activity *a = NULL;
	struct gpu_mem_change *ch = NULL;
	size_t n = 0;
	int err = gpu_activity__build(pd, &a);

	if (!err)
		err = write_gpu_activity(t, a);
	gpu_activity__free(a);
	if (!err)
		err = gpu_memory__changes(pd, &ch, &n);
	for (size_t i = 0; i < n && !err; i++)
		chrome_trace__counter(t, ch[i].pid, "GPU memory MiB", ch[i].time_ns,
				      &(struct chrome_arg){.key = "allocated",
							   .type = CHROME_ARG_DOUBLE,
							   .d = (double)ch[i].live / 1048576.0},
				      1);
	free(ch);
	return err ? err : chrome_trace__error(t);
}

int chrome_trace__write_profile(const struct profile_data *pd, FILE *f,
				const struct output_meta *meta)
{
	struct writer w = {.pd = pd};
	const char *other[8];
	char period[32];
	size_t i;
	int err;

	if (!valid(pd) || !f)
		return -EINVAL;
	for (i = 0; i < pd->nr_gpu; i++) {
		if (pd->gpu[i].end_ns < pd->gpu[i].start_ns)
			return -EINVAL;
	}
	w.t = chrome_trace__begin(f);
	if (!w.t)
		return -errno;
	err = write_names(&w);
	if (!err)
		err = write_waits(&w);
	if (!err)
		err = write_api_tracks(&w);
	if (!err)
		err = write_samples(&w);
	if (!err && pd->nr_fwds)
		err = write_fwd_ops(&w);
	if (!err)
		err = profile__join_chains(pd, &w.first_join, &w.next_join);
	if (!err && pd->nr_flows &&
	    !(w.gpu_track = calloc(pd->nr_gpu ? pd->nr_gpu : 1, sizeof(*w.gpu_track))))
		err = -ENOMEM;
	if (!err)
		err = write_gpu_tracks(&w);
	if (!err && pd->nr_flows)
		err = write_flows(&w);
	if (!err)
		err = write_nvtx(&w);
	if (!err)
		err = write_counters(pd, w.t);
	free(w.api);
	free(w.launch);
	free(w.flow_ts);
	free(w.gpu_track);
	free(w.fwd_of);
	free(w.first_join);
	free(w.next_join);
	if (err) {
		chrome_trace__free(w.t);
		return err;
	}
	snprintf(period, sizeof(period), "%" PRIu64, pd->sample_period_ns);
	other[0] = "producer";
	other[1] = "xsprof " XSPROF_VERSION;
	other[2] = "title";
	other[3] = meta && meta->title ? meta->title : "xsprof";
	other[4] = "sample_period_ns";
	other[5] = period;
	other[6] = "clock";
	other[7] = "CLOCK_MONOTONIC";
	return chrome_trace__end(w.t, other, 4);
}
